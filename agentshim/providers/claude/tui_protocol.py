"""What the Claude Code TUI transport writes to the terminal, and how it reads its hooks.

The transport never reads the screen to learn when a turn starts or ends: command hooks
registered in a settings file of its own append one JSON line per hook event to a file it
follows (``{"agentshim_hook": <pid of the hook's shell>, "payload": <the hook's stdin>}``).
The screen is read only for what no hook reports: the start-up dialogs (workspace trust, the
bypass-permissions warning), authentication failures that end the program before it is
ready, and the weekly-limit banner. See docs/providers/claude.md, "TUI transport".
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.jsonvalues import as_mapping, as_str

from .events import tool_kind

__all__ = [
    "AUTH_MARKERS",
    "CLEAR_LINE",
    "CTRL_C",
    "DOWN",
    "ENTER",
    "ESCAPE",
    "HOOK_EVENTS",
    "DialogAnswer",
    "HookRecord",
    "answer_path",
    "approval_request",
    "auth_marker",
    "dialog_answer",
    "hook_output",
    "munged_cwd",
    "parse_hook_line",
    "paste",
    "sanitize_prompt",
    "screen_text",
    "send_answer",
    "tui_settings",
    "weekly_limit_used",
]

ENTER = b"\r"
"""Submits the input box, and accepts a dialog's selected option."""
ESCAPE = b"\x1b"
"""Interrupts the running turn."""
CTRL_C = b"\x03"
"""Twice in a row exits the program (firing SessionEnd)."""
CLEAR_LINE = b"\x15"
"""Empties the input box (an interrupted prompt comes back into it)."""
DOWN = b"\x1b[B"
"""Moves a dialog's selection down one option."""

_PASTE_START = "\x1b[200~"
_PASTE_END = "\x1b[201~"

HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "Stop",
    "StopFailure",
    "SessionEnd",
    "PermissionRequest",
)
"""The hook events the transport registers; the first five only report, the last is answered."""

EVENTS_FILE = "hooks.ndjson"
"""The file in the transport's private directory every hook appends its line to."""

WAKE_FIFO = "wake"
"""The FIFO in the same directory every hook writes a byte to once its line is in: the
transport's reader waits on it next to the terminal, so a hook wakes it and nothing else
needs to (opened read-write by the hook, so no hook ever blocks on it)."""

AUTH_MARKERS = (
    "Invalid API key",
    "Please run /login",
    "Not logged in",
    "OAuth token has expired",
    "Missing API key",
    "authentication_error",
    "Invalid bearer token",
)
"""Texts the terminal shows when Claude Code cannot authenticate."""

# CR and CRLF become LF; LF and tab stay; every other C0 control, DEL and every C1 control go.
_NEWLINES = re.compile(r"\r\n?")
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# A move to a column or to the right stands where the TUI draws a space between words.
_CURSOR_ACROSS = re.compile(r"\x1b\[\d*[GC]")
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC, ended by BEL or ST
    r"|\x1b[PX^_][^\x1b]*\x1b\\"  # DCS, SOS, PM, APC
    r"|\x1b[()*+][0-9A-Za-z]"  # charset designations
    r"|\x1b[@-_]?"  # any other escape (or a lone ESC)
)
_WEEKLY = re.compile(r"You(?:'|\u2019)?ve used (\d{1,3})% of your weekly limit")


def sanitize_prompt(text: str) -> str:
    """``text`` as it may go into a bracketed paste: no terminal control survives.

    CRLF and lone CR become LF; LF and tab are kept; every other C0 control character, DEL
    and every C1 control character are removed. So no ESC can reach the paste, and text such
    as ``ESC[201~`` in a prompt cannot end the paste early.
    """
    return _CONTROLS.sub("", _NEWLINES.sub("\n", text))


def paste(text: str) -> bytes:
    """The bytes that paste ``text`` (sanitized) into the input box, without submitting it."""
    return (_PASTE_START + sanitize_prompt(text) + _PASTE_END).encode("utf-8")


