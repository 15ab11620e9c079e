"""Run one turn of a real CLI offline and list the files it wrote under its HOME.

Usage: python scripts/record_portability.py <provider> <root>

Turn 1 runs with HOME under ``<root>/A/home`` in the workspace ``<root>/A/ws-alpha``, against
the scripted model server; then every file under HOME (except the offline config) is listed
with its size, and the session id is printed. The files the provider's portability module
exports are the fixtures of ``tests/unit/portability`` (copied by hand into
``tests/fixtures/portability/<provider>/``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from agentshim.cli_agent import CliAgent
from agentshim.core.turn import TurnRequest
from agentshim.doctor.model_server import Match, ModelServer, Rule, Text
from agentshim.doctor.offline import offline_cli
from agentshim.execution.host import HostCommandExecutor

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.live.binaries import require_binary


def main() -> None:
    provider, root = sys.argv[1], Path(sys.argv[2])
    binary = require_binary(provider)
    work = root / "A" / "ws-alpha"
    work.mkdir(parents=True, exist_ok=True)
    rules = [Rule(match=Match(assistant_turns=0), respond=Text("Noted: PAPAYA."))]
    with ModelServer(rules) as server:
        cli = offline_cli(provider, server, root=root / "A", bin_dir=binary.path.parent)
        agent = CliAgent(
            provider, env=dict(cli.env), model=cli.model, executor=HostCommandExecutor()
        )
        result = agent.run(TurnRequest("remember the word PAPAYA"), cwd=str(work))
    print("session", result.session_id, "text", result.text)
    for path in sorted(cli.home.rglob("*")):
        if path.is_file():
            print(path.stat().st_size, path.relative_to(cli.home))


if __name__ == "__main__":
    main()
