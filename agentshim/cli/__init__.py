"""The ``agentshim`` command: run a turn, check the installed CLIs, list what each provider can do."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from agentshim._version import __version__
from agentshim.core._checks import seconds
from agentshim.core.conversation import TransportKind
from agentshim.core.errors import InvalidRequestError
from agentshim.core.ids import is_valid_session_id
from agentshim.core.mcp_config import recover_config_files
from agentshim.providers import DEFAULT_CATALOG, DEFAULT_PROVIDER, provider_names
from agentshim.providers.catalog import transports_offered

from . import _exits
from ._caps import (
    CAPABILITY_HEADER,
    capability_rows,
    flag_name,
    kind_of_flag,
    table,
)
from ._exits import EXIT_INTERRUPTED, EXIT_NOT_INSTALLED, EXIT_OK, EXIT_TURN_FAILED, EXIT_USAGE
from ._run import RunOptions, run_turn, stand_in_executor

__all__ = ["main", "stand_in_executor"]
__all__ += _exits.__all__

_EXIT_CODES = f"""\
exit status:
  {EXIT_OK}    the command did what it was asked
  {EXIT_TURN_FAILED}    the turn failed; doctor: a provider is not ready; mcp recover: something was recovered
  {EXIT_USAGE}    the command line is wrong; mcp recover: something could not be recovered
  {EXIT_NOT_INSTALLED}    the provider's CLI is not installed (not on PATH)
  {EXIT_INTERRUPTED}  Ctrl-C interrupted the turn (a second Ctrl-C kills the CLI)
