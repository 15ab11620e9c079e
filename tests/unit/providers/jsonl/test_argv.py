from __future__ import annotations

import pytest

from agentshim.core.errors import InvalidRequestError, ProviderCapabilityError
from agentshim.core.provider import ArgvContext
from agentshim.providers.jsonl import JsonlProvider


def test_the_command_its_args_then_the_extra_args_and_never_the_prompt() -> None:
    provider = JsonlProvider(binary="my-agent", args=("--json",))
    argv = provider.build_argv(ArgvContext(binary_path="/opt/my-agent", extra_args=("-v",)))
    assert argv == ["/opt/my-agent", "--json", "-v"]


def test_a_model_or_a_resume_is_refused() -> None:
    provider = JsonlProvider()
    with pytest.raises(ProviderCapabilityError, match="model"):
        provider.build_argv(ArgvContext(binary_path="/b", model="m"))
    with pytest.raises(ProviderCapabilityError, match="resume"):
        provider.build_argv(ArgvContext(binary_path="/b", resume_session_id="s-1"))


@pytest.mark.parametrize(("binary", "args"), [("-x", ()), ("two words", ()), ("ok", (1,))])
def test_a_command_that_cannot_be_one_word_is_refused(binary: str, args: tuple[object]) -> None:
    with pytest.raises(InvalidRequestError):
        JsonlProvider(binary=binary, args=args)  # type: ignore[arg-type]
