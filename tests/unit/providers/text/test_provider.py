from __future__ import annotations

from pathlib import Path

import pytest

from agentshim import CliAgent
from agentshim.core.errors import CliExitError
from agentshim.execution import HostCommandExecutor
from agentshim.providers.text import TextProvider


def _agent_over_script(folder: Path, body: str) -> CliAgent:
    """An agent whose CLI is ``answer.sh`` in ``folder``, a shell script running ``body``."""
    script = folder / "answer.sh"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return CliAgent(
        TextProvider(binary="answer.sh"),
        executor=HostCommandExecutor(),
        env={"PATH": f"{folder}:/usr/bin:/bin"},
    )


def test_a_shell_script_stands_behind_an_agent(tmp_path: Path) -> None:
    agent = _agent_over_script(
        tmp_path, '[ "$1" = --version ] && exit 0\nread -r prompt\necho "you said: $prompt"\n'
    )
    result = agent.run("hello there")
    assert result.text == "you said: hello there"
    assert result.usage.increment_known is False


def test_a_script_that_fails_fails_the_turn_with_its_stderr(tmp_path: Path) -> None:
    agent = _agent_over_script(
        tmp_path, '[ "$1" = --version ] && exit 0\necho "no such thing" >&2\nexit 2\n'
    )
    with pytest.raises(CliExitError, match="no such thing"):
        agent.run("x")
