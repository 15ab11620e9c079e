"""Recorded Claude Code runs (tests/fixtures/claude/) and helpers to replay them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentshim.core.events import AgentEvent
from agentshim.core.provider import ParsedTurn
from agentshim.providers.claude import ClaudeStreamParser

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "claude"


@dataclass(frozen=True)
class Capture:
    name: str
    stdout: tuple[str, ...]
    stderr: tuple[str, ...]
    meta: dict[str, Any]

    @property
    def exit_code(self) -> int:
        return int(self.meta["exit_code"])

    @property
    def argv(self) -> list[str]:
        return list(self.meta["argv"])

    @property
    def prompt(self) -> str:
        return self.meta["stdin"] or ""

    @property
    def resume_id(self) -> str | None:
        argv = self.argv
        return argv[argv.index("--resume") + 1] if "--resume" in argv else None

    @property
    def schema(self) -> dict[str, Any] | None:
        argv = self.argv
        return (
            json.loads(argv[argv.index("--json-schema") + 1]) if "--json-schema" in argv else None
        )


def capture_names() -> list[str]:
    return sorted(p.name[: -len(".stdout.jsonl")] for p in FIXTURES.glob("*.stdout.jsonl"))


def load(name: str) -> Capture:
    def lines(suffix: str) -> tuple[str, ...]:
        text = (FIXTURES / f"{name}.{suffix}").read_text(encoding="utf-8")
        return tuple(text.splitlines(keepends=True))

    meta = json.loads((FIXTURES / f"{name}.meta.json").read_text(encoding="utf-8"))
    return Capture(name, lines("stdout.jsonl"), lines("stderr"), meta)


def frames(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in load(name).stdout]


def dump(frame: dict[str, Any]) -> str:
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False) + "\n"


def parse(
    stdout: Sequence[str], stderr: Sequence[str] = (), *, expect_structured: bool = False
) -> tuple[ParsedTurn, list[AgentEvent]]:
    events: list[AgentEvent] = []
    parser = ClaudeStreamParser(events.append, expect_structured=expect_structured)
    for line in stdout:
        parser.feed_stdout(line)
    for line in stderr:
        parser.feed_stderr(line)
    return parser.finish(), events


def replay(capture: Capture) -> tuple[ParsedTurn, list[AgentEvent]]:
    return parse(capture.stdout, capture.stderr, expect_structured=capture.schema is not None)
