"""Import cost of agentshim, against stdlib baselines measured in the same run.

Run: .venv/bin/python benchmarks/import_bench.py [--repeat N]
Runs each statement in a fresh interpreter and reports the median time it took.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

CASES = {
    "baseline: import json": "import json",
    "baseline: import subprocess": "import subprocess",
    "import agentshim": "import agentshim",
    "from agentshim import CliAgent": "from agentshim import CliAgent",
    "CliAgent + claude provider": (
        "from agentshim.providers import get_provider; get_provider('claude')"
    ),
}

TIMER = "import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"


def seconds(statement: str) -> float:
    proc = subprocess.run(
        [sys.executable, "-c", TIMER.format(stmt=statement)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(proc.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    results: dict[str, float] = {}
    for name, statement in CASES.items():
        samples = [seconds(statement) for _ in range(args.repeat)]
        results[name] = statistics.median(samples) * 1000
    base = results["baseline: import json"]
    print(f"{'statement':40} {'median ms':>10} {'x json':>8}")
    for name, ms in results.items():
        print(f"{name:40} {ms:10.1f} {ms / base:8.1f}")


if __name__ == "__main__":
    main()
