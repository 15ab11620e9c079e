"""Stream parser throughput of each provider against a bare json.loads loop over the same lines.

For every provider, its recorded tool-call turn (the fixture named in FIXTURES, under
tests/fixtures/<provider>/) is repeated to --lines lines. Each round times a bare ``json.loads``
loop and the provider's parser over those lines, in CPU seconds (time.process_time, so other
load on the machine counts less), alternating which loop goes first. The parser is the one
``get_provider(name).new_parser`` returns, as a turn gets it, and sends its events to an emit
that drops them: what a handler does with an event is the handler's cost, not the parser's.
The figures reported are those of the round with the median ratio (target <= 1.3x); the
spread column is the lowest and the highest ratio of all the rounds.

The floor column is what json.loads plus only building the same events by calling their
classes (no parsing) costs, as a ratio of json.loads: a parser that builds its events that way
cannot get below it (the parsers' builders, agentshim.core._builders, cost less than a class
call, so a parser using them can).

Run: .venv/bin/python benchmarks/parser_bench.py [--provider NAME ...] [--rounds N] [--lines N]
Exits nonzero when a provider misses the target.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import deque
from dataclasses import dataclass, fields
from pathlib import Path

from agentshim.core.events import AgentEvent
from agentshim.providers import get_provider

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures"

# One recorded turn per provider with a tool call in it, so every event kind a real turn
# produces is parsed.
FIXTURES = {
    "claude": "b_tool_bash.stdout.jsonl",
    "codex": "tool_shell.stdout.jsonl",
    "gemini": "tool_shell_yolo.stdout.jsonl",
    "opencode": "tool_shell.stdout.jsonl",
    "copilot": "tool_shell.stdout.jsonl",
    "pi": "b_tool_bash.stdout.jsonl",
}
TARGET = 1.3


@dataclass(frozen=True)
class Row:
    provider: str
    fixture: str
    json_us: float
    parser_us: float
    ratio: float
    low: float
    high: float
    floor: float


def load_lines(provider: str, count: int) -> list[str]:
    recorded = (FIXTURE_DIR / provider / FIXTURES[provider]).read_text(encoding="utf-8")
    lines = recorded.splitlines(keepends=True)
    repeats = -(-count // len(lines))
    return (lines * repeats)[:count]


def time_json(lines: list[str]) -> float:
    loads = json.loads
    start = time.process_time()
    for line in lines:
        loads(line)
    return time.process_time() - start


def time_parser(provider: str, lines: list[str]) -> float:
    # A deque that holds nothing drops each event at C speed, as the json loop drops its dicts.
    discard: deque[AgentEvent] = deque(maxlen=0)
    source = get_provider(provider)
    start = time.process_time()
    parser = source.new_parser(discard.append, expect_structured=False)
    feed = parser.feed_stdout
    for line in lines:
        feed(line)
    parser.finish()
    return time.process_time() - start


def time_building(events: list[AgentEvent]) -> float:
    # Each event's constructor runs again on its own field values, with no parsing around it.
    calls = [
        (type(event), tuple(getattr(event, f.name) for f in fields(event))) for event in events
    ]
    start = time.process_time()
    for build, args in calls:
        build(*args)
    return time.process_time() - start


def parsed_events(provider: str, lines: list[str]) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    parser = get_provider(provider).new_parser(events.append, expect_structured=False)
    for line in lines:
        parser.feed_stdout(line)
    parser.finish()
    return events


def measure(provider: str, count: int, rounds: int) -> Row:
    lines = load_lines(provider, count)
    baselines: list[float] = []
    parsers: list[float] = []
    for round_no in range(rounds):
        # Alternating which loop goes first keeps a drift in machine load from favouring one.
        if round_no % 2:
            parsers.append(time_parser(provider, lines))
            baselines.append(time_json(lines))
        else:
            baselines.append(time_json(lines))
            parsers.append(time_parser(provider, lines))
    # The figures come from the round with the median ratio, so the columns agree.
    by_ratio = sorted(zip(parsers, baselines, strict=True), key=lambda pair: pair[0] / pair[1])
    ratios = [p / b for p, b in by_ratio]
    parser_s, baseline = by_ratio[(len(by_ratio) - 1) // 2]
    events = parsed_events(provider, lines)
    building = statistics.median(time_building(events) for _ in range(rounds))
    json_median = statistics.median(baselines)
    per_line = 1e6 / len(lines)
    return Row(
        provider=provider,
        fixture=FIXTURES[provider],
        json_us=baseline * per_line,
        parser_us=parser_s * per_line,
        ratio=parser_s / baseline,
        low=ratios[0],
        high=ratios[-1],
        floor=(json_median + building) / json_median,
    )


def print_table(rows: list[Row]) -> None:
    header = (
        "provider",
        "fixture",
        "us/line json",
        "us/line parser",
        "ratio",
        "spread",
        "floor",
        "target",
    )
    cells = [
        (
            row.provider,
            row.fixture,
            f"{row.json_us:.2f}",
            f"{row.parser_us:.2f}",
            f"{row.ratio:.2f}x",
            f"{row.low:.2f}-{row.high:.2f}x",
            f"{row.floor:.2f}x",
            f"{TARGET:.1f}x {'ok' if row.ratio <= TARGET else 'MISS'}",
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in (header, *cells)) for i in range(len(header))]
    for line in (header, *cells):
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__)
    cli.add_argument(
        "--provider",
        action="append",
        choices=sorted(FIXTURES),
        help="a provider to measure (repeatable; default: all)",
    )
    cli.add_argument("--rounds", type=int, default=7)
    cli.add_argument("--lines", type=int, default=100_000)
    args = cli.parse_args()
    providers: list[str] = args.provider or list(FIXTURES)
    print(
        f"{args.lines} lines per provider, {args.rounds} alternating rounds in CPU time; "
        "each row is the round with the median ratio"
    )
    rows = [measure(provider, args.lines, args.rounds) for provider in providers]
    print_table(rows)
    return 0 if all(row.ratio <= TARGET for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
