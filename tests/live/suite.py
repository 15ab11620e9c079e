"""The live conformance suite every provider's test module runs against its real binary.

Each scenario of ``scenarios.py`` runs through ``CliAgent`` with the real
``HostCommandExecutor`` against a ``ModelServer`` on 127.0.0.1; the test asserts what a user of
agentshim sees: the turn's text, session id, resumed flag, usage equal to what the server
scripted, the tool calls and their results, the error type and ``FailureKind`` of failures,
the MCP config file put back, and no process of the run left behind.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentshim.cli_agent import AgentSession, CliAgent
from agentshim.core.errors import (
    AgentShimError,
    ProviderCapabilityError,
)
from agentshim.core.events import RunStarted
from agentshim.core.mcp import StdioMcpServer
from agentshim.core.profile import McpMechanism, OutputSchemaStyle
from agentshim.core.turn import OutputSchema, TurnRequest, TurnResult
from agentshim.doctor.model_server import LoggedRequest, ModelServer, RequestKind, Usage
from agentshim.doctor.offline import OfflineCli, offline_cli
from agentshim.execution.host import HostCommandExecutor
from agentshim.testing.recording import RecordingEventHandler

from . import checks
from . import scenarios as sc
from .binaries import LiveBinary, require_binary

TURN_TIMEOUT = 150.0
MCP_STUB = Path(__file__).with_name("mcp_stub_server.py")


@dataclass(frozen=True)
class Rig:
    """What the tests of one provider share: the binary, its HOME, the server, the agent."""

    binary: LiveBinary
    root: Path
    server: ModelServer
    cli: OfflineCli
    agent: CliAgent


@dataclass
class LiveRun:
    """One scenario's run: the server, the CLI setup, what happened."""

    server: ModelServer
    cli: OfflineCli
    agent: CliAgent
    work: Path
    events: RecordingEventHandler

    def session(self, session_id: str | None = None) -> AgentSession:
        return self.agent.start_session(
            cwd=str(self.work), timeout=TURN_TIMEOUT, session_id=session_id
        )

    def script(self, scenario: sc.Scenario) -> None:
        """Have the server answer as ``scenario`` scripts it."""
        self.server.set_script(scenario.rules)

    def request(self, scenario: sc.Scenario, **overrides: Any) -> TurnRequest:
        return TurnRequest(prompt=scenario.prompt, extra_args=self.cli.extra_args, **overrides)

    def main_requests(self) -> list[LoggedRequest]:
        return [r for r in self.server.requests if r.kind is RequestKind.MAIN]


@dataclass(frozen=True)
class ProcessSeen:
    """A live process as ``/proc`` shows it: its pid, command line and environment."""

    pid: int
    cmdline: str
    environ: tuple[bytes, ...]

    def of_run(self, home: Path) -> bool:
        """Whether it belongs to the run whose HOME is ``home`` (the CLIs pass HOME on to
        everything they start)."""
        return f"HOME={home}".encode() in self.environ


def live_processes() -> Iterator[ProcessSeen]:
    """Every process but this one that ``/proc`` lets us read, zombies left out."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            command = cmdline.replace(b"\0", b" ").decode(errors="replace")
            yield ProcessSeen(int(entry.name), command, tuple(environ.split(b"\0")))


def _home_processes(home: Path) -> list[tuple[int, str]]:
    """Processes whose environment has this run's HOME: everything the CLI started."""
    return [(p.pid, p.cmdline) for p in live_processes() if p.of_run(home)]


def assert_nothing_left_running(home: Path, wait_s: float = 5.0) -> None:
    """Fail (after killing them) if processes of the run outlive it by ``wait_s``."""
    if not Path("/proc/self/environ").exists():
        return
    deadline = time.monotonic() + wait_s
    left = _home_processes(home)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _home_processes(home)
    for pid, _ in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not left, f"processes of the run still running after the turn: {left}"


def make_rig(provider: str, root: Path) -> Iterator[Rig]:
    """The shared setup of one provider's tests (see ``conftest.rig``)."""
    binary = require_binary(provider)
    with ModelServer() as server:
        cli = offline_cli(provider, server, root=root, bin_dir=binary.path.parent)
        # One agent per provider: the binary is looked up and health-checked once.
        agent = CliAgent(
            provider,
            env=dict(cli.env),
            model=cli.model,
            executor=HostCommandExecutor(),
            check_timeout=60.0,
        )
        yield Rig(binary, root, server, cli, agent)


def _name(scenario: sc.Scenario) -> str:
    return scenario.name


#: The scenarios whose turn must give the scripted answer (a shell command that exits nonzero
#: fails its tool call, not the turn), and those whose turn must fail as scripted.
ANSWERS = (sc.SHELL_TOOL, sc.LONG_ANSWER, sc.UNICODE_TOOL, sc.TWO_TOOLS, sc.FAILED_TOOL)
FAILURES = (sc.HTTP_500, sc.HTTP_401, sc.CONTEXT_OVERFLOW)


