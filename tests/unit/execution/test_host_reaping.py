"""No process a run started survives it, even one that left the run's process group.

The child programs here do what the CLIs' tool shells do: fork, ``setsid`` (so the process is
in its own session and group, reparented to init, out of reach of ``killpg``) and run
``sleep``. Each test then checks, by pid, that the escaped process is gone when ``run``
returns or raises, and that processes the run did not start are never touched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest
from execution_helpers import ENV, is_alive, needs_proc, py, wait_dead

from agentshim.core.errors import CliTimeoutError
from agentshim.execution import CallbackSink, CommandHandle, CommandRequest, HostCommandExecutor
from agentshim.execution.host_process import HostProcess
from agentshim.execution.process import SpawnRequest, StdoutLine
from agentshim.execution.reaping import reap_marked

pytestmark = needs_proc

# Forks a grandchild in a new session running `sleep 60` with its output on /dev/null (a
# daemon: nothing of the run's holds it), says so, then does `then`.
ESCAPE = """
    import os, sys, time
    # Close-on-exec: end of file here means the grandchild has become `sleep`.
    done, exec_seen = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.execvp("sleep", ["sleep", "60"])
        os._exit(0)
    os.close(exec_seen)
    os.read(done, 1)
    os.wait()
    print("escaped", flush=True)
    {then}
"""

FOREVER = "time.sleep(60)"


class Stop(Exception):
    pass


def sleepers(tag: str) -> list[int]:
    """Live processes whose environment carries ``AGENTSHIM_TEST_TAG=tag``."""
    entry = f"AGENTSHIM_TEST_TAG={tag}".encode()
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if entry in handle.read().split(b"\0") and is_alive(int(name)):
                    found.append(int(name))
        except OSError:
            continue
    return found


@pytest.fixture
def tag() -> Iterator[str]:
    """A tag for this test's processes; whatever still carries it afterwards is killed."""
    value = uuid.uuid4().hex
    yield value
    for pid in sleepers(value):
        os.kill(pid, signal.SIGKILL)


def request(tag: str, then: str, timeout: float | None = 30) -> CommandRequest:
    code = ESCAPE.format(then=then)
    return CommandRequest(py(code), env={**ENV, "AGENTSHIM_TEST_TAG": tag}, timeout=timeout)


@pytest.fixture(params=[False, True], ids=["selector", "threads"])
def executor(request: pytest.FixtureRequest) -> HostCommandExecutor:
    return HostCommandExecutor(use_threads=request.param, terminate_grace=2.0)


class TestALongLivedProcessReaps:
    """A spawned (long-lived) process takes what it started with it when it ends."""

    @staticmethod
    def spawn(executor: HostCommandExecutor, tag: str) -> tuple[HostProcess, list[int]]:
        env = {**ENV, "AGENTSHIM_TEST_TAG": tag}
        process = executor.spawn(SpawnRequest(py(ESCAPE.format(then=FOREVER)), env=env))
        line = process.next_output(30)
        assert isinstance(line, StdoutLine), line
        assert line.text.strip() == "escaped"
        pids = sleepers(tag)
        assert len(pids) == 2, "the escaped sleep was not running beside the process"
        return process, pids

    def test_a_process_killed_from_outside(self, executor: HostCommandExecutor, tag: str) -> None:
        # As when Claude Code is killed mid-tool: its tool shell is in a session of its own.
        process, pids = self.spawn(executor, tag)
        os.kill(process.pid, signal.SIGKILL)
        assert process.wait(10) == -signal.SIGKILL
        assert not any(is_alive(pid) for pid in pids)
        assert sleepers(tag) == []

    def test_a_terminated_process(self, executor: HostCommandExecutor, tag: str) -> None:
        process, pids = self.spawn(executor, tag)
        process.terminate()
        assert process.wait(10) == -signal.SIGTERM
        assert not any(is_alive(pid) for pid in pids)


