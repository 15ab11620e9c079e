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
from agentshim.core.mcp_config import recover_config_files
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
    mcp = commands.add_parser("mcp", help="MCP config files agentshim installs into")
    mcp_commands = mcp.add_subparsers(dest="mcp_command", required=True)
    recover = mcp_commands.add_parser(
        "recover",
        help="undo MCP servers left in config files under DIR by a turn whose process died",
        description=(
            "Restore every MCP config file under DIR that a turn never restored (its process "
            "was killed). Exit status: 0 nothing to recover, 1 something was recovered, "
            "2 something could not be (or is in use by a running turn)."
        ),
    )
    recover.add_argument("directory", metavar="DIR", help="the workspace to look in")
    return parser


def _recover(directory: str, out: TextIO) -> int:
    results = recover_config_files(directory)
    if not results:
        out.write(f"nothing to recover under {directory}\n")
        return 0
    status = 1
    for result in results:
        if result.error is not None:
            out.write(f"not restored: {result.path}: {result.error}\n")
            status = 2
        else:
            out.write(
                f"restored: {result.path}" + (f" ({result.note})" if result.note else "") + "\n"
            )
    return status


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
    if args.command == "mcp":
        return _recover(args.directory, stdout)
    return _run(args, stdout, stderr)
