"""Turning a byte stream into text lines, and keeping a bounded tail of it.

Private to the execution package. Both classes sit on the executor's hot path, so they work
on whole chunks: one ``find`` and one ``decode`` per chunk, one C-level split per batch.
"""

from __future__ import annotations

import re
from collections import deque

__all__ = ["LineAssembler", "OutputTail"]

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


class LineAssembler:
    """Collects chunks of one stream and hands back complete lines as text.

    Lines are split at the newline character only and keep it. Bytes that are not valid UTF-8 become
    U+FFFD. A line split across chunks, however long, is joined before it is decoded, so a
    multi-byte character cut by a chunk boundary survives intact.
    """

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> str:
        """Add ``chunk``; return the complete lines it finished as one text ("" if none)."""
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
