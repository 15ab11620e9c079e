from __future__ import annotations

import signal
import threading
import time

import pytest
from execution_helpers import ENV, RecordingSink, needs_proc, py, wait_dead

from agentshim.core.errors import CliTimeoutError
from agentshim.execution import (
    CallbackSink,
    CommandHandle,
    CommandRequest,
    HostCommandExecutor,
)

# Starts a grandchild in the same process group that inherits stdout/stderr, prints its
# pid, and (for the child) exits at once: the grandchild keeps the pipes open.
GRANDCHILD = """
    import subprocess, sys
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    print(grandchild.pid)
"""


class TestTimeout:
    @needs_proc
    def test_a_timeout_kills_the_whole_group_and_raises_after_delivering_lines(self) -> None:
        code = (
            GRANDCHILD
            + """
    import time
    print("working")
    time.sleep(60)
"""
        )
        sink = RecordingSink()
        request = CommandRequest(py(code), env=ENV, timeout=1.0)
        started = time.monotonic()
        with pytest.raises(CliTimeoutError) as caught:
            HostCommandExecutor().run(request, sink)
        assert time.monotonic() - started < 5
        assert caught.value.timeout == 1.0
        assert caught.value.argv == tuple(request.argv)
        assert sink.out[1] == "working\n"
        assert wait_dead(int(sink.out[0]))

    def test_the_timeout_covers_a_child_that_closed_its_output_but_keeps_running(self) -> None:
        code = "import os, time; os.close(1); os.close(2); time.sleep(60)"
        started = time.monotonic()
        with pytest.raises(CliTimeoutError):
            HostCommandExecutor().run(
                CommandRequest(py(code), env=ENV, timeout=0.5), CallbackSink()
            )
        assert time.monotonic() - started < 3


class TestDrain:
    @needs_proc
    @pytest.mark.parametrize("timeout", [None, 30.0])
    def test_a_grandchild_holding_the_pipes_is_killed_after_the_drain(
        self, timeout: float | None
    ) -> None:
        sink = RecordingSink()
        executor = HostCommandExecutor(drain_timeout=0.3)
        started = time.monotonic()
        result = executor.run(CommandRequest(py(GRANDCHILD), env=ENV, timeout=timeout), sink)
        elapsed = time.monotonic() - started
        assert result.returncode == 0
        assert 0.3 <= elapsed < 3
        assert wait_dead(int(sink.out[0]))

    @needs_proc
    def test_a_timeout_passing_during_the_drain_does_not_fail_a_finished_run(self) -> None:
        sink = RecordingSink()
        result = HostCommandExecutor(drain_timeout=1.0).run(
            CommandRequest(py(GRANDCHILD), env=ENV, timeout=0.5), sink
        )
        assert result.returncode == 0
        assert wait_dead(int(sink.out[0]))

    def test_output_printed_by_the_grandchild_during_the_drain_is_delivered(self) -> None:
        code = """
            import subprocess, sys
            subprocess.Popen([sys.executable, "-u", "-c",
                "import time; time.sleep(0.1); print('late', flush=True); time.sleep(60)"])
        """
        sink = RecordingSink()
        HostCommandExecutor(drain_timeout=1.0).run(CommandRequest(py(code), env=ENV), sink)
        assert sink.out == ["late\n"]

    @needs_proc
    def test_the_default_drain_is_about_two_seconds(self) -> None:
        started = time.monotonic()
        sink = RecordingSink()
        HostCommandExecutor().run(CommandRequest(py(GRANDCHILD), env=ENV), sink)
        assert 1.8 <= time.monotonic() - started < 6
        assert wait_dead(int(sink.out[0]))


