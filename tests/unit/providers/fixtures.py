"""Recorded CLI runs under tests/fixtures/<provider>/, loaded for replay.

A recorded case is ``<case>.stdout.jsonl``, ``<case>.stderr`` (absent when the CLI printed
nothing there) and its metadata: ``<case>.meta.json`` (claude, pi and every ``recorded/``
case) or a one-line ``<case>.meta`` of ``key=value`` fields ending in ``argv=<command line>``
(codex, gemini, opencode, copilot).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import FailureKind
from agentshim.core.events import AgentEvent
from agentshim.core.provider import ArgvContext, Provider, StreamParser
from agentshim.core.turn import ParsedTurn
from agentshim.testing import FakeExecutor, FakeRun, RecordingEventHandler
from agentshim.testing.scripted import ToolFailure

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
_STDOUT = ".stdout.jsonl"


@dataclass(frozen=True)
class Capture:
    provider: str
    case: str
    stdout_lines: tuple[str, ...]
    stderr_lines: tuple[str, ...]
    meta: Mapping[str, Any]
    exit_code: int

    @property
    def argv(self) -> tuple[str, ...]:
        """The recorded command line; a one-line ``.meta`` only has it split on white space."""
        argv = self.meta["argv"]
        return tuple(argv.split()) if isinstance(argv, str) else tuple(argv)

    @property
    def stdin(self) -> str:
        """What the recorded run was given on stdin ("" when none was recorded)."""
        return str(self.meta.get("stdin") or "")

    def flag_value(self, flag: str) -> str | None:
        """The value the recorded command line gave ``flag``, or None."""
        return flag_value(self.argv, flag)

    def fake_run(self) -> FakeRun:
        return FakeRun(
            stdout=self.stdout_lines, stderr=self.stderr_lines, returncode=self.exit_code
        )


@dataclass(frozen=True)
class Expected:
    """What one recorded run must parse to: its answer, its conversation, how it failed."""

    text: str
    session_id: str | None
    kind: FailureKind | None = None
    error_says: str = ""  # a phrase of the failure's message
    input_tokens: int = 0
    output_tokens: int = 0


def flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The value given to ``flag`` (as ``flag value`` or ``flag=value``) in ``argv``, or None."""
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(f"{flag}="):
            return arg[len(flag) + 1 :]
    return None


def fixture_dir(provider: str) -> Path:
    return FIXTURES / provider


def capture_names(provider: str, folder: str = "") -> list[str]:
    """The cases recorded for ``provider`` (in its ``folder``, e.g. "recorded"), sorted."""
    directory = fixture_dir(provider) / folder
    return sorted(p.name.removesuffix(_STDOUT) for p in directory.glob(f"*{_STDOUT}"))


def _lines(path: Path) -> tuple[str, ...]:
    if not path.exists():
        return ()
    return tuple(path.read_text(encoding="utf-8").splitlines(keepends=True))


def _meta(base: Path) -> tuple[dict[str, Any], int]:
    as_json = base.with_name(f"{base.name}.meta.json")
    if as_json.exists():
        meta = json.loads(as_json.read_text(encoding="utf-8"))
        return meta, int(meta["exit_code"])
    text = base.with_name(f"{base.name}.meta").read_text(encoding="utf-8").strip()
    fields, _, argv = text.partition(" argv=")
    meta: dict[str, Any] = dict(field.split("=", 1) for field in fields.split())
    meta["argv"] = argv
    return meta, int(meta["rc"])


def load_capture(provider: str, case: str) -> Capture:
    """Load one recorded case; ``case`` may name a subfolder ("recorded/rec_resume")."""
    base = fixture_dir(provider) / case
    meta, exit_code = _meta(base)
    return Capture(
        provider=provider,
        case=case,
        stdout_lines=_lines(base.with_name(base.name + _STDOUT)),
        stderr_lines=_lines(base.with_name(f"{base.name}.stderr")),
        meta=meta,
        exit_code=exit_code,
    )


def load_frames(provider: str, case: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in load_capture(provider, case).stdout_lines]


def dump_frame(frame: Mapping[str, Any]) -> str:
    """One stdout line in the compact form the CLIs print."""
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False) + "\n"


def feed(
    make_parser: Callable[[Callable[[AgentEvent], None]], StreamParser],
    stdout: Iterable[str],
    stderr: Iterable[str] = (),
) -> tuple[ParsedTurn, list[AgentEvent]]:
    """Run one parser over ``stdout`` then ``stderr``; return its turn and every event."""
    events: list[AgentEvent] = []
    parser = make_parser(events.append)
    for line in stdout:
        parser.feed_stdout(line)
    for line in stderr:
        parser.feed_stderr(line)
    return parser.finish(), events