class TestEveryEndingReaps:
    def test_a_cancelled_run(self, executor: HostCommandExecutor, tag: str) -> None:
        pids: list[int] = []
        handles: list[CommandHandle] = []

        def on_stdout(line: str) -> None:
            pids.extend(sleepers(tag))
            handles[0].terminate()

        sink = CallbackSink(on_stdout, on_started=handles.append)
        result = executor.run(request(tag, FOREVER), sink)
        assert result.returncode == -signal.SIGTERM
        assert len(pids) == 2, "the escaped sleep was not running beside the run"
        assert not any(is_alive(pid) for pid in pids)
        assert sleepers(tag) == []

    def test_a_timed_out_run(self, executor: HostCommandExecutor, tag: str) -> None:
        pids: list[int] = []
        sink = CallbackSink(lambda line: pids.extend(sleepers(tag)))
        with pytest.raises(CliTimeoutError):
            executor.run(request(tag, FOREVER, timeout=1.5), sink)
        assert len(pids) == 2
        assert not any(is_alive(pid) for pid in pids)
        assert sleepers(tag) == []

    def test_a_successful_run(self, executor: HostCommandExecutor, tag: str) -> None:
        pids: list[int] = []
        sink = CallbackSink(lambda line: pids.extend(sleepers(tag)))
        result = executor.run(request(tag, "time.sleep(0.5); sys.exit(0)"), sink)
        assert result.returncode == 0
        assert len(pids) == 2
        assert not any(is_alive(pid) for pid in pids)

    def test_a_crashed_run(self, executor: HostCommandExecutor, tag: str) -> None:
        pids: list[int] = []
        sink = CallbackSink(lambda line: pids.extend(sleepers(tag)))
        result = executor.run(request(tag, "time.sleep(0.5); os.kill(os.getpid(), 9)"), sink)
        assert result.returncode == -signal.SIGKILL
        assert len(pids) == 2
        assert not any(is_alive(pid) for pid in pids)

    def test_a_run_whose_sink_raises(self, executor: HostCommandExecutor, tag: str) -> None:
        pids: list[int] = []

        def on_stdout(line: str) -> None:
            pids.extend(sleepers(tag))
            raise Stop

        with pytest.raises(Stop):
            executor.run(request(tag, FOREVER), CallbackSink(on_stdout))
        assert len(pids) == 2
        assert not any(is_alive(pid) for pid in pids)


class TestWhatIsReaped:
    def test_unrelated_processes_are_never_touched(self, tag: str) -> None:
        # Same user, same test tag: only the run marker tells them apart.
        others = [
            subprocess.Popen(["sleep", "60"], env={**ENV, "AGENTSHIM_TEST_TAG": tag}),
            subprocess.Popen(
                ["sleep", "60"], env={**ENV, "AGENTSHIM_TEST_TAG": tag, "AGENTSHIM_RUN_ID": "x"}
            ),
        ]
        try:
            # The near misses carry the marker of the run under test, cut or extended by one
            # character, and start while that run is still going, so its end-of-run scan
            # sees them.
            code = "import os, time; print(os.environ['AGENTSHIM_RUN_ID']); time.sleep(0.5)"

            def start_near_misses(line: str) -> None:
                value = line.strip()
                for near in (value[:-1], value + "0"):
                    others.append(
                        subprocess.Popen(["sleep", "60"], env={**ENV, "AGENTSHIM_RUN_ID": near})
                    )

            HostCommandExecutor().run(
                CommandRequest(py(code), env=ENV), CallbackSink(start_near_misses)
            )
            assert len(others) == 4
            time.sleep(0.2)
            assert all(process.poll() is None for process in others)
        finally:
            for process in others:
                process.kill()
                process.wait()

    def test_each_run_has_its_own_marker_in_its_environment_never_in_argv(self) -> None:
        code = """
            import os
            marker = os.environ["AGENTSHIM_RUN_ID"]
            with open("/proc/self/cmdline", "rb") as handle:
                print(marker, marker.encode() in handle.read())
        """
        env = {**ENV, "AGENTSHIM_RUN_ID": "inherited"}
        first, second = (
            HostCommandExecutor().run(CommandRequest(py(code), env=env), CallbackSink()).stdout
            for _ in range(2)
        )
        assert first != second
        for output in (first, second):
            marker, in_argv = output.split()
            assert len(marker) >= 16
            assert marker != "inherited"
            assert in_argv == "False"

    def test_a_process_that_forks_while_it_is_reaped_is_ended_with_its_children(
        self, tag: str
    ) -> None:
        # Each SIGTERM makes the escaped process fork a fresh copy of itself and exit: the
        # reaper must keep scanning until it finds none, and end them with SIGKILL.
        code = """
            import os, signal, sys, time
            def respawn(*_):
                if os.fork() == 0:
                    os.setsid()
                    return
                os._exit(0)
            if os.fork() == 0:
                os.setsid()
                signal.signal(signal.SIGTERM, respawn)
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                while True:
                    time.sleep(0.01)
            print("escaped", flush=True)
        """
        executor = HostCommandExecutor(terminate_grace=0.5)
        seen: list[int] = []
        executor.run(
            CommandRequest(py(code), env={**ENV, "AGENTSHIM_TEST_TAG": tag}),
            CallbackSink(lambda line: seen.extend(sleepers(tag))),
        )
        assert seen
        assert sleepers(tag) == []

    def test_a_process_met_in_the_middle_of_an_exec_is_still_ended(self, tag: str) -> None:
        # `exec` over and over, as a tool's `bash -lc "exec ..."` does once: for a moment in
        # each exec the process shows no environment, and a scan that met it then and
        # stopped left it running (about one reap in ten on a loaded machine).
        loop = 'exec sh -c "$0" "$0"'
        for n in range(40):
            marker = f"{tag}-{n}"
            env = {**ENV, "AGENTSHIM_TEST_TAG": marker}
            looper = subprocess.Popen(["sh", "-c", loop, loop], env=env, stdin=subprocess.DEVNULL)
            try:
                time.sleep(0.05)  # well into its loop, as a tool is by the time a turn ends
                ended, left = reap_marked(marker, 0.5, name="AGENTSHIM_TEST_TAG")
                assert (ended, left) == (1, 0), f"reap {n} ended {ended}, left {left}"
                assert looper.wait(10) in (-signal.SIGTERM, -signal.SIGKILL)
            finally:
                looper.kill()
                looper.wait()

    def test_with_reap_on_success_off_a_successful_run_leaves_its_background(
        self, tag: str
    ) -> None:
        executor = HostCommandExecutor(reap_on_success=False)
        result = executor.run(request(tag, "time.sleep(0.5); sys.exit(0)"), CallbackSink())
        assert result.returncode == 0
        (left,) = sleepers(tag)  # the run's own process is gone: this is the sleep
        os.kill(left, signal.SIGKILL)
        assert wait_dead(left)

    def test_with_reap_on_success_off_a_failed_run_is_still_reaped(self, tag: str) -> None:
        executor = HostCommandExecutor(reap_on_success=False)
        result = executor.run(request(tag, "sys.exit(3)"), CallbackSink())
        assert result.returncode == 3
        assert sleepers(tag) == []


