"""What every built-in provider's command line promises, checked once for all of them.

The prompt never reaches argv (other users can read it there), a value that would read as a
flag or escape into a path is refused, a resumed conversation is named on the command line,
and a request the CLI cannot carry is refused before anything runs. Each provider's own
test_argv.py pins its exact flags and their order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentshim import CliAgent
from agentshim.core.errors import (
    InvalidRequestError,
    InvalidSessionIdError,
    ProviderCapabilityError,
)
from agentshim.core.profile import OutputSchemaStyle
from agentshim.core.provider import ArgvContext
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.providers import get_plugin, get_provider
from agentshim.testing import FakeExecutor, scripted_turn
from tests.unit.providers.fixtures import flag_value

# A conversation id each CLI would print, and the flag that resumes it.
RESUMES = {
    "claude": ("0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966", "--resume"),
    "codex": ("01a22758-303e-7462-9a22-376e1126431f", "resume"),
    "copilot": ("d8d67461-6201-4285-8233-9e4dda0071e1", "--resume"),
    "gemini": ("0516902a-c752-4b12-ab4c-e4c301a72044", "--resume"),
    "opencode": ("ses_dd8a6cd86ffeX01SZ77MV3sIeY", "--session"),
    "pi": ("01a2275a-1c2a-72ae-8ced-4a8fdca01c2e", "--session"),
}
PROVIDERS = sorted(RESUMES)
UNSAFE_IDS = [
    "",
    "a b",
    "ses x",
    "../etc",
    "../x",
    "a/b",
    "/home/user/.pi/agent/sessions/x.jsonl",
    "x;rm -rf /",
    "x; rm -rf /",
    "id;rm",
    "-p",
    "-rf",
    "--help",
    "a\nb",
    "x" * 129,
]
FLAG_LIKE_MODELS = ["-p", "-m", "--yolo", "--format", "two words", "a b"]
each_provider = pytest.mark.parametrize("provider", PROVIDERS)


def agent_for(provider: str, session_id: str | None = None) -> tuple[CliAgent, FakeExecutor]:
    binary = f"/usr/bin/{provider}"
    run = scripted_turn(provider, text="ok", session_id=session_id)
    executor = FakeExecutor(run, binaries={provider: binary})
    return CliAgent(provider, executor=executor, env={"PATH": "/usr/bin"}), executor


def argv(provider: str, **fields: object) -> list[str]:
    context = ArgvContext(binary_path=f"/usr/bin/{provider}", **fields)  # type: ignore[arg-type]
    return get_provider(provider).build_argv(context)


@each_provider
@pytest.mark.parametrize("bad", UNSAFE_IDS)
def test_an_unsafe_resume_id_is_refused(provider: str, bad: str) -> None:
    with pytest.raises(InvalidSessionIdError):
        argv(provider, resume_session_id=bad)


@each_provider
@pytest.mark.parametrize("model", FLAG_LIKE_MODELS)
def test_a_model_that_would_read_as_a_flag_is_refused(provider: str, model: str) -> None:
    with pytest.raises(InvalidRequestError, match="model"):
        argv(provider, model=model)


@each_provider
def test_the_prompt_is_on_stdin_and_nowhere_in_argv(provider: str) -> None:
    prompt = "-PROMPT-91c: starts with a dash --model evil --session x"
    agent, executor = agent_for(provider)
    agent.run(TurnRequest(prompt, extra_args=("--extra-flag",)))
    (request,) = executor.requests
    assert request.stdin == prompt
    assert not any("PROMPT-91c" in arg for arg in request.argv)
    assert "-p" not in request.argv or provider == "claude"  # Claude's -p is print mode
    assert "--prompt" not in request.argv
    assert "--extra-flag" in request.argv


@each_provider
def test_a_resumed_session_names_its_conversation(provider: str) -> None:
    session_id, flag = RESUMES[provider]
    agent, executor = agent_for(provider, session_id)
    result = agent.start_session(session_id=session_id).turn("go on")
    assert result.resumed
    (request,) = executor.requests
    assert flag_value(request.argv, flag) == session_id
    fresh, fresh_executor = agent_for(provider)
    fresh.run("go")
    (fresh_request,) = fresh_executor.requests
    assert flag_value(fresh_request.argv, flag) is None
    # Resuming adds the flag and the id and changes nothing else on the command line; Codex
    # resumes with a subcommand of its own (``exec resume ID -``), pinned in codex/test_argv.py.
    if provider != "codex":
        named = (flag, session_id, f"{flag}={session_id}")
        assert [arg for arg in request.argv if arg not in named] == list(fresh_request.argv)


def _unsupported(provider: str, tmp: Path) -> list[tuple[str, dict[str, object]]]:
    profile = get_plugin(provider).profile
    fields: list[tuple[str, dict[str, object]]] = []
    if profile.output_schema is OutputSchemaStyle.NONE:
        fields.append(("output_schema", {"output_schema": OutputSchema({"type": "object"}, tmp)}))
    if not profile.supports_reasoning_effort:
        fields.append(("reasoning_effort", {"reasoning_effort": "high"}))
    return fields


@each_provider
def test_what_the_profile_says_the_cli_cannot_take_is_refused_before_anything_runs(
    provider: str, tmp_path: Path
) -> None:
    for named, fields in _unsupported(provider, tmp_path):
        agent, executor = agent_for(provider)
        with pytest.raises(ProviderCapabilityError, match=named):
            agent.run(TurnRequest("x", **fields))  # type: ignore[arg-type]
        assert executor.requests == []


def test_the_refusals_above_cover_schema_and_effort() -> None:
    named = {name for p in PROVIDERS for name, _ in _unsupported(p, Path("/tmp"))}
    assert named == {"output_schema", "reasoning_effort"}
