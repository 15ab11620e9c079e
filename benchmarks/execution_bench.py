"""Benchmarks for the execution layer (HostCommandExecutor), with in-run baselines.

Run from the repository root:

    .venv/bin/python benchmarks/execution_bench.py            # everything
    .venv/bin/python benchmarks/execution_bench.py throughput latency

Measures, each against its target:
  throughput  1,000,000 short JSON lines through run() with a counting sink, as a ratio of
              a bare ``for line in subprocess.Popen(...).stdout`` loop timed in the same run
              (median of several alternating rounds); target <= 1.3x
  threads     helper threads alive while a run streams output; target 0 (POSIX)
  memory      1 GiB printed through run() with a discarding sink, peak RSS growth of a
              fresh interpreter; target < 64 MiB
  latency     child timestamps each line, the sink computes the delay; target p99 < 2 ms
  overhead    200 runs of a command that prints nothing, as a ratio of ``subprocess.run`` timed
              in the same run, with the end-of-run /proc scan for leftover processes on and
              off (``reap_on_success``); target <= 3x with the scan (a CLI turn takes seconds,
              so what matters is that a run costs milliseconds, not tens of them)
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time

from agentshim.execution import CallbackSink, CommandRequest, HostCommandExecutor, NullSink

PY = sys.executable
ENV = {"PATH": os.environ.get("PATH", os.defpath)}

# Prints 1,000,000 short JSON lines, built in blocks so the child is not the bottleneck.
JSON_LINES = r"""
import sys
out = sys.stdout.buffer
for block in range(100):
    base = block * 10000
    out.write("".join('{"type":"item","seq":%d,"text":"hello"}\n' % (base + i) for i in range(10000)).encode())
"""
# Prints 1 GiB: 1024-byte lines written a mebibyte at a time.
ONE_GIB = r"""
import sys
block = (b"x" * 1023 + b"\n") * 1024
out = sys.stdout.buffer
for _ in range(1024):
    out.write(block)
"""
# Prints a monotonic timestamp (ns) every 2 ms, flushed at once.
TIMESTAMPS = r"""
import sys, time
out = sys.stdout
for _ in range(int(sys.argv[1])):
    out.write("%d\n" % time.monotonic_ns())
    out.flush()
    time.sleep(0.002)