def screen_text(raw: str) -> str:
    """The words a stretch of terminal output draws, escape sequences taken out.

    Column moves read as a space (the TUI moves the cursor over the blanks between words),
    so the words of a line stay apart; nothing else about the screen is reconstructed.
    """
    return _ESCAPES.sub("", _CURSOR_ACROSS.sub(" ", raw)).replace("\r", "")


@dataclass(frozen=True, slots=True)
class DialogAnswer:
    """A start-up dialog on screen (``name``) and the keys that accept it, in order."""

    name: str
    keys: tuple[bytes, ...]


# (name, the text that shows the dialog, its accepting option, its refusing option)
_DIALOGS = (
    ("trust", "Quick safety check", "Yes, I trust this folder", "No, exit"),
    ("bypass_permissions", "Bypass Permissions mode", "Yes, I accept", "No, exit"),
)


def dialog_answer(text: str) -> DialogAnswer | None:
    """The dialog the last part of ``text`` (screen words) shows, and how to accept it.

    Claude Code 2.1.197 lists the accepting option first (Enter accepts); 2.1.332 lists
    "No, exit" first and selects it, so one Down comes before the Enter there.
    """
    found: tuple[int, str, str, str] | None = None
    for name, title, accept, refuse in _DIALOGS:
        at = text.rfind(title)
        if at >= 0 and (found is None or at > found[0]):
            found = (at, name, accept, refuse)
    if found is None:
        return None
    at, name, accept, refuse = found
    rest = text[at:]
    accept_at, refuse_at = rest.find(accept), rest.find(refuse)
    if accept_at < 0:
        return None  # not drawn in full yet
    if 0 <= refuse_at < accept_at:
        return DialogAnswer(name, (DOWN, ENTER))
    return DialogAnswer(name, (ENTER,))


def auth_marker(text: str) -> str | None:
    """The first authentication-failure marker in ``text`` (screen words), or None."""
    for marker in AUTH_MARKERS:
        if marker in text:
            return marker
    return None


def weekly_limit_used(text: str) -> int | None:
    """The percentage the last weekly-limit banner in ``text`` reports, or None."""
    found = _WEEKLY.findall(text)
    return int(found[-1]) if found else None


@dataclass(frozen=True, slots=True)
class HookRecord:
    """One hook event: its name, the JSON the CLI gave the hook, and the hook's shell pid."""

    event: str
    payload: Mapping[str, Any]
    hook: int | None = None

    def field(self, name: str) -> str | None:
        """A string field of the payload, or None."""
        return as_str(self.payload.get(name))


def parse_hook_line(line: str) -> HookRecord | None:
    """The record one line of the events file holds; None for a line that is not one."""
    try:
        value: object = json.loads(line)
    except ValueError:
        return None
    record = as_mapping(value)
    if record is None:
        return None
    payload = as_mapping(record.get("payload"))
    if payload is None:
        return None
    event = as_str(payload.get("hook_event_name"))
    if event is None:
        return None
    hook: object = record.get("agentshim_hook")
    return HookRecord(event, payload, hook if hook.__class__ is int else None)  # type: ignore[arg-type]


def answer_path(directory: Path, hook: int) -> Path:
    """The FIFO the PermissionRequest hook of shell ``hook`` reads its answer from."""
    return directory / f"answer-{hook}"


