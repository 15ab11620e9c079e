"""The contract every long-lived conversation keeps when its CLI misbehaves.

A long-lived transport keeps one CLI process across turns, so its failures are its own: the
process dies in a turn or between turns, falls silent, overruns, ignores an interrupt, prints
lines that are not its protocol, or asks for an approval its handler cannot give.
:class:`LongLivedConversationContract` runs one scenario for each against any transport,
on top of the :class:`~agentshim.testing.session_contracts.SteerableConversationContract`
and :class:`~agentshim.testing.session_contracts.TransportContract` it inherits, so one
subclass per transport runs everything::

    class TestMyTransport(FakePeerContract):
        capabilities = LongLivedCapability.ALL

        def make_peers(self, turns):            # the protocol fake, playing the contract's turns
            return MyPeers(MyTurn(t.text, hang=t.hang, ask=t.ask) for t in turns)

        def make_fake_transport(self, executor, options):
            return MyTransport(context_on(executor), **options)

:class:`FakePeerContract` drives the transport's CLI through
:class:`~agentshim.testing.FakeExecutor` and a peer fake; a suite on a real CLI subclasses
:class:`LongLivedConversationContract` and implements its hooks (``make_transport``,
``kill_cli``, ``wait_for_prompt``, ``cli_processes``, ``deafen_cli``) itself. A transport or rig
that cannot play a scenario leaves its :class:`LongLivedCapability` out of ``capabilities``;
the scenario is then skipped, saying which capability is missing.

This module needs pytest.
"""

from __future__ import annotations

import enum
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from agentshim.core.approvals import (
    ApprovalDecision,
    ApprovalRequest,
    Approvals,
    approvals_value,
)
from agentshim.core.conversation import (
    Conversation,
    ConversationSpec,
    SteerableConversation,
    Transport,
)
from agentshim.core.errors import (
    CliDiedError,
    CliTimeoutError,
    NoRunningTurnError,
    TurnCancelledError,
    TurnStalledError,
)
from agentshim.core.events import AgentEvent, ApprovalAnswered, ToolResult
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.session_policy import Continuity
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.execution.process import SpawnRequest, StdoutLine
from agentshim.session import Session
from agentshim.transport.conversation import ProcessOptions

from .executor import FakeExecutor
from .process import FakePeer, PeerOutput
from .recording import RecordingEventHandler
from .session_contracts import ContractTurn, SteerableConversationContract, TransportContract

__all__ = [
    "FOREIGN_LINES",
    "PROMPT_MARK",
    "FakePeerContract",
    "LongLivedCapability",
    "LongLivedConversationContract",
]


class LongLivedCapability(enum.Flag):
    """What a transport, on the rig that drives it, can play of the contract's scenarios."""

    NONE = 0
    STEER = enum.auto()
    """Its conversations take messages mid-turn (they are SteerableConversations)."""
    APPROVALS = enum.auto()
    """Its CLI asks the caller before running a tool, and the rig can script such a turn."""
    FOREIGN_LINES = enum.auto()
    """The rig can make the CLI print lines that are not its protocol."""
    DEAFEN = enum.auto()
    """The rig can make the CLI stop answering anything written to it, mid-turn."""
    ALL = STEER | APPROVALS | FOREIGN_LINES | DEAFEN


FOREIGN_LINES: tuple[str, ...] = (
    "garbage {not json",
    '{"type": "assistant", "message": {"content": [{"ty',
    "\x00\x01\x7f binary \ufffd\ufffd \x1b[31mred\x1b[0m",
    "[1, 2, 3]",
    "null",
    '"a bare string"',
    '{"jsonrpc": "2.0", "id": "no-such-request", "result": {}}',
    '{"type": ' + '"' + "x" * 1_000_000 + '"}',
)
"""Lines a broken or chatty CLI prints among its frames: not JSON, a frame cut in two, control
bytes, JSON that is no frame, an answer to no request, and a one-megabyte line."""

PROMPT_MARK = "contract-prompt-d6f1"
"""A word in every prompt of the contract's own scenarios, so a rig can tell the prompt reached
the CLI (a fake reads it on stdin; a live rig's model server sees it in a request)."""
_APPROVAL_WAIT_S = 0.2
_SHORT_S = 0.2


