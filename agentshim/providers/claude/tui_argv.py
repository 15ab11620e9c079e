"""The argv of an interactive Claude Code process driven on a terminal.

::

    claude (--session-id ID | --resume ID [--fork-session --session-id NEW])
           --settings FILE [--model M] [--effort E]
           (--dangerously-skip-permissions
            | --permission-mode (default | acceptEdits) [--add-dir ROOT]...)
           [mcp argv] [extra_args]

The permission modes are print mode's: ``bypass()`` turns prompts off; ``read_only()`` runs in
``default`` mode and ``workspace_write(roots)`` in ``acceptEdits`` with each root added. What
the CLI would ask about goes to its PermissionRequest hook, which the transport answers from
the conversation's approvals (read-only: always denied). Nothing secret is ever in the argv:
the settings file holds the hooks, and the env holds the credentials.
"""

from __future__ import annotations

from agentshim.core.ids import validate_session_id
from agentshim.core.permissions import NativePermissions
from agentshim.core.provider import ArgvContext

from .provider import conversation_flags
from .stream_argv import permission_flags

__all__ = ["tui_argv"]


def tui_argv(
    ctx: ArgvContext,
    permissions: NativePermissions,
    *,
    session_id: str,
    settings_file: str,
    fork: bool = False,
) -> list[str]:
    """The argv of one interactive process holding conversation ``session_id``.

    With ``ctx.resume_session_id`` the process resumes that conversation (and with ``fork``
    starts ``session_id`` from its history); otherwise ``session_id`` names a new one.

    Raises:
        InvalidSessionIdError: an id that is not safe to pass.
        InvalidRequestError: a model or effort that would read as a flag.
    """
    validate_session_id(session_id)
    argv = [ctx.binary_path]
    resuming = ctx.resume_session_id is not None
    argv += conversation_flags(ctx, fork=fork)
    if not resuming or fork:
        argv += ["--session-id", session_id]
    argv += ["--settings", settings_file]
    argv += permission_flags(permissions, prompt_tool=False)
    return ctx.ending(argv)
