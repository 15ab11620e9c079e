"""The client methods an agent may call, each off unless the caller turns it on.

``fs/read_text_file`` and ``fs/write_text_file`` reach only files inside the conversation's
workspace: a path is resolved (symlinks included) before it is checked, so a link that leads
out is refused like a path that is out. A write is also the approvals handler's to allow.
``elicitation/create`` is answered by the caller's handler. What the caller did not turn on
is not advertised in ``initialize``; an agent that calls it anyway is refused, and the turn
says so with a typed error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentshim.core.jsonvalues import as_int, as_str

__all__ = ["AcpClientMethods", "FileRefused", "confined_path", "read_text", "write_text"]

Elicitation = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""A caller's answer to ``elicitation/create``: the request's params in, the result out
(``{"action": "accept", "content": {...}}``, ``{"action": "decline"}`` or ``{"action": "cancel"}``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AcpClientMethods:
    """Which client methods the agent may call, and their limits.

    ``read_files`` / ``write_files`` offer ``fs/read_text_file`` / ``fs/write_text_file``
    inside the workspace (writes also go to the approvals handler, and a read-only
    conversation refuses them). ``elicitation`` answers ``elicitation/create`` (form mode);
    a handler that raises or returns no ``action`` cancels the elicitation. ``terminal``
    offers ``terminal/*``: commands run through the conversation's executor, in the workspace,
    killed and reaped when the turn ends or is interrupted (see :mod:`.terminals`).
    ``max_read_bytes`` caps what one read returns, ``max_output_bytes`` what a terminal keeps.
    """

    read_files: bool = False
    write_files: bool = False
    terminal: bool = False
    elicitation: Elicitation | None = None
    max_read_bytes: int = 1_000_000
    max_output_bytes: int = 1_000_000

    def capabilities(self) -> dict[str, Any]:
        """The ``clientCapabilities`` of ``initialize`` that say what is on."""
        offered: dict[str, Any] = {
            "fs": {"readTextFile": self.read_files, "writeTextFile": self.write_files},
            "terminal": self.terminal,
        }
        if self.elicitation is not None:
            offered["elicitation"] = {"form": {}}
        return offered

    def offers(self, method: str) -> bool:
        """Whether the agent may call ``method``."""
        return (
            (method == "fs/read_text_file" and self.read_files)
            or (method == "fs/write_text_file" and self.write_files)
            or (method == "elicitation/create" and self.elicitation is not None)
            or (method.startswith("terminal/") and self.terminal)
        )


class FileRefused(Exception):
    """A file method the client will not carry out; the message says why (sent to the agent)."""


def confined_path(workspace: str, path: object) -> str:
    """``path`` resolved, when it is absolute and inside ``workspace`` (both resolved).

    Raises:
        FileRefused: not an absolute path, or outside the workspace (a symlink out included).
    """
    text = as_str(path)
    if not text or "\0" in text or not os.path.isabs(text):
        raise FileRefused(f"not an absolute path: {text!r:.200}")
    root = os.path.realpath(workspace)
    real = os.path.realpath(text)
    if os.path.commonpath([root, real]) != root:
        raise FileRefused(f"{text} is outside the session's workspace {root}")
    return real


def read_text(workspace: str, params: Mapping[str, Any], max_bytes: int) -> str:
    """The text ``fs/read_text_file`` asks for: from 1-based ``line``, at most ``limit`` lines.

    Raises:
        FileRefused: the path is refused, missing or unreadable, or the file is too big.
    """
    real = confined_path(workspace, params.get("path"))
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise FileRefused(f"cannot read {real}: {error.strerror or error}") from error
    if len(data) > max_bytes:
        raise FileRefused(f"{real} is over {max_bytes} bytes; read it with line and limit")
    text = data.decode("utf-8", errors="replace")
    line, limit = as_int(params.get("line")), as_int(params.get("limit"))
    if line is None and limit is None:
        return text
    lines = text.splitlines(keepends=True)
    start = max((line or 1) - 1, 0)
    end = len(lines) if limit is None else start + max(limit, 0)
    return "".join(lines[start:end])


def write_text(workspace: str, params: Mapping[str, Any]) -> str:
    """Write ``content`` to ``path`` (created if missing); returns the resolved path.

    Raises:
        FileRefused: the path is refused, the content is not text, or the write failed.
    """
    real = confined_path(workspace, params.get("path"))
    content = params.get("content")
    if not isinstance(content, str):
        raise FileRefused("content is not a string")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(real, flags, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
    except OSError as error:
        raise FileRefused(f"cannot write {real}: {error.strerror or error}") from error
    return real
