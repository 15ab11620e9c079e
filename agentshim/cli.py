"""The ``python -m agentshim`` command line: run one real turn and show what happened."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from typing import TextIO

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import AgentShimError, CliNotFoundError
from agentshim.core.events import ConsoleEventHandler
from agentshim.core.turn import TurnResult
from agentshim.execution.executor import CommandExecutor, CommandRequest
from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.transform import TransformingExecutor
from agentshim.providers import DEFAULT_CATALOG, DEFAULT_PROVIDER, provider_names

__all__ = ["main", "stand_in_executor"]


def stand_in_executor(provider: str) -> CommandExecutor:
    """Return a host executor that runs the bundled stand-in CLI in place of ``provider``'s."""

    def to_stand_in(request: CommandRequest) -> CommandRequest:
        argv = (sys.executable, "-m", "agentshim.testing.stand_in", provider, *request.argv[1:])
        return dataclasses.replace(request, argv=argv)

    def find_stand_in(name: str, env: object) -> str:
        return name

    return TransformingExecutor(HostCommandExecutor(), to_stand_in, find_binary=find_stand_in)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m agentshim", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run one turn and print its events and a summary")
    run.add_argument("prompt", help="the prompt, sent to the CLI on stdin")
    run.add_argument("--provider", default=DEFAULT_PROVIDER, choices=provider_names())
    run.add_argument("--model", default=None)
    run.add_argument("--cwd", default=None, help="directory the agent works in")
    run.add_argument("--timeout", type=float, default=600.0, help="seconds (default 600)")
    run.add_argument(
        "--stand-in",
        action="store_true",
        help="run the bundled stand-in CLI instead of the real one (no model is called)",
    )
    commands.add_parser("providers", help="list the built-in providers")
    return parser


def _summary(result: TurnResult) -> str:
    tokens = result.usage.tokens
    cost = f"${result.cost_usd:.4f}" if result.cost_usd is not None else "cost unknown"
    counted = "" if result.usage.increment_known else " (not reported)"
    return (
        f"session {result.session_id or '-'} | tokens {tokens.input_tokens} in, "
        f"{tokens.output_tokens} out{counted} | {cost} | {result.duration_ms / 1000:.2f} s"
    )


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    provider: str = args.provider
    executor = stand_in_executor(provider) if args.stand_in else None
    try:
        agent = CliAgent(
            provider,
            model=args.model,
            executor=executor,
            event_handler=ConsoleEventHandler(stream=out),
        )
    except CliNotFoundError as error:
        profile = DEFAULT_CATALOG.plugin(provider).profile
        install = profile.container_install[-1] if profile.container_install else None
        err.write(f"{profile.display_name} is not installed: {error}\n")
        if install:
            err.write(f"install it with: {install}\n")
        err.write("or try the bundled stand-in CLI: add --stand-in\n")
        return 2
    except AgentShimError as error:
        err.write(f"error: {error}\n")
        return 1
    try:
        result = agent.run(args.prompt, cwd=args.cwd, timeout=args.timeout)
    except AgentShimError as error:
        err.write(f"turn failed: {error}\n")
        return 1
    out.write(_summary(result) + "\n")
    return 0


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Parse ``argv`` and run the command; returns the process exit status."""
    args = _parser().parse_args(argv)
    stdout: TextIO = out if out is not None else sys.stdout
    stderr: TextIO = err if err is not None else sys.stderr
    if args.command == "providers":
        for name in provider_names():
            stdout.write(f"{name}\t{DEFAULT_CATALOG.plugin(name).profile.display_name}\n")
        return 0
    return _run(args, stdout, stderr)
