"""Turning a byte stream into text lines, and keeping a bounded tail of it.

Private to the execution package. Both classes sit on the executor's hot path, so they work
on whole chunks: one ``find`` and one ``decode`` per chunk, one C-level split per batch.
"""

from __future__ import annotations

import re
from collections import deque

from agentshim.core.stream import DEFAULT_MAX_LINE_BYTES

__all__ = ["LineAssembler", "LineOverflow", "OutputTail", "split_lines"]

# str.splitlines also breaks on these; a line here ends only at "\n".
_FOREIGN_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_LINE = re.compile(r"[^\n]*\n")


def split_lines(text: str) -> list[str]:
    """Split ``text``, which ends with a newline, into lines that keep their newline."""
    if text.isascii():
        if not any(brk in text for brk in _FOREIGN_BREAKS[:6]):
            return text.splitlines(True)
    elif not any(brk in text for brk in _FOREIGN_BREAKS):
        return text.splitlines(True)
    return _LINE.findall(text)


class LineOverflow(Exception):
    """A line grew past the assembler's limit; ``text`` holds the complete lines before it.

    Private to the execution package: the host turns it into LineTooLongError.
    """

    def __init__(self, text: str) -> None:
        super().__init__("line too long")
        self.text = text


class LineAssembler:
    """Collects chunks of one stream and hands back complete lines as text.

    Lines are split at the newline character only and keep it. Bytes that are not valid UTF-8 become
    U+FFFD. A line split across chunks is joined before it is decoded, so a multi-byte
    character cut by a chunk boundary survives intact.

    A line may hold at most ``max_line_bytes`` bytes before its newline, so the assembler
    never holds more than that. The chunk that shows a line to be longer raises
    :class:`LineOverflow` carrying the complete lines it finished before that line; from
    then on the assembler discards everything it is fed.
    """

    __slots__ = ("_broken", "_max", "_pending")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self._max = max_line_bytes
        self._pending = bytearray()
        self._broken = False

    def feed(self, chunk: bytes) -> str:
        """Add ``chunk``; return the complete lines it finished as one text ("" if none).

        Raises:
            LineOverflow: A line is longer than the limit.
        """
        if self._broken:
            return ""
        if len(self._pending) + len(chunk) > self._max:
            # Only then can a line in reach be too long: look closer (rarely taken).
            self._check_lengths(chunk)
        end = chunk.rfind(b"\n")
        if end < 0:
            self._pending += chunk
            return ""
        if self._pending:
            pending = self._pending
            pending += chunk[: end + 1]
            self._pending = bytearray(chunk[end + 1 :])
            return pending.decode("utf-8", "replace")
        if end + 1 == len(chunk):
            return chunk.decode("utf-8", "replace")
        self._pending += chunk[end + 1 :]
        return chunk[: end + 1].decode("utf-8", "replace")

    def _check_lengths(self, chunk: bytes) -> None:
        """Raise LineOverflow at the first line of ``chunk`` (joined to pending) over the limit."""
        limit = self._max
        size = len(self._pending)
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline
            if size + end - start > limit:
                break
            if newline < 0:
                return
            size = 0
            start = newline + 1
        done = ""
        if start:
            # The pending bytes were the start of a line that ended in this chunk, in time.
            done = (self._pending + chunk[:start]).decode("utf-8", "replace")
        self._pending = bytearray()
        self._broken = True
        raise LineOverflow(done)

    def finish(self) -> str:
        """Return what is left after end of stream: a final line without newline, or ""."""
        if not self._pending:
            return ""
        rest = self._pending
        self._pending = bytearray()
        return rest.decode("utf-8", "replace")


class OutputTail:
    """Keeps the last ``limit`` characters of a stream's text, however much passes through."""

    __slots__ = ("_limit", "_pieces", "_size")

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"tail limit must be >= 0, got {limit}")
        self._limit = limit
        self._pieces: deque[str] = deque()
        self._size = 0

    def add(self, text: str) -> None:
        """Append ``text``, forgetting whatever falls out of the window."""
        limit = self._limit
        if len(text) >= limit:
            self._pieces.clear()
            text = text[len(text) - limit :] if limit else ""
            self._size = 0
            if not text:
                return
        self._pieces.append(text)
        self._size += len(text)
        pieces = self._pieces
        while self._size - len(pieces[0]) >= limit:
            self._size -= len(pieces.popleft())

    def text(self) -> str:
        """Return the retained tail."""
        joined = "".join(self._pieces)
        return joined[len(joined) - self._limit :] if len(joined) > self._limit else joined
