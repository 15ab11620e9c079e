"""The commands a long-lived ``pi --mode rpc`` process reads, and how its responses read.

Both directions are JSON lines. A command is ``{"id", "type", ...}``; Pi answers each with
``{"type": "response", "id", "command", "success", "data" | "error"}``, except that the
response to a command it could not read (a line that is not JSON, an unknown command) has no
``id``, so a response is matched by its id, else by its ``command``. Everything else Pi prints
is an event of the running agent (never with an id). See docs/providers/pi.md, "Stream
transport (rpc)".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from agentshim.core.jsonvalues import as_mapping, as_str

__all__ = [
    "DIALOG_METHODS",
    "HANDLED",
    "SETTLED",
    "PiState",
    "Response",
    "command",
    "dialog_cancelled",
    "failed_run",
    "model_command",
    "queued_messages",
    "read_disposition",
    "read_response",
    "read_state",
]

DIALOG_METHODS = frozenset({"select", "confirm", "input", "editor"})
"""The ``extension_ui_request`` methods that block until the client answers."""


SETTLED = "agent_settled"
"""The event after a run's last ``agent_end`` (Pi 1.x): nothing more comes without new input."""

HANDLED = "handled"
"""The ``disposition`` of input Pi consumed without a run (an extension's command, say)."""


def command(command_id: str, kind: str, **fields: Any) -> dict[str, Any]:
    """The command ``kind`` (``prompt``, ``steer``, ``abort``, ``get_state``...) with its id."""
    return {"id": command_id, "type": kind, **fields}


def model_command(command_id: str, model: str, current_provider: str | None) -> dict[str, Any]:
    """``set_model`` for ``model``: ``provider/id`` names both, a bare id keeps the provider.

    Pi's ``set_model`` needs the model's provider; a bare id is looked up under the provider
    the process runs now (``current_provider``, from ``get_state``).
    """
    provider, slash, model_id = model.partition("/")
    if not slash:
        provider, model_id = current_provider or "", model
    return command(command_id, "set_model", provider=provider, modelId=model_id)


def dialog_cancelled(request_id: str) -> dict[str, Any]:
    """The answer that dismisses an extension's dialog (nobody is there to answer it)."""
    return {"type": "extension_ui_response", "id": request_id, "cancelled": True}


@dataclass(frozen=True, slots=True)
class Response:
    """One ``response`` line: which command it answers, and how it went."""

    command_id: str | None
    command: str
    success: bool
    data: Mapping[str, Any]
    error: str


def read_response(frame: Mapping[str, Any]) -> Response:
    """The Response a ``type: response`` frame carries (odd shapes read as a failure)."""
    return Response(
        command_id=as_str(frame.get("id")),
        command=as_str(frame.get("command")) or "?",
        success=frame.get("success") is True,
        data=as_mapping(frame.get("data")) or {},
        error=as_str(frame.get("error")) or "",
    )


def read_disposition(response: Response) -> str | None:
    """What Pi 1.x did with a ``prompt``, ``steer`` or ``follow_up``: its ``data.disposition``.

    ``started``, ``queued`` or ``handled`` (no run starts); None from a Pi that does not say
    (0.73).
    """
    return as_str(response.data.get("disposition"))


@dataclass(frozen=True, slots=True)
class PiState:
    """What ``get_state`` says about the process's conversation and model."""

    session_id: str | None
    session_file: str | None
    model: str | None
    model_provider: str | None


def read_state(data: Mapping[str, Any]) -> PiState:
    """The PiState in a ``get_state`` response's ``data``."""
    model = as_mapping(data.get("model")) or {}
    return PiState(
        session_id=as_str(data.get("sessionId")) or None,
        session_file=as_str(data.get("sessionFile")) or None,
        model=as_str(model.get("id")) or None,
        model_provider=as_str(model.get("provider")) or None,
    )


def failed_run(agent_end: Mapping[str, Any]) -> bool:
    """Whether the run an ``agent_end`` closes ended on a failed model call.

    That is its last assistant message having ``stopReason: "error"``, the case Pi may retry.
    """
    messages = agent_end.get("messages")
    if not isinstance(messages, list):
        return False
    for item in reversed(cast("list[object]", messages)):
        message = as_mapping(item)
        if message is not None and message.get("role") == "assistant":
            return message.get("stopReason") == "error"
    return False


def queued_messages(queue_update: Mapping[str, Any]) -> list[str]:
    """The steering and follow-up messages a ``queue_update`` says Pi still holds."""
    texts: list[str] = []
    for key in ("steering", "followUp"):
        value = queue_update.get(key)
        if isinstance(value, list):
            texts += [text for text in cast("list[object]", value) if isinstance(text, str)]
    return texts
