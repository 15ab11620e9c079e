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

# The constants, one per kind; when each is emitted is its entry in CATALOGUE below (a unit
# test holds that every constant has one).

# The turn and the agent's run, as the CLI reports them.
TURN_STARTED: Final = "turn_started"
TURN_COMPLETED: Final = "turn_completed"
TURN_FAILED: Final = "turn_failed"
INIT: Final = "init"
THREAD_STARTED: Final = "thread_started"
AGENT_STARTED: Final = "agent_started"
AGENT_COMPLETED: Final = "agent_completed"
AGENT_SETTLED: Final = "agent_settled"
STEP_STARTED: Final = "step_started"
STEP_FINISHED: Final = "step_finished"
STOP_REASON: Final = "stop_reason"
CANCELLED_BY_AGENT: Final = "cancelled_by_agent"
STATUS: Final = "status"
INTENT: Final = "intent"
INFO: Final = "info"
WARNING: Final = "warning"
API_ERROR: Final = "api_error"
API_RETRY: Final = "api_retry"
API_RETRY_SUCCEEDED: Final = "api_retry_succeeded"
MODEL_CALL_FAILED: Final = "model_call_failed"
MODEL_CALL_DEFERRED: Final = "model_call_deferred"
RATE_LIMIT: Final = "rate_limit"
OUTPUT_TRUNCATED: Final = "output_truncated"
PERMISSION_DENIED: Final = "permission_denied"
USER_MESSAGE: Final = "user_message"
SYNTHETIC_USER_MESSAGE: Final = "synthetic_user_message"
USER_MESSAGE_CHUNK: Final = "user_message_chunk"
SUBAGENT_TEXT: Final = "subagent_text"
AGENT_NOTICE: Final = "agent_notice"
MESSAGE_SUPERSEDED: Final = "message_superseded"
ENTRY_APPENDED: Final = "entry_appended"
THINKING_LEVEL_CHANGED: Final = "thinking_level_changed"
SUMMARIZATION_RETRY: Final = "summarization_retry"
SUMMARIZATION_RETRY_STARTED: Final = "summarization_retry_started"
SUMMARIZATION_RETRY_FINISHED: Final = "summarization_retry_finished"
COMPACTION_STARTED: Final = "compaction_started"
COMPACTION_COMPLETED: Final = "compaction_completed"
EXTENSION_ERROR: Final = "extension_error"
EXTENSION_UI: Final = "extension_ui"
EXTENSION_DIALOG_CANCELLED: Final = "extension_dialog_cancelled"
MCP_SERVER_STATUS: Final = "mcp_server_status"
MCP_SERVER_FAILED: Final = "mcp_server_failed"

# Sessions and conversation ids.
SESSION_RESOLVED: Final = "session_resolved"
SESSION_RESUMED: Final = "session_resumed"
SESSION_FILE: Final = "session_file"
SESSION_END: Final = "session_end"
SESSION_ID_REFUSED: Final = "session_id_refused"
RESUME_NOT_FOUND: Final = "resume_not_found"
RESUME_REPLACED: Final = "resume_replaced"
FORKED: Final = "forked"
REPLAY_SUPPRESSED: Final = "replay_suppressed"
LOAD_DEFERRED: Final = "load_deferred"
ACP_INITIALIZED: Final = "acp_initialized"

# Long-lived conversations: the process, the frames, steering and switching.
BETWEEN_TURNS: Final = "between_turns"
MALFORMED_FRAME: Final = "malformed_frame"
MALFORMED_UPDATE: Final = "malformed_update"
UNKNOWN_UPDATE: Final = "unknown_update"
PROCESS_RESPAWNED: Final = "process_respawned"
COMMANDS_ENDED: Final = "commands_ended"
INTERRUPT_UNANSWERED: Final = "interrupt_unanswered"
MODEL_SWITCHED: Final = "model_switched"
STEERED: Final = "steered"
FOLLOWED_UP: Final = "followed_up"
STEER_CARRIED_OVER: Final = "steer_carried_over"
STEER_HANDLED: Final = "steer_handled"
FOLLOW_UP_HANDLED: Final = "follow_up_handled"
STEER_REFUSED: Final = "steer_refused"
FOLLOW_UP_REFUSED: Final = "follow_up_refused"
PROMPT_HANDLED: Final = "prompt_handled"
PROMPT_SUBMITTED: Final = "prompt_submitted"
SUBMIT_RETRIED: Final = "submit_retried"
USAGE_UNKNOWN: Final = "usage_unknown"
DIALOG_ANSWERED: Final = "dialog_answered"
COMMAND_RESPONSE: Final = "command_response"
REQUEST_REFUSED: Final = "request_refused"
SERVER_REQUEST_REFUSED: Final = "server_request_refused"
CLIENT_METHOD_REFUSED: Final = "client_method_refused"
REQUEST_CANCELLED: Final = "request_cancelled"
CANCEL_ANSWERED_WITH_ERROR: Final = "cancel_answered_with_error"
ELICITATION_FAILED: Final = "elicitation_failed"
CONTROL_REQUEST: Final = "control_request"
CONTROL_RESPONSE: Final = "control_response"
CONTROL_CANCEL_REQUEST: Final = "control_cancel_request"
CALLBACK_NOT_SENT: Final = "callback_not_sent"
APPROVAL_NOT_SENT: Final = "approval_not_sent"
HOOK_DECIDED: Final = "hook_decided"
HOOK_FAILED: Final = "hook_failed"

