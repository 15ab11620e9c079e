"""The words a turn's argv spells the same way on every CLI: its model and the id it resumes.

Each CLI has its own flag for a resume (``--resume``, ``--session``...), but every one takes
the id as the next word, and every one takes ``--model M``; both values come from the caller,
so both are checked here before they reach argv.
"""

from __future__ import annotations

from agentshim.core.argv import checked_option_value
from agentshim.core.ids import validate_session_id
from agentshim.core.provider import ArgvContext

__all__ = ["model_flag", "resume_flag"]


def model_flag(cli: str, ctx: ArgvContext) -> list[str]:
    """``["--model", M]`` for a turn that names a model, else ``[]``.

    Raises:
        InvalidRequestError: a model that would read as a flag (the message names ``cli``).
    """
    return ["--model", checked_option_value(cli, "model", ctx.model)] if ctx.model else []


def resume_flag(flag: str, ctx: ArgvContext) -> list[str]:
    """``[flag, ID]`` for a turn that resumes ``ctx.resume_session_id``, else ``[]``.

    Raises:
        InvalidSessionIdError: the id is not safe to pass; a leading ``-`` is refused too,
            since the CLI would read it as a flag.
    """
    if ctx.resume_session_id is None:
        return []
    return [flag, validate_session_id(ctx.resume_session_id)]
