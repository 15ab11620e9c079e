"""How the Gemini CLI speaks ACP (``gemini --acp``, checked against 0.61.0).

::

    gemini --acp [--model M] --approval-mode (yolo | auto_edit | plan)
           [--include-directories ROOT]... [extra_args]

Native permissions map onto its approval modes: ``bypass()`` is ``yolo`` (no permission
requests); ``workspace_write(roots)`` is ``auto_edit`` with each root included, so edits
proceed and every other tool the CLI asks about (shell commands it does not consider safe,
MCP tools) goes to the conversation's approvals; ``read_only()`` is ``plan``.

Its differences from the protocol's common ground: a failed model call answers
``session/prompt`` with a JSON-RPC error whose code is the HTTP status and whose message is
the upstream body; usage is per turn in ``result._meta.quota.token_count`` (input includes
cached tokens, which it does not count apart; output excludes thinking); a mode change leaks
``[MODE_UPDATE] <mode>`` into the message stream; and a ``session/load`` in the wall-clock
minute the session was created destroys the stored session, so such a load waits for the
next minute; and most of a loaded session's replayed history comes after the load response.
See docs/acp.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from agentshim.acp.client import AcpTransport
from agentshim.acp.dialect import AcpArgv, AcpDialect
from agentshim.acp.jsonrpc import RpcError
from agentshim.core.argv import checked_option_value
from agentshim.core.errors import FailureKind
from agentshim.core.failures import kind_from_status, kind_from_text
from agentshim.core.jsonvalues import as_count, as_mapping, as_str, list_or_empty
from agentshim.core.permissions import NativeMode
from agentshim.core.usage import ProviderUsage, TokenUsage
from agentshim.transport.installed import InstalledCli

from .provider import PROFILE

__all__ = [
    "GEMINI_ACP",
    "acp_argv",
    "acp_transport",
    "classify_rpc_error",
    "is_notice",
    "session_lost",
    "usage",
]

_APPROVAL_MODES = {
    NativeMode.BYPASS: "yolo",
    NativeMode.WORKSPACE_WRITE: "auto_edit",
    NativeMode.READ_ONLY: "plan",
}

_LOST_TEXTS = ("Session not found", "No previous sessions found", "Invalid session identifier")


def acp_argv(args: AcpArgv) -> list[str]:
    """The argv of one long-lived ``gemini --acp`` process (see the module docstring).

    Raises:
        InvalidRequestError: a model or root that would read as a flag.
    """
    permissions = args.permissions
    argv = [args.binary_path, "--acp"]
    if args.model:
        argv += ["--model", checked_option_value("the Gemini CLI", "model", args.model)]
    argv += ["--approval-mode", _APPROVAL_MODES[permissions.mode]]
    if permissions.mode is NativeMode.WORKSPACE_WRITE:
        for root in permissions.writable_roots:
            argv += ["--include-directories", checked_option_value("the Gemini CLI", "root", root)]
    return [*argv, *args.extra_args]


def classify_rpc_error(error: RpcError) -> FailureKind:
    """The FailureKind of a JSON-RPC error on ``session/prompt``.

    The code is the model API's HTTP status (401 and 403 AUTH, 429 and 5xx TRANSIENT); what the upstream body says counts first (a 400 that is a context overflow,
    or an invalid key).
    """
    said = kind_from_text(f"{error.message} {as_str(error.data.get('details')) or ''}")
    if said is not None and said is not FailureKind.OTHER:
        return said
    # JSON-RPC codes are negative; only a code in the HTTP range is a status.
    return kind_from_status(error.code) if 100 <= error.code <= 599 else FailureKind.OTHER


def session_lost(error: RpcError) -> bool:
    """Whether ``error`` says Gemini CLI no longer has the session."""
    text = f"{error.message} {as_str(error.data.get('details')) or ''}"
    return any(needle in text for needle in _LOST_TEXTS)


def usage(result: Mapping[str, Any]) -> ProviderUsage | None:
    """The turn's usage from ``_meta.quota`` of a ``session/prompt`` result (None if absent).

    Reasoning tokens are not reported: output is the candidates' count only.
    """
    quota = as_mapping((as_mapping(result.get("_meta")) or {}).get("quota"))
    if quota is None:
        return None
    counts = as_mapping(quota.get("token_count")) or {}
    tokens = TokenUsage(
        input_tokens=as_count(counts.get("input_tokens")),
        output_tokens=as_count(counts.get("output_tokens")),
        turns=1,
    )
    models = [as_mapping(entry) or {} for entry in list_or_empty(quota.get("model_usage"))]
    names = [as_str(entry.get("model")) for entry in models]
    model = next((name for name in names if name and name != "auto"), None)
    return ProviderUsage(
        tokens=tokens, provider=PROFILE.name, raw=MappingProxyType(dict(quota)), model=model
    )


def is_notice(text: str) -> bool:
    """Whether agent text is the CLI's own status (``[MODE_UPDATE] yolo``), not the answer."""
    return text.startswith("[MODE_UPDATE]")


GEMINI_ACP = AcpDialect(
    profile=PROFILE,
    argv=acp_argv,
    classify=classify_rpc_error,
    session_lost=session_lost,
    usage=usage,
    notice=is_notice,
    load_in_a_later_minute=True,
    # 0.61.0 sends the first replayed update before the load response and the rest after.
    replay_settle=0.5,
    attach="session/load",
)
"""The Gemini CLI's ACP dialect."""


def acp_transport(context: InstalledCli | Callable[[], InstalledCli]) -> AcpTransport:
    """The Gemini CLI's long-lived transport: every turn on one ``gemini --acp`` process."""
    return AcpTransport(context, GEMINI_ACP)
