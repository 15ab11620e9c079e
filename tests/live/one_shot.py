"""One-shot turns of a pinned CLI against a test's own model server.

For the live tests that script the model themselves (Python tools, MCP servers): the CLI is
set up offline under the test's directory, with nothing on ``PATH`` but its own directory and
the system's, and runs one turn through ``CliAgent``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentshim import CliAgent, TurnRequest
from agentshim.core.provider import Provider
from agentshim.core.turn import TurnResult
from agentshim.doctor.model_server import ModelServer
from agentshim.doctor.offline import OfflineCli, offline_cli
from agentshim.testing import RecordingEventHandler

from .binaries import require_binary

__all__ = ["ONE_SHOT_TIMEOUT", "pinned_offline", "run_one_shot"]

ONE_SHOT_TIMEOUT = 180.0


def pinned_offline(provider: str, model: ModelServer, root: Path) -> OfflineCli:
    """``provider``'s pinned CLI set up offline against ``model`` under ``root`` (the test is
    skipped when it is not installed); ``PATH`` is its directory, ``/usr/bin`` and ``/bin``."""
    binary = require_binary(provider)
    return offline_cli(provider, model, root=root, bin_dir=binary.path.parent, path="/usr/bin:/bin")


def run_one_shot(
    cli: OfflineCli,
    provider: str | Provider,
    work: Path,
    prompt: str,
    events: RecordingEventHandler | None = None,
    **request: Any,
) -> TurnResult:
    """One turn of ``provider`` (a name, or a configured Provider) on ``cli`` in ``work``;
    ``request`` adds to the TurnRequest (its tools, MCP servers)."""
    agent = CliAgent(
        provider, env=cli.env, model=cli.model, event_handlers=() if events is None else events
    )
    turn = TurnRequest(
        prompt,
        cwd=str(work),
        extra_args=tuple(cli.extra_args),
        timeout=ONE_SHOT_TIMEOUT,
        **request,
    )
    return agent.run(turn)
