"""Recorded Copilot CLI 1.0.102 runs (tests/fixtures/copilot/), what each must parse to, and helpers."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentshim.core.errors import FailureKind
from agentshim.core.events import AgentEvent
from agentshim.core.provider import ParsedTurn
from agentshim.providers.copilot import CopilotStreamParser

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "copilot"


@dataclass(frozen=True)
class Capture:
    name: str
    stdout: tuple[str, ...]
    stderr: tuple[str, ...]
    meta: str

    @property
    def exit_code(self) -> int:
        match = re.search(r"\brc=(-?\d+)", self.meta)
        assert match is not None
        return int(match.group(1))

    @property
    def resume_id(self) -> str | None:
        match = re.search(r"--resume=(\S+)", self.meta)
        return match.group(1) if match else None


@dataclass(frozen=True)
class Expected:
    text: str
    session_id: str | None
    kind: FailureKind | None = None
    error_says: str = ""


EXPECTED: dict[str, Expected] = {
    "plain": Expected("Hello from the fake model.", "bf10cca5-bc27-4b95-9fbc-d84a381b9b3b"),
    "resume": Expected("Hello from the fake model.", "d8d67461-6201-4285-8233-9e4dda0071e1"),
    "tool_shell": Expected("Done.", "d8d67461-6201-4285-8233-9e4dda0071e1"),
    "api_401": Expected(
        "", "fda33b4a-bc28-4c4d-b986-e2206b38fe96", FailureKind.AUTH, "Authentication failed"
    ),
    "api_400_context_length": Expected(
        "",
        "0fdbd5b5-0fa3-4b7c-b3ea-c39f8f7e711c",
        FailureKind.CONTEXT_OVERFLOW,
        "rejected the prompt as too long",
    ),
    "api_500": Expected(
        "", "3dc602e3-49a7-4441-b668-15574236af59", FailureKind.TRANSIENT, "retried 5 times"
    ),
    "stdin_prompt_connection_refused": Expected(
        "",
        "0813f49e-b780-4fc3-a9fc-8f11549673db",
        FailureKind.TRANSIENT,
        "Could not connect to local model provider",
    ),
    "resume_missing": Expected("", None, FailureKind.OTHER, "No session, task, or name matched"),
}


def capture_names() -> list[str]:
    return sorted(p.name[: -len(".stdout.jsonl")] for p in FIXTURES.glob("*.stdout.jsonl"))


def load(name: str) -> Capture:
    def lines(suffix: str) -> tuple[str, ...]:
        text = (FIXTURES / f"{name}.{suffix}").read_text(encoding="utf-8")
        return tuple(text.splitlines(keepends=True))

    meta = (FIXTURES / f"{name}.meta").read_text(encoding="utf-8")
    return Capture(name, lines("stdout.jsonl"), lines("stderr"), meta)


def result_session_id(capture: Capture) -> str | None:
    for line in capture.stdout:
        frame = json.loads(line)
        if frame["type"] == "result":
            return str(frame["sessionId"])
    return None


def frames(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in load(name).stdout]


def dump(frame: dict[str, Any]) -> str:
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False) + "\n"


def parse(
    stdout: Sequence[str], stderr: Sequence[str] = (), **options: Any
) -> tuple[ParsedTurn, list[AgentEvent]]:
    events: list[AgentEvent] = []
    parser = CopilotStreamParser(events.append, expect_structured=False, **options)
    for line in stdout:
        parser.feed_stdout(line)
    for line in stderr:
        parser.feed_stderr(line)
    return parser.finish(), events


def of_type(events: Sequence[AgentEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]
