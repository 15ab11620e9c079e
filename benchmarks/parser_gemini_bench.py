"""GeminiStreamParser throughput against a bare json.loads loop over the same lines.

The recorded tool-call turn (tests/fixtures/gemini/tool_shell_yolo.stdout.jsonl: init, the prompt echo, tool_use, tool_result, an assistant delta, result)
is repeated to 100,000 lines. The parser runs twice per round: once with a sink that keeps
every event in a list (as a test recorder does) and once with a sink that drops them (as a
renderer does). Keeping 100,000 events makes the cyclic garbage collector rescan an
ever-growing heap, which costs time that is not the parser's; both figures are printed. All
loops run in one process, in alternating rounds so they see the same machine load; the best
of the rounds counts. The figure that matters is the ratio (target <= 2.0x). The floor is
the cost of building the same events with no parsing at all.

Run: .venv/bin/python benchmarks/parser_gemini_bench.py [--lines N] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from agentshim.core.events import AgentEvent
from agentshim.providers.gemini import GeminiStreamParser

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "tests"
    / "fixtures"
    / "gemini"
    / "tool_shell_yolo.stdout.jsonl"
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


def parser_run(lines: list[str], sink: Callable[[AgentEvent], None]) -> float:
    start = time.perf_counter()
    parser = GeminiStreamParser(sink, expect_structured=False)
    feed = parser.feed_stdout
    for line in lines:
        feed(line)
    parser.finish()
    return time.perf_counter() - start


def construction_only(events: list[AgentEvent]) -> float:
    start = time.perf_counter()
    for event in events:
        replace(event)
    return time.perf_counter() - start


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__)
    cli.add_argument("--lines", type=int, default=100_000)
    cli.add_argument("--rounds", type=int, default=5)
    args = cli.parse_args()
    lines = load_lines(args.lines)
    baselines: list[float] = []
    kept: list[float] = []
    dropped: list[float] = []
    events: list[AgentEvent] = []
    for _ in range(args.rounds):
        baselines.append(bare_json(lines))
        events = []
        kept.append(parser_run(lines, events.append))
        dropped.append(parser_run(lines, lambda event: None))
    baseline, keep, drop = min(baselines), min(kept), min(dropped)
    floor = min(construction_only(events) for _ in range(args.rounds))
    per_line = 1e6 / len(lines)
    print(f"lines: {len(lines)} ({FIXTURE.name} repeated), best of {args.rounds} rounds")
    print(f"json.loads loop:          {baseline:.3f} s ({baseline * per_line:.2f} us/line)")
    print(f"parser, events dropped:   {drop:.3f} s ({drop * per_line:.2f} us/line)")
    print(f"parser, events kept:      {keep:.3f} s ({keep * per_line:.2f} us/line)")
    print(f"ratio: {drop / baseline:.2f}x dropped, {keep / baseline:.2f}x kept (target <= 2.0x)")
    print(
        f"floor: building the same {len(events)} events alone takes {floor:.3f} s, "
        f"so json.loads plus events is {(baseline + floor) / baseline:.2f}x"
    )


if __name__ == "__main__":
    main()
