from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest
from execution_helpers import ENV, PY, RecordingSink, py

from agentshim.core.errors import AgentShimError, CliNotFoundError
from agentshim.execution import (
    CallbackSink,
    CommandRequest,
    CommandResult,
    HostCommandExecutor,
    SpawnRequest,
    StdoutLine,
)


def run(
    code: str,
    *,
    stdin: str | None = None,
    executor: HostCommandExecutor | None = None,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
) -> tuple[CommandResult, RecordingSink]:
    sink = RecordingSink()
    request = CommandRequest(py(code), stdin=stdin, cwd=cwd, env=ENV if env is None else env)
    result = (executor or HostCommandExecutor()).run(request, sink)
    return result, sink


class TestLines:
    def test_lines_keep_their_newline_and_a_final_line_without_one_is_delivered(self) -> None:
        result, sink = run("import sys; sys.stdout.write('one\\ntwo\\nthree')")
        assert sink.out == ["one\n", "two\n", "three"]
        assert result.stdout == "one\ntwo\nthree"

    def test_only_newline_ends_a_line(self) -> None:
        text = "a\rb\x0bc\x0cd\x1ce\x85f\u2028g\u2029h\n"
        _, sink = run(
            "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())", stdin=text * 3
        )
        assert sink.out == [text] * 3

    def test_invalid_utf8_becomes_replacement_characters(self) -> None:
        _, sink = run(r"import sys; sys.stdout.buffer.write(b'ok \xff\xfe bad\n\xc3')")
        assert sink.out == ["ok \ufffd\ufffd bad\n", "\ufffd"]

    def test_multibyte_characters_split_across_reads_survive(self) -> None:
        # Each write ends inside a 3-byte character, so reads see it cut in two.
        code = """
            import sys, time
            data = ('\u20ac' * 50000 + '\\n').encode() * 4
            for start in range(0, len(data), 65537):
                sys.stdout.buffer.write(data[start:start + 65537]); sys.stdout.buffer.flush()
                time.sleep(0.002)
        """
        _, sink = run(code)
        assert sink.out == ["\u20ac" * 50000 + "\n"] * 4

    def test_stdout_and_stderr_are_separate_streams(self) -> None:
        result, sink = run("import sys; print('out'); print('err', file=sys.stderr)")
        assert sink.out == ["out\n"]
        assert sink.err == ["err\n"]
        assert (result.stdout, result.stderr) == ("out\n", "err\n")

    def test_a_64_mib_line_arrives_whole(self) -> None:
        size = 64 * 1024 * 1024
        lengths: list[int] = []
        sink = CallbackSink(on_stdout=lambda line: lengths.append(len(line)))
        code = f"import sys; sys.stdout.buffer.write(b'x' * {size} + b'\\nend\\n')"
        result = HostCommandExecutor().run(CommandRequest(py(code), env=ENV), sink)
        assert lengths == [size + 1, 4]
        assert result.stdout.endswith("x\nend\n")
        assert len(result.stdout) == 1 << 20

    def test_a_10_mb_prompt_and_10_mb_of_output_at_once_do_not_deadlock(self) -> None:
        # The child echoes while it reads: neither side can finish writing unless the
        # executor reads and writes at the same time.
        prompt = ("p" * 99 + "\n") * 100_000
        code = """
            import sys
            for line in sys.stdin.buffer:
                sys.stdout.buffer.write(line.upper())
        """
        count = 0
        total = 0

        def seen(line: str) -> None:
            nonlocal count, total
            count += 1
            total += len(line)

        result = HostCommandExecutor().run(
            CommandRequest(py(code), stdin=prompt, env=ENV, timeout=60), CallbackSink(seen)
        )
        assert result.returncode == 0
        assert (count, total) == (100_000, len(prompt))


