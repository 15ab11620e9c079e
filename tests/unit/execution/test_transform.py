from __future__ import annotations

from collections.abc import Mapping

import pytest

from agentshim.core.errors import CliCheckError
from agentshim.execution import CommandRequest, NullSink, SpawnRequest, TransformingExecutor
from agentshim.testing.executor import FakeExecutor, FakeRun
from agentshim.testing.process import EchoPeer


def prefixed(request: CommandRequest) -> CommandRequest:
    return CommandRequest(
        ("sandbox", "--", *request.argv),
        stdin=request.stdin,
        cwd="/sandbox",
        env={**request.env, "SANDBOXED": "1"},
        timeout=request.timeout,
    )


def test_run_goes_through_the_transform() -> None:
    inner = FakeExecutor(FakeRun(stdout=["hi"]))
    result = TransformingExecutor(inner, prefixed).run(
        CommandRequest(["cli", "-p"], stdin="prompt", cwd="/w", env={"A": "1"}, timeout=9),
        NullSink(),
    )
    assert result.stdout == "hi\n"
    (sent,) = inner.requests
    assert sent == CommandRequest(
        ("sandbox", "--", "cli", "-p"),
        stdin="prompt",
        cwd="/sandbox",
        env={"A": "1", "SANDBOXED": "1"},
        timeout=9,
    )


def test_the_health_check_goes_through_run_and_the_transform() -> None:
    inner = FakeExecutor(FakeRun(stdout=["1.0"]))
    TransformingExecutor(inner, prefixed).check_binary("/bin/cli", {"A": "1"}, timeout=3)
    (sent,) = inner.requests
    assert sent.argv == ("sandbox", "--", "/bin/cli", "--version")
    assert sent.timeout == 3
    assert sent.stdin is None
    assert inner.checked == []


def test_a_failing_health_check_raises_cli_check_error() -> None:
    inner = FakeExecutor(FakeRun(stderr=["no such runtime"], returncode=127))
    with pytest.raises(CliCheckError, match="no such runtime"):
        TransformingExecutor(inner, prefixed).check_binary("/bin/cli", {}, timeout=3)


def test_a_timed_out_health_check_raises_cli_check_error() -> None:
    inner = FakeExecutor(FakeRun(timeout=True))
    with pytest.raises(CliCheckError, match="did not finish"):
        TransformingExecutor(inner, prefixed).check_binary("/bin/cli", {}, timeout=3)


def test_spawn_goes_through_the_same_transform() -> None:
    inner = FakeExecutor(peers=EchoPeer())
    process = TransformingExecutor(inner, prefixed).spawn(
        SpawnRequest(["cli", "serve"], cwd="/w", env={"A": "1"})
    )
    assert inner.spawned == [
        SpawnRequest(
            ("sandbox", "--", "cli", "serve"), cwd="/sandbox", env={"A": "1", "SANDBOXED": "1"}
        )
    ]
    process.kill()


def test_find_binary_uses_the_override_or_the_inner_executor() -> None:
    inner = FakeExecutor(binaries={"cli": "/opt/cli"})

    def inside(name: str, env: Mapping[str, str]) -> str:
        return f"/inside/{name}"

    assert TransformingExecutor(inner, prefixed).find_binary("cli", {}) == "/opt/cli"
    assert (
        TransformingExecutor(inner, prefixed, find_binary=inside).find_binary("cli", {})
        == "/inside/cli"
    )
