"""Agent: constructor rules, confinement path mapping, probe, shared policy and locks."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from agentshim.agent import Agent
from agentshim.core.conversation import TransportKind
from agentshim.core.errors import FailureKind, InvalidRequestError, ProviderCapabilityError
from agentshim.core.events import AgentEvent, RunStarted
from agentshim.core.mcp import HttpMcpServer, StdioMcpServer
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.retry import RetryPolicy
from agentshim.core.session_policy import Continuity
from agentshim.execution.confinement import PathMap
from agentshim.session import Session, Turn
from agentshim.testing import FakeConfinement, FakeExecutor, FakeRun, scripted_turn
from agentshim.testing.clock import FakeClock, SequentialIds
from agentshim.testing.conversation import FakeOutcome, FakeTransport

from .helpers import HANG_GUARD_S
from .scripted_claude import ENV, PROVIDER

BYPASS = NativePermissions.bypass()
DENY = ApprovalPolicy.DENY


def claude_agent(executor: FakeExecutor, **kwargs: object) -> Agent:
    return Agent(PROVIDER, executor=executor, permissions=BYPASS, approvals=DENY, **kwargs)  # type: ignore[arg-type]


class TestConstruction:
    def test_a_named_provider_runs_turns_on_the_given_executor(self) -> None:
        executor = FakeExecutor(scripted_turn(PROVIDER, text="hello", session_id="s-1"))
        agent = claude_agent(executor, env=ENV, ids=SequentialIds())
        assert agent.profile.name == PROVIDER
        session = agent.start_session("/work")
        turn = session.turn("hi")
        assert turn.result.text == "hello"
        assert turn.session_id == "s-1"
        assert executor.requests[0].cwd == "/work"

    def test_the_binary_is_looked_up_on_first_use_not_at_construction(self) -> None:
        executor = FakeExecutor(binaries={})
        agent = claude_agent(executor, env=ENV)
        assert executor.checked == []
        assert not agent.probe().binary_found

    @pytest.mark.parametrize(
        "permissions", [NativePermissions.read_only(), NativePermissions.workspace_write()]
    )
    def test_permissions_the_one_shot_path_cannot_honour_fail_early(
        self, permissions: NativePermissions
    ) -> None:
        with pytest.raises(ProviderCapabilityError, match="bypass"):
            Agent(
                PROVIDER, executor=FakeExecutor(), env=ENV, permissions=permissions, approvals=DENY
            )

    def test_a_transport_the_provider_lacks_is_a_capability_error_naming_what_it_has(
        self,
    ) -> None:
        with pytest.raises(ProviderCapabilityError, match="offers no tui transport") as caught:
            Agent(
                "codex",
                executor=FakeExecutor(),
                env=ENV,
                permissions=BYPASS,
                approvals=DENY,
                transport=TransportKind.TUI,
            )
        assert "it offers one_shot, long_lived" in str(caught.value)

    def test_env_and_confinement_together_are_refused(self) -> None:
        with pytest.raises(InvalidRequestError, match="not both") as caught:
            claude_agent(FakeExecutor(), env=ENV, confinement=FakeConfinement())
        assert caught.value.field == "env"

    def test_permissions_and_approvals_of_the_wrong_type_are_refused(self) -> None:
        with pytest.raises(InvalidRequestError, match="permissions"):
            Agent(FakeTransport(), permissions="bypass", approvals=DENY)  # type: ignore[arg-type]
        with pytest.raises(InvalidRequestError, match="approvals"):
            Agent(FakeTransport(), permissions=BYPASS, approvals="deny")  # type: ignore[arg-type]

    def test_what_is_neither_a_provider_name_nor_a_transport_is_refused(self) -> None:
        with pytest.raises(InvalidRequestError, match="Transport") as caught:
            Agent(42, permissions=BYPASS, approvals=DENY)  # type: ignore[arg-type]
        assert caught.value.field == "provider"

    @pytest.mark.parametrize(
        "setting",
        [
            {"executor": FakeExecutor()},
            {"env": ENV},
            {"check_timeout": 5.0},
            {"transport": TransportKind.LONG_LIVED},
        ],
    )
    def test_a_ready_transport_refuses_what_builds_a_transport(
        self, setting: dict[str, object]
    ) -> None:
        with pytest.raises(InvalidRequestError, match="ready-made") as caught:
            Agent(FakeTransport(), permissions=BYPASS, approvals=DENY, **setting)  # type: ignore[arg-type]
        assert caught.value.field == next(iter(setting))

    def test_transport_means_the_kind_of_transport_only(self) -> None:
        with pytest.raises(InvalidRequestError, match="TransportKind"):
            claude_agent(FakeExecutor(), env=ENV, transport=FakeTransport())

    def test_a_ready_transport_without_probe_reports_that_it_cannot_tell(self) -> None:
        readiness = Agent(FakeTransport(), permissions=BYPASS, approvals=DENY).probe()
        assert not readiness.ready
        assert "cannot report" in readiness.detail


class TestConfinement:
    def confined(self) -> tuple[Agent, FakeConfinement, FakeExecutor]:
        confinement = FakeConfinement(
            env={"PATH": "/usr/local/bin:/usr/bin", "HOME": "/home/agent"},
            paths=PathMap({"/host/work": "/work"}),
        )
        executor = FakeExecutor(scripted_turn(PROVIDER, text="inside", session_id="s-9"))
        agent = claude_agent(executor, confinement=confinement)
        return agent, confinement, executor

    def test_cwd_is_mapped_to_the_agents_view_and_the_confinement_supplies_env(self) -> None:
        agent, confinement, executor = self.confined()
        session = agent.start_session("/host/work/project")
        assert session.spec.cwd == "/work/project"
        session.turn("hi")
        wrapped = confinement.wraps[-1]
        assert wrapped.cwd == "/work/project"
        assert wrapped.argv[0] == PROVIDER
        assert executor.requests[-1].argv[0] == "fake-confine"
        assert executor.requests[-1].env["HOME"] == "/home/agent"

    def test_a_cwd_the_agent_cannot_see_is_refused(self) -> None:
        agent, _, _ = self.confined()
        with pytest.raises(InvalidRequestError, match="no mapped prefix"):
            agent.start_session("/elsewhere")

    def test_absolute_stdio_mcp_paths_are_mapped(self, tmp_path: Path) -> None:
        agent, _, _ = self.confined()
        server = StdioMcpServer(
            "tools",
            "/host/work/bin/server",
            args=("/host/work/data", "--verbose", "/opt/only-inside/x"),
        )
        remote = HttpMcpServer("remote", "https://example.com/mcp")
        session = agent.start_session("/host/work", mcp_servers=[server, remote])
        mapped, untouched = session.spec.mcp_servers
        assert isinstance(mapped, StdioMcpServer)
        assert mapped.command == "/work/bin/server"
        assert list(mapped.args) == ["/work/data", "--verbose", "/opt/only-inside/x"]
        assert untouched == remote

    def test_a_host_path_hidden_from_the_agent_is_refused(self, tmp_path: Path) -> None:
        agent, _, _ = self.confined()
        server = StdioMcpServer("tools", str(tmp_path))
        with pytest.raises(InvalidRequestError, match="not visible inside") as caught:
            agent.start_session("/host/work", mcp_servers=[server])
        assert caught.value.field == "mcp_servers"


def test_probe_reports_version_and_credentials() -> None:
    executor = FakeExecutor(FakeRun(stdout=["2.1.197 (Claude Code)"]))
    agent = claude_agent(executor, env={**ENV, "ANTHROPIC_API_KEY": "sk-test"})
    readiness = agent.probe()
    assert readiness.ready
    assert readiness.version == "2.1.197 (Claude Code)"
    assert readiness.authenticated is True


def test_sessions_share_the_agents_retry_policy_clock_and_ids() -> None:
    clock = FakeClock()
    transport = FakeTransport(
        [FakeOutcome.failure(FailureKind.TRANSIENT), FakeOutcome.success("fine")]
    )
    agent = Agent(
        transport,
        permissions=BYPASS,
        approvals=DENY,
        clock=clock,
        ids=SequentialIds(),
        retry=RetryPolicy(delays=(5,)),
    )
    session = agent.start_session("/work")
    turn = session.turn("go")
    assert turn.turn_id == "turn_1"
    assert turn.continuity is Continuity.CONTINUED
    assert clock.waits == [5.0]
    assert transport.opened[0].permissions == BYPASS


class Runner:
    def __init__(self, session: Session) -> None:
        self.started = threading.Event()
        self.turn: Turn | None = None
        ticket = session.prepare_turn("work")
        self.thread = threading.Thread(target=self._run, args=(session, ticket), daemon=True)
        self.thread.start()

    def _run(self, session: Session, ticket: object) -> None:
        def on_event(event: AgentEvent) -> None:
            if isinstance(event, RunStarted):
                self.started.set()

        self.turn = session.turn(ticket, on_event=on_event)  # type: ignore[arg-type]


def test_sessions_of_one_agent_take_turns_in_a_shared_conversation() -> None:
    transport = FakeTransport([FakeOutcome.hang(), FakeOutcome.success("second")])
    agent = Agent(transport, permissions=BYPASS, approvals=DENY)
    first, second = agent.start_session("/work"), agent.start_session("/work")
    first.adopt("conv-shared")
    second.adopt("conv-shared")
    one = Runner(first)
    assert one.started.wait(HANG_GUARD_S)
    two = Runner(second)
    # A window in which a second turn that did not wait in line would reach the transport.
    time.sleep(0.2)
    assert len(transport.calls) == 1
    first.interrupt()
    one.thread.join(HANG_GUARD_S)
    two.thread.join(HANG_GUARD_S)
    assert not one.thread.is_alive()
    assert not two.thread.is_alive()
    assert two.turn is not None
    assert two.turn.result.text == "second"


def test_sessions_of_different_agents_are_not_serialized() -> None:
    transport = FakeTransport([FakeOutcome.hang(), FakeOutcome.hang()])
    one_agent = Agent(transport, permissions=BYPASS, approvals=DENY)
    other_agent = Agent(transport, permissions=BYPASS, approvals=DENY)
    first, second = one_agent.start_session("/work"), other_agent.start_session("/work")
    first.adopt("conv-shared")
    second.adopt("conv-shared")
    one, two = Runner(first), Runner(second)
    assert one.started.wait(HANG_GUARD_S)
    assert two.started.wait(HANG_GUARD_S)
    first.interrupt()
    second.interrupt()
    one.thread.join(HANG_GUARD_S)
    two.thread.join(HANG_GUARD_S)
    assert not one.thread.is_alive()
    assert not two.thread.is_alive()
    assert len(transport.calls) == 2
