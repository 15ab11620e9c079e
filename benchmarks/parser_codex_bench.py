"""Codex stream parser throughput against a bare json.loads loop over the same lines.

The recorded tool-call turn (tests/fixtures/codex/tool_shell.stdout.jsonl: thread.started,
the unknown-model warning item, turn.started, command_execution started and completed,
agent_message, turn.completed) is repeated to 100,000 lines. Both loops run in the same
process, in alternating rounds so both see the same machine load, best of the rounds each;
the figure that matters is the ratio (target <= 2.0x).

Run: .venv/bin/python benchmarks/parser_codex_bench.py [--lines N] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from agentshim.core.events import AgentEvent, UsageReport
from agentshim.providers.codex import CodexStreamParser

FIXTURE = (
    Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "codex" / "tool_shell.stdout.jsonl"
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
    parser = CodexStreamParser(events.append, expect_structured=False)
    feed = parser.feed_stdout
    for line in lines:
        feed(line)
    parser.finish()
    return time.perf_counter() - start


def construction_only(events: list[AgentEvent]) -> float:
    """Time building the same events (and their usage values) with no parsing at all."""
    specs = [(type(e), [getattr(e, name) for name in e.__slots__]) for e in events]
    start = time.perf_counter()
    for cls, args in specs:
        if cls is UsageReport:
            usage = args[0]
            tokens = type(usage.tokens)(*(getattr(usage.tokens, n) for n in usage.tokens.__slots__))
            args = [type(usage)(tokens, *(getattr(usage, n) for n in usage.__slots__[1:])), args[1]]
        cls(*args)
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
    events: list[AgentEvent] = []
    parser = CodexStreamParser(events.append, expect_structured=False)
    for line in lines:
        parser.feed_stdout(line)
    floor = min(construction_only(events) for _ in range(args.rounds))
    per_line_us = parsed / len(lines) * 1e6
    print(f"lines: {len(lines)} ({FIXTURE.name} repeated), best of {args.rounds} rounds")
    print(f"json.loads loop:    {baseline:.3f} s ({baseline / len(lines) * 1e6:.2f} us/line)")
    print(f"CodexStreamParser:  {parsed:.3f} s ({per_line_us:.2f} us/line)")
    print(f"ratio: {parsed / baseline:.2f}x (target <= 2.0x)")
    print(
        f"floor: building the same {len(events)} events alone takes {floor:.3f} s, "
        f"so json.loads plus events is {(baseline + floor) / baseline:.2f}x"
    )


if __name__ == "__main__":
    main()
