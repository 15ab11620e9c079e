"""The frame router: each session's frames reach it alone, in order, whoever reads the pipe."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable

from hypothesis import given
from hypothesis import strategies as st

from agentshim.execution.process import ProcessExited, ProcessOutput, StderrLine, StdoutLine
from agentshim.transport.router import FrameRouter, Mailbox

WAIT = 30.0
"""How long a test thread may take at most before the test fails (never reached when it passes)."""


class ScriptedProcess:
    """A process that writes ``outputs`` in order; ``before[i]`` runs before output ``i`` is read."""

    def __init__(
        self,
        outputs: list[ProcessOutput],
        before: dict[int, Callable[[], None]] | None = None,
        *,
        ends: bool = False,
    ) -> None:
        self._outputs = outputs
        self._before = before or {}
        self._ends = ends
        self._next = 0
        self._cond = threading.Condition()
        self._woken = False
        self.reads = 0

    def next_output(self, timeout: float | None) -> ProcessOutput | None:
        if self._next < len(self._outputs):
            gate = self._before.get(self._next)
            if gate is not None:
                gate()
            output = self._outputs[self._next]
            self._next += 1
            self.reads += 1
            return output
        if self._ends:
            return ProcessExited(0)
        with self._cond:
            if not self._woken:
                self._cond.wait(timeout)
            self._woken = False
        return None

    def wake(self) -> None:
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def write(self, data: str) -> None:
        del data

    def close_stdin(self) -> None: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...

    def wait(self, timeout: float | None) -> int | None:
        del timeout
        return 0


def frame(session: int, n: int) -> StdoutLine:
    return StdoutLine(f"{session}:{n}\n")


def by_session(output: ProcessOutput) -> Hashable | None:
    if isinstance(output, StdoutLine):
        return int(output.text.split(":")[0])
    return None


def collect(router: FrameRouter, box: Mailbox, count: int, into: list[str]) -> None:
    while len(into) < count:
        output = router.wait(box, None)
        assert isinstance(output, StdoutLine), output
        into.append(output.text)


def run_all(targets: list[Callable[[], None]]) -> None:
    threads = [threading.Thread(target=target, daemon=True) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive(), "a session never got its frames"


@given(st.lists(st.integers(min_value=0, max_value=3), max_size=60))
def test_any_interleaving_reaches_each_session_alone_and_in_order(order: list[int]) -> None:
    counts = [0, 0, 0, 0]
    outputs: list[ProcessOutput] = []
    for session in order:
        outputs.append(frame(session, counts[session]))
        counts[session] += 1
    router = FrameRouter(ScriptedProcess(outputs), by_session)
    boxes = [router.open() for _ in range(4)]
    for session, box in enumerate(boxes):
        router.bind(session, box)
    got: list[list[str]] = [[] for _ in range(4)]
    run_all(
        [
            (lambda s=s: collect(router, boxes[s], counts[s], got[s]))  # type: ignore[misc]
            for s in range(4)
        ]
    )
    for session in range(4):
        assert got[session] == [frame(session, n).text for n in range(counts[session])]


def test_frames_for_a_session_nobody_waits_on_are_kept_in_order_for_it() -> None:
    outputs: list[ProcessOutput] = [frame(0, 0), frame(1, 0), frame(0, 1), frame(1, 1)]
    outputs += [frame(0, n) for n in range(2, 50)] + [frame(1, 2)]
    router = FrameRouter(ScriptedProcess(outputs), by_session)
    quiet, waiting = router.open(), router.open()
    router.bind(0, quiet)
    router.bind(1, waiting)
    mine: list[str] = []
    collect(router, waiting, 3, mine)
    assert mine == [frame(1, n).text for n in range(3)]
    kept: list[str] = []
    collect(router, quiet, 50, kept)
    assert kept == [frame(0, n).text for n in range(50)]


def test_a_chatty_session_cannot_starve_another() -> None:
    # The process writes B's frame after three of A's, then will not write another frame until
    # B has its frame: if B's delivery needed A to drain its frames, or B to take its turn at
    # reading, neither would happen and the test would fail on its join.
    delivered = threading.Event()

    def hold_until_b_has_its_frame() -> None:
        assert delivered.wait(WAIT), "B never got its frame while A kept reading"

    outputs: list[ProcessOutput] = [frame(0, n) for n in range(3)] + [frame(1, 0)]
    outputs += [frame(0, n) for n in range(3, 500)]
    process = ScriptedProcess(outputs, {4: hold_until_b_has_its_frame})
    router = FrameRouter(process, by_session)
    chatty, other = router.open(), router.open()
    router.bind(0, chatty)
    router.bind(1, other)
    got_a: list[str] = []
    got_b: list[str] = []

    def b() -> None:
        collect(router, other, 1, got_b)
        delivered.set()

    run_all([lambda: collect(router, chatty, 500, got_a), b])
    assert got_b == [frame(1, 0).text]
    assert got_a == [frame(0, n).text for n in range(500)]


def test_a_wait_ends_on_its_own_wake_and_deadline_not_anothers() -> None:
    router = FrameRouter(ScriptedProcess([]), by_session)
    woken, other = router.open(), router.open()
    results: list[object] = []

    def waits() -> None:
        results.append(router.wait(woken, None))

    thread = threading.Thread(target=waits, daemon=True)
    thread.start()
    router.wake(other)  # another session's wake does not end this wait
    assert router.wait(other, None) is None  # ...it is kept for that session's next wait
    router.wake(woken)
    thread.join(WAIT)
    assert results == [None]
    assert router.wait(woken, 0.0) is None  # a deadline already passed ends the wait at once


def test_the_end_of_the_process_reaches_every_session_after_its_frames() -> None:
    outputs: list[ProcessOutput] = [frame(0, 0), StderrLine("warning\n"), frame(1, 0)]
    unrouted: list[ProcessOutput] = []
    router = FrameRouter(ScriptedProcess(outputs, ends=True), by_session, unrouted=unrouted.append)
    first, second = router.open(), router.open()
    router.bind(0, first)
    router.bind(1, second)
    assert router.wait(first, None) == frame(0, 0)
    assert router.wait(first, None) == ProcessExited(0)
    assert router.wait(second, None) == frame(1, 0)
    assert router.wait(second, None) == ProcessExited(0)
    assert router.exit == ProcessExited(0)
    assert unrouted == [StderrLine("warning\n")]


def test_a_closed_mailbox_gets_nothing_more() -> None:
    unrouted: list[ProcessOutput] = []
    outputs: list[ProcessOutput] = [frame(0, 0), frame(1, 0)]
    router = FrameRouter(ScriptedProcess(outputs), by_session, unrouted=unrouted.append)
    gone, staying = router.open(), router.open()
    router.bind(0, gone)
    router.bind(1, staying)
    router.close(gone)
    assert router.wait(staying, None) == frame(1, 0)
    assert unrouted == [frame(0, 0)]
    assert router.wait(gone, None) is None
