"""Recorded Claude Code runs (tests/fixtures/claude/) replayed through ClaudeStreamParser."""

from __future__ import annotations

import json
from collections.abc import Sequence

from agentshim.core.events import AgentEvent
from agentshim.core.turn import ParsedTurn
from agentshim.providers.claude import ClaudeStreamParser
from tests.unit.providers.fixtures import Capture, feed


def parse(
    stdout: Sequence[str], stderr: Sequence[str] = (), *, expect_structured: bool = False
) -> tuple[ParsedTurn, list[AgentEvent]]:
    return feed(
        lambda emit: ClaudeStreamParser(emit, expect_structured=expect_structured), stdout, stderr
    )


def schema_of(capture: Capture) -> object | None:
    """The ``--json-schema`` the recorded run was given, or None."""
    schema = capture.flag_value("--json-schema")
    return json.loads(schema) if schema is not None else None


def replay(capture: Capture) -> tuple[ParsedTurn, list[AgentEvent]]:
    return parse(
        capture.stdout_lines, capture.stderr_lines, expect_structured=schema_of(capture) is not None
    )
