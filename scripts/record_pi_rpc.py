#!/usr/bin/env python3
"""Record ``pi --mode rpc`` sessions against the scripted model server, every byte in and out.

Usage: record_pi_rpc.py [--cli-version V] [--out DIR] [CASE ...]

Writes ``<out>/<case>.transcript.jsonl`` (default ``tests/fixtures/pi/stream-<version>/``),
one record per line: ``{"t": seconds since spawn, "abs": epoch, "dir": "in"|"out"|"err"|
"exit"|"meta", "data": ...}``, the format ``agentshim.testing.pi_rpc.PiRecordedPeer``
replays. Each case drives the real binary (installed with ``agentshim.doctor.clis``) the
way the rpc transport does: ``get_state`` first, then its commands, each sent once the frame
it waits for was printed. Paths of the throw-away run directory are rewritten to neutral ones.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentshim.doctor.clis import install_cli, install_dir, pinned_cli
from agentshim.doctor.model_server import (
    Match,
    Message,
    ModelServer,
    Rule,
    Text,
    ToolCall,
)
from agentshim.doctor.offline import offline_cli

ROOT = Path(__file__).resolve().parents[1]
WAIT_S = 60.0


@dataclass(frozen=True)
class Step:
    """Send ``command`` once a stdout frame of type ``after`` (or the response with that id)
    was printed (None: at once)."""

    command: dict[str, Any]
    after: str | None = None


def _tool_then(command: str, text: str) -> list[Rule]:
    return [
        Rule(
            match=Match(last_input_is_tool_result=False),
            respond=Message((Text("Running it."), ToolCall(command=command))),
        ),
        Rule(match=Match(last_input_is_tool_result=True), respond=Text(text)),
    ]


CASES: dict[str, tuple[list[Rule], list[Step], str]] = {
    # Two prompts on one process, each sent once the run before it settled.
    "two_turns": (
        [
            Rule(match=Match(user_text_contains="TURN-TWO"), respond=Text("Reply two.")),
            Rule(respond=Text("Reply one.")),
        ],
        [
            Step({"id": "s1", "type": "get_state"}),
            Step({"id": "p1", "type": "prompt", "message": "TURN-ONE please"}, "s1"),
            Step({"id": "p2", "type": "prompt", "message": "TURN-TWO please"}, "agent_settled"),
            Step({"id": "s2", "type": "get_state"}, "agent_settled"),
        ],
        "s2",
    ),
    # abort while `sleep 20` runs, then another prompt on the same process.
    "abort_midtool": (
        [
            Rule(match=Match(user_text_contains="Say something"), respond=Text("After it.")),
            *_tool_then("sleep 20", "never said"),
        ],
        [
            Step({"id": "s1", "type": "get_state"}),
            Step({"id": "p1", "type": "prompt", "message": "Sleep a while."}, "s1"),
            Step({"id": "a1", "type": "abort"}, "tool_execution_update"),
            Step({"id": "p2", "type": "prompt", "message": "Say something."}, "a1"),
            Step({"id": "s2", "type": "get_state"}, "agent_settled"),
        ],
        "s2",
    ),
    # steer while `sleep 2` runs: delivered before the next model call, one run.
    "steer_midtool": (
        [
            Rule(match=Match(user_text_contains="STEER-MARKER"), respond=Text("Banana, done.")),
            *_tool_then("sleep 2", "never said"),
        ],
        [
            Step({"id": "s1", "type": "get_state"}),
            Step({"id": "p1", "type": "prompt", "message": "Sleep a little."}, "s1"),
            Step(
                {"id": "st1", "type": "steer", "message": "STEER-MARKER also mention a banana"},
                "tool_execution_start",
            ),
            Step({"id": "s2", "type": "get_state"}, "agent_settled"),
        ],
        "s2",
    ),
}


class _Recorder:
    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.records: list[dict[str, Any]] = []
        self.frames: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.started = time.time()
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self._note("meta", f"spawned pid {self.process.pid}")
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, "out"), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, "err"), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _note(self, direction: str, data: Any) -> None:
        now = time.time()
        record = {"t": round(now - self.started, 4), "abs": now, "dir": direction, "data": data}
        self.records.append(record)

    def _read(self, stream: Any, direction: str) -> None:
        for raw in iter(stream.readline, b""):
            text = raw.decode("utf-8", "backslashreplace")
            self._note(direction, text)
            if direction == "out":
                try:
                    frame = json.loads(text)
                except ValueError:
                    continue
                if isinstance(frame, dict):
                    self.frames.put(frame)
        if direction == "out":
            self.frames.put(None)

    def send(self, command: dict[str, Any]) -> None:
        line = json.dumps(command) + "\n"
        self._note("in", line)
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode())
        self.process.stdin.flush()

    def wait_for(self, test: Callable[[dict[str, Any]], bool]) -> None:
        deadline = time.monotonic() + WAIT_S
        while True:
            frame = self.frames.get(timeout=max(0.1, deadline - time.monotonic()))
            if frame is None:
                raise RuntimeError("pi exited before the awaited frame")
            if test(frame):
                return

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self._note("in_eof", "")
        code = self.process.wait(timeout=WAIT_S)
        for reader in self._readers:
            reader.join(timeout=WAIT_S)
        self._note("exit", code)


def record(case: str, version: str, binary: Path, out: Path) -> Path:
    rules, steps, last = CASES[case]
    root = Path(tempfile.mkdtemp(prefix="agentshim-rec-pi-rpc-"))
    try:
        work = root / "work"
        work.mkdir()
        with ModelServer(rules) as server:
            cli = offline_cli("pi", server, root=root, bin_dir=binary.parent)
            argv = [str(binary), "--mode", "rpc", "--model", cli.model, *cli.extra_args]
            recorder = _Recorder(argv, dict(cli.env), work)
            try:
                for step in steps:
                    if step.after is not None:
                        after = step.after
                        recorder.wait_for(
                            lambda frame, kind=after: kind in (frame.get("type"), frame.get("id"))
                        )
                    recorder.send(step.command)
                recorder.wait_for(lambda frame: frame.get("id") == last)
            finally:
                recorder.close()
        replacements = (
            (str(work), "/home/user/work"),
            (str(cli.home), "/home/user"),
            (str(root), "/opt/agentshim-run"),
            (str(install_dir("pi", version)), "/opt/clis/pi"),
        )
        out.mkdir(parents=True, exist_ok=True)
        target = out / f"{case}.transcript.jsonl"
        with target.open("w", encoding="utf-8") as handle:
            for entry in recorder.records:
                text = json.dumps(entry, ensure_ascii=False)
                for old, new in replacements:
                    text = text.replace(old, new)
                handle.write(text + "\n")
        return target
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("cases", nargs="*", help=f"cases (default all): {', '.join(CASES)}")
    parser.add_argument("--cli-version", help="the Pi version (default: pinned)")
    parser.add_argument("--out", type=Path, help="output directory")
    args = parser.parse_args(argv)
    version = args.cli_version or pinned_cli("pi").pinned
    unknown = [case for case in args.cases if case not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    binary = install_cli("pi", version, log=print)
    out = args.out or ROOT / "tests" / "fixtures" / "pi" / f"stream-{version}"
    for case in args.cases or list(CASES):
        print(f"recording pi {version} rpc {case}", flush=True)
        print(f"  wrote {record(case, version, binary, out)}", flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PI_TELEMETRY", "0")
    sys.exit(main())
