"""Claude stream parser throughput against a bare json.loads loop over the same lines.

The recorded tool-call turn (tests/fixtures/claude/b_tool_bash.stdout.jsonl: init, text,
tool_use, tool_result, text, result) is repeated to 100,000 lines. Both loops run in the same
process, timed in CPU seconds (time.process_time, so other load on the machine counts less),
in alternating rounds; the figure that matters is the median ratio (target <= 2.0x).

Run: .venv/bin/python benchmarks/parser_claude_bench.py [--lines N] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import deque
from pathlib import Path

from agentshim.core.events import AgentEvent
from agentshim.providers.claude import ClaudeStreamParser

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "tests"
    / "fixtures"
    / "claude"
    / "b_tool_bash.stdout.jsonl"
)


def load_lines(count: int) -> list[str]:
    recorded = FIXTURE.read_text(encoding="utf-8").splitlines(keepends=True)
    repeats = -(-count // len(recorded))
    return (recorded * repeats)[:count]


def bare_json(lines: list[str]) -> float:
    loads = json.loads
    start = time.process_time()
    for line in lines:
        loads(line)
    return time.process_time() - start


def parser_run(lines: list[str]) -> float:
    # The events go to a sink that counts and drops them, as the json.loads loop drops its
    # dicts: what a handler does with an event is the handler's cost, not the parser's.
    sink: deque[AgentEvent] = deque(maxlen=1)
    start = time.process_time()
    parser = ClaudeStreamParser(sink.append)
    feed = parser.feed_stdout
    for line in lines:
        feed(line)
    parser.finish()
    return time.process_time() - start


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__)
    cli.add_argument("--lines", type=int, default=100_000)
    cli.add_argument("--rounds", type=int, default=7)
    args = cli.parse_args()
    lines = load_lines(args.lines)
    # Rounds alternate the two loops so a change in machine load hits both alike; the
    # reported ratio is the median of the per-round ratios.
    baselines: list[float] = []
    parsers: list[float] = []
    for _ in range(args.rounds):
        baselines.append(bare_json(lines))
        parsers.append(parser_run(lines))
    ratios = sorted(p / b for p, b in zip(parsers, baselines, strict=True))
    per_line = min(parsers) / len(lines) * 1e6
    print(f"lines: {len(lines)} ({FIXTURE.name} repeated), {args.rounds} alternating rounds")
    print(
        f"json.loads loop:     best {min(baselines):.3f} s ({min(baselines) / len(lines) * 1e6:.2f} us/line)"
    )
    print(f"ClaudeStreamParser:  best {min(parsers):.3f} s ({per_line:.2f} us/line)")
    print(f"ratio: median {ratios[len(ratios) // 2]:.2f}x, best {ratios[0]:.2f}x (target <= 2.0x)")


if __name__ == "__main__":
    main()