def _spec(
    *,
    resume_session_id: str | None = None,
    stall_timeout: float | None = None,
    approvals: Approvals = ApprovalPolicy.DENY,
    approval_timeout: float = 60.0,
    permissions: NativePermissions | None = None,
) -> ConversationSpec:
    return ConversationSpec(
        permissions=permissions or NativePermissions.bypass(),
        approvals=approvals,
        resume_session_id=resume_session_id,
        stall_timeout=stall_timeout,
        approval_timeout=approval_timeout,
    )


class LongLivedConversationContract(SteerableConversationContract, TransportContract):
    """What a long-lived conversation does when its CLI fails, and when it is closed.

    Its CLI dies, stalls, overruns, goes deaf, prints garbage, or asks for approvals it
    cannot get.

    A subclass implements :meth:`make_transport` (with ``options`` for the transport's own
    graces), :meth:`kill_cli`, :meth:`wait_for_prompt` and :meth:`cli_processes`, and
    :meth:`deafen_cli` / :meth:`print_foreign_lines` when it declares those capabilities.
    """

    capabilities: ClassVar[LongLivedCapability] = LongLivedCapability.ALL
    """The scenarios this transport and rig can play; the others are skipped, saying why."""

    approval_permissions: ClassVar[NativePermissions] = NativePermissions.workspace_write()
    """The permissions under which the CLI asks before a write (the approval scenarios)."""

    rig_in_process: ClassVar[bool] = False
    """Whether the rig keeps threads and sockets of its own in this process past a scenario.

    A live suite's model server holds a hung model request open for its whole hang. The close
    scenario then checks the CLI processes and temp files, not this process's threads and
    file descriptors."""

    short_s: ClassVar[float] = _SHORT_S
    """The stall window, turn budget and interrupt grace the scenarios set: short, so they end
    soon, and long enough for the CLI to start."""

    # -- what a subclass supplies ---------------------------------------------------------------

    def make_transport(
        self, turns: Sequence[ContractTurn], options: ProcessOptions | None = None
    ) -> Transport:
        """A transport whose turns play ``turns``, made with ``options`` (graces, budgets)."""
        raise NotImplementedError

    def kill_cli(self) -> None:
        """SIGKILL the CLI process the last opened conversation runs on, as an operator would."""
        raise NotImplementedError

    def wait_for_prompt(self, timeout: float) -> bool:
        """Wait until the CLI got the prompt of the turn running now; False after ``timeout``.

        A rig that sees the prompt in events rather than at the CLI can instead set
        ``self.prompt_reached`` from :meth:`saw_event`.
        """
        return self.prompt_reached.wait(timeout)

    def saw_event(self, event: AgentEvent) -> None:
        """Every event of a scenario's turns passes here first (by default, unused)."""
        del event

    def cli_processes(self) -> int:
        """How many CLI processes this test started are still running."""
        raise NotImplementedError

    def deafen_cli(self) -> None:
        """Make the running CLI ignore everything written to it from now on (DEAFEN)."""
        raise NotImplementedError

    def print_foreign_lines(self, lines: Sequence[str]) -> None:
        """Make the CLI print ``lines`` when it reads the next prompt (FOREIGN_LINES)."""
        raise NotImplementedError

    # -- the plumbing the scenarios share ---------------------------------------------------------

    prompt_reached: threading.Event

    @pytest.fixture(autouse=True)
    def _long_lived_state(self) -> Iterator[None]:
        self.prompt_reached = threading.Event()
        self._opened: list[Conversation] = []
        yield
        for conversation in self._opened:
            conversation.close()

    def make_conversation(
        self, turns: Sequence[ContractTurn], *, resume_session_id: str | None = None
    ) -> Conversation:
        """The inherited conversation contracts run on :meth:`make_transport`'s conversations."""
        return self._open(self.make_transport(turns), _spec(resume_session_id=resume_session_id))

    def kill_idle_process(self, conversation: Conversation) -> bool:
        """The inherited idle-death scenario kills with :meth:`kill_cli`."""
        del conversation
        self.kill_cli()
        return True

    def _steerable(self, turns: Sequence[ContractTurn]) -> SteerableConversation:
        self._need(LongLivedCapability.STEER)
        return super()._steerable(turns)

    def _need(self, capability: LongLivedCapability) -> None:
        if capability not in self.capabilities:
            pytest.skip(f"{type(self).__name__} does not declare {capability.name}")

    def _open(self, transport: Transport, spec: ConversationSpec) -> Conversation:
        conversation = transport.open(spec)
        self._opened.append(conversation)
        return conversation

    def _events(self) -> RecordingEventHandler:
        return _Observed(self.saw_event)

    def _turn(
        self,
        conversation: Conversation,
        *,
        timeout: float | None = None,
        then: Callable[[], None] | None = None,
    ) -> tuple[TurnResult, RecordingEventHandler]:
        """Run one turn; ``then`` runs on another thread once the CLI got its prompt."""
        self.prompt_reached.clear()
        events = self._events()
        helper = None
        failures: list[BaseException] = []
        if then is not None:
            act = then

            def when_prompted() -> None:
                try:
                    assert self.wait_for_prompt(self.io_timeout), "the prompt never reached the CLI"
                    act()
                except BaseException as error:  # reported on the test's thread
                    failures.append(error)

            helper = threading.Thread(target=when_prompted, name="contract-helper")
            helper.start()
        try:
            request = TurnRequest(f"{PROMPT_MARK} go", timeout=timeout)
            return conversation.turn(request, events), events
        finally:
            if helper is not None:
                helper.join(self.io_timeout)
                assert not failures, failures

    # -- the scenarios ------------------------------------------------------------------------------

    def test_a_cli_killed_mid_turn_is_cli_died_and_the_next_turn_resumes(self) -> None:
        """Killed mid-turn: CliDiedError naming the conversation; the next turn resumes it."""
        transport = self.make_transport(
            [ContractTurn("one"), ContractTurn(hang=True), ContractTurn("back")]
        )
        conversation = self._open(transport, _spec())
        first, _ = self._turn(conversation)
        with pytest.raises(CliDiedError) as died:
            self._turn(conversation, then=self.kill_cli)
        assert died.value.session_id == first.session_id
        assert conversation.session_id == first.session_id
        after, _ = self._turn(conversation)
        assert after.text == "back"
        assert after.resumed
        assert after.respawned
        assert after.session_id == first.session_id

    def test_a_cli_killed_while_idle_costs_no_turn_and_the_session_says_resumed(self) -> None:
        """Killed between turns: the next turn respawns it, and the Session says RESUMED."""
        transport = self.make_transport([ContractTurn("one"), ContractTurn("two")])
        session = Session(transport, _spec())
        try:
            first = session.turn(f"{PROMPT_MARK} 1")
            self.kill_cli()
            second = session.turn(f"{PROMPT_MARK} 2")
        finally:
            session.close()
        assert second.result.text == "two"
        assert second.result.respawned
        assert second.continuity is Continuity.RESUMED
        assert second.result.session_id == first.result.session_id

    def test_a_silent_turn_stalls_and_the_conversation_takes_the_next(self) -> None:
        """Silent past its stall window: TurnStalledError saying how long; the next turn runs."""
        transport = self.make_transport([ContractTurn(hang=True), ContractTurn("ok")])
        conversation = self._open(transport, _spec(stall_timeout=self.short_s))
        with pytest.raises(TurnStalledError) as stalled:
            self._turn(conversation)
        assert stalled.value.timeout == self.short_s
        assert stalled.value.silent_s is not None
        assert stalled.value.silent_s >= self.short_s
        after, _ = self._turn(conversation)
        assert after.text == "ok"

    def test_a_turn_over_its_budget_is_a_timeout_and_the_conversation_takes_the_next(
        self,
    ) -> None:
        """Past its budget: CliTimeoutError; the conversation takes the next turn."""
        transport = self.make_transport([ContractTurn(hang=True), ContractTurn("ok")])
        conversation = self._open(transport, _spec())
        with pytest.raises(CliTimeoutError):
            self._turn(conversation, timeout=self.short_s)
        after, _ = self._turn(conversation)
        assert after.text == "ok"

    def test_an_interrupt_nobody_answers_kills_the_cli_and_the_next_turn_resumes(self) -> None:
        """An interrupt the CLI ignores: after the grace it is killed; the next turn resumes.

        The next turn resumes the conversation in a new process.
        """
        self._need(LongLivedCapability.DEAFEN)
        transport = self.make_transport(
            [ContractTurn("one"), ContractTurn(hang=True), ContractTurn("back")],
            ProcessOptions(interrupt_grace=self.short_s),
        )
        conversation = self._open(transport, _spec())
        first, _ = self._turn(conversation)

        def deafen_then_interrupt() -> None:
            self.deafen_cli()
            conversation.interrupt()

        events = RecordingEventHandler()
        try:
            interrupted, events = self._turn(conversation, then=deafen_then_interrupt)
            assert interrupted.interrupted
        except (TurnCancelledError, CliDiedError):
            pass
        assert self.cli_processes() == 0, "the CLI that ignored the interrupt still runs"
        after, _ = self._turn(conversation)
        assert after.text == "back"
        assert after.respawned
        assert after.session_id == first.session_id
        del events

    def test_steer_is_refused_before_during_start_and_after_a_turn(self) -> None:
        """Steer with no turn running is NoRunningTurnError, and leaves the conversation whole."""
        self._need(LongLivedCapability.STEER)
        conversation = self._steerable([ContractTurn("one"), ContractTurn("two")])
        self._opened.append(conversation)
        with pytest.raises(NoRunningTurnError):
            conversation.steer("before")
        first, _ = self._turn(conversation)
        with pytest.raises(NoRunningTurnError):
            conversation.steer("between")
        second, _ = self._turn(conversation)
        assert (first.text, second.text) == ("one", "two")

    def test_lines_outside_the_protocol_cost_only_themselves(self) -> None:
        """Lines outside the protocol cost only themselves: the turns still end with their answers.

        Garbage, a cut frame, control bytes, JSON that is no frame, a huge line.
        """
        self._need(LongLivedCapability.FOREIGN_LINES)
        transport = self.make_transport([ContractTurn("clean"), ContractTurn("still clean")])
        conversation = self._open(transport, _spec())
        self.print_foreign_lines(FOREIGN_LINES)
        result, _ = self._turn(conversation)
        assert result.text == "clean"
        after, _ = self._turn(conversation)
        assert after.text == "still clean"

    def _approval_turn(
        self,
        handler: Callable[[ApprovalRequest], ApprovalDecision],
        approval_timeout: float = 60.0,
    ) -> RecordingEventHandler:
        self._need(LongLivedCapability.APPROVALS)
        transport = self.make_transport([ContractTurn("asked", ask=True), ContractTurn("next")])
        conversation = self._open(
            transport,
            _spec(
                approvals=approvals_value("contract", handler),
                permissions=self.approval_permissions,
                approval_timeout=approval_timeout,
            ),
        )
        events = self._events()
        try:
            conversation.turn(TurnRequest(f"{PROMPT_MARK} write"), events)
        except TurnCancelledError:
            pass
        after, _ = self._turn(conversation)
        assert after.text == "next", "the conversation did not survive the refused approval"
        return events

    def _assert_failed_closed(self, events: RecordingEventHandler, decided_by: str) -> None:
        answers = events.of_type(ApprovalAnswered)
        assert answers, "the CLI asked, but no answer was reported"
        assert all(not answer.allowed for answer in answers)
        assert {answer.decided_by for answer in answers} == {decided_by}
        ran = [r for r in events.of_type(ToolResult) if not r.failed and not r.stderr]
        assert ran == [], f"a tool ran although its approval failed: {ran}"

    def test_an_approval_handler_that_raises_denies(self) -> None:
        """A handler that raises is a reported deny: the tool never runs."""

        def broken(request: ApprovalRequest) -> ApprovalDecision:
            raise RuntimeError("handler bug")

        events = self._approval_turn(broken)
        self._assert_failed_closed(events, "handler_error")
        assert "handler bug" in events.of_type(ApprovalAnswered)[0].message

    def test_an_approval_handler_that_answers_too_late_denies(self) -> None:
        """A handler that answers after ``approval_timeout`` is a reported deny."""
        late = threading.Event()

        def slow(request: ApprovalRequest) -> ApprovalDecision:
            late.wait(_APPROVAL_WAIT_S)  # nothing sets it: the answer comes after the timeout
            return ApprovalDecision.allow()

        events = self._approval_turn(slow, approval_timeout=_APPROVAL_WAIT_S / 4)
        self._assert_failed_closed(events, "handler_timeout")

    def test_close_leaves_no_process_thread_fd_or_temp_file(self, tmp_path: Path) -> None:
        """After close, nothing the conversation started is left.

        No CLI process, no thread, no open file descriptor, no temp file.
        """
        temp = tmp_path / "tmp"
        temp.mkdir()
        saved = tempfile.tempdir
        tempfile.tempdir = str(temp)
        threads = set(threading.enumerate())
        fds = _open_fds()
        try:
            transport = self.make_transport([ContractTurn("one"), ContractTurn(hang=True)])
            conversation = self._open(transport, _spec())
            self._turn(conversation)
            try:
                self._turn(conversation, then=conversation.close)
            except TurnCancelledError:
                pass
            conversation.close()
        finally:
            tempfile.tempdir = saved
        assert self.cli_processes() == 0
        assert list(temp.iterdir()) == []
        shutil.rmtree(temp)
        if self.rig_in_process:
            return
        started = [t for t in threading.enumerate() if t not in threads]
        for thread in started:
            thread.join(self.io_timeout)
        assert [t.name for t in started if t.is_alive()] == []
        assert fds is None or _open_fds() == fds


