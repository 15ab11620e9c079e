"""The argv of a long-lived Pi process speaking its rpc protocol on stdin and stdout.

::

    pi --mode rpc [--provider P] [--model M] [--thinking L] [(--session | --fork) ID]
       [extra_args]

The prompt is never in it: every turn is a ``prompt`` command on stdin. ``--session ID``
continues a conversation (a process that died mid-turn is replaced by one started with it);
``--fork ID`` starts a new conversation from that one's history.
"""

from __future__ import annotations

from agentshim.core.provider import ArgvContext

from .provider import PiProvider

__all__ = ["rpc_argv"]


def rpc_argv(provider: PiProvider, ctx: ArgvContext) -> list[str]:
    """The argv that starts one long-lived conversation process.

    Raises:
        InvalidSessionIdError: the resume id is not safe to pass.
        InvalidRequestError: a model that would read as a flag.
        ProviderCapabilityError: an unknown thinking level.
    """
    argv = [ctx.binary_path, "--mode", "rpc"]
    argv += provider.conversation_flags(ctx)
    return ctx.ending(argv)
