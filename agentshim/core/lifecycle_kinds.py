"""The catalogue of ``Lifecycle`` kinds: every ``Lifecycle(kind, detail)`` agentshim emits.

A :class:`~agentshim.core.events.Lifecycle` event reports provider plumbing (a retry, a
warning, a frame nobody knows, a decision of the session policy). Its ``kind`` is always one
of the constants below, or a name built by one of the prefix helpers (:func:`unknown_frame`,
:func:`unknown_item`, :func:`unknown_block`, :func:`system`) for a family whose last part comes
from the CLI. A handler compares ``event.kind`` with these constants instead of spelling the
strings itself; :data:`CATALOGUE` says when each is emitted, :data:`PREFIXES` the same for the
families, and :func:`is_catalogued` tells whether a kind belongs to either.

The values are the strings the events always carried, so code that compares with literals
keeps working. Kinds are added here before any module emits them (a unit test scans the
package and replays the recorded fixtures to hold that).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = [
    "ACP_INITIALIZED",
    "AGENT_COMPLETED",
    "AGENT_NOTICE",
    "AGENT_SETTLED",
    "AGENT_STARTED",
    "API_ERROR",
    "API_RETRY",
    "API_RETRY_SUCCEEDED",
    "APPROVAL_NOT_SENT",
    "BETWEEN_TURNS",
    "CALLBACK_NOT_SENT",
    "CANCELLED_BY_AGENT",
    "CANCEL_ANSWERED_WITH_ERROR",
    "CATALOGUE",
    "CLIENT_METHOD_REFUSED",
    "COMMANDS_ENDED",
    "COMMAND_RESPONSE",
    "COMPACTION_COMPLETED",
    "COMPACTION_STARTED",
    "CONTROL_CANCEL_REQUEST",
    "CONTROL_REQUEST",
    "CONTROL_RESPONSE",
    "CONVERSATION_FORGOTTEN",
    "CONVERSATION_LOST",
    "CONVERSATION_RELEASED",
    "CONVERSATION_REPLACED",
    "CONVERSATION_RETIRED",
    "DIALOG_ANSWERED",
    "ELICITATION_FAILED",
    "ENTRY_APPENDED",
    "EXTENSION_DIALOG_CANCELLED",
    "EXTENSION_ERROR",
    "EXTENSION_UI",
    "FOLLOWED_UP",
    "FOLLOW_UP_HANDLED",
    "FOLLOW_UP_REFUSED",
    "FORKED",
    "HOOK_DECIDED",
    "HOOK_FAILED",
    "INFO",
    "INIT",
    "INTENT",
    "INTERRUPT_UNANSWERED",
    "LOAD_DEFERRED",
    "MALFORMED_FRAME",
    "MALFORMED_UPDATE",
    "MCP_CONFIG_RESTORE",
    "MCP_SERVER_FAILED",
    "MCP_SERVER_STATUS",
    "MESSAGE_SUPERSEDED",
    "MODEL_CALL_DEFERRED",
    "MODEL_CALL_FAILED",
    "MODEL_SWITCHED",
    "OUTPUT_TRUNCATED",
    "PERMISSION_DENIED",
    "PREFIXES",
    "PROCESS_RESPAWNED",
    "PROMPT_HANDLED",
    "PROMPT_SUBMITTED",
    "RATE_LIMIT",
    "REPLAY_SUPPRESSED",
    "REQUEST_CANCELLED",
    "REQUEST_REFUSED",
    "RESUME_NOT_FOUND",
    "RESUME_REPLACED",
    "RETRY_SCHEDULED",
    "SERVER_REQUEST_REFUSED",
    "SESSION_END",
    "SESSION_FILE",
    "SESSION_ID_REFUSED",
    "SESSION_RESOLVED",
    "SESSION_RESUMED",
    "STATUS",
    "STEERED",
    "STEER_CARRIED_OVER",
    "STEER_HANDLED",
    "STEER_REFUSED",
    "STEP_FINISHED",
    "STEP_STARTED",
    "STOP_REASON",
    "SUBAGENT_TEXT",
    "SUBMIT_RETRIED",
    "SUMMARIZATION_RETRY",
    "SUMMARIZATION_RETRY_FINISHED",
    "SUMMARIZATION_RETRY_STARTED",
    "SYNTHETIC_USER_MESSAGE",
    "THINKING_LEVEL_CHANGED",
    "THREAD_STARTED",
    "TOOL_CONNECTION_REFUSED",
    "TOOL_FAILED",
    "TOOL_MESSAGE_DROPPED",
    "TOOL_TIMED_OUT",
    "TURN_COMPLETED",
    "TURN_FAILED",
    "TURN_STARTED",
    "UNKNOWN_UPDATE",
    "USAGE_UNKNOWN",
    "USER_MESSAGE",
    "USER_MESSAGE_CHUNK",
    "WARNING",
    "is_catalogued",
    "system",
    "unknown_block",
    "unknown_frame",
    "unknown_item",
]

_CATALOGUE: dict[str, str] = {}


def _kind(name: str, when: str) -> str:
    """Enter ``name`` in the catalogue with ``when`` (when it is emitted); return ``name``."""
    _CATALOGUE[name] = when
    return name


# The turn and the agent's run, as the CLI reports them.
TURN_STARTED: Final = _kind("turn_started", "the CLI started a turn; detail: its turn id, if any")
TURN_COMPLETED: Final = _kind("turn_completed", "the CLI reports a turn complete")
TURN_FAILED: Final = _kind("turn_failed", "Codex reported the turn failed; detail: its message")
INIT: Final = _kind("init", "Claude Code's init frame; detail: the model and the CLI's version")
THREAD_STARTED: Final = _kind("thread_started", "Codex started a thread; detail: its id")
AGENT_STARTED: Final = _kind("agent_started", "Pi's agent run started")
AGENT_COMPLETED: Final = _kind("agent_completed", "Pi's agent run ended")
AGENT_SETTLED: Final = _kind(
    "agent_settled", "Pi settled after a run; detail: 'aborted' when the run was aborted"
)
STEP_STARTED: Final = _kind("step_started", "opencode started a step of the turn")
STEP_FINISHED: Final = _kind("step_finished", "opencode finished a step; detail: its reason")
STOP_REASON: Final = _kind("stop_reason", "an ACP agent ended the turn with an unusual reason")
CANCELLED_BY_AGENT: Final = _kind(
    "cancelled_by_agent", "an ACP agent answered 'cancelled' to a turn nobody interrupted"
)
STATUS: Final = _kind("status", "Claude Code's system status frame; detail: the status")
INTENT: Final = _kind("intent", "Copilot said what it is about to do; detail: the intent")
INFO: Final = _kind("info", "Copilot's informational notice; detail: '<type>: <message>'")
WARNING: Final = _kind("warning", "the CLI reported a warning that does not end the turn")
API_ERROR: Final = _kind(
    "api_error", "Claude Code put an API error in an assistant message; detail: the error"
)
API_RETRY: Final = _kind("api_retry", "the CLI retries a model call; detail: why and when")
API_RETRY_SUCCEEDED: Final = _kind("api_retry_succeeded", "Pi's retried model call succeeded")
MODEL_CALL_FAILED: Final = _kind(
    "model_call_failed", "Copilot reported one failed model call it will retry"
)
MODEL_CALL_DEFERRED: Final = _kind(
    "model_call_deferred", "Pi deferred a model call; detail: Pi's note"
)
RATE_LIMIT: Final = _kind("rate_limit", "the CLI reported rate-limit state; detail: status, type")
OUTPUT_TRUNCATED: Final = _kind(
    "output_truncated",
    "the model's answer was cut off at its output-token limit; not a failure, the turn keeps "
    "the text it got (and carries a notice in TurnResult.notices)",
)
PERMISSION_DENIED: Final = _kind(
    "permission_denied", "Claude Code's result lists a tool use it denied; detail: the tool"
)
USER_MESSAGE: Final = _kind("user_message", "Claude Code echoed a user message; detail: its text")
SYNTHETIC_USER_MESSAGE: Final = _kind(
    "synthetic_user_message", "Claude Code injected a user message of its own; detail: its text"
)
USER_MESSAGE_CHUNK: Final = _kind(
    "user_message_chunk", "an ACP agent echoed part of a user message outside a history replay"
)
SUBAGENT_TEXT: Final = _kind("subagent_text", "text a subagent wrote (not the answer)")
AGENT_NOTICE: Final = _kind(
    "agent_notice", "an ACP agent's status line written into the message stream"
)
MESSAGE_SUPERSEDED: Final = _kind(
    "message_superseded", "an ACP agent replaced message text it had sent; detail: the text"
)
ENTRY_APPENDED: Final = _kind("entry_appended", "Pi appended a session entry; detail: its kind")
THINKING_LEVEL_CHANGED: Final = _kind(
    "thinking_level_changed", "Pi changed its thinking level; detail: the level"
)
SUMMARIZATION_RETRY: Final = _kind("summarization_retry", "Pi retries a summarization")
SUMMARIZATION_RETRY_STARTED: Final = _kind(
    "summarization_retry_started", "Pi started a summarization retry"
)
SUMMARIZATION_RETRY_FINISHED: Final = _kind(
    "summarization_retry_finished", "Pi finished a summarization retry"
)
COMPACTION_STARTED: Final = _kind("compaction_started", "the CLI started compacting its context")
COMPACTION_COMPLETED: Final = _kind("compaction_completed", "the CLI compacted its context")
EXTENSION_ERROR: Final = _kind("extension_error", "a Pi extension failed; detail: where and why")
EXTENSION_UI: Final = _kind("extension_ui", "a Pi extension asked for UI agentshim does not show")
EXTENSION_DIALOG_CANCELLED: Final = _kind(
    "extension_dialog_cancelled", "a Pi extension's dialog was answered 'cancelled'"
)
MCP_SERVER_STATUS: Final = _kind("mcp_server_status", "Codex reported an MCP server's status")
MCP_SERVER_FAILED: Final = _kind("mcp_server_failed", "Copilot reported an MCP server failed")

# Sessions and conversation ids.
SESSION_RESOLVED: Final = _kind("session_resolved", "the CLI named the session it runs in")
SESSION_RESUMED: Final = _kind("session_resumed", "Copilot resumed a session; detail: its size")
SESSION_FILE: Final = _kind("session_file", "the CLI named the file it keeps the session in")
SESSION_END: Final = _kind("session_end", "Claude Code's TUI ended its session; detail: why")
SESSION_ID_REFUSED: Final = _kind(
    "session_id_refused", "the CLI named its session with an unsafe id; the turn keeps none"
)
RESUME_NOT_FOUND: Final = _kind("resume_not_found", "Codex found no session to resume")
RESUME_REPLACED: Final = _kind(
    "resume_replaced", "asked to resume a session, the CLI continued in another one"
)
FORKED: Final = _kind("forked", "a fork of a session started; detail: '<from> -> <to>'")
REPLAY_SUPPRESSED: Final = _kind(
    "replay_suppressed", "updates an ACP agent replayed while loading a session were dropped"
)
LOAD_DEFERRED: Final = _kind(
    "load_deferred", "loading a session waits for the next minute (an agent's known defect)"
)
ACP_INITIALIZED: Final = _kind(
    "acp_initialized", "an ACP agent answered initialize; detail: its capabilities"
)

# Long-lived conversations: the process, the frames, steering and switching.
BETWEEN_TURNS: Final = _kind(
    "between_turns", "a long-lived CLI wrote something while no turn ran; detail: the line"
)
MALFORMED_FRAME: Final = _kind(
    "malformed_frame", "a frame could not be read or is missing a field; detail: what"
)
MALFORMED_UPDATE: Final = _kind("malformed_update", "an ACP update is missing a field it needs")
UNKNOWN_UPDATE: Final = _kind("unknown_update", "an ACP update of a kind agentshim does not know")
PROCESS_RESPAWNED: Final = _kind(
    "process_respawned", "a new CLI process resumes the conversation whose process ended"
)
COMMANDS_ENDED: Final = _kind(
    "commands_ended", "processes a turn started and left running were ended"
)
INTERRUPT_UNANSWERED: Final = _kind(
    "interrupt_unanswered", "the CLI did not answer an interrupt in time; its process was ended"
)
MODEL_SWITCHED: Final = _kind("model_switched", "the conversation's model was switched")
STEERED: Final = _kind("steered", "a message was steered into the running turn")
FOLLOWED_UP: Final = _kind("followed_up", "a follow-up message was queued after the turn")
STEER_CARRIED_OVER: Final = _kind(
    "steer_carried_over", "steered messages the turn never took; they start the next one"
)
STEER_HANDLED: Final = _kind("steer_handled", "Pi handled a steered message without queueing it")
FOLLOW_UP_HANDLED: Final = _kind(
    "follow_up_handled", "Pi handled a follow-up message without queueing it"
)
STEER_REFUSED: Final = _kind("steer_refused", "the CLI refused a steered message; detail: why")
FOLLOW_UP_REFUSED: Final = _kind("follow_up_refused", "Pi refused a follow-up message")
PROMPT_HANDLED: Final = _kind("prompt_handled", "Pi handled the prompt without a run")
PROMPT_SUBMITTED: Final = _kind(
    "prompt_submitted", "Claude Code's TUI took the prompt; detail: its prompt id"
)
SUBMIT_RETRIED: Final = _kind(
    "submit_retried", "the TUI did not take the prompt in time; Enter was pressed again"
)
USAGE_UNKNOWN: Final = _kind(
    "usage_unknown", "the TUI's transcript did not close the turn in time; usage is unknown"
)
DIALOG_ANSWERED: Final = _kind("dialog_answered", "a TUI dialog was answered; detail: its name")
COMMAND_RESPONSE: Final = _kind("command_response", "Pi answered a command; detail: the outcome")
REQUEST_REFUSED: Final = _kind("request_refused", "Codex refused a request; detail: why")
SERVER_REQUEST_REFUSED: Final = _kind(
    "server_request_refused", "a request from Codex that agentshim does not serve was refused"
)
CLIENT_METHOD_REFUSED: Final = _kind(
    "client_method_refused", "an ACP agent called a client method agentshim refuses"
)
REQUEST_CANCELLED: Final = _kind("request_cancelled", "an ACP agent cancelled a request it made")
CANCEL_ANSWERED_WITH_ERROR: Final = _kind(
    "cancel_answered_with_error", "an ACP agent answered a cancel with an error"
)
ELICITATION_FAILED: Final = _kind("elicitation_failed", "an ACP elicitation could not be answered")
CONTROL_REQUEST: Final = _kind("control_request", "Claude Code sent a control request")
CONTROL_RESPONSE: Final = _kind("control_response", "Claude Code answered a control request")
CONTROL_CANCEL_REQUEST: Final = _kind(
    "control_cancel_request", "Claude Code withdrew a control request it had sent"
)
CALLBACK_NOT_SENT: Final = _kind(
    "callback_not_sent", "the answer to a Claude Code callback could not be sent"
)
APPROVAL_NOT_SENT: Final = _kind(
    "approval_not_sent", "an approval decision could not be sent to the CLI (it fails closed)"
)
HOOK_DECIDED: Final = _kind("hook_decided", "a PreToolUse hook decided; detail: the decision")
HOOK_FAILED: Final = _kind("hook_failed", "a hook callback raised; it was answered with nothing")

# Tools served by agentshim, and MCP configuration.
TOOL_FAILED: Final = _kind("tool_failed", "a tool agentshim serves raised; detail: the error")
TOOL_TIMED_OUT: Final = _kind("tool_timed_out", "a tool agentshim serves ran out of time")
TOOL_CONNECTION_REFUSED: Final = _kind(
    "tool_connection_refused",
    "a connection to the tools' socket did not present the turn's credential and was closed",
)
TOOL_MESSAGE_DROPPED: Final = _kind(
    "tool_message_dropped", "a message to a local tool server could not be read"
)
MCP_CONFIG_RESTORE: Final = _kind(
    "mcp_config_restore", "restoring a CLI's MCP configuration file left a note"
)

# Decisions of the session policy (a Session's recovery).
CONVERSATION_RELEASED: Final = _kind(
    "conversation_released", "an idle conversation's process was released"
)
RETRY_SCHEDULED: Final = _kind("retry_scheduled", "a transient failure; the turn will be retried")
CONVERSATION_LOST: Final = _kind(
    "conversation_lost", "a resume answered in another conversation than the one asked for"
)
CONVERSATION_REPLACED: Final = _kind(
    "conversation_replaced", "the provider refused the resume; the turn starts a new one"
)
CONVERSATION_FORGOTTEN: Final = _kind(
    "conversation_forgotten", "the conversation was dropped; the next turn starts cold"
)
CONVERSATION_RETIRED: Final = _kind(
    "conversation_retired", "the renewal budget was reached; the next turn starts cold"
)

CATALOGUE: Final[Mapping[str, str]] = MappingProxyType(_CATALOGUE)
"""Every fixed kind, with when it is emitted."""

PREFIXES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "unknown_frame:": "a frame whose type has no handler; the rest is the type "
        "('<NoneType>' for a missing one); detail: the line",
        "unknown_item:": "a Codex item of an unknown type; the rest is the type",
        "unknown_block:": "a Claude Code content block of an unknown type; the rest is the type",
        "system:": "a Claude Code system frame of a subtype without a handler; the rest is it",
    }
)
"""Every family of kinds whose last part comes from the CLI, with when it is emitted."""


def unknown_frame(frame_type: str) -> str:
    """The kind of a frame whose type has no handler: ``unknown_frame:<type>``."""
    return f"unknown_frame:{frame_type}"


def unknown_item(item_type: str) -> str:
    """The kind of a Codex item of an unknown type: ``unknown_item:<type>``."""
    return f"unknown_item:{item_type}"


def unknown_block(block_type: str) -> str:
    """The kind of a content block of an unknown type: ``unknown_block:<type>``."""
    return f"unknown_block:{block_type}"


def system(subtype: str) -> str:
    """The kind of a system frame of a subtype without a handler: ``system:<subtype>``."""
    return f"system:{subtype}"


def is_catalogued(kind: str) -> bool:
    """True when ``kind`` is in :data:`CATALOGUE` or starts with one of :data:`PREFIXES`."""
    return kind in _CATALOGUE or kind.startswith(tuple(PREFIXES))
