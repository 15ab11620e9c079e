"""The ``agentshim`` command: run a turn, check the installed CLIs, list what each provider can do."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import signal
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, TextIO, cast

from agentshim._version import __version__
from agentshim.core._checks import seconds
from agentshim.core.conversation import TransportKind
from agentshim.core.errors import InvalidRequestError
from agentshim.core.ids import is_valid_session_id
from agentshim.core.profile import OutputSchemaStyle
from agentshim.mcp.recover import recover_config_files
from agentshim.providers import DEFAULT_CATALOG, DEFAULT_PROVIDER, provider_names
from agentshim.providers.catalog import transports_offered

from . import _exits
from ._caps import (
    APPROVALS_NOTE,
    CAPABILITY_HEADER,
    capability_records,
    capability_rows,
    flag_name,
    kind_of_flag,
    table,
)
from ._exits import EXIT_INTERRUPTED, EXIT_NOT_INSTALLED, EXIT_OK, EXIT_TURN_FAILED, EXIT_USAGE
from ._run import RunOptions, exit_status_of, run_turn

__all__ = ["main"]
__all__ += _exits.__all__

_EXIT_CODES = f"""\
exit status:
  {EXIT_OK}    the command did what it was asked
  {EXIT_TURN_FAILED}    the turn failed (a --resume that could not resume, too); doctor: a
       provider is not ready; mcp recover: something could not be restored
  {EXIT_USAGE}    the command line is wrong (a flag, an unknown --model, a missing DIR)
  {EXIT_NOT_INSTALLED}    the provider's CLI is not installed (not on PATH)
  {EXIT_INTERRUPTED}  Ctrl-C stopped it (a second Ctrl-C kills the CLI)
  {exit_status_of(signal.SIGTERM)}  SIGTERM stopped it; {exit_status_of(signal.SIGHUP)} SIGHUP (the terminal closed): the turn's
       processes are ended and what it got is printed, as for Ctrl-C
"""

_RUN_EXAMPLES = """\
examples:
  agentshim run "Fix the failing test"        events as they come, a summary
  echo "Explain this repo" | agentshim run -  the prompt from stdin
  agentshim run --stand-in "Say hello"        no CLI needed, no model called
  agentshim run --provider codex --model gpt-5 "Review the diff"
  agentshim run --resume ID "And now?"        exit 1 if it cannot resume ID
  agentshim run --json hi | jq -c .type       JSON lines: each event, the result
  agentshim run --schema answer.json "List the three largest files"