class TestResult:
    def test_exit_status_is_reported(self) -> None:
        result, _ = run("import sys; sys.exit(7)")
        assert result.returncode == 7

    def test_a_process_killed_by_a_signal_reports_minus_the_signal(self) -> None:
        result, _ = run("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
        assert result.returncode == -signal.SIGKILL

    def test_tails_are_bounded_but_every_line_reaches_the_sink(self) -> None:
        executor = HostCommandExecutor(output_tail=100)
        result, sink = run(
            "import sys\nfor i in range(1000): print(f'line {i:04d}'); print(i, file=sys.stderr)",
            executor=executor,
        )
        assert len(sink.out) == 1000
        assert len(sink.err) == 1000
        assert len(result.stdout) == 100
        assert result.stdout.endswith("line 0998\nline 0999\n")
        assert "".join(sink.out).endswith(result.stdout)
        assert len(result.stderr) == 100
        assert result.stderr.endswith("998\n999\n")

    def test_the_default_tail_is_one_mebibyte(self) -> None:
        result, sink = run("print('y' * 99)\nfor _ in range(30000): print('z' * 99)")
        assert len(sink.out) == 30001
        assert len(result.stdout) == 1 << 20
        assert result.stdout.endswith("z" * 99 + "\n")


class TestRequest:
    def test_stdin_is_delivered_and_closed(self) -> None:
        result, _ = run("import sys; print(repr(sys.stdin.read()))", stdin="héllo\nworld")
        assert result.stdout == repr("héllo\nworld") + "\n"

    def test_without_stdin_the_child_reads_end_of_file_not_a_terminal(self) -> None:
        result, _ = run("import sys; print(sys.stdin.isatty(), repr(sys.stdin.read()))")
        assert result.stdout == "False ''\n"

    def test_env_is_the_whole_environment_and_cwd_is_honoured(self, tmp_path: Path) -> None:
        result, _ = run(
            "import os; print(os.getcwd()); print(sorted(k for k in os.environ if k.startswith('AGENTSHIM_T')))",
            cwd=str(tmp_path),
            env={**ENV, "AGENTSHIM_T1": "1"},
        )
        assert result.stdout.splitlines() == [str(tmp_path), "['AGENTSHIM_T1']"]

    def test_the_child_leads_its_own_session(self) -> None:
        result, _ = run(
            "import os; print(os.getsid(0) == os.getpid(), os.getpgid(0) == os.getpid(), os.getsid(0))"
        )
        leads_session, leads_group, child_session = result.stdout.split()
        assert (leads_session, leads_group) == ("True", "True")
        assert int(child_session) != os.getsid(0)

    @pytest.mark.parametrize("timeout", [30 * 86400.0, 1e9])
    def test_a_timeout_longer_than_the_os_can_wait_at_once_is_honoured(
        self, timeout: float
    ) -> None:
        sink = RecordingSink()
        request = CommandRequest(py("print('ok')"), env=ENV, timeout=timeout)
        result = HostCommandExecutor().run(request, sink)
        assert (result.returncode, result.stdout) == (0, "ok\n")

    def test_a_process_read_with_a_very_long_timeout_still_answers(self) -> None:
        process = HostCommandExecutor().spawn(SpawnRequest(py("print('ok')"), env=ENV))
        try:
            assert process.next_output(30 * 86400.0) == StdoutLine("ok\n")
        finally:
            process.kill()
            process.wait(10)

    def test_a_missing_program_raises_cli_not_found(self) -> None:
        with pytest.raises(CliNotFoundError) as caught:
            HostCommandExecutor().run(
                CommandRequest(["agentshim-no-such-program"], env=ENV), CallbackSink()
            )
        assert caught.value.binary == "agentshim-no-such-program"

    def test_a_missing_working_directory_is_a_typed_error(self, tmp_path: Path) -> None:
        missing = f"{tmp_path}/nope"
        with pytest.raises(AgentShimError, match="working directory"):
            HostCommandExecutor().run(
                CommandRequest([PY, "-c", "pass"], cwd=missing, env=ENV), CallbackSink()
            )


class TestThreading:
    def test_the_sink_runs_on_the_calling_thread_and_no_helper_thread_exists(self) -> None:
        before = set(threading.enumerate())
        _, sink = run("import sys\nfor i in range(2000): print(i); print(i, file=sys.stderr)")
        assert sink.threads == {threading.get_ident()}
        assert sink.alive <= before

    def test_the_handle_arrives_before_any_output(self) -> None:
        _, sink = run("import sys; print('x'); print('y', file=sys.stderr)")
        assert sink.events[0] == "started"
        assert sink.events.count("started") == 1
        assert sink.handle is not None

    def test_the_sink_also_runs_on_the_caller_thread_when_called_from_a_worker(self) -> None:
        seen: list[RecordingSink] = []
        ident: list[int] = []

        def work() -> None:
            ident.append(threading.get_ident())
            seen.append(run("print('hi')")[1])

        worker = threading.Thread(target=work)
        worker.start()
        worker.join()
        assert seen[0].threads == set(ident)