class _Observed(RecordingEventHandler):
    """A recorder that shows every event to ``observe`` first."""

    def __init__(self, observe: Callable[[AgentEvent], None]) -> None:
        super().__init__()
        self._observe = observe

    def on_event(self, event: AgentEvent) -> None:
        self._observe(event)
        super().on_event(event)


def _open_fds() -> set[str] | None:
    """The process's open file descriptors, where the OS lists them."""
    try:
        return set(os.listdir("/proc/self/fd"))
    except OSError:
        return None


@dataclass
class _Watch:
    """What the contract asks of the fake CLIs of one test."""

    prompt_reached: threading.Event
    foreign: tuple[str, ...] = ()


class _WatchedPeer(FakePeer):
    """A protocol fake, watched: it reports the prompt, prints foreign lines, goes deaf.

    The foreign lines come before its answer to the prompt.
    """

    def __init__(self, inner: FakePeer, watch: _Watch) -> None:
        self.inner = inner
        self.watch = watch
        self.deaf = False

    def on_start(self) -> Iterable[PeerOutput]:
        return self.inner.on_start()

    def on_stdin(self, line: str) -> Iterable[PeerOutput]:
        if self.deaf:
            return ()
        out = list(self.inner.on_stdin(line))
        if PROMPT_MARK in line:
            foreign = [StdoutLine(text + "\n") for text in self.watch.foreign]
            self.watch.foreign = ()
            out = [*foreign, *out]
            self.watch.prompt_reached.set()
        return out

    def on_stdin_closed(self) -> Iterable[PeerOutput]:
        return () if self.deaf else self.inner.on_stdin_closed()

    def on_terminate(self) -> Iterable[PeerOutput]:
        return self.inner.on_terminate()


