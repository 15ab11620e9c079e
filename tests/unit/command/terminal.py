"""``agentshim`` on a pseudo-terminal of its own, as a user's terminal runs it."""

from __future__ import annotations

import os
import re
from pathlib import Path

from agentshim.execution.process import SpawnRequest
from agentshim.execution.pty_process import PtyProcess
from agentshim.testing._liveness import HANG_GUARD_S
from tests.unit.agentshim_command import COMMAND


class Terminal:
    """``agentshim ARGS`` on a pseudo-terminal; ``screen`` is everything it showed."""

    def __init__(self, tmp_path: Path, env: dict[str, str], *args: str) -> None:
        argv = [*COMMAND, *args]
        self.process = PtyProcess.start(SpawnRequest(argv, cwd=str(tmp_path), env=env))
        self.screen = ""

    def read_until(self, pattern: str) -> str:
        while re.search(pattern, self.screen) is None:
            chunk = self.process.read(HANG_GUARD_S)
            assert chunk is not None, f"{pattern!r} never appeared in {self.screen!r}"
            self.screen += chunk.decode(errors="replace")
        return self.screen

    def type(self, keys: bytes) -> None:
        self.process.write(keys)

    def signal(self, signum: int) -> None:
        os.kill(self.process.pid, signum)

    def finish(self) -> int:
        while self.process.returncode is None:
            chunk = self.process.read(HANG_GUARD_S)
            if chunk is None and self.process.returncode is None:
                raise AssertionError(f"agentshim did not exit: {self.screen!r}")
            self.screen += (chunk or b"").decode(errors="replace")
        assert "Traceback" not in self.screen, self.screen
        return self.process.returncode
