from __future__ import annotations

from pathlib import Path

import pytest

from agentshim import CliAgent
from agentshim.core.errors import CliExitError
from agentshim.execution import HostCommandExecutor
from agentshim.providers.text import TextProvider


def _script(folder: Path, body: str) -> None:
    script = folder / "answer.sh"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)


def test_a_shell_script_stands_behind_an_agent(tmp_path: Path) -> None:
    _script(tmp_path, '[ "$1" = --version ] && exit 0\nread -r prompt\necho "you said: $prompt"\n')
    agent = CliAgent(
        TextProvider(binary="answer.sh"),
        executor=HostCommandExecutor(),
        env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
    )
    result = agent.run("hello there")
    assert result.text == "you said: hello there"
    assert result.usage.increment_known is False


def test_a_script_that_fails_fails_the_turn_with_its_stderr(tmp_path: Path) -> None:
    _script(tmp_path, '[ "$1" = --version ] && exit 0\necho "no such thing" >&2\nexit 2\n')
    agent = CliAgent(
        TextProvider(binary="answer.sh"),
        executor=HostCommandExecutor(),
        env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
    )
    with pytest.raises(CliExitError, match="no such thing"):
        agent.run("x")
