"""How opencode speaks ACP (``opencode acp``, checked against 1.18.33).

::

    opencode acp [extra_args]
    env: OPENCODE_PERMISSION=<json>  [OPENCODE_CONFIG_CONTENT={"model": M}]

``opencode acp`` takes no model or permission flags; both go in the environment, each merged
over the user's own config. Native permissions map onto opencode's permission rules:
``bypass()`` allows everything (no permission requests); ``workspace_write(roots)`` lets
edits proceed and asks about every shell command, web fetch and path outside the workspace
and the roots (the asks go to the conversation's approvals); ``read_only()`` denies edits and
asks about the rest (which a read-only conversation denies).

Its differences from the protocol's common ground: a failed model call (after opencode's own
retries) answers ``session/prompt`` with JSON-RPC error -32603, whose ``data.errorName``
names opencode's error (``APIError``, ...) and whose message carries the upstream's, with no
HTTP status; a session it does not have fails as "OpenCode service failure"; the prompt
result's ``usage`` covers only the turn's last model call, with cache and reasoning tokens
apart from input and output; a compaction summary streams as agent text, a message of its
own (``messageId``) before the answer; and ``session/resume`` reopens a session without
replaying its history. See docs/acp.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from agentshim.acp.client import AcpTransport
from agentshim.acp.dialect import AcpArgv, AcpDialect
from agentshim.acp.jsonrpc import RpcError
from agentshim.core.argv import checked_option_value
from agentshim.core.errors import FailureKind
from agentshim.core.jsonvalues import as_str
from agentshim.core.permissions import NativeMode, NativePermissions
from agentshim.core.usage import ProviderUsage, TokenUsage
from agentshim.providers.acp_prompt_usage import Count, prompt_usage
from agentshim.transport.installed import InstalledCli

from .failures import classify
from .provider import PROFILE

__all__ = [
    "OPENCODE_ACP",
    "acp_argv",
    "acp_env",
    "acp_transport",
    "classify_rpc_error",
    "permission_rules",
    "session_lost",
    "usage",
]

PERMISSION_ENV = "OPENCODE_PERMISSION"
CONFIG_ENV = "OPENCODE_CONFIG_CONTENT"

_LOST_TEXT = "OpenCode service failure"
_INTERNAL_PREFIX = "Internal error: "


def acp_argv(args: AcpArgv) -> list[str]:
    """The argv of one long-lived ``opencode acp`` process (the model goes in the env)."""
    return [args.binary_path, "acp", *args.extra_args]


def permission_rules(permissions: NativePermissions) -> dict[str, Any]:
    """The ``permission`` rules opencode gets for ``permissions`` (see the module docstring)."""
    if permissions.mode is NativeMode.BYPASS:
        return {"*": "allow", "external_directory": "allow", "doom_loop": "allow"}
    outside: dict[str, str] = {"*": "ask"}
    if permissions.mode is NativeMode.WORKSPACE_WRITE:
        for root in permissions.writable_roots:
            outside[f"{root.rstrip('/')}/*"] = "allow"
        edit = "allow"
    else:
        edit = "deny"
    return {
        "*": "allow",
        "edit": edit,
        "bash": "ask",
        "webfetch": "ask",
        "external_directory": outside,
    }


def acp_env(args: AcpArgv) -> Mapping[str, str]:
    """The variables that carry the model and the permissions to ``opencode acp``.

    Raises:
        InvalidRequestError: a model that would read as a flag.
    """
    env = {PERMISSION_ENV: json.dumps(permission_rules(args.permissions), sort_keys=True)}
    if args.model:
        model = checked_option_value("opencode", "model", args.model)
        env[CONFIG_ENV] = json.dumps({"model": model})
    return env


def _message(error: RpcError) -> str:
    return error.message.removeprefix(_INTERNAL_PREFIX)


def classify_rpc_error(error: RpcError) -> FailureKind:
    """The FailureKind of a JSON-RPC error on ``session/prompt``.

    ``data.errorName`` and the message are read as opencode's own ``error`` frame is
    (``ContextOverflowError``, ``ProviderAuthError``, then the upstream's text). An
    ``APIError`` that says nothing recognisable is TRANSIENT: opencode gives one up only
    after its own retries.
    """
    name = as_str(error.data.get("errorName"))
    kind = classify({"name": name, "data": {"message": _message(error)}})
    if kind is FailureKind.OTHER and name == "APIError":
        return FailureKind.TRANSIENT
    return kind


def session_lost(error: RpcError) -> bool:
    """Whether ``error`` says opencode has no such session (its answer to a load or resume)."""
    return _LOST_TEXT in error.message and "errorName" not in error.data


def usage(result: Mapping[str, Any]) -> ProviderUsage | None:
    """The last model call's usage from the ``session/prompt`` result (None if absent).

    opencode counts cache reads and writes apart from ``inputTokens`` and reasoning apart
    from ``outputTokens``; both are folded in, as the library's breakdown counts them.
    """
    return prompt_usage(result, PROFILE.name, _tokens)


def _tokens(count: Count) -> TokenUsage:
    reasoning = count("thoughtTokens")
    return TokenUsage.cache_apart(
        count("inputTokens"),
        count("cachedReadTokens"),
        count("cachedWriteTokens"),
        count("outputTokens") + reasoning,
        reasoning=reasoning,
        turns=1,
    )


OPENCODE_ACP = AcpDialect(
    profile=PROFILE,
    argv=acp_argv,
    classify=classify_rpc_error,
    session_lost=session_lost,
    usage=usage,
    env=acp_env,
    usage_of_last_call=True,
    superseded_messages=True,
    attach="session/resume",
    # It offers session/close; as checked, its sessions end with the process alone.
    close_session=False,
)
"""opencode's ACP dialect."""


def acp_transport(context: InstalledCli | Callable[[], InstalledCli]) -> AcpTransport:
    """The long-lived opencode transport: every turn on one ``opencode acp`` process."""
    return AcpTransport(context, OPENCODE_ACP)
