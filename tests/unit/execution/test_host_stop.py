from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest
from execution_helpers import (
    ENV,
    GRANDCHILD,
    HANG_GUARD_S,
    OUTLAST,
    RecordingSink,
    needs_proc,
    py,
    wait_dead,
)

from agentshim.core.errors import CliTimeoutError
from agentshim.execution import (
    CallbackSink,
    CommandHandle,
    CommandRequest,
    HostCommandExecutor,
)


class TestTimeout:
    @needs_proc
    def test_a_timeout_kills_the_whole_group_and_raises_after_delivering_lines(self) -> None:
        # Left alone the child would exit 0 after OUTLAST seconds, and a run that waited for
        # that would return instead of raising: the error shows the timeout ended it.
        code = (
            GRANDCHILD
            + f"""
    import time
    print("working")
    time.sleep({OUTLAST})
"""
        )
        sink = RecordingSink()
        request = CommandRequest(py(code), env=ENV, timeout=1.0)
        with pytest.raises(CliTimeoutError) as caught:
            HostCommandExecutor().run(request, sink)
        assert caught.value.timeout == 1.0
        assert caught.value.argv == tuple(request.argv)
        assert sink.out[1:] == ["working\n"]
        assert wait_dead(int(sink.out[0]))

    def test_the_timeout_covers_a_child_that_closed_its_output_but_keeps_running(self) -> None:
        # Waiting for this child's own exit would end the run without an error.
        code = f"import os, time; os.close(1); os.close(2); time.sleep({OUTLAST})"
        with pytest.raises(CliTimeoutError):
            HostCommandExecutor().run(
                CommandRequest(py(code), env=ENV, timeout=0.5), CallbackSink()
            )


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
        assert time.monotonic() - started >= 0.3  # the drain was given its time
        assert result.returncode == 0
        # Only the pid: a run that waited for the grandchild would also show "outlived".
        assert len(sink.out) == 1
        assert wait_dead(int(sink.out[0]))

    @needs_proc
    def test_a_timeout_passing_during_the_drain_does_not_fail_a_finished_run(self) -> None:
        # `sh` exits within milliseconds, far inside the timeout; its background sleep holds
        # the pipes through the timeout until the drain ends and it is killed.
        sink = RecordingSink()
        result = HostCommandExecutor(drain_timeout=1.0).run(
            CommandRequest(["/bin/sh", "-c", f"sleep {OUTLAST} & echo $!"], env=ENV, timeout=0.5),
            sink,
        )
        assert result.returncode == 0
        assert wait_dead(int(sink.out[0]))

    def test_output_printed_by_the_grandchild_during_the_drain_is_delivered(self) -> None:
        # The grandchild prints once its parent has exited (the pipe only the parent could
        # write to reads as ended), so the line can only come during the drain; it then exits,
        # which ends the drain long before the guard.
        code = """
            import os, subprocess, sys
            parent_alive, parent_holds = os.pipe()
            subprocess.Popen([sys.executable, "-u", "-c",
                "import os, sys; os.read(int(sys.argv[1]), 1); print('late')",
                str(parent_alive)], pass_fds=[parent_alive])
        """
        sink = RecordingSink()
        HostCommandExecutor(drain_timeout=HANG_GUARD_S).run(CommandRequest(py(code), env=ENV), sink)
        assert sink.out == ["late\n"]

    @needs_proc
    def test_the_default_drain_is_about_two_seconds(self) -> None:
        started = time.monotonic()
        sink = RecordingSink()
        HostCommandExecutor().run(CommandRequest(py(GRANDCHILD), env=ENV), sink)
        assert time.monotonic() - started >= 1.8
        assert len(sink.out) == 1  # ended, not waited for: the grandchild never said "outlived"
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
        result = HostCommandExecutor().run(CommandRequest(py(code), env=ENV, timeout=30), sink)
        # Not stopped, the child would have printed and exited 0 half a second after its start.
        assert result.returncode == -signal.SIGTERM
        assert lines == []

    def test_a_child_ignoring_sigterm_is_killed_after_the_grace(self) -> None:
        # Left alone the child would exit 0 after OUTLAST seconds: SIGKILL shows the escalation.
        code = f"""
            import signal, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            print("ready")
            time.sleep({OUTLAST})
        """
        handles: list[CommandHandle] = []
        sink = CallbackSink(on_stdout=lambda _: handles[0].terminate(), on_started=handles.append)
        started = time.monotonic()
        result = HostCommandExecutor(terminate_grace=0.4).run(
            CommandRequest(py(code), env=ENV, timeout=30), sink
        )
        assert result.returncode == -signal.SIGKILL
        assert time.monotonic() - started >= 0.4  # the grace was honoured

    def test_kill_from_another_thread(self) -> None:
        # Once the child says it ignores SIGTERM, another thread kills it while the run reads.
        code = f"""
            import signal, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            print("ready")
            time.sleep({OUTLAST})
        """
        handles: list[CommandHandle] = []
        killers: list[threading.Thread] = []

        def kill_elsewhere(_: str) -> None:
            killers.append(threading.Thread(target=handles[0].kill))
            killers[-1].start()

        result = HostCommandExecutor().run(
            CommandRequest(py(code), env=ENV, timeout=HANG_GUARD_S),
            CallbackSink(kill_elsewhere, on_started=handles.append),
        )
        for killer in killers:
            killer.join()
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
    def test_a_sink_that_raises_kills_the_group_and_the_exception_propagates(
        self, tmp_path: Path
    ) -> None:
        # The child leaves a file behind only if it lives out its sleep: a run that waited for
        # it before raising would find the file there.
        outlived = tmp_path / "outlived"
        code = (
            GRANDCHILD
            + f"""
    import time
    time.sleep({OUTLAST})
    open(sys.argv[1], "w").close()
"""
        )
        pids: list[int] = []

        class Boom(Exception):
            pass

        def explode(line: str) -> None:
            pids.append(int(line))
            raise Boom

        with pytest.raises(Boom):
            HostCommandExecutor().run(
                CommandRequest(py(code, str(outlived)), env=ENV, timeout=HANG_GUARD_S),
                CallbackSink(explode),
            )
        assert wait_dead(pids[0])
        assert not outlived.exists()

    def test_a_sink_raising_in_started_kills_the_process(self) -> None:
        handles: list[CommandHandle] = []

        def refuse(handle: CommandHandle) -> None:
            handles.append(handle)
            raise KeyError("no")

        with pytest.raises(KeyError):
            HostCommandExecutor().run(
                CommandRequest(py(f"import time; time.sleep({OUTLAST})"), env=ENV),
                CallbackSink(on_started=refuse),
            )
        handles[0].kill()  # harmless: the process is already reaped
