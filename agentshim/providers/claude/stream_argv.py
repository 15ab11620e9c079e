"""The argv of a long-lived Claude Code process speaking stream-json on stdin and stdout.

::

    claude -p --input-format stream-json --output-format stream-json --verbose
           [--resume ID [--fork-session]] [--model M] [--effort E]
           (--dangerously-skip-permissions
            | --permission-mode (default | acceptEdits) --permission-prompt-tool stdio
              [--add-dir ROOT]...)
           [--settings JSON] [mcp argv] [extra_args]

Native permissions map onto Claude Code's modes: ``bypass()`` turns prompts off;
``read_only()`` runs in ``default`` mode, where the CLI asks before every edit and every
command it cannot tell is read-only, and the transport denies each such request;
``workspace_write(roots)`` runs in ``acceptEdits`` mode with each root added, so edits
proceed and everything else the CLI would ask about goes to the conversation's approvals.
With a prompt tool the CLI asks on stdio, as a ``can_use_tool`` control request.
"""

from __future__ import annotations

from agentshim.core.permissions import NativeMode, NativePermissions
from agentshim.core.provider import ArgvContext

from .provider import ClaudeProvider, conversation_flags

__all__ = ["permission_flags", "stream_argv"]


def permission_flags(permissions: NativePermissions, *, prompt_tool: bool = True) -> list[str]:
    """The flags that give Claude Code ``permissions`` (see the module docstring).

    ``prompt_tool`` has the CLI ask on stdio; without it, it asks where it runs (the
    interactive CLI's PermissionRequest hook answers there).
    """
    mode = permissions.mode
    if mode is NativeMode.BYPASS:
        return ["--dangerously-skip-permissions"]
    name = "acceptEdits" if mode is NativeMode.WORKSPACE_WRITE else "default"
    flags = ["--permission-mode", name]
    if prompt_tool:
        flags += ["--permission-prompt-tool", "stdio"]
    for root in permissions.writable_roots:
        flags += ["--add-dir", root]
    return flags


def stream_argv(
    provider: ClaudeProvider,
    ctx: ArgvContext,
    permissions: NativePermissions,
    *,
    fork: bool = False,
) -> list[str]:
    """The argv that starts one long-lived conversation process (the prompt is never in it).

    Raises:
        InvalidSessionIdError: the resume id is not safe to pass.
        InvalidRequestError: a model or effort that would read as a flag.
    """
    argv = [
        ctx.binary_path,
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
    ]
    argv += conversation_flags(ctx, fork=fork)
    argv += permission_flags(permissions)
    if provider.settings_json is not None:
        argv += ["--settings", provider.settings_json]
    return ctx.ending(argv)
