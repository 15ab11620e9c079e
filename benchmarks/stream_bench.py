"""Benchmarks for the long-lived Claude Code transport (stream-json), with in-run baselines.

Run from the repository root:

    .venv/bin/python benchmarks/stream_bench.py            # everything
    .venv/bin/python benchmarks/stream_bench.py latency    # or: turns

The CLI is a small fake (``FAKE_CLI`` below, written to a temporary directory as ``claude``)
that speaks enough stream-json for a turn: ``system/init``, an ``assistant`` line, a
``result``, and on request a series of ``can_use_tool`` permission requests, each waiting for
its answer. It runs through ``Agent("claude", transport=TransportKind.LONG_LIVED)`` on the real
``HostCommandExecutor.spawn``, so what is timed is the whole path a user's turn takes.

Measures, each against its target:
  latency  the fake stamps each permission request with ``time.monotonic_ns()`` as it writes
           it; the approval handler computes the delay. The baseline is a bare ``os.read``
           loop over the same fake's stdout pipe, answering the same requests, timed in the
           same run (alternating rounds). Target: p99 under 1 ms above the bare loop's p99.
  turns    a plain turn's wall time, warm (the conversation's process is running) and cold
           (a new session: spawn, first turn, close), against a bare round trip over the
           same fake's pipes (write the user line, read to the ``result``) and a bare
           spawn-turn-exit of it. Target: a warm turn under 25% of a cold one (the issue's
           live target, here without a model), with its overhead over the bare round trip
           reported.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

from agentshim.agent import Agent
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import TransportKind
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.execution.host import HostCommandExecutor

FAKE_CLI = r"""
import json, sys, time
if "--version" in sys.argv:
    print("2.1.197 (Claude Code)")
    sys.exit(0)
out = sys.stdout
sid = "00000000-0000-4000-8000-0000000000be"
turns = 0

def say(frame):
    out.write(json.dumps(frame, separators=(",", ":")) + "\n")
    out.flush()

for line in sys.stdin:
    frame = json.loads(line)
    if frame.get("type") == "control_request":
        say({"type": "control_response",
             "response": {"subtype": "success", "request_id": frame["request_id"]}})
        continue
    if frame.get("type") != "user":
        continue
    turns += 1
    prompt = frame["message"]["content"]
    say({"type": "system", "subtype": "init", "session_id": sid, "model": "fake",
         "cwd": "/", "tools": ["Bash"], "uuid": "init-%d" % turns})
    asks = int(prompt.split()[1]) if prompt.startswith("ask ") else 0
    for n in range(asks):
        say({"type": "control_request", "request_id": "ask-%d-%d" % (turns, n),
             "request": {"subtype": "can_use_tool", "tool_name": "Bash",
                         "input": {"command": "touch f", "stamp": time.monotonic_ns()},
                         "tool_use_id": "toolu_%d_%d" % (turns, n)}})
        for answer in sys.stdin:
            if json.loads(answer).get("type") == "control_response":
                break
    say({"type": "assistant", "session_id": sid, "parent_tool_use_id": None,
         "message": {"id": "msg_%d" % turns, "type": "message", "role": "assistant",
                     "model": "fake", "content": [{"type": "text", "text": "ok"}],
                     "usage": {"input_tokens": 10, "output_tokens": 1}}})
    say({"type": "result", "subtype": "success", "is_error": False, "result": "ok",
         "session_id": sid, "num_turns": 1, "duration_ms": 1, "stop_reason": "end_turn",
         "total_cost_usd": 0.0001 * turns,
         "usage": {"input_tokens": 10, "output_tokens": 2}})
"""


def _user(text: str) -> bytes:
    return (
        json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"
    ).encode()


def _answer(request_id: str) -> bytes:
    body = {"subtype": "success", "request_id": request_id, "response": {"behavior": "allow"}}
    return (json.dumps({"type": "control_response", "response": body}) + "\n").encode()


class Fake:
    """The fake CLI written to a directory of its own, and an env whose PATH finds it."""

    def __init__(self, root: Path) -> None:
        self.bin = root / "claude"
        self.bin.write_text(f"#!{sys.executable}\n{FAKE_CLI}")
        self.bin.chmod(0o755)
        self.env = {"PATH": f"{root}{os.pathsep}{os.environ.get('PATH', os.defpath)}"}
        self.work = str(root)

    def agent(self, approvals: object = ApprovalPolicy.DENY) -> Agent:
        return Agent(
            "claude",
            permissions=NativePermissions.workspace_write(),
            approvals=approvals,  # type: ignore[arg-type]
            env=self.env,
            executor=HostCommandExecutor(),
            transport=TransportKind.LONG_LIVED,
        )

    def popen(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [str(self.bin)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.env
        )


def _bare_turn(
    process: subprocess.Popen[bytes], prompt: str, on_ask: Callable[[dict[str, object]], None]
) -> None:
    """Write a user line and read the fake's stdout with os.read up to the result."""
    assert process.stdin is not None
    assert process.stdout is not None
    fd = process.stdout.fileno()
    process.stdin.write(_user(prompt))
    process.stdin.flush()
    pending = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            raise RuntimeError("the fake CLI closed its stdout")
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            frame = json.loads(line)
            kind = frame.get("type")
            if kind == "control_request":
                on_ask(frame)
                process.stdin.write(_answer(frame["request_id"]))
                process.stdin.flush()
            elif kind == "result":
                return


