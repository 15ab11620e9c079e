"""The live status line ``agentshim run`` keeps on a terminal while the CLI is quiet."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from typing import TextIO

from agentshim.core.clock import Monotonic
from agentshim.core.events import (
    AgentEvent,
    AssistantText,
    ToolCall,
    ToolResult,
    UsageReport,
)

__all__ = ["StatusLine", "is_terminal", "wants_color"]

_ERASE = "\r\x1b[K"
_DIM = "\x1b[2m"
_RESET = "\x1b[0m"


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (a stream without ``isatty`` is not)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except ValueError:  # a closed stream
        return False


def wants_color(stream: TextIO, env: Mapping[str, str] | None = None) -> bool:
    """Whether to colour what goes to ``stream``: a terminal, and ``NO_COLOR`` not set.

    ``NO_COLOR`` set to anything but the empty string turns colour off (https://no-color.org).
    """
    variables = os.environ if env is None else env
    return is_terminal(stream) and not variables.get("NO_COLOR")


class StatusLine:
    """One line on a terminal: time since the turn began, tokens reported so far, current tool.

    It is drawn only after ``quiet_after`` seconds without other output, redrawn every
    ``interval`` seconds, and erased before anything else is written (callers write under
    :attr:`lock` and call :meth:`erase` first). Never drawn while streamed text is mid-line.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        color: bool,
        quiet_after: float = 1.0,
        interval: float = 0.25,
        monotonic: Monotonic = time.monotonic,
    ) -> None:
        self.stream = stream
        self.color = color
        self.lock = threading.RLock()
        self._quiet_after = quiet_after
        self._interval = interval
        self._clock = monotonic
        self._started = monotonic()
        self._last_output = self._started
        self._tokens: int | None = None
        self._tool: str | None = None
        self._mid_line = False
        self._shown = False
        self._done = threading.Event()
        self._ticker: threading.Thread | None = None

    def text(self) -> str:
        """What the line says now, without colour."""
        elapsed = self._clock() - self._started
        tokens = f"{self._tokens:,} tokens" if self._tokens is not None else "tokens -"
        tool = f" | running {self._tool}" if self._tool else ""
        return f"... {elapsed:.0f}s | {tokens}{tool}"

    def note(self, event: AgentEvent) -> None:
        """Take in what ``event`` says about progress; the caller has just written it."""
        with self.lock:
            self._last_output = self._clock()
            if isinstance(event, UsageReport):
                tokens = event.usage.tokens
                self._tokens = tokens.input_tokens + tokens.output_tokens
            elif isinstance(event, ToolCall):
                self._tool = event.tool
                self._mid_line = False
            elif isinstance(event, ToolResult):
                self._tool = None
                self._mid_line = False
            elif isinstance(event, AssistantText):
                self._mid_line = event.delta and not event.text.endswith("\n")

    def _write(self, text: str) -> bool:
        """Write ``text``; False when the terminal is gone (hung up, closed): not worth a crash."""
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            return False
        return True

    def erase(self) -> None:
        """Remove the line if it is shown (call with :attr:`lock` held, before writing)."""
        with self.lock:
            if self._shown:
                self._shown = False
                self._write(_ERASE)

    def draw(self) -> None:
        """Draw the line now if the CLI has been quiet long enough."""
        with self.lock:
            if self._done.is_set() or self._mid_line:
                return
            if self._clock() - self._last_output < self._quiet_after:
                return
            line = self.text()
            if self.color:
                line = f"{_DIM}{line}{_RESET}"
            self._shown = self._write(_ERASE + line)

    def start(self) -> None:
        """Redraw every ``interval`` seconds on a daemon thread until :meth:`stop`."""

        def tick() -> None:
            while not self._done.wait(self._interval):
                self.draw()

        self._ticker = threading.Thread(target=tick, name="agentshim-status", daemon=True)
        self._ticker.start()

    def stop(self) -> None:
        """Stop redrawing and erase the line."""
        self._done.set()
        if self._ticker is not None:
            self._ticker.join(timeout=1.0)
        self.erase()