"""


class Counter:
    def __init__(self) -> None:
        self.lines = 0

    def started(self, handle: object) -> None:
        pass

    def stdout(self, line: str) -> None:
        self.lines += 1

    def stderr(self, line: str) -> None:
        pass


def bare_popen(argv: list[str]) -> int:
    count = 0
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, encoding="utf-8") as process:
        assert process.stdout is not None
        for _ in process.stdout:
            count += 1
    return count


def executor_run(argv: list[str]) -> int:
    sink = Counter()
    HostCommandExecutor().run(CommandRequest(argv, env=ENV), sink)
    return sink.lines


def throughput(rounds: int = 5) -> dict[str, object]:
    argv = [PY, "-c", JSON_LINES]
    times: dict[str, list[float]] = {"baseline": [], "executor": []}
    for _ in range(rounds):
        for name, consume in (("baseline", bare_popen), ("executor", executor_run)):
            started = time.perf_counter()
            lines = consume(argv)
            times[name].append(time.perf_counter() - started)
            assert lines == 1_000_000, lines
    baseline = statistics.median(times["baseline"])
    ours = statistics.median(times["executor"])
    return {
        "baseline_s": round(baseline, 3),
        "executor_s": round(ours, 3),
        "ratio": round(ours / baseline, 3),
        "target": "<= 1.3",
        "ok": ours / baseline <= 1.3,
    }


def threads() -> dict[str, object]:
    before_py = threading.active_count()
    before_os = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None
    seen_py: set[int] = set()
    seen_os: set[int] = set()

    def on_line(_: str) -> None:
        seen_py.add(threading.active_count())
        if before_os is not None:
            seen_os.add(len(os.listdir("/proc/self/task")))

    code = "import time\nfor i in range(200):\n    print(i, flush=True); time.sleep(0.001)"
    HostCommandExecutor().run(CommandRequest([PY, "-c", code], env=ENV), CallbackSink(on_line))
    extra_py = max(seen_py) - before_py
    extra_os = None if before_os is None else max(seen_os) - before_os
    return {
        "python_threads_added": extra_py,
        "os_threads_added": extra_os,
        "target": "0",
        "ok": extra_py == 0 and (extra_os in (0, None)),
    }


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def memory_child() -> None:
    """Runs in a fresh interpreter so the peak RSS belongs to this benchmark alone."""
    executor = HostCommandExecutor()
    executor.run(CommandRequest([PY, "-c", "print(1)"], env=ENV), NullSink())  # warm up
    before = _rss_kib()
    started = time.perf_counter()
    result = executor.run(CommandRequest([PY, "-c", ONE_GIB], env=ENV), NullSink())
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    assert result.returncode == 0
    print(json.dumps({"growth_kib": peak - before, "seconds": elapsed, "tail": len(result.stdout)}))


def memory() -> dict[str, object]:
    out = subprocess.run(
        [PY, __file__, "--memory-child"], capture_output=True, text=True, check=True
    ).stdout
    found = json.loads(out)
    growth_mib = found["growth_kib"] / 1024
    return {
        "peak_rss_growth_mib": round(growth_mib, 1),
        "seconds": round(found["seconds"], 2),
        "gib_per_s": round(1 / found["seconds"], 2),
        "result_tail_chars": found["tail"],
        "target": "< 64 MiB",
        "ok": growth_mib < 64,
    }


def latency(lines: int = 2000) -> dict[str, object]:
    delays: list[float] = []

    def on_line(line: str) -> None:
        delays.append((time.monotonic_ns() - int(line)) / 1e6)

    HostCommandExecutor().run(
        CommandRequest([PY, "-u", "-c", TIMESTAMPS, str(lines)], env=ENV), CallbackSink(on_line)
    )
    delays.sort()
    p99 = delays[int(len(delays) * 0.99) - 1]
    return {
        "lines": len(delays),
        "p50_ms": round(statistics.median(delays), 3),
        "p99_ms": round(p99, 3),
        "max_ms": round(delays[-1], 3),
        "target": "p99 < 2 ms",
        "ok": p99 < 2.0,
    }


def overhead(runs: int = 200, rounds: int = 3) -> dict[str, object]:
    argv = ["/bin/true"] if os.path.exists("/bin/true") else [PY, "-c", ""]
    reaping = HostCommandExecutor()
    sparing = HostCommandExecutor(reap_on_success=False)

    def bare() -> None:
        subprocess.run(argv, env=ENV, check=True)

    def with_scan() -> None:
        reaping.run(CommandRequest(argv, env=ENV), NullSink())

    def without_scan() -> None:
        sparing.run(CommandRequest(argv, env=ENV), NullSink())

    times: dict[str, list[float]] = {"baseline": [], "scan": [], "no_scan": []}
    for _ in range(rounds):
        for name, once in (("baseline", bare), ("scan", with_scan), ("no_scan", without_scan)):
            started = time.perf_counter()
            for _ in range(runs):
                once()
            times[name].append((time.perf_counter() - started) / runs)
    baseline, scan, no_scan = (statistics.median(times[name]) for name in times)
    return {
        "processes": len([entry for entry in os.listdir("/proc") if entry.isdigit()])
        if os.path.isdir("/proc")
        else None,
        "baseline_ms": round(baseline * 1e3, 3),
        "ratio_scan": round(scan / baseline, 2),
        "ratio_no_scan": round(no_scan / baseline, 2),
        "scan_ms_per_run": round((scan - no_scan) * 1e3, 3),
        "target": "ratio_scan <= 3",
        "ok": scan / baseline <= 3,
    }


BENCHMARKS = {
    "throughput": throughput,
    "threads": threads,
    "memory": memory,
    "latency": latency,
    "overhead": overhead,
}


def main(argv: list[str]) -> int:
    if argv == ["--memory-child"]:
        memory_child()
        return 0
    chosen = argv or list(BENCHMARKS)
    failed = False
    for name in chosen:
        figures = BENCHMARKS[name]()
        failed = failed or not figures["ok"]
        print(f"{name:<11} " + "  ".join(f"{key}={value}" for key, value in figures.items()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