"""


def _seconds(text: str) -> float:
    try:
        return seconds("", "--timeout", float(text), positive=True)
    except (ValueError, InvalidRequestError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds") from None


def _directory(text: str) -> str:
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory")
    return text


def _session_id(text: str) -> str:
    if not is_valid_session_id(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a session id (1-128 letters, digits, '.', '_' or '-')"
        )
    return text


def _transport_values() -> list[str]:
    values: dict[str, None] = {}
    for name in provider_names():
        for kind in transports_offered(DEFAULT_CATALOG.plugin(name)):
            values[flag_name(kind)] = None
    return list(values)


def _parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The top-level parser and the ``run`` one (whose errors name ``agentshim run``)."""
    parser = argparse.ArgumentParser(
        prog="agentshim",
        description="Run coding-agent CLIs and see their turns as typed events.",
        epilog=_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agentshim {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = _add_run(commands)
    doctor = commands.add_parser(
        "doctor",
        help="check each provider's CLI: found, version, credentials, Node, an offline turn",
        description=(
            "For each provider (default: all): the binary agentshim run would use and its "
            "version (pinned, inside the checked range, or untested), the credentials seen "
            "(names only, never values), Node.js where the CLI needs it. Exits 1 when a "
            "provider asked for is not ready."
        ),
        epilog=_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    doctor.add_argument(
        "providers",
        nargs="*",
        metavar="PROVIDER",
        help=f"providers to check (default: all of {', '.join(provider_names())})",
    )
    doctor.add_argument("--json", action="store_true", help="one JSON document on stdout")
    doctor.add_argument(
        "--acp", metavar="CMD", default=None, help="check the ACP agent this command starts"
    )
    doctor.add_argument(
        "--offline-check",
        action="store_true",
        help="also run one real turn of each CLI against the bundled model server "
        "(offline, no tokens spent)",
    )
    commands.add_parser(
        "providers",
        help="a table of what each built-in provider can do",
        description="Resume, MCP, output schema, reasoning effort, transports, approvals.",
    )
    mcp = commands.add_parser("mcp", help="MCP config files agentshim installs into")
    mcp_commands = mcp.add_subparsers(dest="mcp_command", required=True, metavar="COMMAND")
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
    return parser, run


def _add_run(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],  # pyright: ignore[reportPrivateUsage]
) -> argparse.ArgumentParser:
    run = commands.add_parser(
        "run",
        help="run one turn, show its events as they come and a summary",
        description=(
            "Run one turn of a provider's CLI. The prompt is PROMPT, or stdin when PROMPT is "
            "'-' or left out. On a terminal a status line (time, tokens, current tool) shows "
            "while the CLI is quiet. Ctrl-C interrupts the turn and prints what it got; a "
            "second Ctrl-C kills the CLI."
        ),
        epilog=_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("prompt", nargs="?", default=None, metavar="PROMPT|-")
    run.add_argument("--provider", default=DEFAULT_PROVIDER, choices=provider_names())
    run.add_argument(
        "--acp", metavar="CMD", default=None, help="run the ACP agent this command starts"
    )
    run.add_argument("--model", default=None, help="the model (default: the CLI's own)")
    run.add_argument("--cwd", type=_directory, default=None, help="directory the agent works in")
    run.add_argument(
        "--timeout", type=_seconds, default=600.0, help="seconds the turn may take (default 600)"
    )
    run.add_argument(
        "--resume", type=_session_id, default=None, metavar="ID", help="continue session ID"
    )
    run.add_argument(
        "--transport",
        default=flag_name(TransportKind.ONE_SHOT),
        choices=_transport_values(),
        help="how to talk to the CLI (what the provider offers; default one-shot)",
    )
    run.add_argument(
        "--json",
        action="store_true",
        help="write every event and then the result as JSON lines on stdout",
    )
    run.add_argument(
        "--stand-in",
        action="store_true",
        help="run the bundled stand-in CLI instead of the real one (no model is called)",
    )
    return run


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


def _run_options(
    parser: argparse.ArgumentParser, args: argparse.Namespace, stdin: TextIO, err: TextIO
) -> RunOptions:
    provider: str = args.provider
    catalog = DEFAULT_CATALOG
    if args.acp is not None:
        from ._acp import ACP_PROVIDER, acp_run_catalog

        try:
            provider, catalog = ACP_PROVIDER, acp_run_catalog(args.acp)
        except InvalidRequestError as error:
            parser.error(f"argument --acp: {error}")
    kind = kind_of_flag(args.transport)
    offered = transports_offered(catalog.plugin(provider))
    if kind not in offered:
        parser.error(
            f"argument --transport: {provider} does not offer {args.transport}; choose from "
            + ", ".join(flag_name(k) for k in offered)
        )
    if args.resume is not None and not catalog.plugin(provider).profile.supports_resume:
        parser.error(f"argument --resume: {provider} cannot resume a session")
    prompt: str | None = args.prompt
    if prompt is None or prompt == "-":
        if getattr(stdin, "isatty", lambda: False)():
            err.write("reading the prompt from stdin (end it with Ctrl-D)\n")
        prompt = stdin.read()
    if not prompt.strip():
        parser.error("argument PROMPT: the prompt is empty; give PROMPT or pipe it on stdin")
    return RunOptions(
        provider=provider,
        prompt=prompt,
        model=args.model,
        cwd=args.cwd,
        timeout=args.timeout,
        resume=args.resume,
        transport=kind,
        json=args.json,
        stand_in=args.stand_in,
        catalog=catalog,
    )


def main(
    argv: Sequence[str] | None = None,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Parse ``argv`` and run the command; returns the process exit status.

    A wrong command line exits through argparse with status 2 and a message naming the flag.
    """
    parser, run_parser = _parser()
    args = parser.parse_args(argv)
    stdout: TextIO = out if out is not None else sys.stdout
    stderr: TextIO = err if err is not None else sys.stderr
    if args.command == "providers":
        stdout.write(table(CAPABILITY_HEADER, capability_rows()) + "\n")
        return EXIT_OK
    if args.command == "mcp":
        return _recover(args.directory, stdout)
    if args.command == "doctor":
        # Imported here: the model server it brings is not needed by the other commands.
        from ._doctor import diagnose, write_report

        if args.acp is not None:
            from ._acp import check_acp_agent, write_acp_check

            check = check_acp_agent(args.acp)
            write_acp_check(check, stdout, as_json=args.json)
            return EXIT_OK if check.ready else EXIT_TURN_FAILED

        names: list[str] = args.providers or list(provider_names())
        unknown = [name for name in names if name not in provider_names()]
        if unknown:
            parser.error(
                f"argument PROVIDER: unknown provider {', '.join(unknown)}; choose from "
                + ", ".join(provider_names())
            )
        diagnoses = [diagnose(name, offline_check=args.offline_check) for name in names]
        write_report(diagnoses, stdout, as_json=args.json)
        return EXIT_OK if all(d.ready for d in diagnoses) else EXIT_TURN_FAILED
    options = _run_options(run_parser, args, stdin if stdin is not None else sys.stdin, stderr)
    return run_turn(options, stdout, stderr)
