"""OneShotTransport specifics: permissions, interrupted turns, spec defaults, probing."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import CliNotFoundError, ProviderCapabilityError
from agentshim.core.events import TurnInterrupted
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.oneshot import OneShotTransport, probe_cli
from agentshim.providers import get_plugin
from agentshim.session import Session
from agentshim.testing import FakeExecutor, FakeRun, scripted_turn
from agentshim.testing.clock import FakeClock
from agentshim.testing.session_contracts import ContractTurn
from agentshim.transport.installed import InstalledCli

from .helpers import HANG_GUARD_S, TurnOnThread
from .scripted_claude import ENV, PROVIDER, ScriptedClaude

PROFILE = get_plugin(PROVIDER).profile


def installed(executor: FakeExecutor) -> InstalledCli:
    return InstalledCli.find(get_plugin(PROVIDER).create_provider(), executor, ENV)


def spec(**overrides: object) -> ConversationSpec:
    values: dict[str, object] = {
        "permissions": NativePermissions.bypass(),
        "approvals": ApprovalPolicy.DENY,
    }
    values.update(overrides)
    return ConversationSpec(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "permissions",
    [NativePermissions.read_only(), NativePermissions.workspace_write(["/srv"], network=True)],
)
def test_only_bypass_permissions_are_possible(permissions: NativePermissions) -> None:
    transport = OneShotTransport(ScriptedClaude([]).cli())
    with pytest.raises(ProviderCapabilityError, match=r"only NativePermissions\.bypass\(\)"):
        transport.open(spec(permissions=permissions))


def test_an_interrupted_turn_returns_an_interrupted_result_instead_of_raising() -> None:
    scripted = ScriptedClaude([ContractTurn(hang=True), ContractTurn("after")])
    session = Session(
        OneShotTransport(scripted.cli()), spec(resume_session_id="sess-live"), clock=FakeClock()
    )
    runner = TurnOnThread(session, session.prepare_turn("work until stopped"))
    assert runner.started.wait(HANG_GUARD_S)
    session.interrupt()
    runner.join()
    assert runner.turn is not None
    assert runner.turn.result.interrupted
    assert runner.turn.result.exit_code == -15
    assert any(isinstance(event, TurnInterrupted) for event in runner.events)
    assert scripted.executor.handles[0].terminated
    assert session.session_id == "sess-live"
    assert session.turn("next").result.text == "after"


def test_spec_defaults_apply_to_turns_that_set_none() -> None:
    executor = FakeExecutor(lambda _: scripted_turn(PROVIDER, text="ok", session_id="s-1"))
    transport = OneShotTransport(installed(executor), turn_timeout=90)
    conversation = transport.open(spec(model="model-a", reasoning_effort="high"))
    conversation.turn(TurnRequest("default"), lambda _: None)
    conversation.turn(TurnRequest("own", reasoning_effort="low", timeout=5), lambda _: None)
    first, second = (list(request.argv) for request in executor.requests)
    assert first[first.index("--model") + 1] == "model-a"
    assert first[first.index("--effort") + 1] == "high"
    assert second[second.index("--effort") + 1] == "low"
    assert [request.timeout for request in executor.requests] == [90, 5]
    assert all(request.stdin in ("default", "own") for request in executor.requests)


def test_a_lazy_transport_reports_a_missing_binary_on_the_first_turn() -> None:
    executor = FakeExecutor(binaries={})

    def build() -> InstalledCli:
        return installed(executor)

    transport = OneShotTransport(build, profile=PROFILE)
    assert transport.profile is PROFILE
    session = Session(transport, spec(), clock=FakeClock())
    with pytest.raises(CliNotFoundError):
        session.turn("hello")


def test_a_factory_needs_a_profile() -> None:
    with pytest.raises(ValueError, match="profile"):
        OneShotTransport(lambda: installed(FakeExecutor()))


class TestProbe:
    def test_a_missing_binary_is_reported_not_raised(self) -> None:
        readiness = probe_cli(PROFILE, FakeExecutor(binaries={}), ENV)
        assert not readiness.binary_found
        assert not readiness.ready
        assert PROFILE.binary in readiness.detail

    def test_version_and_an_api_key_make_it_ready(self) -> None:
        executor = FakeExecutor(FakeRun(stdout=["2.1.197 (Claude Code)"]))
        readiness = probe_cli(PROFILE, executor, {**ENV, "ANTHROPIC_API_KEY": "sk-test"})
        assert readiness.ready
        assert readiness.version == "2.1.197 (Claude Code)"
        assert readiness.authenticated is True
        assert list(executor.requests[0].argv) == [PROFILE.binary, "--version"]

    def test_without_visible_credentials_authentication_is_unknown(self) -> None:
        executor = FakeExecutor(FakeRun(stdout=["2.1.197"]))
        readiness = probe_cli(PROFILE, executor, ENV)
        assert readiness.authenticated is None
        assert readiness.ready

    def test_a_failing_version_command_is_not_ready(self) -> None:
        executor = FakeExecutor(FakeRun(stderr=["segfault"], returncode=139))
        readiness = probe_cli(PROFILE, executor, ENV)
        assert readiness.binary_found
        assert not readiness.ready
        assert "segfault" in readiness.detail

    def test_a_login_file_on_the_host_counts_as_credentials(self, tmp_path: Path) -> None:
        from agentshim.execution.host import HostCommandExecutor

        credentials = tmp_path / PROFILE.auth_files[0]
        credentials.parent.mkdir(parents=True)
        credentials.write_text("{}")
        fake_cli = tmp_path / "bin" / PROFILE.binary
        fake_cli.parent.mkdir()
        fake_cli.write_text("#!/bin/sh\necho 9.9.9\n")
        fake_cli.chmod(0o755)
        env = {"PATH": f"{fake_cli.parent}:/usr/bin:/bin", "HOME": str(tmp_path)}
        readiness = probe_cli(PROFILE, HostCommandExecutor(), env)
        assert readiness.version == "9.9.9"
        assert readiness.authenticated is True

    def test_the_transport_probe_reports_an_unhealthy_binary(self) -> None:
        executor = FakeExecutor(unhealthy={PROFILE.binary: "broken install"})
        transport = OneShotTransport(lambda: installed(executor), profile=PROFILE)
        readiness = transport.probe()
        assert readiness.binary_found
        assert not readiness.ready
        assert "broken install" in readiness.detail
