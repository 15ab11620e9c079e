"""The reader-thread fallback (used where selectors cannot wait on pipes), run on POSIX."""

from __future__ import annotations

import signal

import pytest
from execution_helpers import ENV, GRANDCHILD, OUTLAST, RecordingSink, needs_proc, py, wait_dead

from agentshim.core.errors import CliTimeoutError
from agentshim.execution import CallbackSink, CommandHandle, CommandRequest, HostCommandExecutor


def threaded(drain_timeout: float = 2.0) -> HostCommandExecutor:
    return HostCommandExecutor(use_threads=True, drain_timeout=drain_timeout)


def test_lines_stdin_and_exit_status() -> None:
    sink = RecordingSink()
    code = "import sys; data = sys.stdin.read(); print(data.upper()); print('e', file=sys.stderr); sys.stdout.write('end'); sys.exit(4)"
    result = threaded().run(CommandRequest(py(code), stdin="abc", env=ENV), sink)
    assert result.returncode == 4
    assert sink.out == ["ABC\n", "end"]
    assert sink.err == ["e\n"]
    assert sink.events[0] == "started"


def test_a_large_prompt_with_large_output() -> None:
    prompt = ("q" * 99 + "\n") * 30_000
    code = "import sys\nfor line in sys.stdin.buffer: sys.stdout.buffer.write(line)"
    count = 0

    def seen(_: str) -> None:
        nonlocal count
        count += 1

    result = threaded().run(CommandRequest(py(code), stdin=prompt, env=ENV), CallbackSink(seen))
    assert (result.returncode, count) == (0, 30_000)


def test_timeout_kills_the_group() -> None:
    with pytest.raises(CliTimeoutError):
        threaded().run(
            CommandRequest(
                py(f"import time; print('x'); time.sleep({OUTLAST})"), env=ENV, timeout=0.5
            ),
            CallbackSink(),
        )


@needs_proc
def test_grandchild_holding_the_pipes_is_killed_after_the_drain() -> None:
    sink = RecordingSink()
    threaded(drain_timeout=0.3).run(CommandRequest(py(GRANDCHILD), env=ENV), sink)
    assert len(sink.out) == 1  # waited for instead of killed, the grandchild says "outlived"
    assert wait_dead(int(sink.out[0]))


def test_terminate_and_a_raising_sink() -> None:
    handles: list[CommandHandle] = []
    result = threaded().run(
        CommandRequest(py("import time; print('up'); time.sleep(60)"), env=ENV, timeout=30),
        CallbackSink(lambda _: handles[0].terminate(), on_started=handles.append),
    )
    assert result.returncode == -signal.SIGTERM

    def boom(_: str) -> None:
        raise RuntimeError("sink failed")

    with pytest.raises(RuntimeError, match="sink failed"):
        threaded().run(
            CommandRequest(py("import time; print('up'); time.sleep(60)"), env=ENV, timeout=30),
            CallbackSink(boom),
        )


def test_without_pidfd_or_waitid_exit_is_found_by_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    # What macOS looks like: no pidfd, and no way to see an exit without reaping.
    from agentshim.execution import _child

    monkeypatch.setattr(_child, "_PEEK", False)

    def no_pidfd(pid: int) -> None:
        del pid

    monkeypatch.setattr(_child, "open_pidfd", no_pidfd)
    executor = HostCommandExecutor(drain_timeout=0.3)
    sink = RecordingSink()
    result = executor.run(CommandRequest(py("import sys; print('hi'); sys.exit(3)"), env=ENV), sink)
    assert (result.returncode, sink.out) == (3, ["hi\n"])
    with pytest.raises(CliTimeoutError):
        executor.run(
            CommandRequest(py(f"import time; time.sleep({OUTLAST})"), env=ENV, timeout=0.3), sink
        )
    # The exit is seen while a background job holds the pipes: the drain ends it. Waiting for
    # the pipes instead would deliver the job's last line.
    background = RecordingSink()
    script = f"(sleep {OUTLAST}; echo outlived) & echo started"
    result = executor.run(CommandRequest(["/bin/sh", "-c", script], env=ENV), background)
    assert (result.returncode, background.out) == (0, ["started\n"])
