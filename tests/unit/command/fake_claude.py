"""A test-only stand-in for the ``claude`` binary that behaves like a CLI in the middle of work.

Copied onto PATH as ``claude`` by the terminal tests. Its behaviour comes from ``fake.json``
next to it:

* ``version``: what ``--version`` prints; ``hang_version``: ``--version`` never answers;
* ``known``: the session ids ``--resume`` can continue (any other fails as Claude Code does:
  exit 1 and "No conversation found");
* ``fixture``, ``lines``: how many lines of a recorded tool turn to print before working on;
* ``ignore_term``: SIGTERM does nothing (only SIGKILL ends it).

A turn starts a tool process (a child that sleeps) before it prints, so a test can see
whether a stop reached everything the CLI started. Every phase is announced as ``<phase>
<pid>`` lines on the FIFO ``notices`` (when a test holds it open) and in the file ``log``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIG = json.loads((HERE / "fake.json").read_text())


def announce(phase: str, pid: int) -> None:
    line = f"{phase} {pid}\n"
    with open(HERE / "log", "a") as log:
        log.write(line)
    try:
        fd = os.open(HERE / "notices", os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # no FIFO, or nobody reading it
        return
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def resume_id(argv: list[str]) -> str | None:
    return argv[argv.index("--resume") + 1] if "--resume" in argv else None


def main(argv: list[str]) -> int:
    if "--version" in argv:
        if CONFIG.get("hang_version"):
            announce("version", os.getpid())
            time.sleep(300)
        print(CONFIG.get("version", "2.1.197 (Claude Code)"))
        return 0
    wanted = resume_id(argv)
    if wanted is not None and wanted not in CONFIG.get("known", []):
        sys.stdin.read()
        missing = f"No conversation found with session ID: {wanted}"
        result = {
            "type": "result",
            "subtype": "error_during_execution",
            "is_error": True,
            "duration_ms": 0,
            "num_turns": 0,
            "session_id": "0badc0de-0000-4000-8000-00000000beef",
            "total_cost_usd": 0,
            "usage": {"input_tokens": 0, "output_tokens": 0},
            "errors": [missing],
        }
        print(json.dumps(result), flush=True)
        print(missing, file=sys.stderr, flush=True)
        return 1
    announce("cli", os.getpid())
    if CONFIG.get("ignore_term"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    tool = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    announce("tool", tool.pid)
    sys.stdin.read()
    lines = Path(CONFIG["fixture"]).read_text().splitlines()
    count = CONFIG.get("lines", 3)
    for line in lines[:count]:
        if wanted is not None:
            line = line.replace("080a6a65-480a-4d27-853f-064fd2b09ac8", wanted)
        print(line, flush=True)
    if count >= len(lines):
        tool.kill()
        tool.wait()
        return 0
    time.sleep(300)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
