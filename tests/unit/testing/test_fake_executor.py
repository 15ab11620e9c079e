from __future__ import annotations

import signal

import pytest

from agentshim.core.errors import CliCheckError, CliNotFoundError, CliTimeoutError
from agentshim.execution import (
    CallbackSink,
    CommandHandle,
    CommandRequest,
    CommandResult,
    NullSink,
    SpawnRequest,
    StdoutLine,
)
from agentshim.testing.executor import FakeCommandHandle, FakeExecutor, FakeRun
from agentshim.testing.process import EchoPeer, FakeProcess, SilentPeer


def request(*argv: str, timeout: float | None = None) -> CommandRequest:
    return CommandRequest(argv or ("cli",), stdin="prompt", env={"A": "1"}, timeout=timeout)


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def started(self, handle: CommandHandle) -> None:
        self.calls.append(("started", handle))

    def stdout(self, line: str) -> None:
        self.calls.append(("stdout", line))

    def stderr(self, line: str) -> None:
        self.calls.append(("stderr", line))


class TestRuns:
    def test_a_run_delivers_its_lines_after_the_handle_and_records_everything(self) -> None:
        executor = FakeExecutor(FakeRun(stdout=["a", "b\n"], stderr=["warn"], returncode=2))
        sink = Recorder()
        result = executor.run(request(), sink)
        assert result == CommandResult(2, "a\nb\n", "warn\n")
        (handle,) = executor.handles
        assert sink.calls == [
            ("started", handle),
            ("stdout", "a\n"),
            ("stdout", "b\n"),
            ("stderr", "warn\n"),
        ]
        assert executor.requests == [request()]

    def test_a_sequence_serves_one_run_per_request_then_complains(self) -> None:
        executor = FakeExecutor([FakeRun(returncode=1), FakeRun(returncode=2)])
        assert executor.run(request(), NullSink()).returncode == 1
        assert executor.run(request(), NullSink()).returncode == 2
        with pytest.raises(AssertionError, match="2 run"):
            executor.run(request(), NullSink())

    def test_a_single_run_serves_every_request(self) -> None:
        executor = FakeExecutor(FakeRun(stdout=["x"]))
        assert [executor.run(request(), NullSink()).stdout for _ in range(3)] == ["x\n"] * 3

    def test_a_callable_sees_the_request(self) -> None:
        executor = FakeExecutor(lambda req: FakeRun(stdout=[" ".join(req.argv)]))
        assert executor.run(request("cli", "--flag"), NullSink()).stdout == "cli --flag\n"

    def test_a_timeout_run_delivers_its_lines_then_raises(self) -> None:
        lines: list[str] = []
        executor = FakeExecutor(FakeRun(stdout=["partial"], timeout=True))
        with pytest.raises(CliTimeoutError) as caught:
            executor.run(request("cli", timeout=7), CallbackSink(lines.append))
        assert lines == ["partial\n"]
        assert caught.value.argv == ("cli",)
        assert caught.value.timeout == 7

    def test_terminating_the_handle_during_a_run_stops_it_like_a_signal(self) -> None:
        handles: list[CommandHandle] = []
        lines: list[str] = []

        def on_line(line: str) -> None:
            lines.append(line)
            handles[0].terminate()

        executor = FakeExecutor(FakeRun(stdout=["one", "two", "three"]))
        result = executor.run(request(), CallbackSink(on_line, on_started=handles.append))
        assert lines == ["one\n"]
        assert result.returncode == -signal.SIGTERM
        assert executor.handles[0].terminated
        assert not executor.handles[0].killed

    def test_the_handle_records_calls(self) -> None:
        handle = FakeCommandHandle()
        handle.terminate()
        handle.kill()
        handle.kill()
        assert (handle.terminate_calls, handle.kill_calls) == (1, 2)
        assert handle.stopped_code() == -signal.SIGKILL


class TestBinaries:
    def test_without_a_mapping_every_name_is_found_as_itself(self) -> None:
        assert FakeExecutor().find_binary("claude", {}) == "claude"

    def test_a_mapping_decides_what_is_found(self) -> None:
        executor = FakeExecutor(binaries={"claude": "/opt/bin/claude"})
        assert executor.find_binary("claude", {}) == "/opt/bin/claude"
        with pytest.raises(CliNotFoundError):
            executor.find_binary("codex", {})

    def test_checks_are_recorded_and_unhealthy_paths_fail(self) -> None:
        executor = FakeExecutor(unhealthy={"/bad": "segfault"})
        executor.check_binary("/good", {}, timeout=1)
        with pytest.raises(CliCheckError, match="segfault"):
            executor.check_binary("/bad", {}, timeout=1)
        assert executor.checked == ["/good", "/bad"]


class TestSpawn:
    def test_spawn_connects_a_fake_process_to_the_peer(self) -> None:
        executor = FakeExecutor(peers=EchoPeer())
        process = executor.spawn(SpawnRequest(["cli"], env={}))
        process.write("hi\n")
        assert process.next_output(60) == StdoutLine("hi\n")
        assert executor.spawned == [SpawnRequest(["cli"], env={})]
        assert executor.processes == [process]
        assert isinstance(process, FakeProcess)
        assert process.request == SpawnRequest(["cli"], env={})

    def test_a_sequence_or_a_function_of_the_request_chooses_the_peer(self) -> None:
        executor = FakeExecutor(peers=[EchoPeer(), SilentPeer()])
        first = executor.spawn(SpawnRequest(["a"]))
        second = executor.spawn(SpawnRequest(["b"]))
        assert isinstance(first.peer, EchoPeer)
        assert isinstance(second.peer, SilentPeer)
        with pytest.raises(AssertionError, match="2 peer"):
            executor.spawn(SpawnRequest(["c"]))
        chosen = FakeExecutor(peers=lambda req: EchoPeer(exit_code=len(req.argv)))
        process = chosen.spawn(SpawnRequest(["x", "y"]))
        process.close_stdin()
        assert process.wait(60) == 2

    def test_spawn_without_peers_says_so(self) -> None:
        with pytest.raises(AssertionError, match="peers"):
            FakeExecutor().spawn(SpawnRequest(["cli"]))
