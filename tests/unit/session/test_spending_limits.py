"""Spending limits: a turn crossing one is stopped with a typed error, a session at one refuses."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentshim import Agent
from agentshim.core.errors import FailureKind, InvalidRequestError, SpendingLimitError
from agentshim.core.events import AgentEvent, UsageReport
from agentshim.core.limits import UnknownCost
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.usage import TokenUsage
from agentshim.session import Session
from agentshim.testing import FakeExecutor, FakeOutcome, FakeTransport, scripted_turn
from agentshim.testing import acp as fake_acp
from agentshim.testing.claude_stream import ClaudePeerTurn, ClaudeStreamPeers
from agentshim.testing.codex_app_server import CodexAppServerPeers, CodexPeerTurn
from agentshim.testing.pi_rpc import PiPeerTurn, PiRpcPeers
from tests.unit.session.helpers import stream_agent

BYPASS = NativePermissions.bypass()
ENV = {"PATH": "/usr/bin"}
SLEEP = {"command": "sleep 30"}
ACP = [
    ("gemini", fake_acp.GEMINI_QUIRKS),
    ("opencode", fake_acp.OPENCODE_QUIRKS),
    ("copilot", fake_acp.COPILOT_QUIRKS),
]


def fake_agent(outcomes: list[FakeOutcome], **limits: Any) -> tuple[Agent, FakeTransport]:
    transport = FakeTransport(outcomes)
    agent = Agent(transport, permissions=BYPASS, approvals=ApprovalPolicy.DENY, **limits)
    return agent, transport


def used(tokens: int) -> FakeOutcome:
    return FakeOutcome.success(f"used {tokens}", usage=TokenUsage(input_tokens=tokens))


class Reports:
    def __init__(self) -> None:
        self.usage: list[UsageReport] = []

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, UsageReport):
            self.usage.append(event)


class Guard:
    """Starts the sessions whose first turn must stop at a spending limit."""

    def __init__(self) -> None:
        self.sessions: list[Session] = []

    def spend(self, agent: Agent, **turn_options: Any) -> tuple[Session, SpendingLimitError]:
        """Starts a session and runs its turn "spend", which must fail with SpendingLimitError."""
        session = agent.start_session()
        self.sessions.append(session)
        with pytest.raises(SpendingLimitError) as raised:
            session.turn("spend", **turn_options)
        return session, raised.value

    def interrupt_all(self) -> None:
        for session in self.sessions:
            session.interrupt()


@pytest.fixture
def safety() -> Iterator[Guard]:
    """Interrupts a session whose limit failed to stop a hanging turn, so the test fails."""
    guard = Guard()
    timer = threading.Timer(60.0, guard.interrupt_all)
    timer.start()
    yield guard
    timer.cancel()
    for session in guard.sessions:
        session.close()


class TestSessionRules:
    def test_a_turn_past_max_tokens_raises_with_what_it_spent_and_keeps_the_conversation(
        self,
    ) -> None:
        agent, transport = fake_agent([used(500), used(10)], max_tokens=100)
        session = agent.start_session()
        with pytest.raises(SpendingLimitError) as raised:
            session.turn("big")
        error = raised.value
        assert (error.limit_name, error.limit, error.spent) == ("max_tokens", 100, 500)
        assert error.kind is FailureKind.USAGE_LIMIT
        assert error.result is not None
        assert error.result.text == "used 500"
        assert error.session_id == session.session_id is not None
        assert "max_tokens" in str(error)
        second = session.turn("small")
        assert transport.calls[1].resumed, "the conversation was not kept"
        assert second.session_id == error.session_id

    def test_a_session_at_its_total_refuses_the_next_turn_before_it_starts(self) -> None:
        agent, transport = fake_agent([used(60), used(60), used(1)], max_session_tokens=100)
        session = agent.start_session()
        session.turn("one")
        with pytest.raises(SpendingLimitError) as crossed:
            session.turn("two")
        assert (crossed.value.limit_name, crossed.value.spent) == ("max_session_tokens", 120)
        with pytest.raises(SpendingLimitError) as refused:
            session.turn("three")
        assert refused.value.result is None
        assert "no turn was started" in str(refused.value)
        assert len(transport.calls) == 2, "the refused turn ran"
        assert session.spent.tokens == 120

    def test_a_turn_may_override_the_per_turn_limits(self) -> None:
        agent, _ = fake_agent([used(500), used(500)], max_tokens=100)
        session = agent.start_session()
        assert session.turn("big", max_tokens=1000).result.text == "used 500"
        with pytest.raises(SpendingLimitError):
            session.turn("big again")

    def test_start_session_overrides_the_agent_limits(self) -> None:
        agent, _ = fake_agent([used(500)], max_tokens=100)
        session = agent.start_session(max_tokens=1000)
        assert session.turn("big").result.text == "used 500"

    def test_unknown_cost_is_refused_by_default_and_allowed_on_request(self) -> None:
        agent, _ = fake_agent([used(5), used(5)], max_cost_usd=1.0)
        with pytest.raises(SpendingLimitError) as refused:
            agent.start_session().turn("unpriced")
        assert refused.value.spent is None
        assert "unknown cost" in str(refused.value)
        allowing = agent.start_session(unknown_cost=UnknownCost.ALLOW)
        assert allowing.turn("unpriced").result.text == "used 5"

    def test_without_limits_nothing_is_counted_against_the_turn(self) -> None:
        agent, _ = fake_agent([used(10**9)])
        assert agent.start_session().turn("huge").result.text == f"used {10**9}"

    @pytest.mark.parametrize(
        "limits",
        [
            {"max_cost_usd": -1.0},
            {"max_tokens": 1.5},
            {"max_session_cost_usd": float("nan")},
            {"max_session_tokens": True},
            {"unknown_cost": "allow"},
        ],
    )
    def test_an_invalid_limit_is_a_typed_error(self, limits: dict[str, Any]) -> None:
        with pytest.raises(InvalidRequestError):
            fake_agent([], **limits)


class TestLiveTransports:
    """Transports that report usage while the turn runs: the turn is interrupted at once."""

    @pytest.mark.parametrize(
        ("provider", "peers", "options", "spent"),
        [
            pytest.param(
                "claude",
                lambda: ClaudeStreamPeers(
                    [
                        ClaudePeerTurn(tool="Bash", tool_input=SLEEP, hang=True),
                        ClaudePeerTurn("next"),
                    ]
                ),
                {"max_cost_usd": 0.001},
                0.001525,
                id="claude-stream",
            ),
            pytest.param(
                "codex",
                lambda: CodexAppServerPeers(
                    [CodexPeerTurn(command="sleep 30", hang=True), CodexPeerTurn("next")]
                ),
                {"model": "gpt-5.1-codex", "max_cost_usd": 0.00001},
                0.000225,
                id="codex-app-server",
            ),
        ],
    )
    def test_a_hanging_turn_stops_at_the_report_that_crosses_the_limit(
        self,
        provider: str,
        peers: Callable[[], object],
        options: dict[str, Any],
        spent: float,
        safety: Guard,
    ) -> None:
        agent, executor = stream_agent(provider, peers(), **options)
        session, error = safety.spend(agent)
        assert error.result is not None
        assert error.result.interrupted
        # The first call report crossed the limit; the turn stopped there.
        assert error.spent == pytest.approx(spent)
        assert session.turn("go on", max_cost_usd=1.0).result.text == "next"
        assert len(executor.spawned) == 1, "the interrupt was not in band"

    def test_pi_rpc(self, safety: Guard) -> None:
        peers = PiRpcPeers([PiPeerTurn("costly", cost_usd=0.002), PiPeerTurn("next")])
        agent, _ = stream_agent("pi", peers, max_cost_usd=0.001)
        reports = Reports()
        session, error = safety.spend(agent, on_event=reports)
        assert error.spent == pytest.approx(0.002)
        costs = [r.cost_usd for r in reports.usage]
        assert costs.index(0.002) >= len(costs) - 2, "the turn ran past the crossing report"
        assert session.turn("go on", max_cost_usd=1.0).result.text == "next"


class TestEndReportingTransports:
    """Transports that report usage when the turn ends: it is stopped at that report."""

    @pytest.mark.parametrize(("provider", "quirks"), ACP)
    def test_acp(self, provider: str, quirks: fake_acp.AcpQuirks, safety: Guard) -> None:
        peers = fake_acp.AcpPeers(
            [fake_acp.AcpPeerTurn("spent", input_tokens=5000), fake_acp.AcpPeerTurn("next")],
            quirks=quirks,
        )
        agent, executor = stream_agent(provider, peers, max_tokens=1000)
        session, error = safety.spend(agent)
        assert error.result is not None
        assert error.result.text == "spent"
        assert error.spent is not None
        assert error.spent >= 5000
        assert session.turn("go on", max_tokens=10**6).result.text == "next"
        assert len(executor.spawned) == 1

    @pytest.mark.parametrize(("provider", "quirks"), ACP)
    def test_acp_cost_limit_on_an_unpriced_model(
        self, provider: str, quirks: fake_acp.AcpQuirks, safety: Guard
    ) -> None:
        peers = fake_acp.AcpPeers([fake_acp.AcpPeerTurn("spent", input_tokens=5000)], quirks=quirks)
        agent, _ = stream_agent(provider, peers, max_cost_usd=0.001)
        _, error = safety.spend(agent)
        # None of these CLIs prices its models over ACP: unknown cost, refused by default.
        assert error.spent is None
        assert error.limit_name == "max_cost_usd"

    def test_one_shot_scripted_turn(self) -> None:
        fake = FakeExecutor(
            [
                scripted_turn("claude", text="spent", usage=TokenUsage(input_tokens=400_000)),
                scripted_turn("claude", text="next"),
            ],
            binaries={"claude": "/usr/bin/claude"},
        )
        agent = Agent(
            "claude",
            executor=fake,
            env=ENV,
            permissions=BYPASS,
            approvals=ApprovalPolicy.DENY,
            max_cost_usd=0.5,
        )
        session = agent.start_session()
        with pytest.raises(SpendingLimitError) as raised:
            session.turn("spend")
        assert raised.value.spent is not None
        assert raised.value.spent > 0.5
        assert session.turn("go on", max_cost_usd=10.0).result.text == "next"


def test_claude_tui_stops_at_the_turn_report(tmp_path: Path) -> None:
    from agentshim.execution import HostCommandExecutor
    from agentshim.providers.claude import ClaudeProvider
    from agentshim.providers.claude.tui_transport import ClaudeTuiTransport
    from agentshim.testing.claude_tui import FakeTuiScript, FakeTuiTurn, install_fake_claude_tui
    from agentshim.transport.installed import InstalledCli

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    script = FakeTuiScript([FakeTuiTurn("spent", input_tokens=5000), FakeTuiTurn("next")])
    binary = install_fake_claude_tui(tmp_path / "bin", script)
    context = InstalledCli(
        provider=ClaudeProvider(),
        executor=HostCommandExecutor(),
        binary_path=str(binary),
        env={"PATH": "/usr/bin:/bin", "HOME": str(home)},
    )
    transport = ClaudeTuiTransport(
        context,
        scratch_cwd=str(tmp_path / "scratch"),
        first_paste_delay=0.0,
        submit_retry_after=0.5,
        transcript_wait=1.0,
    )
    agent = Agent(transport, permissions=BYPASS, approvals=ApprovalPolicy.DENY)
    with agent.start_session(str(work), max_tokens=1000) as session:
        with pytest.raises(SpendingLimitError) as raised:
            session.turn("spend")
        assert raised.value.result is not None
        assert raised.value.result.text == "spent"
        assert raised.value.spent is not None
        assert raised.value.spent >= 5000
        assert session.turn("go on", max_tokens=10**6).result.text == "next"