class FakePeerContract(LongLivedConversationContract):
    """The long-lived contract on a transport whose CLI is a protocol fake.

    A subclass gives :meth:`make_peers` (its fake, playing the contract's turns) and
    :meth:`make_fake_transport` (its transport on a FakeExecutor); the rest is done here.
    """

    def make_peers(self, turns: Sequence[ContractTurn]) -> Callable[[SpawnRequest], FakePeer]:
        """The transport's peer fake, answering ``turns`` in order across its processes."""
        raise NotImplementedError

    def make_fake_transport(self, executor: FakeExecutor, options: ProcessOptions) -> Transport:
        """The transport under test, spawning its CLI on ``executor``."""
        raise NotImplementedError

    def make_transport(
        self, turns: Sequence[ContractTurn], options: ProcessOptions | None = None
    ) -> Transport:
        """The transport on a FakeExecutor whose every process is a watched peer fake."""
        peers = self.make_peers(turns)
        self._watch = _Watch(self.prompt_reached)
        self._peers: list[_WatchedPeer] = []

        def spawn(request: SpawnRequest) -> FakePeer:
            self._peers.append(_WatchedPeer(peers(request), self._watch))
            return self._peers[-1]

        self.executor = FakeExecutor(peers=spawn)
        return self.make_fake_transport(self.executor, options or ProcessOptions())

    def kill_cli(self) -> None:
        """Kill the newest fake process."""
        self.executor.processes[-1].kill()

    def cli_processes(self) -> int:
        """The fake processes not yet ended."""
        return sum(1 for process in self.executor.processes if process.returncode is None)

    def deafen_cli(self) -> None:
        """The newest fake process reads nothing more."""
        self._peers[-1].deaf = True

    def print_foreign_lines(self, lines: Sequence[str]) -> None:
        """The next fake to read a prompt prints ``lines`` first."""
        self._watch.foreign = tuple(lines)
