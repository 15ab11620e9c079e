"""Opencode stream parser throughput against a bare json.loads loop over the same lines.

The recorded tool-call turn (tests/fixtures/opencode/tool_shell.stdout.jsonl: step_start, tool_use, step_finish (tool-calls), step_start, text, step_finish (stop)) is repeated to 100,000 lines. Both loops run in the same
process, in alternating rounds so both see the same machine load, best of the rounds each;
the figure that matters is the ratio (target <= 2.0x).

Run: .venv/bin/python benchmarks/parser_opencode_bench.py [--lines N] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from agentshim.core.events import AgentEvent
from agentshim.providers.opencode import OpencodeStreamParser

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "tests"
    / "fixtures"
    / "opencode"
    / "tool_shell.stdout.jsonl"
)


def load_lines(count: int) -> list[str]:
    recorded = FIXTURE.read_text(encoding="utf-8").splitlines(keepends=True)
    repeats = -(-count // len(recorded))
    return (recorded * repeats)[:count]


def bare_json(lines: list[str]) -> float:
    loads = json.loads
    start = time.perf_counter()
    for line in lines:
        loads(line)
    return time.perf_counter() - start


def parser_run(lines: list[str]) -> float:
    events: list[AgentEvent] = []
    start = time.perf_counter()
    parser = OpencodeStreamParser(events.append, expect_structured=False)
    feed = parser.feed_stdout
    for line in lines:
        feed(line)
    parser.finish()
    return time.perf_counter() - start


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__)
    cli.add_argument("--lines", type=int, default=100_000)
    cli.add_argument("--rounds", type=int, default=5)
    args = cli.parse_args()
    lines = load_lines(args.lines)
    baselines: list[float] = []
    parses: list[float] = []
    for _ in range(args.rounds):
        baselines.append(bare_json(lines))
        parses.append(parser_run(lines))
    baseline, parsed = min(baselines), min(parses)
    per_line_us = parsed / len(lines) * 1e6
    print(f"lines: {len(lines)} ({FIXTURE.name} repeated), best of {args.rounds} rounds")
    print(f"json.loads loop:    {baseline:.3f} s ({baseline / len(lines) * 1e6:.2f} us/line)")
    print(f"OpencodeStreamParser: {parsed:.3f} s ({per_line_us:.2f} us/line)")
    print(f"ratio: {parsed / baseline:.2f}x (target <= 2.0x)")


if __name__ == "__main__":
    main()