class TestCancel:
    def test_terminate_from_another_thread_during_output(self) -> None:
        code = """
            import itertools, time
            for i in itertools.count():
                print(i); time.sleep(0.001)
        """
        lines: list[str] = []
        handles: list[CommandHandle] = []

        def on_line(line: str) -> None:
            lines.append(line)
            if len(lines) == 20:
                threading.Thread(target=handles[0].terminate).start()

        result = HostCommandExecutor().run(
            CommandRequest(py(code), env=ENV, timeout=30),
            CallbackSink(on_line, on_started=handles.append),
        )
        assert result.returncode == -signal.SIGTERM
        assert len(lines) >= 20

    def test_cancel_before_any_output(self) -> None:
        code = "import time; time.sleep(0.5); print('too late')"
        sink = CallbackSink(on_started=lambda handle: handle.terminate())
        lines: list[str] = []
        sink.stdout = lines.append
        started = time.monotonic()
        result = HostCommandExecutor().run(CommandRequest(py(code), env=ENV, timeout=30), sink)
        assert result.returncode == -signal.SIGTERM
        assert lines == []
        assert time.monotonic() - started < 5

    def test_a_child_ignoring_sigterm_is_killed_after_the_grace(self) -> None:
        code = """
            import signal, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            print("ready")
            time.sleep(60)
        """
        handles: list[CommandHandle] = []
        sink = CallbackSink(on_stdout=lambda _: handles[0].terminate(), on_started=handles.append)
        started = time.monotonic()
        result = HostCommandExecutor(terminate_grace=0.4).run(
            CommandRequest(py(code), env=ENV, timeout=30), sink
        )
        elapsed = time.monotonic() - started
        assert result.returncode == -signal.SIGKILL
        assert 0.4 <= elapsed < 3

    def test_kill_from_another_thread(self) -> None:
        code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
        handles: list[CommandHandle] = []
        timer = threading.Timer(0.3, lambda: handles[0].kill())
        timer.start()
        result = HostCommandExecutor().run(
            CommandRequest(py(code), env=ENV, timeout=30), CallbackSink(on_started=handles.append)
        )
        timer.join()
        assert result.returncode == -signal.SIGKILL

    def test_the_handle_is_harmless_after_the_run(self) -> None:
        sink = RecordingSink()
        HostCommandExecutor().run(CommandRequest(py("print(1)"), env=ENV), sink)
        assert sink.handle is not None
        for _ in range(3):
            sink.handle.terminate()
            sink.handle.kill()

    def test_terminate_and_kill_from_many_threads_at_once(self) -> None:
        code = "import time; print('up'); time.sleep(60)"
        handles: list[CommandHandle] = []

        def storm(_: str) -> None:
            threads = [
                threading.Thread(target=handles[0].terminate if i % 2 else handles[0].kill)
                for i in range(16)
            ]
            for thread in threads:
                thread.start()

        result = HostCommandExecutor().run(
            CommandRequest(py(code), env=ENV, timeout=30),
            CallbackSink(storm, on_started=handles.append),
        )
        assert result.returncode in (-signal.SIGKILL, -signal.SIGTERM)


class TestFailingSink:
    @needs_proc
    def test_a_sink_that_raises_kills_the_group_and_the_exception_propagates(self) -> None:
        code = (
            GRANDCHILD
            + """
    import time
    time.sleep(60)
"""
        )
        pids: list[int] = []

        class Boom(Exception):
            pass

        def explode(line: str) -> None:
            pids.append(int(line))
            raise Boom

        started = time.monotonic()
        with pytest.raises(Boom):
            HostCommandExecutor().run(
                CommandRequest(py(code), env=ENV, timeout=30), CallbackSink(explode)
            )
        assert time.monotonic() - started < 5
        assert wait_dead(pids[0])

    def test_a_sink_raising_in_started_kills_the_process(self) -> None:
        handles: list[CommandHandle] = []

        def refuse(handle: CommandHandle) -> None:
            handles.append(handle)
            raise KeyError("no")

        with pytest.raises(KeyError):
            HostCommandExecutor().run(
                CommandRequest(py("import time; time.sleep(60)"), env=ENV),
                CallbackSink(on_started=refuse),
            )
        handles[0].kill()  # harmless: the process is already reaped
