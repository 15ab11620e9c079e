"""What moving a conversation to another host costs: export, then import, by transcript size.

Run from the repository root:

    .venv/bin/python benchmarks/portability_bench.py              # 1 MB and 10 MB, 3 rounds
    .venv/bin/python benchmarks/portability_bench.py --sizes 1 10 50 --rounds 5

A Claude Code transcript of the given size (JSONL lines shaped like the real ones) is written
under one HOME; Claude's porter exports it through a HostCommandExecutor (``sh``, ``tar``,
``base64``) into a blob, and imports the blob under another HOME for another workspace path.
The baseline, timed in the same round, is the bare file copy the move amounts to
(``shutil.copyfile``), so the ratio is what packing, checking and the executor add. The
stand-in CLI only answers ``--version``. Each row is the median round.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.state_files import StateFiles
from agentshim.providers import get_plugin
from agentshim.providers.portability import porter_for

SESSION = "c8628327-3ccc-48a0-8c29-c46943650b97"


def transcript(size: int) -> bytes:
    """JSONL lines like Claude Code's, about ``size`` bytes in all."""
    lines: list[bytes] = []
    total, n = 0, 0
    while total < size:
        entry = {
            "type": "assistant" if n % 2 else "user",
            "sessionId": SESSION,
            "cwd": "/srv/a/ws-alpha",
            "uuid": f"{n:08d}-0000-0000-0000-000000000000",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": " ".join(
                            hashlib.sha256(f"{n}-{i}".encode()).hexdigest() for i in range(8)
                        ),
                    }
                ],
            },
        }
        line = json.dumps(entry).encode() + b"\n"
        lines.append(line)
        total += len(line)
        n += 1
    return b"".join(lines)


def host(root: Path) -> StateFiles:
    home = root / "home"
    home.mkdir(parents=True)
    return StateFiles(HostCommandExecutor(), {"HOME": str(home), "PATH": os.environ["PATH"]})


def one_round(size_mb: int, root: Path) -> tuple[float, float, float, int]:
    """(export s, import s, baseline copy s, blob bytes) for one transcript of ``size_mb`` MB."""
    profile = get_plugin("claude").profile
    binary = root / "claude"
    binary.write_text('#!/bin/sh\necho "2.1.332 (Claude Code)"\n')
    binary.chmod(0o755)
    a, b = host(root / "A"), host(root / "B")
    source = Path(a.home) / ".claude/projects/-srv-a-ws-alpha" / f"{SESSION}.jsonl"
    source.parent.mkdir(parents=True)
    source.write_bytes(transcript(size_mb * 1_000_000))
    porter_a = porter_for(profile, a, str(binary))
    porter_b = porter_for(profile, b, str(binary))
    assert porter_a is not None
    assert porter_b is not None
    porter_a.export_blob(SESSION, "/srv/a/ws-alpha")  # asks the version once, outside the timing
    porter_b.import_blob(porter_a.export_blob(SESSION, "/srv/a/ws-alpha") or b"", "/srv/b/warm")
    started = time.perf_counter()
    blob = porter_a.export_blob(SESSION, "/srv/a/ws-alpha")
    exported = time.perf_counter()
    assert blob is not None
    porter_b.import_blob(blob, "/srv/b/ws-beta")
    imported = time.perf_counter()
    copy_to = root / "copy.jsonl"
    copy_started = time.perf_counter()
    shutil.copyfile(source, copy_to)
    copied = time.perf_counter()
    moved = Path(b.home) / ".claude/projects/-srv-b-ws-beta" / f"{SESSION}.jsonl"
    assert moved.read_bytes() == source.read_bytes()
    return exported - started, imported - exported, copied - copy_started, len(blob)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10], help="MB")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.rounds} rounds per size; median round")
    print(f"{'size':>6} {'export_s':>9} {'import_s':>9} {'copy_s':>8} {'blob':>10} {'ratio':>8}")
    for size in args.sizes:
        rounds = []
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as tmp:
                rounds.append(one_round(size, Path(tmp)))
        export_s, import_s, copy_s, blob = sorted(rounds, key=lambda r: r[0] + r[1])[
            len(rounds) // 2
        ]
        ratio = (export_s + import_s) / max(copy_s, 1e-9)
        print(
            f"{size:>4}MB {export_s:>9.3f} {import_s:>9.3f} {copy_s:>8.4f} {blob:>10,} {ratio:>7.0f}x"
        )

    return 0


if __name__ == "__main__":
    sys.exit(main())