# Tools served by agentshim, and MCP configuration.
TOOL_FAILED: Final = "tool_failed"
TOOL_TIMED_OUT: Final = "tool_timed_out"
TOOL_CONNECTION_REFUSED: Final = "tool_connection_refused"
TOOL_MESSAGE_DROPPED: Final = "tool_message_dropped"
MCP_CONFIG_RESTORE: Final = "mcp_config_restore"

# Decisions of the session policy (a Session's recovery).
CONVERSATION_RELEASED: Final = "conversation_released"
RETRY_SCHEDULED: Final = "retry_scheduled"
CONVERSATION_LOST: Final = "conversation_lost"
CONVERSATION_REPLACED: Final = "conversation_replaced"
CONVERSATION_FORGOTTEN: Final = "conversation_forgotten"
CONVERSATION_RETIRED: Final = "conversation_retired"

CATALOGUE: Final[Mapping[str, str]] = MappingProxyType(
    {
        # The turn and the agent's run, as the CLI reports them.
        TURN_STARTED: "the CLI started a turn; detail: its turn id, if any",
        TURN_COMPLETED: "the CLI reports a turn complete",
        TURN_FAILED: "Codex reported the turn failed; detail: its message",
        INIT: "Claude Code's init frame; detail: the model and the CLI's version",
        THREAD_STARTED: "Codex started a thread; detail: its id",
        AGENT_STARTED: "Pi's agent run started",
        AGENT_COMPLETED: "Pi's agent run ended",
        AGENT_SETTLED: "Pi settled after a run; detail: 'aborted' when the run was aborted",
        STEP_STARTED: "opencode started a step of the turn",
        STEP_FINISHED: "opencode finished a step; detail: its reason",
        STOP_REASON: "an ACP agent ended the turn with an unusual reason",
        CANCELLED_BY_AGENT: "an ACP agent answered 'cancelled' to a turn nobody interrupted",
        STATUS: "Claude Code's system status frame; detail: the status",
        INTENT: "Copilot said what it is about to do; detail: the intent",
        INFO: "Copilot's informational notice; detail: '<type>: <message>'",
        WARNING: "the CLI reported a warning that does not end the turn",
        API_ERROR: "Claude Code put an API error in an assistant message; detail: the error",
        API_RETRY: "the CLI retries a model call; detail: why and when",
        API_RETRY_SUCCEEDED: "Pi's retried model call succeeded",
        MODEL_CALL_FAILED: "Copilot reported one failed model call it will retry",
        MODEL_CALL_DEFERRED: "Pi deferred a model call; detail: Pi's note",
        RATE_LIMIT: "the CLI reported rate-limit state; detail: status, type",
        OUTPUT_TRUNCATED: "the model's answer was cut off at its output-token limit; not a "
        "failure, the turn keeps the text it got (and carries a notice in TurnResult.notices)",
        PERMISSION_DENIED: "Claude Code's result lists a tool use it denied; detail: the tool",
        USER_MESSAGE: "Claude Code echoed a user message; detail: its text",
        SYNTHETIC_USER_MESSAGE: "Claude Code injected a user message of its own; detail: its text",
        USER_MESSAGE_CHUNK: "an ACP agent echoed part of a user message outside a history replay",
        SUBAGENT_TEXT: "text a subagent wrote (not the answer)",
        AGENT_NOTICE: "an ACP agent's status line written into the message stream",
        MESSAGE_SUPERSEDED: "an ACP agent replaced message text it had sent; detail: the text",
        ENTRY_APPENDED: "Pi appended a session entry; detail: its kind",
        THINKING_LEVEL_CHANGED: "Pi changed its thinking level; detail: the level",
        SUMMARIZATION_RETRY: "Pi retries a summarization",
        SUMMARIZATION_RETRY_STARTED: "Pi started a summarization retry",
        SUMMARIZATION_RETRY_FINISHED: "Pi finished a summarization retry",
        COMPACTION_STARTED: "the CLI started compacting its context",
        COMPACTION_COMPLETED: "the CLI compacted its context",
        EXTENSION_ERROR: "a Pi extension failed; detail: where and why",
        EXTENSION_UI: "a Pi extension asked for UI agentshim does not show",
        EXTENSION_DIALOG_CANCELLED: "a Pi extension's dialog was answered 'cancelled'",
        MCP_SERVER_STATUS: "Codex reported an MCP server's status",
        MCP_SERVER_FAILED: "Copilot reported an MCP server failed",
        # Sessions and conversation ids.
        SESSION_RESOLVED: "the CLI named the session it runs in",
        SESSION_RESUMED: "Copilot resumed a session; detail: its size",
        SESSION_FILE: "the CLI named the file it keeps the session in",
        SESSION_END: "Claude Code's TUI ended its session; detail: why",
        SESSION_ID_REFUSED: "the CLI named its session with an unsafe id; the turn keeps none",
        RESUME_NOT_FOUND: "Codex found no session to resume",
        RESUME_REPLACED: "asked to resume a session, the CLI continued in another one",
        FORKED: "a fork of a session started; detail: '<from> -> <to>'",
        REPLAY_SUPPRESSED: "updates an ACP agent replayed while loading a session were dropped",
        LOAD_DEFERRED: "loading a session waits for the next minute (an agent's known defect)",
        ACP_INITIALIZED: "an ACP agent answered initialize; detail: its capabilities",
        # Long-lived conversations: the process, the frames, steering and switching.
        BETWEEN_TURNS: "a long-lived CLI wrote something while no turn ran; detail: the line",
        MALFORMED_FRAME: "a frame could not be read or is missing a field; detail: what",
        MALFORMED_UPDATE: "an ACP update is missing a field it needs",
        UNKNOWN_UPDATE: "an ACP update of a kind agentshim does not know",
        PROCESS_RESPAWNED: "a new CLI process resumes the conversation whose process ended",
        COMMANDS_ENDED: "processes a turn started and left running were ended",
        INTERRUPT_UNANSWERED: "the CLI did not answer an interrupt in time; its process was ended",
        MODEL_SWITCHED: "the conversation's model was switched",
        STEERED: "a message was steered into the running turn",
        FOLLOWED_UP: "a follow-up message was queued after the turn",
        STEER_CARRIED_OVER: "steered messages the turn never took; they start the next one",
        STEER_HANDLED: "Pi handled a steered message without queueing it",
        FOLLOW_UP_HANDLED: "Pi handled a follow-up message without queueing it",
        STEER_REFUSED: "the CLI refused a steered message; detail: why",
        FOLLOW_UP_REFUSED: "Pi refused a follow-up message",
        PROMPT_HANDLED: "Pi handled the prompt without a run",
        PROMPT_SUBMITTED: "Claude Code's TUI took the prompt; detail: its prompt id",
        SUBMIT_RETRIED: "the TUI did not take the prompt in time; Enter was pressed again",
        USAGE_UNKNOWN: "the TUI's transcript did not close the turn in time; usage is unknown",
        DIALOG_ANSWERED: "a TUI dialog was answered; detail: its name",
        COMMAND_RESPONSE: "Pi answered a command; detail: the outcome",
        REQUEST_REFUSED: "Codex refused a request; detail: why",
        SERVER_REQUEST_REFUSED: "a request from Codex that agentshim does not serve was refused",
        CLIENT_METHOD_REFUSED: "an ACP agent called a client method agentshim refuses",
        REQUEST_CANCELLED: "an ACP agent cancelled a request it made",
        CANCEL_ANSWERED_WITH_ERROR: "an ACP agent answered a cancel with an error",
        ELICITATION_FAILED: "an ACP elicitation could not be answered",
        CONTROL_REQUEST: "Claude Code sent a control request",
        CONTROL_RESPONSE: "Claude Code answered a control request",
        CONTROL_CANCEL_REQUEST: "Claude Code withdrew a control request it had sent",
        CALLBACK_NOT_SENT: "the answer to a Claude Code callback could not be sent",
        APPROVAL_NOT_SENT: "an approval decision could not be sent to the CLI (it fails closed)",
        HOOK_DECIDED: "a PreToolUse hook decided; detail: the decision",
        HOOK_FAILED: "a hook callback raised; it was answered with nothing",
        # Tools served by agentshim, and MCP configuration.
        TOOL_FAILED: "a tool agentshim serves raised; detail: the error",
        TOOL_TIMED_OUT: "a tool agentshim serves ran out of time",
        TOOL_CONNECTION_REFUSED: "a connection to the tools' socket did not present the turn's "
        "credential and was closed",
        TOOL_MESSAGE_DROPPED: "a message to a local tool server could not be read",
        MCP_CONFIG_RESTORE: "restoring a CLI's MCP configuration file left a note",
        # Decisions of the session policy (a Session's recovery).
        CONVERSATION_RELEASED: "an idle conversation's process was released",
        RETRY_SCHEDULED: "a transient failure; the turn will be retried",
        CONVERSATION_LOST: "a resume answered in another conversation than the one asked for",
        CONVERSATION_REPLACED: "the provider refused the resume; the turn starts a new one",
        CONVERSATION_FORGOTTEN: "the conversation was dropped; the next turn starts cold",
        CONVERSATION_RETIRED: "the renewal budget was reached; the next turn starts cold",
    }
)
"""Every fixed kind, with when it is emitted: one entry a constant above."""


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
    return kind in CATALOGUE or kind.startswith(tuple(PREFIXES))