def _ignore(frame: dict[str, object]) -> None:
    pass


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(int(len(ordered) * fraction) - 1, 0)]


def latency(fake: Fake, asks: int = 2000, rounds: int = 3) -> dict[str, object]:
    bare_ms: list[float] = []
    ours_ms: list[float] = []

    def bare_round() -> None:
        process = fake.popen()
        try:

            def on_ask(frame: dict[str, object]) -> None:
                stamp = cast("dict[str, dict[str, int]]", frame["request"])["input"]["stamp"]
                bare_ms.append((time.monotonic_ns() - stamp) / 1e6)

            _bare_turn(process, f"ask {asks}", on_ask)
        finally:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(10)

    def decide(request: ApprovalRequest) -> ApprovalDecision:
        ours_ms.append((time.monotonic_ns() - int(request.args["stamp"])) / 1e6)
        return ApprovalDecision.allow()

    agent = fake.agent(decide)

    def transport_round() -> None:
        with agent.start_session(fake.work) as session:
            session.turn("warm up")
            result = session.turn(f"ask {asks}").result
            assert result.text == "ok", result

    for _ in range(rounds):
        bare_round()
        transport_round()
    p99_bare, p99_ours = _percentile(bare_ms, 0.99), _percentile(ours_ms, 0.99)
    return {
        "requests": len(ours_ms),
        "bare_p50_ms": round(statistics.median(bare_ms), 3),
        "bare_p99_ms": round(p99_bare, 3),
        "p50_ms": round(statistics.median(ours_ms), 3),
        "p99_ms": round(p99_ours, 3),
        "p99_over_bare_ms": round(p99_ours - p99_bare, 3),
        "target": "p99 < bare p99 + 1 ms",
        "ok": p99_ours - p99_bare < 1.0,
    }


def turns(
    fake: Fake, warm_turns: int = 200, cold_turns: int = 20, rounds: int = 3
) -> dict[str, object]:
    agent = fake.agent()
    times: dict[str, list[float]] = {"bare_warm": [], "bare_cold": [], "warm": [], "cold": []}

    def timed(name: str, once: Callable[[], None], count: int) -> None:
        started = time.perf_counter()
        for _ in range(count):
            once()
        times[name].append((time.perf_counter() - started) / count)

    def bare_cold() -> None:
        process = fake.popen()
        _bare_turn(process, "hello", _ignore)
        assert process.stdin is not None
        process.stdin.close()
        process.wait(10)

    def cold() -> None:
        with agent.start_session(fake.work) as session:
            session.turn("hello")

    for _ in range(rounds):
        process = fake.popen()
        timed("bare_warm", functools.partial(_bare_turn, process, "hello", _ignore), warm_turns)
        assert process.stdin is not None
        process.stdin.close()
        process.wait(10)
        with agent.start_session(fake.work) as session:
            session.turn("first")
            timed("warm", lambda: session.turn("hello") and None, warm_turns)
        timed("bare_cold", bare_cold, cold_turns)
        timed("cold", cold, cold_turns)
    bare_warm, bare_cold_s, warm, cold_s = (statistics.median(times[name]) for name in times)
    return {
        "bare_round_trip_ms": round(bare_warm * 1e3, 3),
        "warm_turn_ms": round(warm * 1e3, 3),
        "warm_overhead_ms": round((warm - bare_warm) * 1e3, 3),
        "bare_spawn_turn_exit_ms": round(bare_cold_s * 1e3, 2),
        "cold_turn_ms": round(cold_s * 1e3, 2),
        "warm_over_cold": round(warm / cold_s, 3),
        "target": "warm < 25% of cold",
        "ok": warm < 0.25 * cold_s,
    }


BENCHMARKS: dict[str, Callable[[Fake], dict[str, object]]] = {"latency": latency, "turns": turns}


def main(argv: list[str]) -> int:
    chosen = argv or list(BENCHMARKS)
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        print(f"usage: stream_bench.py [{' | '.join(BENCHMARKS)} ...]", file=sys.stderr)
        print(f"unknown benchmark: {', '.join(unknown)}", file=sys.stderr)
        return 2
    failed = False
    with tempfile.TemporaryDirectory(prefix="agentshim-stream-bench-") as root:
        fake = Fake(Path(root))
        for name in chosen:
            figures = BENCHMARKS[name](fake)
            failed = failed or not figures["ok"]
            print(f"{name:<8} " + "  ".join(f"{key}={value}" for key, value in figures.items()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
