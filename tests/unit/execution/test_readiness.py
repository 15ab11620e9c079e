from __future__ import annotations

import re

import pytest
from execution_helpers import ENV, py

from agentshim.execution import HostCommandExecutor, ProbeResult, ProbeSpec, run_probe
from agentshim.testing.executor import FakeExecutor, FakeRun


def test_a_matching_answer_is_ready_and_reports_the_match() -> None:
    executor = FakeExecutor(FakeRun(stdout=["codex-cli 0.48.0"]))
    spec = ProbeSpec(("codex", "--version"), expect_stdout=r"codex-cli (\S+)")
    result = run_probe(executor, spec, {"PATH": "/bin"}, cwd="/w")
    assert result == ProbeResult(True, 0, "codex-cli 0.48.0\n", "", "0.48.0", "")
    (sent,) = executor.requests
    assert (sent.argv, sent.cwd, sent.timeout, sent.env) == (
        ("codex", "--version"),
        "/w",
        15.0,
        {"PATH": "/bin"},
    )


def test_every_problem_is_listed() -> None:
    executor = FakeExecutor(FakeRun(stdout=["not logged in"], returncode=1))
    spec = ProbeSpec(["claude", "auth", "status"], expect_stdout='"loggedIn": true')
    result = run_probe(executor, spec, {})
    assert not result.ready
    assert result.returncode == 1
    assert result.problem == (
        "claude: exited 1, expected 0: not logged in; stdout does not match '\"loggedIn\": true'"
    )


def test_any_exit_status_can_be_accepted() -> None:
    result = run_probe(
        FakeExecutor(FakeRun(returncode=3)), ProbeSpec(["x"], expect_returncode=None), {}
    )
    assert result.ready


def test_a_timeout_or_a_missing_program_is_not_ready_and_does_not_raise() -> None:
    timed_out = run_probe(FakeExecutor(FakeRun(timeout=True)), ProbeSpec(["x"], timeout=2), {})
    assert (timed_out.ready, timed_out.returncode) == (False, None)
    assert "within 2" in timed_out.problem
    missing = run_probe(HostCommandExecutor(), ProbeSpec(["agentshim-no-such-program"]), ENV)
    assert not missing.ready
    assert "not found" in missing.problem


def test_a_real_probe_with_stdin() -> None:
    spec = ProbeSpec(
        py("import sys; print('ok', sys.stdin.read())"), stdin="ping", expect_stdout="ok ping"
    )
    assert run_probe(HostCommandExecutor(), spec, ENV).ready


def test_a_bad_spec_fails_when_defined() -> None:
    with pytest.raises(ValueError, match="argv"):
        ProbeSpec(())
    with pytest.raises(re.error):
        ProbeSpec(["x"], expect_stdout="(")
