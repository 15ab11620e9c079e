from __future__ import annotations

import signal
import threading
from collections.abc import Iterable

import pytest

from agentshim.core.errors import ProcessClosedError
from agentshim.execution import ProcessExited, StderrLine, StdoutLine
from agentshim.testing._liveness import returns_within
from agentshim.testing.contracts import ProcessContract
from agentshim.testing.process import (
    EchoPeer,
    FakePeer,
    FakeProcess,
    GateMarker,
    PeerOutput,
    ReplayGates,
    SilentPeer,
)


class StubbornPeer(FakePeer):
    def on_terminate(self) -> Iterable[PeerOutput]:
        return ()


class TestFakeProcessContract(ProcessContract):
    def make_echo_process(self, exit_code: int = 0) -> FakeProcess:
        return FakeProcess(EchoPeer(exit_code=exit_code))

    def make_silent_process(self) -> FakeProcess:
        return FakeProcess(SilentPeer())

    def make_stubborn_process(self) -> FakeProcess:
        return FakeProcess(StubbornPeer())


class RequestReplyPeer(FakePeer):
    """Answers each request line with a reply naming its id, as a protocol fake would."""

    def on_start(self) -> Iterable[PeerOutput]:
        return (StderrLine("booting\n"), StdoutLine("ready\n"))

    def on_stdin(self, line: str) -> Iterable[PeerOutput]:
        request_id = line.strip()
        if request_id == "quit":
            return (StdoutLine("bye\n"), ProcessExited(5), StdoutLine("never\n"))
        return (StdoutLine(f"reply {request_id}\n"),)


class TestPeers:
    def test_the_peer_answers_start_and_each_request(self) -> None:
        process = FakeProcess(RequestReplyPeer())
        assert process.next_output(0) == StderrLine("booting\n")
        assert process.next_output(0) == StdoutLine("ready\n")
        process.write("7\n8\n")
        assert process.next_output(0) == StdoutLine("reply 7\n")
        assert process.next_output(0) == StdoutLine("reply 8\n")
        assert process.written == ["7\n8\n"]

    def test_lines_are_handed_over_only_when_complete(self) -> None:
        process = FakeProcess(RequestReplyPeer())
        process.next_output(0)
        process.next_output(0)
        process.write("4")
        assert process.next_output(0) is None
        process.write("2\n")
        assert process.next_output(0) == StdoutLine("reply 42\n")

    def test_output_after_the_exit_is_dropped_and_writes_then_fail(self) -> None:
        process = FakeProcess(RequestReplyPeer())
        process.write("quit\n")
        outputs = [process.next_output(0) for _ in range(4)]
        assert outputs == [
            StderrLine("booting\n"),
            StdoutLine("ready\n"),
            StdoutLine("bye\n"),
            ProcessExited(5),
        ]
        assert process.next_output(0) == ProcessExited(5)
        assert process.returncode == 5
        with pytest.raises(ProcessClosedError):
            process.write("more\n")

    def test_stop_calls_are_recorded(self) -> None:
        process = FakeProcess(SilentPeer())
        process.terminate()
        process.kill()
        assert (process.terminate_calls, process.kill_calls) == (1, 1)
        assert process.returncode == -signal.SIGTERM


class GatedPeer(FakePeer):
    def on_stdin(self, line: str) -> Iterable[PeerOutput]:
        return (StdoutLine("before\n"), GateMarker("turn-1"), StdoutLine("after\n"))


class TestGates:
    def test_a_closed_gate_holds_output_until_opened(self) -> None:
        gates = ReplayGates(closed=["turn-1"])
        process = FakeProcess(GatedPeer(), gates=gates)
        process.write("go\n")
        assert process.next_output(0) == StdoutLine("before\n")
        assert process.next_output(0.01) is None
        assert gates.reached("turn-1")
        gates.open("turn-1")
        assert process.next_output(0) == StdoutLine("after\n")

    def test_an_open_gate_lets_output_through(self) -> None:
        process = FakeProcess(GatedPeer(), gates=ReplayGates())
        process.write("go\n")
        assert [process.next_output(0), process.next_output(0)] == [
            StdoutLine("before\n"),
            StdoutLine("after\n"),
        ]

    def test_opening_a_gate_wakes_a_waiting_reader(self) -> None:
        gates = ReplayGates()
        gates.close("turn-1")
        process = FakeProcess(GatedPeer(), gates=gates)
        process.write("go\n")
        process.next_output(0)
        timer = threading.Timer(0.05, gates.open, args=("turn-1",))
        timer.start()
        # No timeout: a reader the opening did not wake would block, and fail the guard.
        assert returns_within(60, lambda: process.next_output(None)) == StdoutLine("after\n")
        timer.join()

    def test_a_killed_process_never_prints_what_a_closed_gate_held(self) -> None:
        gates = ReplayGates(closed=["turn-1"])
        process = FakeProcess(GatedPeer(), gates=gates)
        process.write("go\n")
        process.kill()
        assert process.next_output(0) == StdoutLine("before\n")
        assert process.next_output(0) == ProcessExited(-signal.SIGKILL)
        assert gates.is_open("turn-1") is False