def runs_unmarked_and_warns_once(
    caplog: pytest.LogCaptureFixture, naming: str, *, runs: int
) -> None:
    """Runs a child ``runs`` times on one executor: none is marked, one warning names ``naming``."""
    executor = HostCommandExecutor()
    for _ in range(runs):
        result = executor.run(
            CommandRequest(py("import os; print('AGENTSHIM_RUN_ID' in os.environ)"), env=ENV),
            CallbackSink(),
        )
        assert result.stdout == "False\n"
    said = [record for record in caplog.records if naming in record.getMessage()]
    assert len(said) == 1
    assert said[0].levelname == "WARNING"


def test_without_proc_the_fallback_is_said_once_in_the_log(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import agentshim.execution.host as host

    monkeypatch.setattr(host, "can_scan", lambda: False)
    runs_unmarked_and_warns_once(caplog, "/proc", runs=2)


def test_a_pidfd_open_the_system_refuses_takes_the_logged_fallback(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A kernel without pidfd_open (ENOSYS) or a seccomp profile denying it (EPERM) used to
    # make every marked process look gone: nothing was ended and nothing was said.
    import errno

    def refused(pid: int, flags: int = 0) -> int:
        raise OSError(errno.ENOSYS, "pidfd_open")

    monkeypatch.setattr(os, "pidfd_open", refused)
    runs_unmarked_and_warns_once(caplog, "pidfd_open", runs=1)


@pytest.mark.parametrize("threads", [False, True])
def test_a_run_whose_streams_cannot_be_set_up_leaves_no_process_and_no_descriptor(
    monkeypatch: pytest.MonkeyPatch, threads: bool
) -> None:
    from execution_helpers import open_fds

    import agentshim.execution.host as host

    started: list[int] = []
    real_start = host.ChildProcess.start

    def start(*args: object) -> host.ChildProcess:
        child = real_start(*args)  # type: ignore[arg-type]
        started.append(child.pid)
        return child

    def no_streams(child: object) -> None:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(host.ChildProcess, "start", staticmethod(start))
    monkeypatch.setattr(host, "SelectorStreams", no_streams)
    monkeypatch.setattr(host, "ThreadStreams", no_streams)
    executor = HostCommandExecutor(use_threads=threads)
    before = open_fds()
    with pytest.raises(OSError, match="Too many open files"):
        executor.run(CommandRequest(py("import time; time.sleep(60)"), env=ENV), CallbackSink())
    (pid,) = started
    assert not is_alive(pid)
    assert open_fds() == before