def fake_agent(
    name: str,
    runs: Any,
    recorder: RecordingEventHandler | None = None,
    *,
    provider: Provider | None = None,
) -> tuple[CliAgent, FakeExecutor]:
    """A CliAgent for the built-in provider ``name`` whose CLI, ``/usr/bin/<name>``, is faked.

    The FakeExecutor serves ``runs`` (see FakeExecutor) and records every request; ``recorder``,
    when given, hears the turn's events; ``provider`` is a configured instance to use instead
    of the default ``name`` builds.
    """
    executor = FakeExecutor(runs, binaries={name: f"/usr/bin/{name}"})
    agent = CliAgent(
        provider or name,
        executor=executor,
        env={"PATH": "/usr/bin"},
        event_handlers=[recorder] if recorder is not None else (),
    )
    return agent, executor


def token_counts(turn: ParsedTurn) -> dict[str, int]:
    """The turn's token breakdown as {field: count}, its zero fields left out.

    A turn that reports no usage fails the test.
    """
    assert turn.usage is not None
    return {name: count for name, count in asdict(turn.usage.tokens).items() if count}


def argv_builder(default: Callable[[], Provider], binary: str) -> Callable[..., list[str]]:
    """``argv(provider=None, **fields)``: the command line a turn with those fields gets.

    ``fields`` are ArgvContext's; without ``provider``, a ``default()`` one builds it.
    """

    def argv(provider: Provider | None = None, **fields: Any) -> list[str]:
        context = ArgvContext(binary_path=binary, **fields)
        return list((provider or default()).build_argv(context))

    return argv


LS_MISSING_DIR = "ls: cannot access '/agentshim-missing-dir': No such file or directory\n"
GEMINI_OUTSIDE_WORKSPACE = (
    'Path not in workspace: Attempted path "/agentshim-missing-dir" resolves outside the allowed'
    " workspace directories: /home/user/work or the project temp directory:"
    " /home/user/.gemini/tmp/work"
)

SCRIPTED_TOOL_FAILURES: Mapping[str, tuple[tuple[str, str, dict[str, Any], ToolFailure], ...]] = {
    "copilot": (
        (
            "tool_shell_failed",
            "bash",
            {
                "command": "ls /agentshim-missing-dir",
                "description": "Run ls /agentshim-missing-dir",
            },
            ToolFailure(LS_MISSING_DIR, exit_code=2),
        ),
        (
            "tool_view_failed",
            "view",
            {"path": "/agentshim-missing-dir/x.txt"},
            ToolFailure("Path does not exist"),
        ),
    ),
    "gemini": (
        (
            "tool_shell_failed",
            "run_shell_command",
            {"command": "ls", "dir_path": "/agentshim-missing-dir"},
            ToolFailure(GEMINI_OUTSIDE_WORKSPACE),
        ),
    ),
    "opencode": (
        (
            "tool_shell_failed",
            "bash",
            {"command": "ls /agentshim-missing-dir"},
            ToolFailure(LS_MISSING_DIR, exit_code=2),
        ),
        (
            "tool_read_failed",
            "read",
            {"filePath": "missing.txt"},
            ToolFailure("File not found: /home/user/work/missing.txt"),
        ),
    ),
    "pi": (
        (
            "recorded-1.6.0/rec_failed_tool_call",
            "bash",
            {"command": "ls /agentshim-missing-dir"},
            ToolFailure(LS_MISSING_DIR, exit_code=2),
        ),
        (
            "b3_tool_read_failed",
            "read",
            {"path": "/agentshim-missing-dir/x.txt"},
            ToolFailure("ENOENT: no such file or directory, access '/agentshim-missing-dir/x.txt'"),
        ),
    ),
}
"""Recorded runs with one failed tool call, and the scripted call that fails the same way:
(recorded run, tool, its arguments, the failure), per provider."""


def assert_parses_alike(scripted: ParsedTurn, recorded: ParsedTurn) -> None:
    """A scripted turn reads as the recorded one: answer, conversation, usage, cost; no failure."""
    assert (scripted.text, scripted.session_id, scripted.error) == (
        recorded.text,
        recorded.session_id,
        None,
    )
    assert scripted.usage is not None
    assert recorded.usage is not None
    assert scripted.usage.tokens == recorded.usage.tokens
    assert scripted.usage.increment_known is recorded.usage.increment_known
    assert scripted.cost_usd == recorded.cost_usd
