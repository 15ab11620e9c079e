"""A third-party provider plugin needs only the catalog's members; a test kit is optional."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from agentshim import CliAgent
from agentshim.core.errors import AgentShimError, CliExitError, ProviderCapabilityError
from agentshim.core.events import AgentEvent, AssistantText
from agentshim.core.mcp import McpServer
from agentshim.core.models import ModelTable
from agentshim.core.plugin import ProviderPlugin
from agentshim.core.pricing import PricingTable
from agentshim.core.profile import ProviderProfile
from agentshim.core.provider import (
    ArgvContext,
    McpInstallation,
    NoMcpInstallation,
    Provider,
    StreamParser,
)
from agentshim.core.turn import ParsedTurn
from agentshim.execution.executor import CommandRequest
from agentshim.providers import DEFAULT_CATALOG, ENTRY_POINT_GROUP
from agentshim.providers.discovery import discover
from agentshim.testing import (
    FakeExecutor,
    FakeRun,
    ProviderTestKit,
    RecordingEventHandler,
    ScriptedRun,
    ScriptedTurn,
    installed_mcp_servers,
    scripted_resume_failure,
    scripted_turn,
)

PROFILE = ProviderProfile(
    name="echo",
    display_name="Echo CLI",
    binary="echo-cli",
)
BINARIES = {"echo-cli": "/usr/bin/echo-cli"}


class EchoParser:
    """Every stdout line is answer text."""

    def __init__(self, emit: Callable[[AgentEvent], None]) -> None:
        self._emit = emit
        self._lines: list[str] = []

    def feed_stdout(self, line: str) -> None:
        text = line.rstrip("\n")
        self._lines.append(text)
        self._emit(AssistantText(text))

    def feed_stderr(self, line: str) -> None:
        del line

    def finish(self) -> ParsedTurn:
        return ParsedTurn(text="\n".join(self._lines))


class EchoProvider:
    @property
    def profile(self) -> ProviderProfile:
        return PROFILE

    def build_argv(self, ctx: ArgvContext) -> list[str]:
        return [ctx.binary_path, "--print"]

    def new_parser(
        self, emit: Callable[[AgentEvent], None], *, expect_structured: bool
    ) -> StreamParser:
        del expect_structured
        return EchoParser(emit)

    def install_mcp(self, workspace: Path | None, servers: Sequence[McpServer]) -> McpInstallation:
        del workspace, servers
        return NoMcpInstallation()

    def classify_exit(self, error: CliExitError, *, resumed: bool) -> AgentShimError:
        del resumed
        return error


class EchoPlugin:
    """Only what ProviderPlugin asks for: no fixtures."""

    @property
    def name(self) -> str:
        return PROFILE.name

    @property
    def profile(self) -> ProviderProfile:
        return PROFILE

    def create_provider(self) -> Provider:
        return EchoProvider()

    def model_table(self) -> ModelTable:
        return ModelTable()

    def pricing_table(self) -> PricingTable:
        return PricingTable(version="none", date="")

    def resume_command(self, session_id: str) -> str:
        return f"echo-cli --again {session_id}"


class EchoTestKit:
    """A third party's own test kit: the answer on stdout, one line per tool call first."""

    def scripted_lines(self, turn: ScriptedTurn) -> ScriptedRun:
        calls = tuple(f"[{name}] {output}" for name, _, output in turn.tool_calls)
        return ScriptedRun(stdout=(*calls, turn.text), returncode=turn.returncode)

    def resume_failure_lines(self, *, session_id: str | None = None) -> ScriptedRun:
        return ScriptedRun(stderr=(f"no conversation {session_id}",), returncode=1)

    def installed_mcp_servers(
        self, request: CommandRequest, workspace: Path
    ) -> dict[str, dict[str, Any]]:
        del request, workspace
        return {}


@dataclass(frozen=True)
class EchoPluginWithKit(EchoPlugin):
    test_kit: ProviderTestKit = field(default_factory=EchoTestKit)


PLUGIN = EchoPlugin()
CATALOG = DEFAULT_CATALOG.with_plugin(PLUGIN)


def _agent(run: FakeRun, recorder: RecordingEventHandler | None = None) -> CliAgent:
    fake = FakeExecutor(run, binaries=BINARIES)
    return CliAgent(
        "echo", executor=fake, env={"PATH": "/usr/bin"}, catalog=CATALOG, event_handlers=recorder
    )


class TestWithoutATestKit:
    def test_it_is_a_plugin_and_registers(self) -> None:
        assert isinstance(PLUGIN, ProviderPlugin)
        assert CATALOG.plugin("echo") is PLUGIN

    def test_discovery_takes_it_from_an_entry_point(self) -> None:
        log: list[str] = []
        point = EntryPoint(name="echo", value=f"{__name__}:PLUGIN", group=ENTRY_POINT_GROUP)
        catalog = discover(DEFAULT_CATALOG, log=log.append, found=[point])
        assert catalog.plugin("echo") is PLUGIN
        assert log == []

    def test_it_runs_a_turn(self) -> None:
        recorder = RecordingEventHandler()
        result = _agent(FakeRun(stdout=("hello there",)), recorder).run("say hello")
        assert result.text == "hello there"
        assert AssistantText("hello there") in recorder.events

    @pytest.mark.parametrize(
        "script",
        [
            lambda: scripted_turn("echo", text="x", catalog=CATALOG),
            lambda: scripted_resume_failure("echo", session_id="s-1", catalog=CATALOG),
            lambda: installed_mcp_servers(
                "echo", CommandRequest(("echo-cli",)), Path("/tmp"), catalog=CATALOG
            ),
        ],
        ids=["scripted_turn", "scripted_resume_failure", "installed_mcp_servers"],
    )
    def test_scripting_it_says_what_to_implement(self, script: Callable[[], object]) -> None:
        with pytest.raises(ProviderCapabilityError) as caught:
            script()
        message = str(caught.value)
        assert "'echo' has no test kit" in message
        assert "ProviderTestKit" in message
        assert "scripted_lines" in message


class TestWithATestKit:
    catalog = DEFAULT_CATALOG.with_plugin(EchoPluginWithKit())

    def test_scripted_turn_prints_through_its_kit(self) -> None:
        run = scripted_turn(
            "echo", text="done", tool_calls=[("ls", {}, "a.txt")], catalog=self.catalog
        )
        assert tuple(run.stdout) == ("[ls] a.txt", "done")
        fake = FakeExecutor(run, binaries=BINARIES)
        agent = CliAgent("echo", executor=fake, env={"PATH": "/usr/bin"}, catalog=self.catalog)
        assert agent.run("go").text == "[ls] a.txt\ndone"

    def test_a_resume_failure_comes_from_its_kit(self) -> None:
        run = scripted_resume_failure("echo", session_id="s-9", catalog=self.catalog)
        assert (tuple(run.stderr), run.returncode) == (("no conversation s-9",), 1)
