"""Bad settings are refused where they are written, as typed errors that say what to do."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentshim import Agent, ApprovalPolicy, CliAgent, NativePermissions, OutputSchema, TurnRequest
from agentshim.core.errors import CliNotFoundError, InvalidRequestError
from agentshim.execution.host import HostCommandExecutor
from agentshim.testing import FakeExecutor, scripted_turn

ROOT = Path(__file__).resolve().parents[2]
BINARIES = {"claude": "/opt/bin/claude"}


def fake_agent(**kwargs: object) -> CliAgent:
    fake = FakeExecutor(scripted_turn("claude", text="ok"), binaries=BINARIES)
    return CliAgent("claude", executor=fake, env={}, **kwargs)  # type: ignore[arg-type]


def host_claude(tmp_path: Path) -> dict[str, str]:
    """An env whose PATH has a ``claude`` that answers ``--version``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "claude"
    script.write_text(f"#!{sys.executable}\nprint('2.1.197 (Claude Code)')\n")
    script.chmod(0o755)
    return {"PATH": str(bin_dir)}


@pytest.mark.parametrize("model", ["", "   ", "two words\n", 42])
def test_a_model_that_is_no_name_is_refused_by_both_doors(model: object) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        fake_agent(model=model)
    assert caught.value.field == "CliAgent.model"
    assert "None for the CLI's default" in str(caught.value)
    with pytest.raises(InvalidRequestError) as caught:
        Agent(
            "claude",
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            model=model,  # type: ignore[arg-type]
        )
    assert caught.value.field == "Agent.model"


@pytest.mark.parametrize("timeout", [-1, 0, float("nan"), True])
def test_a_session_timeout_that_is_not_positive_seconds_is_refused(timeout: object) -> None:
    agent = fake_agent()
    with pytest.raises(InvalidRequestError, match="positive finite number of seconds"):
        agent.start_session(timeout=timeout)  # type: ignore[arg-type]


def test_a_missing_cwd_is_refused_when_the_session_opens(tmp_path: Path) -> None:
    agent = CliAgent("claude", env=host_claude(tmp_path))
    missing = str(tmp_path / "nowhere")
    with pytest.raises(InvalidRequestError) as caught:
        agent.start_session(cwd=missing)
    assert caught.value.field == "cwd"
    assert "does not exist; create it or pass another cwd" in str(caught.value)
    with pytest.raises(InvalidRequestError):
        agent.run("hi", cwd=str(tmp_path / "bin" / "claude"))  # a file, not a directory


def test_agent_refuses_a_missing_host_cwd(tmp_path: Path) -> None:
    agent = Agent("claude", permissions=NativePermissions.bypass(), approvals=ApprovalPolicy.DENY)
    with pytest.raises(InvalidRequestError, match="does not exist"):
        agent.start_session(str(tmp_path / "nowhere"))


def test_a_cwd_another_executor_sees_is_not_checked_here() -> None:
    agent = fake_agent()
    assert agent.run("hi", cwd="/work/not-on-this-machine").text == "ok"


def test_a_cwd_that_vanishes_before_the_turn_is_a_typed_error(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    session = CliAgent("claude", env=host_claude(tmp_path)).start_session(cwd=str(gone))
    gone.rmdir()
    with pytest.raises(InvalidRequestError) as caught:
        session.turn("hi")
    assert caught.value.field == "cwd"
    assert "create it or pass another cwd" in str(caught.value)


def test_a_missing_cli_names_its_install_command(tmp_path: Path) -> None:
    with pytest.raises(CliNotFoundError) as caught:
        CliAgent("codex", executor=HostCommandExecutor(), env={"PATH": str(tmp_path)})
    assert caught.value.install == "npm install -g @openai/codex"
    assert "install it with: npm install -g @openai/codex" in str(caught.value)


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("pyright", path=str(Path(sys.executable).parent)) is None,
    reason="needs pyright next to the interpreter",
)
def test_a_plain_function_as_approvals_passes_pyright_strict(tmp_path: Path) -> None:
    example = tmp_path / "decide.py"
    example.write_text(
        "from agentshim import Agent, ApprovalDecision, ApprovalRequest, NativePermissions\n"
        "from agentshim import TransportKind\n\n\n"
        "def decide(request: ApprovalRequest) -> ApprovalDecision:\n"
        "    return ApprovalDecision.allow() if request.tool == 'Read' else ApprovalDecision.deny()\n"
        "\n\n"
        "agent = Agent(\n"
        "    'claude',\n"
        "    permissions=NativePermissions.workspace_write(),\n"
        "    approvals=decide,\n"
        "    transport=TransportKind.LONG_LIVED,\n"
        ")\n"
    )
    (tmp_path / "pyrightconfig.json").write_text(
        f'{{"typeCheckingMode": "strict", "pythonVersion": "3.10", "extraPaths": ["{ROOT}"]' + "}"
    )
    pyright = str(Path(sys.executable).parent / "pyright")
    done = subprocess.run(
        [pyright, str(example)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout


def test_an_inline_schema_needs_no_directory() -> None:
    fake = FakeExecutor(scripted_turn("claude", text='{"ok": true}'), binaries=BINARIES)
    agent = CliAgent("claude", executor=fake, env={})
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    result = agent.run(TurnRequest("hi", output_schema=OutputSchema(schema)))
    argv = fake.requests[0].argv
    assert "--json-schema" in argv
    assert result.structured_output == {"ok": True}


def test_a_schema_file_without_a_directory_is_refused_before_anything_runs() -> None:
    fake = FakeExecutor(scripted_turn("codex", text="{}"), binaries={"codex": "/usr/bin/codex"})
    agent = CliAgent("codex", executor=fake, env={})
    schema = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    with pytest.raises(InvalidRequestError) as caught:
        agent.run(TurnRequest("hi", output_schema=OutputSchema(schema)))
    assert caught.value.field == "output_schema.host_dir"
    assert fake.requests == []


@pytest.mark.parametrize("check_timeout", [0, -1.0, float("inf")])
def test_a_health_check_timeout_is_named_as_the_agents(check_timeout: float) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        fake_agent(check_timeout=check_timeout)
    assert caught.value.field == "CliAgent.check_timeout"
    assert "ProbeSpec" not in str(caught.value)
