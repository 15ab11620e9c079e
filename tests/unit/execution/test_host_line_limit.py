"""The cap on one line of output: over it, the process group is killed and LineTooLongError raised."""

from __future__ import annotations

import signal
import tracemalloc

import pytest
from execution_helpers import ENV, HANG_GUARD_S, OUTLAST, RecordingSink, needs_proc, py, wait_dead

from agentshim.core.errors import AgentShimError, LineTooLongError
from agentshim.execution import (
    CommandRequest,
    HostCommandExecutor,
    ProcessExited,
    ProcessOutput,
    SpawnRequest,
    StderrLine,
    StdoutLine,
)

MIB = 1024 * 1024

# Prints a grandchild's pid and a short line, then 2 MiB without a newline on the stream named
# by argv[1], then stays: only a kill ends it.
LONG_LINE = f"""
    import subprocess, sys, time
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep({OUTLAST})"])
    stream = sys.stdout if sys.argv[1] == "stdout" else sys.stderr
    stream.write(f"{{grandchild.pid}}\\nbefore\\n"); stream.flush()
    for _ in range(32):
        stream.buffer.write(b"x" * 65536); stream.buffer.flush()
    time.sleep({OUTLAST})
"""


def executors(limit: int) -> list[HostCommandExecutor]:
    return [
        HostCommandExecutor(max_line_bytes=limit),
        HostCommandExecutor(max_line_bytes=limit, use_threads=True),
    ]


@needs_proc
@pytest.mark.parametrize("threads", [False, True], ids=["selector", "threads"])
@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_run_printing_a_line_over_the_limit_is_killed_and_raises(
    stream: str, threads: bool
) -> None:
    executor = HostCommandExecutor(max_line_bytes=MIB, use_threads=threads)
    sink = RecordingSink()
    # Without the cap the child would only end by the timeout (CliTimeoutError) or its sleep.
    with pytest.raises(LineTooLongError) as caught:
        executor.run(CommandRequest(py(LONG_LINE, stream), env=ENV, timeout=HANG_GUARD_S), sink)
    error = caught.value
    assert isinstance(error, AgentShimError)
    assert error.limit == MIB
    assert stream in error.message
    assert "max_line_bytes" in error.message
    lines = sink.out if stream == "stdout" else sink.err
    assert lines[1:] == ["before\n"]
    assert wait_dead(int(lines[0]))  # the whole group was killed


def test_a_line_of_exactly_the_limit_arrives_whole_and_one_byte_more_does_not() -> None:
    limit = MIB
    code = f"import sys; sys.stdout.buffer.write(b'x' * {limit} + b'\\n' + b'y' * {limit})"
    for executor in executors(limit):
        sink = RecordingSink()
        result = executor.run(CommandRequest(py(code), env=ENV), sink)
        assert result.returncode == 0
        assert [len(line) for line in sink.out] == [limit + 1, limit]
        assert sink.out[1] == "y" * limit

    code = f"import sys; sys.stdout.buffer.write(b'ok\\n' + b'x' * {limit + 1} + b'\\n')"
    for executor in executors(limit):
        sink = RecordingSink()
        with pytest.raises(LineTooLongError):
            executor.run(CommandRequest(py(code), env=ENV), sink)
        assert sink.out == ["ok\n"]


def test_many_short_lines_pass_a_limit_smaller_than_one_read() -> None:
    # Reads are far bigger than the limit here, so every read holds many whole lines.
    code = "import sys\nfor i in range(20000): sys.stdout.write(f'{i:099d}\\n')"
    for executor in executors(100):
        sink = RecordingSink()
        assert executor.run(CommandRequest(py(code), env=ENV), sink).returncode == 0
        assert sink.out == [f"{i:099d}\n" for i in range(20000)]


def test_a_flood_without_a_newline_ends_the_run_with_flat_memory() -> None:
    # 256 MiB, then silence: without the cap the run would hold all of it and time out.
    code = f"""
        import sys, time
        for _ in range(4096):
            sys.stdout.buffer.write(b"z" * 65536)
        time.sleep({OUTLAST})
    """
    tracemalloc.start()
    try:
        with pytest.raises(LineTooLongError):
            HostCommandExecutor(max_line_bytes=MIB).run(
                CommandRequest(py(code), env=ENV, timeout=HANG_GUARD_S), RecordingSink()
            )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * MIB


@needs_proc
@pytest.mark.parametrize("threads", [False, True], ids=["selector", "threads"])
def test_a_process_raises_where_the_long_line_would_come_and_goes_on_after_it(
    threads: bool,
) -> None:
    executor = HostCommandExecutor(max_line_bytes=MIB, use_threads=threads)
    process = executor.spawn(SpawnRequest(py(LONG_LINE, "stdout"), env=ENV))
    pid_line = process.next_output(HANG_GUARD_S)
    assert isinstance(pid_line, StdoutLine)
    assert process.next_output(HANG_GUARD_S) == StdoutLine("before\n")
    with pytest.raises(LineTooLongError) as caught:
        process.next_output(HANG_GUARD_S)
    assert caught.value.limit == MIB
    assert "stdout" in caught.value.message
    assert process.next_output(HANG_GUARD_S) == ProcessExited(-signal.SIGKILL)
    assert process.next_output(0) == ProcessExited(-signal.SIGKILL)
    assert wait_dead(int(pid_line.text))


def test_wait_reports_the_kill_and_the_error_stays_for_next_output() -> None:
    code = f"""
        import sys, time
        print("err", file=sys.stderr, flush=True)
        sys.stdout.write("before\\n" + "x" * (2 * 1024 * 1024)); sys.stdout.flush()
        time.sleep({OUTLAST})
    """
    process = HostCommandExecutor(max_line_bytes=MIB).spawn(SpawnRequest(py(code), env=ENV))
    assert process.wait(HANG_GUARD_S) == -signal.SIGKILL
    outputs: list[ProcessOutput | LineTooLongError] = []
    while not outputs or not isinstance(outputs[-1], ProcessExited):
        try:
            output = process.next_output(0)
        except LineTooLongError as error:
            outputs.append(error)
            continue
        assert output is not None
        outputs.append(output)
    errors = [output for output in outputs if isinstance(output, LineTooLongError)]
    assert len(errors) == 1
    # The error comes right after the line before the long one; the other stream's line
    # may come anywhere, and the exit last.
    position = outputs.index(errors[0])
    assert outputs[position - 1] == StdoutLine("before\n")
    rest = outputs[:position] + outputs[position + 1 :]
    assert sorted(rest[:-1], key=repr) == [StderrLine("err\n"), StdoutLine("before\n")]
    assert rest[-1] == ProcessExited(-signal.SIGKILL)
