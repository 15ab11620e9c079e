"""TextStreamParser: a harness's stdout is the answer, line for line.

A text harness prints no frames, so this parser does not read JSON at all: every stdout line
is a piece of the answer (an AssistantText with ``delta`` set, newline kept, so joining the
pieces gives the stdout back), and the answer is the stdout without its final newline.
Stderr is kept in a StderrTail for the failure message of a run that exits nonzero.
"""

from __future__ import annotations

from agentshim.core.events import AssistantText, Emit
from agentshim.core.stderr_tail import StderrTail
from agentshim.core.turn import ParsedTurn

__all__ = ["PROVIDER_NAME", "TextStreamParser"]

PROVIDER_NAME = "text"


class TextStreamParser:
    """Turns a harness's stdout into streamed answer text and a ParsedTurn; never raises."""

    def __init__(self, emit: Emit) -> None:
        """Parse one turn, sending events to ``emit``."""
        self._emit = emit
        self._pieces: list[str] = []
        self._stderr = StderrTail(emit)

    def feed_stdout(self, line: str) -> None:
        """Take one stdout line as the next piece of the answer."""
        if line:
            self._pieces.append(line)
            self._emit(AssistantText(line, delta=True))

    def feed_stderr(self, line: str) -> None:
        """Take one stderr line: emit it as Stderr and keep it for a failure message."""
        self._stderr.feed(line)

    def finish(self) -> ParsedTurn:
        """The answer: everything printed on stdout, without its final newline."""
        text = "".join(self._pieces)
        return ParsedTurn(text=text[:-1] if text.endswith("\n") else text)