"""


class _Parser(argparse.ArgumentParser):
    """argparse with "did you mean" for a mistyped choice (a command, a provider, a transport)."""

    def error(self, message: str) -> NoReturn:
        """Exit 2 with ``message``, plus the closest valid choice when one was mistyped."""
        typo = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if typo is not None:
            choices = re.findall(r"'([^']*)'|([\w.-]+)", typo.group(2))
            names = [quoted or bare for quoted, bare in choices]
            message += did_you_mean(typo.group(1), names)
        super().error(message)


def did_you_mean(given: str, choices: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` for the choice closest to ``given``, or ``""`` for none."""
    close = difflib.get_close_matches(given, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _seconds(text: str) -> float:
    try:
        return seconds("", "--timeout", float(text), positive=True)
    except (ValueError, InvalidRequestError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds") from None


def _directory(text: str) -> str:
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory")
    return text


def _model(text: str) -> str:
    if not text.strip() or any(ch.isspace() or not ch.isprintable() for ch in text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a model name")
    return text


def _schema(text: str) -> Mapping[str, Any]:
    try:
        with open(text, encoding="utf-8") as handle:
            document: object = json.load(handle)
    except OSError as error:
        raise argparse.ArgumentTypeError(f"{text!r} cannot be read: {error.strerror}") from None
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not JSON: {error}") from None
    if not isinstance(document, dict):
        raise argparse.ArgumentTypeError(f"{text!r} holds no JSON object (a schema is one)")
    return cast("Mapping[str, Any]", document)


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
    parser = _Parser(
        prog="agentshim",
        description="Run coding-agent CLIs and see their turns as typed events.",
        epilog=_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agentshim {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    run = _add_run(commands)
    doctor = commands.add_parser(
        "doctor",
        help="check each provider's CLI: found, version, credentials, Node, an offline turn",
        description=textwrap.fill(
            "For each provider (default: all): the binary agentshim run would use and its "
            "version (pinned, inside the checked range, or untested), the credentials seen "
            "(names only, never values), Node.js where the CLI needs it. Exits 1 when a "
            "provider asked for is not ready.",
            width=79,
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
    providers = commands.add_parser(
        "providers",
        help="a table of what each built-in provider can do",
        description="Resume, MCP, output schema, reasoning effort, transports, approvals.",
    )
    providers.add_argument(
        "--json", action="store_true", help="every capability as one JSON document on stdout"
    )
    mcp = commands.add_parser("mcp", help="MCP config files agentshim installs into")
    mcp_commands = mcp.add_subparsers(
        dest="mcp_command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    recover = mcp_commands.add_parser(
        "recover",
        help="undo MCP servers left in config files under DIR by a turn whose process died",
        description=(
            "Restore every MCP config file under DIR that a turn never restored (its process "
            "was killed), and list what was restored. Exit status: 0 nothing is left to "
            "restore (all restored, or nothing needed it), 1 something could not be restored "
            "(or is in use by a running turn), 2 DIR is not a directory."
        ),
    )
    recover.add_argument(
        "directory", metavar="DIR", type=_directory, help="the workspace to look in"
    )
    return parser, run


def _add_run(
    commands: argparse._SubParsersAction[_Parser],  # pyright: ignore[reportPrivateUsage]
) -> argparse.ArgumentParser:
    run = commands.add_parser(
        "run",
        help="run one turn, show its events as they come and a summary",
        description=textwrap.fill(
            "Run one turn of a provider's CLI. The prompt is PROMPT, or stdin when PROMPT is "
            "'-' or left out. On a terminal a status line (time, tokens, current tool) shows "
            "while the CLI is quiet. Ctrl-C (or SIGTERM, SIGHUP) stops the turn, ends the "
            "processes it started and prints what it got; a second one kills the CLI. "
            "Colour only on a terminal, never with NO_COLOR set.",
            width=79,
        ),
        epilog=_RUN_EXAMPLES + _EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("prompt", nargs="?", default=None, metavar="PROMPT|-")
    run.add_argument("--provider", default=DEFAULT_PROVIDER, choices=provider_names())
    run.add_argument(
        "--acp", metavar="CMD", default=None, help="run the ACP agent this command starts"
    )
    run.add_argument(
        "--model", type=_model, default=None, help="the model (default: the CLI's own)"
    )
    run.add_argument("--cwd", type=_directory, default=None, help="directory the agent works in")
    run.add_argument(
        "--timeout", type=_seconds, default=600.0, help="seconds the turn may take (default 600)"
    )
    run.add_argument(
        "--resume",
        type=_session_id,
        default=None,
        metavar="ID",
        help="continue conversation ID; the turn fails (exit 1) when the CLI cannot resume it",
    )
    run.add_argument(
        "--resume-or-new",
        action="store_true",
        help="with --resume: start a new conversation (without ID's context) when ID cannot "
        "be resumed, instead of failing",
    )
    run.add_argument(
        "--schema",
        type=_schema,
        default=None,
        metavar="FILE",
        help="a JSON Schema file the answer must follow (providers with an output schema); "
        "the parsed answer is the result's structured_output",
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
        return EXIT_OK
    status = EXIT_OK
    for result in results:
        if result.error is not None:
            out.write(f"not restored: {result.path}: {result.error}\n")
            status = EXIT_TURN_FAILED
        else:
            out.write(
                f"restored: {result.path}" + (f" ({result.note})" if result.note else "") + "\n"
            )
    return status


def _read_prompt(stdin: TextIO, err: TextIO) -> str:
    if getattr(stdin, "isatty", lambda: False)():
        err.write("reading the prompt from stdin (end it with Ctrl-D)\n")
    return stdin.read()


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
    plugin = catalog.plugin(provider)
    kind = kind_of_flag(args.transport)
    offered = transports_offered(plugin)
    if kind not in offered:
        having = [
            n for n in provider_names() if kind in transports_offered(DEFAULT_CATALOG.plugin(n))
        ]
        parser.error(
            f"argument --transport: {provider} does not offer {args.transport} (offered by "
            f"--provider {' or '.join(having)}); choose from "
            + ", ".join(flag_name(k) for k in offered)
        )
    if args.resume is not None and not plugin.profile.supports_resume:
        parser.error(f"argument --resume: {provider} cannot resume a conversation")
    if args.resume_or_new and args.resume is None:
        parser.error("argument --resume-or-new: only means something with --resume ID")
    if args.schema is not None and plugin.profile.output_schema is OutputSchemaStyle.NONE:
        parser.error(
            f"argument --schema: {provider} cannot hold its answer to a schema; providers that "
            "can: "
            + ", ".join(
                name
                for name in provider_names()
                if DEFAULT_CATALOG.plugin(name).profile.output_schema is not OutputSchemaStyle.NONE
            )
        )
    prompt: str | None = args.prompt
    if prompt is None or prompt == "-":
        prompt = _read_prompt(stdin, err)
    if not prompt.strip():
        parser.error("argument PROMPT: the prompt is empty; give PROMPT or pipe it on stdin")
    return RunOptions(
        provider=provider,
        prompt=prompt,
        model=args.model,
        cwd=args.cwd,
        timeout=args.timeout,
        resume=args.resume,
        resume_or_new=args.resume_or_new,
        transport=kind,
        json=args.json,
        stand_in=args.stand_in,
        schema=args.schema,
        catalog=catalog,
    )


def _providers(as_json: bool, out: TextIO) -> int:
    if as_json:
        out.write(json.dumps(capability_records(), indent=2) + "\n")
    else:
        out.write(table(CAPABILITY_HEADER, capability_rows()) + "\n\n" + APPROVALS_NOTE + "\n")
    return EXIT_OK


def _doctor_command(parser: argparse.ArgumentParser, args: argparse.Namespace, out: TextIO) -> int:
    if args.acp is not None:
        from ._acp import check_acp_agent, write_acp_check

        check = check_acp_agent(args.acp)
        write_acp_check(check, out, as_json=args.json)
        return EXIT_OK if check.ready else EXIT_TURN_FAILED
    # Imported here: the model server it brings is not needed by the other commands.
    from ._doctor import diagnose, write_report

    names: list[str] = args.providers or list(provider_names())
    for name in names:
        if name not in provider_names():
            parser.error(
                f"argument PROVIDER: unknown provider {name}; choose from "
                + ", ".join(provider_names())
                + did_you_mean(name, provider_names())
            )
    diagnoses = [diagnose(name, offline_check=args.offline_check) for name in names]
    write_report(diagnoses, out, as_json=args.json)
    return EXIT_OK if all(d.ready for d in diagnoses) else EXIT_TURN_FAILED


def main(
    argv: Sequence[str] | None = None,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Parse ``argv`` and run the command; returns the process exit status.

    A wrong command line exits through argparse with status 2 and a message naming the flag
    (a bare ``agentshim`` shows the help that way). Ctrl-C at any point exits 130 without a
    traceback; output that stops being read (``| head``) ends the command quietly.
    """
    stdout: TextIO = out if out is not None else sys.stdout
    stderr: TextIO = err if err is not None else sys.stderr
    try:
        return _main(argv, stdout, stderr, stdin if stdin is not None else sys.stdin)
    except KeyboardInterrupt:
        _quietly(lambda: stderr.write("\ninterrupted\n"))
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _stdout_gone(stdout)
        return exit_status_of(signal.SIGPIPE)
    finally:
        if not _quietly(stdout.flush):
            _stdout_gone(stdout)


def _quietly(action: Callable[[], object]) -> bool:
    """Run ``action``; False when the stream it writes to is gone."""
    try:
        action()
    except (OSError, ValueError):
        return False
    return True


def _stdout_gone(stdout: TextIO) -> None:
    """Point the process's stdout at /dev/null, so the interpreter's last flush cannot fail."""
    if stdout is sys.stdout:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass


def _main(argv: Sequence[str] | None, stdout: TextIO, stderr: TextIO, stdin: TextIO) -> int:
    parser, run_parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        stderr.write(parser.format_help())
        return EXIT_USAGE
    if args.command == "providers":
        return _providers(args.json, stdout)
    if args.command == "mcp":
        return _recover(args.directory, stdout)
    if args.command == "doctor":
        return _doctor_command(parser, args, stdout)
    options = _run_options(run_parser, args, stdin, stderr)
    return run_turn(options, stdout, stderr)
