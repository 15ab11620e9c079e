from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest
from execution_helpers import HANG_GUARD_S, OUTLAST, RecordingSink, needs_proc

from agentshim.core.errors import AgentShimError, CliNotFoundError, InvalidRequestError
from agentshim.execution import (
    CONFINED_MARKER,
    CommandRequest,
    DockerExecConfinement,
    HostCommandExecutor,
    PathMap,
    SpawnRequest,
    StdoutLine,
    confine,
)
from agentshim.execution.docker import REAP_SCRIPT
from agentshim.testing.contracts import ConfinementContract
from agentshim.testing.executor import FakeExecutor, FakeRun


def docker_with(
    runner: FakeExecutor, container: object = "box", **kwargs: object
) -> DockerExecConfinement:
    return DockerExecConfinement(
        container,  # type: ignore[arg-type]
        runner=runner,
        docker="/usr/bin/docker",
        host_env={"PATH": "/usr/bin"},
        **kwargs,  # type: ignore[arg-type]
    )


class TestDockerContract(ConfinementContract):
    def make_confinement(self) -> DockerExecConfinement:
        return docker_with(FakeExecutor(FakeRun(stdout=["reaped 0"])), env={"HOME": "/root"})


class TestWrap:
    def test_argv_passes_variables_by_name_and_marks_the_process(self) -> None:
        docker = docker_with(FakeExecutor(), user="agent")
        argv = docker.wrap(["claude", "-p"], "/workspace", ["ANTHROPIC_API_KEY", "HOME"])
        assert argv == [
            "/usr/bin/docker", "exec", "-i", "-u", "agent", "-w", "/workspace",
            "-e", "ANTHROPIC_API_KEY", "-e", "HOME",
            "-e", f"{CONFINED_MARKER}=1", "box", "claude", "-p",
        ]  # fmt: skip

    def test_without_cwd_or_user_there_are_no_such_flags(self) -> None:
        argv = docker_with(FakeExecutor()).wrap(["x"], None)
        assert argv == ["/usr/bin/docker", "exec", "-i", "-e", f"{CONFINED_MARKER}=1", "box", "x"]

    def test_the_container_id_is_read_on_every_call(self) -> None:
        ids = iter(["first", "second"])
        docker = docker_with(FakeExecutor(), container=lambda: next(ids))
        assert docker.wrap(["x"], None)[-2] == "first"
        assert docker.wrap(["x"], None)[-2] == "second"

    def test_an_unusable_container_id_is_a_typed_error(self) -> None:
        with pytest.raises(AgentShimError, match="container id"):
            docker_with(FakeExecutor(), container=lambda: "  ").wrap(["x"], None)
        with pytest.raises(AgentShimError, match="container id"):
            docker_with(FakeExecutor(), container="--privileged").wrap(["x"], None)

    def test_a_name_that_would_carry_a_value_is_refused(self) -> None:
        with pytest.raises(InvalidRequestError, match="by name") as caught:
            docker_with(FakeExecutor()).wrap(["x"], None, ["KEY=value"])
        assert caught.value.field == "env_names"

    def test_confined_runs_keep_secrets_out_of_argv(self) -> None:
        inner = FakeExecutor(FakeRun())
        docker = docker_with(FakeExecutor())
        executor = confine(inner, docker, host_env={"PATH": "/usr/bin", "DOCKER_HOST": "unix:///d"})
        executor.run(
            CommandRequest(["codex", "exec"], cwd="/w", env={"OPENAI_API_KEY": "sk-secret"}),
            RecordingSink(),
        )
        (sent,) = inner.requests
        assert "sk-secret" not in " ".join(sent.argv)
        assert sent.env == {
            "PATH": "/usr/bin",
            "DOCKER_HOST": "unix:///d",
            "OPENAI_API_KEY": "sk-secret",
        }
        assert sent.argv[-2:] == ("codex", "exec")

    def test_without_a_path_map_a_relative_host_path_is_refused(self) -> None:
        with pytest.raises(InvalidRequestError, match="relative") as caught:
            docker_with(FakeExecutor()).agent_path("work/x")
        assert caught.value.field == "host_path"

    def test_paths_map_through_the_path_map(self) -> None:
        docker = docker_with(FakeExecutor(), paths=PathMap({"/home/me/repo": "/workspace"}))
        assert docker.agent_path("/home/me/repo/src") == "/workspace/src"
        with pytest.raises(ValueError, match="no mapped prefix"):
            docker.agent_path("/etc")


