"""The tail of what a CLI printed on stderr during a turn, as a parser keeps it."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from agentshim.core.events import Emit, Stderr

__all__ = ["DEFAULT_STDERR_LINES", "StderrTail"]

DEFAULT_STDERR_LINES = 200
"""How many stderr lines a StderrTail keeps by default (the newest win)."""


class StderrTail:
    """Emits each non-blank stderr line as a Stderr event and keeps the last ``max_lines``.

    What it keeps is what a parser reads when the turn fails (the CLI's own error sentence);
    blank lines are neither emitted nor kept.
    """

    __slots__ = ("_emit", "_lines")

    def __init__(self, emit: Emit, max_lines: int = DEFAULT_STDERR_LINES) -> None:
        self._emit = emit
        self._lines: deque[str] = deque(maxlen=max_lines)

    def feed(self, line: str) -> None:
        """Take one stderr line (trailing newline optional)."""
        text = line.rstrip("\r\n")
        if not text.strip():
            return
        self._lines.append(text)
        self._emit(Stderr(text))

    def first(self) -> str:
        """The oldest line kept, stripped (often the CLI's error sentence), or ``""``."""
        return self._lines[0].strip() if self._lines else ""

    def last(self) -> str:
        """The newest line kept, as printed, or ``""``."""
        return self._lines[-1] if self._lines else ""

    def text(self) -> str:
        """Every line kept, oldest first, joined with newlines."""
        return "\n".join(self._lines)

    def __iter__(self) -> Iterator[str]:
        return iter(self._lines)

    def __len__(self) -> int:
        return len(self._lines)
