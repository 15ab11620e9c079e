from __future__ import annotations

import pytest

from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.provider import ArgvContext
from agentshim.providers.text import TextProvider


def test_the_command_its_args_then_the_extra_args_and_never_the_prompt() -> None:
    provider = TextProvider(binary="answer.sh", args=("--quiet",))
    argv = provider.build_argv(ArgvContext(binary_path="/opt/answer.sh", extra_args=("-v",)))
    assert argv == ["/opt/answer.sh", "--quiet", "-v"]


def test_a_model_or_a_resume_is_refused() -> None:
    with pytest.raises(ProviderCapabilityError, match="model"):
        TextProvider().build_argv(ArgvContext(binary_path="/b", model="m"))
    with pytest.raises(ProviderCapabilityError, match="resume"):
        TextProvider().build_argv(ArgvContext(binary_path="/b", resume_session_id="s"))