class TestReap:
    def test_reap_runs_the_marker_script_inside_the_container(self) -> None:
        runner = FakeExecutor(FakeRun(stdout=["reaped 2"]))
        docker_with(runner).reap()
        (sent,) = runner.requests
        assert sent.argv == ("/usr/bin/docker", "exec", "box", "sh", "-c", REAP_SCRIPT)
        assert sent.env == {"PATH": "/usr/bin"}
        assert CONFINED_MARKER not in " ".join(sent.argv[:-1])

    @pytest.mark.parametrize(
        "stderr",
        [
            "Error response from daemon: No such container: box",
            "Error response from daemon: container 4f2a is not running",
        ],
    )
    def test_a_missing_container_is_nothing_to_reap(self, stderr: str) -> None:
        docker_with(FakeExecutor(FakeRun(stderr=[stderr], returncode=1))).reap()

    def test_other_docker_failures_are_reported(self) -> None:
        runner = FakeExecutor(FakeRun(stderr=["Cannot connect to the Docker daemon"], returncode=1))
        with pytest.raises(AgentShimError, match="Cannot connect"):
            docker_with(runner).reap()

    @needs_proc
    def test_the_script_kills_exactly_the_marked_processes(self) -> None:
        # Run the real script on this machine's /proc: a marked sleeper dies, an unmarked
        # one (and the script itself, and pid 1) survive.
        marked = sleeper({**os.environ, CONFINED_MARKER: "1"})
        near_miss = sleeper({**os.environ, CONFINED_MARKER: "10"})
        plain = sleeper(dict(os.environ))
        try:
            for process in (marked, near_miss, plain):
                # Said once it runs: past its exec, so /proc shows its environment.
                assert process.stdout is not None
                assert process.stdout.readline() == "up\n"
            result = subprocess.run(
                ["sh", "-c", REAP_SCRIPT], capture_output=True, text=True, timeout=HANG_GUARD_S
            )
            assert result.returncode == 0
            assert marked.wait(HANG_GUARD_S) == -9
            assert near_miss.poll() is None
            assert plain.poll() is None
            assert result.stdout.startswith("reaped ")
        finally:
            for process in (marked, near_miss, plain):
                process.kill()
                process.wait()
                assert process.stdout is not None
                process.stdout.close()


def sleeper(env: dict[str, str]) -> subprocess.Popen[str]:
    """A process with ``env`` that prints ``up`` once it runs, then sleeps until killed."""
    code = f"import time; print('up', flush=True); time.sleep({OUTLAST})"
    return subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True
    )


REAL_DOCKER = os.environ.get("AGENTSHIM_DOCKER") == "1"


@pytest.mark.skipif(not REAL_DOCKER, reason="set AGENTSHIM_DOCKER=1 to run against a real docker")
class TestRealDocker:
    @pytest.fixture
    def container(self) -> Iterator[str]:
        if shutil.which("docker") is None:
            raise CliNotFoundError("docker")
        name = f"agentshim-test-{uuid.uuid4().hex[:8]}"
        subprocess.run(
            ["docker", "run", "-d", "--rm", "--name", name, "alpine:3", "sleep", "600"],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
        yield name
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)

    def test_run_spawn_and_reap_in_a_container(self, container: str) -> None:
        docker = DockerExecConfinement(container, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        executor = confine(HostCommandExecutor(), docker)
        sink = RecordingSink()
        env = {**docker.env, "AGENTSHIM_SECRET": "hunter2"}
        result = executor.run(
            CommandRequest(
                ["sh", "-c", f'echo "$AGENTSHIM_SECRET ${CONFINED_MARKER}"; pwd'],
                cwd="/tmp",
                env=env,
            ),
            sink,
        )
        assert result.returncode == 0
        assert sink.out == ["hunter2 1\n", "/tmp\n"]
        process = executor.spawn(
            SpawnRequest(["sh", "-c", "sleep 300 & echo started; wait"], env=env)
        )
        assert process.next_output(30) == StdoutLine("started\n")
        untouched = subprocess.Popen(["docker", "exec", container, "sleep", "300"])
        docker.reap()
        time.sleep(0.5)
        listing = subprocess.run(
            ["docker", "exec", container, "sh", "-c", "ps -o args | grep -c '^sleep 300'"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert listing.stdout.strip() == "1"  # only the unmarked sleeper is left
        untouched.kill()
        process.kill()
        process.wait(30)
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, timeout=60)
        docker.reap()  # a missing container counts as nothing to reap
