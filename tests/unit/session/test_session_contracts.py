"""The Conversation and Transport contracts, run against the fakes and the one-shot transport."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import cast

import pytest

from agentshim.core.conversation import Conversation, ConversationSpec, Transport, TurnStop
from agentshim.core.errors import TurnCancelledError
from agentshim.core.events import AgentEvent
from agentshim.core.permissions import ApprovalPolicy, NativeMode, NativePermissions
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.oneshot import OneShotTransport
from agentshim.providers import get_plugin
from agentshim.testing.conversation import FAKE_PROFILE, FakeOutcome, FakeTransport
from agentshim.testing.session_contracts import (
    ContractTurn,
    ConversationContract,
    SteerableConversationContract,
    TransportContract,
)

from .scripted_claude import PROVIDER, ScriptedClaude


def fake_outcome(turn: ContractTurn) -> FakeOutcome:
    if turn.hang:
        return FakeOutcome.hang(limit=10)
    return FakeOutcome.success(turn.text)


def spec(resume_session_id: str | None) -> ConversationSpec:
    return ConversationSpec(
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        resume_session_id=resume_session_id,
    )


class TestFakeConversation(ConversationContract):
    def make_conversation(
        self, turns: Sequence[ContractTurn], *, resume_session_id: str | None = None
    ) -> Conversation:
        return FakeTransport([fake_outcome(t) for t in turns]).open(spec(resume_session_id))


class TestFakeSteerableConversation(SteerableConversationContract):
    def make_conversation(
        self, turns: Sequence[ContractTurn], *, resume_session_id: str | None = None
    ) -> Conversation:
        transport = FakeTransport([fake_outcome(t) for t in turns], steerable=True)
        return transport.open(spec(resume_session_id))


class TestOneShotConversation(ConversationContract):
    def make_conversation(
        self, turns: Sequence[ContractTurn], *, resume_session_id: str | None = None
    ) -> Conversation:
        return OneShotTransport(ScriptedClaude(turns).cli()).open(spec(resume_session_id))


class TestFakeTransport(TransportContract):
    def make_transport(self, turns: Sequence[ContractTurn]) -> Transport:
        return FakeTransport([fake_outcome(t) for t in turns])


class TestFakeTransportWithFewerModes(TransportContract):
    def make_transport(self, turns: Sequence[ContractTurn]) -> Transport:
        profile = replace(FAKE_PROFILE, native_permission_modes=(NativeMode.BYPASS,))
        return FakeTransport([fake_outcome(t) for t in turns], profile=profile)

    def unsupported_permissions(self) -> NativePermissions | None:
        return NativePermissions.workspace_write(["/tmp"])


class TestOneShotTransport(TransportContract):
    def make_transport(self, turns: Sequence[ContractTurn]) -> Transport:
        return OneShotTransport(ScriptedClaude(turns).cli())

    def unsupported_permissions(self) -> NativePermissions | None:
        return NativePermissions.read_only()


class TestLazyOneShotTransport(TransportContract):
    def make_transport(self, turns: Sequence[ContractTurn]) -> Transport:
        scripted = ScriptedClaude(turns)
        return OneShotTransport(scripted.cli, profile=get_plugin(PROVIDER).profile)

    def unsupported_permissions(self) -> NativePermissions | None:
        return NativePermissions.read_only()


class _RunsAnyway:
    """A conversation that runs a stopped turn (using up its answer) and only then refuses it."""

    def __init__(self, inner: Conversation) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def turn(
        self, request: TurnRequest, emit: Callable[[AgentEvent], None], stop: TurnStop | None = None
    ) -> TurnResult:
        early = stop is not None and stop.is_set()
        result = self._inner.turn(request, emit, None)
        if early:
            raise TurnCancelledError("cancelled, after running anyway")
        return result


class _RunsAnywayContract(ConversationContract):
    def make_conversation(
        self, turns: Sequence[ContractTurn], *, resume_session_id: str | None = None
    ) -> Conversation:
        inner = FakeTransport([fake_outcome(t) for t in turns]).open(spec(resume_session_id))
        return cast("Conversation", _RunsAnyway(inner))


def test_the_contract_catches_a_conversation_that_runs_a_turn_stopped_before_it_began() -> None:
    with pytest.raises(AssertionError, match="the stopped turn ran"):
        _RunsAnywayContract().test_a_stop_requested_before_the_turn_means_it_never_runs()