def send_answer(directory: Path, hook: int, answer: str) -> None:
    """Hand ``answer`` (one JSON line) to the PermissionRequest hook of shell ``hook``.

    The hook made its FIFO and holds it open before it reported itself, and blocks reading
    it, so the write wakes it: no side waits on a clock.

    Raises:
        OSError: the hook is gone (no FIFO, or nobody holds it open), or the write failed.
    """
    fd = os.open(answer_path(directory, hook), os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.set_blocking(fd, True)  # the hook reads as we write: a long answer waits for it
        data = (answer + "\n").encode("utf-8")  # JSON text: its newlines are escaped
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _report_command(events: Path) -> str:
    # One printf per record: one write, so records of hooks running at once do not mix.
    wake = shlex.quote(str(events.with_name(WAKE_FIFO)))
    return (
        'p=$(cat); printf \'{"agentshim_hook":%s,"payload":%s}\\n\' "$$" "${p:-null}" >> '
        + shlex.quote(str(events))
        + f"; if [ -p {wake} ]; then printf . 1<> {wake}; fi"
    )


def _answer_command(events: Path, directory: Path) -> str:
    # The FIFO exists and is held open (read-write, so opening it never blocks) before the
    # record goes out, so the transport's answer can never come before its reader; the read
    # blocks until it does (the CLI's hook timeout bounds it).
    answer = shlex.quote(str(directory)) + '/answer-"$$"'
    return (
        f'a={answer}; if mkfifo -m 600 "$a" 2>/dev/null; then exec 3<>"$a"; fi; '
        f"{_report_command(events)}; "
        'if [ -p "$a" ]; then IFS= read -r line <&3; rm -f "$a"; printf \'%s\\n\' "$line"; fi'
    )


def tui_settings(
    directory: Path,
    base: str | None,
    *,
    approval_wait: float,
    bypass: bool,
    project_servers: Sequence[str] = (),
) -> dict[str, Any]:
    """The settings file's content: ``base`` (the provider's own settings) plus the hooks.

    Each hook appends its record to ``directory/hooks.ndjson``; the PermissionRequest hook
    then reads the transport's answer from its FIFO (:func:`send_answer`) and prints it; the
    CLI gives it ``approval_wait`` seconds and a margin.
    ``bypass`` also skips the bypass-permissions warning the TUI shows at start-up.
    ``project_servers`` names the conversation's MCP servers installed in the workspace's
    ``.mcp.json``: approved here (``enabledMcpjsonServers``), so the TUI does not stop at its
    "New MCP server found in this project" dialog; no other server of that file is.
    """
    settings: dict[str, Any] = {}
    if base is not None:
        loaded = as_mapping(json.loads(base))
        settings.update(loaded or {})
    events = directory / EVENTS_FILE
    hooks: dict[str, Any] = dict(as_mapping(settings.get("hooks")) or {})
    for event in HOOK_EVENTS:
        if event == "PermissionRequest":
            command = _answer_command(events, directory)
            entry: dict[str, Any] = {
                "type": "command",
                "command": command,
                "timeout": int(approval_wait) + 30,
            }
        else:
            entry = {"type": "command", "command": _report_command(events)}
        existing: object = hooks.get(event)
        kept: list[Any] = list(existing) if isinstance(existing, list) else []  # pyright: ignore[reportUnknownArgumentType]
        hooks[event] = [*kept, {"hooks": [entry]}]
    settings["hooks"] = hooks
    if project_servers:
        enabled: object = settings.get("enabledMcpjsonServers")
        kept_names: list[Any] = list(enabled) if isinstance(enabled, list) else []  # pyright: ignore[reportUnknownArgumentType]
        settings["enabledMcpjsonServers"] = [*kept_names, *project_servers]
    if bypass:
        settings["skipDangerousModePermissionPrompt"] = True
    return settings


def approval_request(record: HookRecord) -> ApprovalRequest:
    """The ApprovalRequest a PermissionRequest hook describes (the payload has no tool id)."""
    tool = record.field("tool_name") or "unknown"
    args = as_mapping(record.payload.get("tool_input")) or {}
    return ApprovalRequest(
        tool=tool,
        args=dict(args),
        kind=tool_kind(tool),
        tool_id=record.field("tool_use_id"),
        description=record.field("description") or "",
    )


def hook_output(decision: ApprovalDecision, request: ApprovalRequest) -> dict[str, Any]:
    """What the PermissionRequest hook prints: allow (with the input to run) or deny."""
    if decision.allowed:
        args = decision.args if decision.args is not None else request.args
        body: dict[str, Any] = {"behavior": "allow", "updatedInput": dict(args)}
    else:
        body = {"behavior": "deny", "message": decision.message or "denied"}
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": body}}


def munged_cwd(cwd: str) -> str:
    """The directory name Claude Code keeps a working directory's transcripts under."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)