class LiveSuite:
    """The scenarios, as test methods; a provider's module subclasses it.

    A subclass sets ``provider``.
    """

    provider: str = ""

    # -- plumbing ----------------------------------------------------------------------

    @pytest.fixture
    def live(self, rig: Rig, request: pytest.FixtureRequest) -> Iterator[LiveRun]:
        rig.server.set_script(sc.PLAIN.rules)  # until the test scripts its scenario
        rig.server.clear_requests()
        work = rig.root / "work" / request.node.name
        work.mkdir(parents=True)
        events = RecordingEventHandler()
        agent = CliAgent(rig.agent.cli, event_handlers=events)
        yield LiveRun(rig.server, rig.cli, agent, work, events)
        assert_nothing_left_running(rig.cli.home)

    # -- checks ------------------------------------------------------------------------

    @property
    def reports_tokens(self) -> bool:
        return self.provider not in sc.PROVIDERS_WITHOUT_TOKEN_COUNTS

    def check_usage(self, result: TurnResult, expected: Usage | None) -> None:
        checks.check_usage(result, expected, reports_tokens=self.reports_tokens)

    def check_session(self, live: LiveRun, result: TurnResult) -> None:
        checks.check_session(live.events.events, result)

    def check_answer(self, live: LiveRun, scenario: sc.Scenario, result: TurnResult) -> None:
        checks.check_answer(
            live.events.events,
            scenario,
            result,
            reports_tokens=self.reports_tokens,
            provider=self.provider,
        )
        assert len(live.main_requests()) >= scenario.main_requests_at_least

    def check_failure(self, error: AgentShimError, scenario: sc.Scenario) -> None:
        checks.check_failure(error, scenario)

    def run_answer(self, live: LiveRun, scenario: sc.Scenario) -> TurnResult:
        live.script(scenario)
        result = live.session().turn(live.request(scenario))
        self.check_answer(live, scenario, result)
        return result

    def run_failure(
        self, live: LiveRun, scenario: sc.Scenario, session_id: str | None = None
    ) -> None:
        live.script(scenario)
        with pytest.raises(AgentShimError) as caught:
            live.session(session_id).turn(live.request(scenario))
        self.check_failure(caught.value, scenario)

    # -- the scenarios -----------------------------------------------------------------

    def test_plain_answer(self, live: LiveRun) -> None:
        result = self.run_answer(live, sc.PLAIN)
        assert result.resumed is False

    @pytest.mark.parametrize("scenario", ANSWERS, ids=_name)
    def test_answer(self, live: LiveRun, scenario: sc.Scenario) -> None:
        self.run_answer(live, scenario)

    def test_resume(self, live: LiveRun) -> None:
        setup = sc.RESUME.setup
        assert setup is not None
        live.script(sc.RESUME)  # its rules answer the setup turn too
        session = live.session()
        first = session.turn(live.request(setup))
        assert first.text == setup.text
        assert first.resumed is False
        self.check_usage(first, setup.usage)
        second = session.turn(live.request(sc.RESUME))
        assert second.text == sc.RESUME.text, "the resumed turn did not see the earlier one"
        assert second.session_id == first.session_id
        assert second.resumed is True
        self.check_usage(second, sc.RESUME.usage)
        assert live.server.rule_uses[1] >= 1

    def test_resume_missing(self, live: LiveRun) -> None:
        self.run_failure(live, sc.RESUME_MISSING, sc.missing_session_id(self.provider))
        assert live.main_requests() == []

    @pytest.mark.parametrize("scenario", FAILURES, ids=_name)
    def test_failure(self, live: LiveRun, scenario: sc.Scenario) -> None:
        self.run_failure(live, scenario)

    def test_structured_output(self, live: LiveRun, tmp_path: Path) -> None:
        schema_dir = tmp_path / "schema"
        schema_dir.mkdir()
        live.script(sc.STRUCTURED)
        request = live.request(
            sc.STRUCTURED, output_schema=OutputSchema(sc.STRUCTURED_SCHEMA, host_dir=schema_dir)
        )
        if live.agent.profile.output_schema is OutputSchemaStyle.NONE:
            with pytest.raises(ProviderCapabilityError):
                live.session().turn(request)
            assert live.server.requests == ()
            assert live.events.of_type(RunStarted) == []
            return
        result = live.session().turn(request)
        assert result.structured_output == sc.STRUCTURED_VALUE
        self.check_session(live, result)

    def test_mcp_config_restored(self, live: LiveRun, tmp_path: Path) -> None:
        marker = tmp_path / "mcp-stub-started"
        server = StdioMcpServer(
            name="agentshim-stub", command=sys.executable, args=(str(MCP_STUB), str(marker))
        )
        profile = live.agent.profile
        request = live.request(sc.PLAIN, mcp_servers=(server,))
        if profile.mcp is McpMechanism.NONE:
            with pytest.raises(ProviderCapabilityError):
                live.session().turn(request)
            assert live.server.requests == ()
            return
        before = _snapshot(live.work)
        config: Path | None = None
        original = b""
        if profile.mcp is McpMechanism.CONFIG_FILE:
            assert profile.mcp_config_file is not None
            config = live.work / profile.mcp_config_file
            config.parent.mkdir(parents=True, exist_ok=True)
            original = _user_config(profile.mcp_config_file)
            config.write_bytes(original)
            before = _snapshot(live.work)
        result = live.session().turn(request)
        assert result.text == sc.PLAIN.text
        if config is not None:
            assert config.read_bytes() == original, "the MCP config file was not restored"
        else:
            argv = " ".join(live.events.of_type(RunStarted)[0].argv)
            assert str(MCP_STUB) in argv, "the MCP server was not passed on the command line"
        assert marker.exists(), "the CLI never started the MCP server"
        offered = {name for r in live.main_requests() for name in r.facts.tool_names}
        assert any("stub" in name for name in offered), f"no MCP tool offered: {offered}"
        added = sorted(set(_snapshot(live.work)) - set(before))
        assert not [p for p in added if "mcp" in p.lower()], f"MCP files left in cwd: {added}"


def _snapshot(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


def _user_config(name: str) -> bytes:
    """A config file a user might already have where the MCP servers get merged in."""
    if name.endswith("opencode.json"):
        document: dict[str, Any] = {"$schema": "https://opencode.ai/config.json", "mcp": {}}
    else:
        document = {"mcpServers": {}}
    return (json.dumps(document, indent=4) + "\n").encode()
