"""Many conversations, few processes: dedicated vs shared CLI processes, and the warm pool.

Run from the repository root (the pinned CLIs installed by ``scripts/install_clis.py``):

    .venv/bin/python benchmarks/conversations_bench.py                      # everything
    .venv/bin/python benchmarks/conversations_bench.py --clis codex,copilot --n 1,5
    .venv/bin/python benchmarks/conversations_bench.py --skip-sharing       # warm pool only

Every CLI is the real pinned binary, offline against ``agentshim.doctor.model_server``
(``agentshim.doctor.offline``), through ``Agent(..., transport=TransportKind.LONG_LIVED)`` on the
host executor. Two parts, each printing one line per case:

sharing  (Codex, Gemini CLI, opencode, Copilot CLI) For each N, N conversations each run
         ``--turns`` turns at once (one thread per conversation), first with a process of
         their own each (dedicated), then with ``share_processes=ProcessSharing()`` (shared).
         After the turns, with every conversation still open: the CLI processes running (the
         spawned ones, and their whole trees), the total PSS of those trees (from
         ``/proc/PID/smaps_rollup``), and the latency of the turns after each conversation's
         first (p50/p99). Then the ratios shared/dedicated. Targets at N = 20: one process
         per configuration, total PSS <= 0.25x dedicated (Codex <= 0.6x), p99 within 1.5x.
warm     (all six) The first turn of a new conversation on an Agent whose CLI was already
         checked: cold (the turn starts the process), and warm (``Agent.prewarm(1)`` ran
         first, so the turn joins a running process; for Codex and the ACP agents with
         ``share_processes``, for Claude Code a process started for a new conversation in
         that cwd, for Pi likewise). The warm turn starts ``--settle`` seconds (1 by default)
         after ``prewarm`` returned: a pool is filled ahead of demand, and a CLI still works
         for a moment after its handshake (Codex: some 40 ms of CPU in the next 100 ms), which
         no conversation of a service waits for. Target for the CLIs started through node
         (Gemini CLI, Pi, and Codex and Copilot CLI, whose launcher is node): warm <= 0.2x
         cold.

Memory. N dedicated opencode processes need about 0.65 GiB each. A dedicated run is cut to
the largest N' that fits in MemAvailable (less ``--headroom-mib``, with a 1.5x margin on the
per-process PSS of the last dedicated run of that CLI); its line says ``only N' fit``, and the
ratio line compares the shared PSS at N with the dedicated PSS scaled to N (times N / N',
``dedicated_pss_from_n=N'``): each dedicated conversation is a whole process tree of its
own, so dedicated memory grows linearly with N.

The script exits nonzero when a target is missed. The machine's load shows in the latencies;
PSS splits pages shared with any other process on the machine, so compare ratios.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agentshim.agent import Agent
from agentshim.core.conversation import TransportKind
from agentshim.core.errors import AgentShimError
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.retry import RetryPolicy
from agentshim.core.sharing import ProcessSharing
from agentshim.doctor.clis import find_cli
from agentshim.doctor.model_server import ModelServer, Rule, Text
from agentshim.doctor.offline import OfflineCli, offline_cli
from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.host_process import HostProcess
from agentshim.execution.process import SpawnRequest
from agentshim.session import Session

SHARING_CLIS = ("codex", "gemini", "opencode", "copilot")
ALL_CLIS = ("claude", "codex", "gemini", "opencode", "copilot", "pi")
NODE_CLIS = frozenset({"codex", "gemini", "copilot", "pi"})
"""The CLIs started through node (Codex and Copilot CLI by a node launcher); opencode is Bun."""
PSS_TARGET = {"codex": 0.6}
PSS_DEFAULT_TARGET = 0.25
P99_TARGET = 1.5
WARM_TARGET = 0.2
ANSWER = "All done here."


class Spawns(HostCommandExecutor):
    """The host executor, keeping every long-lived process it spawns."""

    def __init__(self) -> None:
        super().__init__()
        self.processes: list[HostProcess] = []

    def spawn(self, request: SpawnRequest) -> HostProcess:
        process = super().spawn(request)
        self.processes.append(process)
        return process


@dataclass(frozen=True)
class Footprint:
    spawned: int
    processes: int
    pss_mib: float


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def footprint(executor: Spawns) -> Footprint:
    """The CLI processes running now (spawned, and whole trees) and their total PSS."""
    children = _children()
    alive = [p.pid for p in executor.processes if os.path.exists(f"/proc/{p.pid}")]
    tree: list[int] = []
    todo = list(alive)
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return Footprint(len(alive), len(tree), sum(_pss_kib(pid) for pid in tree) / 1024)


@contextmanager
def offline(provider: str) -> Iterator[tuple[ModelServer, OfflineCli]]:
    binary = find_cli(provider)
    if binary is None:
        raise SystemExit(f"{provider} is not installed: run scripts/install_clis.py")
    with tempfile.TemporaryDirectory(prefix=f"bench-{provider}-") as root, ModelServer() as server:
        server.set_script((Rule(respond=Text(ANSWER)),))
        yield server, offline_cli(provider, server, root=Path(root), bin_dir=binary.parent)


def agent(cli: OfflineCli, executor: Spawns, sharing: ProcessSharing | None) -> Agent:
    return Agent(
        cli.provider,
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        model=cli.model,
        env=dict(cli.env),
        executor=executor,
        transport=TransportKind.LONG_LIVED,
        check_timeout=120.0,
        retry=RetryPolicy(delays=()),
        share_processes=sharing,
    )


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


@dataclass(frozen=True)
class Run:
    footprint: Footprint
    p50_ms: float
    p99_ms: float
    failures: int


def run_conversations(cli: OfflineCli, work: Path, n: int, turns: int, shared: bool) -> Run:
    """N conversations at once, ``turns`` turns each; measured with every one still open."""
    executor = Spawns()
    sharing = ProcessSharing() if shared else None
    the_agent = agent(cli, executor, sharing)
    sessions: list[Session] = [the_agent.start_session(str(work)) for _ in range(n)]
    latencies: list[float] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def converse(session: Session) -> None:
        for index in range(turns):
            started = time.monotonic()
            try:
                result = session.turn(f"Turn {index}: say you are done.").result
            except AgentShimError as error:
                with lock:
                    failures.append(error)
                return
            took = time.monotonic() - started
            if result.text != ANSWER:
                with lock:
                    failures.append(AssertionError(result.text))
            elif index > 0:  # the first turn starts (or joins) a process
                with lock:
                    latencies.append(took)

    threads = [threading.Thread(target=converse, args=(s,)) for s in sessions]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        measured = footprint(executor)
    finally:
        for session in sessions:
            session.close()
    for error in failures[:3]:
        print(f"  ! {cli.provider} n={n} {'shared' if shared else 'dedicated'}: {error}")
    p50 = percentile(latencies, 0.5) * 1000 if latencies else float("nan")
    p99 = percentile(latencies, 0.99) * 1000 if latencies else float("nan")
    return Run(measured, p50, p99, len(failures))


def available_mib() -> float:
    """The machine's MemAvailable now (MiB)."""
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return float("inf")


def dedicated_n(n: int, per_process_mib: float | None, headroom: float) -> int:
    """The largest N' <= ``n`` whose dedicated processes fit in memory (``headroom`` kept free).

    ``per_process_mib`` is one dedicated process tree's PSS from a smaller N already measured
    (None: nothing measured yet, so ``n`` is tried); a margin of 1.5x covers what PSS leaves
    out (pages it splits with the other trees count whole in each while they start).
    """
    if per_process_mib is None or per_process_mib <= 0:
        return n
    fits = int((available_mib() - headroom) / (per_process_mib * 1.5))
    return max(1, min(n, fits))


def sharing_part(clis: list[str], ns: list[int], turns: int, headroom: float) -> bool:
    ok = True
    for provider in clis:
        if provider not in SHARING_CLIS:
            continue
        with offline(provider) as (_, cli):
            work = Path(cli.home) / "work"
            work.mkdir(exist_ok=True)
            per_process: float | None = None
            for n in ns:
                runs: dict[str, Run] = {}
                sizes = {"dedicated": dedicated_n(n, per_process, headroom), "shared": n}
                for mode in ("dedicated", "shared"):
                    size = sizes[mode]
                    run = run_conversations(cli, work, size, turns, mode == "shared")
                    runs[mode] = run
                    fp = run.footprint
                    if mode == "dedicated" and fp.spawned:
                        per_process = fp.pss_mib / fp.spawned
                    scaled = f" (of n={n}: only {size} fit)" if size != n else ""
                    print(
                        f"sharing {provider:8} n={size:<3} {mode:9} spawned={fp.spawned:<3} "
                        f"processes={fp.processes:<3} pss_mib={fp.pss_mib:8.1f} "
                        f"p50_ms={run.p50_ms:8.1f} p99_ms={run.p99_ms:8.1f} "
                        f"failures={run.failures}{scaled}",
                        flush=True,
                    )
                ded, sha = runs["dedicated"], runs["shared"]
                # Dedicated memory grows linearly with N (one whole process tree each), so a
                # dedicated run cut to N' conversations stands for N as its PSS times N / N'.
                # The p99 is compared as measured (N' processes contend for the CPU less than
                # N would, which favours dedicated).
                ded_pss = ded.footprint.pss_mib * n / sizes["dedicated"]
                pss_ratio = sha.footprint.pss_mib / ded_pss
                p99_ratio = sha.p99_ms / ded.p99_ms
                target = PSS_TARGET.get(provider, PSS_DEFAULT_TARGET)
                missed: list[str] = []
                if ded.failures or sha.failures:
                    missed.append("turns failed")
                if n == max(ns) and n >= 20:
                    if sha.footprint.spawned != 1:
                        missed.append("processes")
                    if not pss_ratio <= target:
                        missed.append(f"pss>{target}")
                    if not p99_ratio <= P99_TARGET:
                        missed.append(f"p99>{P99_TARGET}")
                verdict = "ok" if not missed else "MISSED " + ",".join(missed)
                basis = (
                    "" if sizes["dedicated"] == n else f" dedicated_pss_from_n={sizes['dedicated']}"
                )
                print(
                    f"sharing {provider:8} n={n:<3} ratio     "
                    f"processes={sha.footprint.spawned}/{ded.footprint.spawned * n // sizes['dedicated']} "
                    f"pss={pss_ratio:.3f} p99={p99_ratio:.3f} {verdict}{basis}",
                    flush=True,
                )
                ok = ok and not missed
    return ok


def first_turn(cli: OfflineCli, work: Path, prepare: Callable[[Agent], None] | None) -> float:
    """Seconds of a new conversation's first turn (the Agent's CLI already checked)."""
    executor = Spawns()
    shares = prepare is not None and cli.provider in SHARING_CLIS
    the_agent = agent(cli, executor, ProcessSharing() if shares else None)
    if prepare is not None:
        prepare(the_agent)
    with the_agent.start_session(str(work)) as session:
        started = time.monotonic()
        result = session.turn("Say you are done.").result
        took = time.monotonic() - started
    the_agent.release_warm()
    if result.text != ANSWER:
        raise AssertionError(result.text)
    return took


def prewarm_in(work: Path, settle: float, the_agent: Agent) -> None:
    """Start one warm process for new conversations in ``work``, and let it settle."""
    the_agent.prewarm(1, cwd=str(work))
    time.sleep(settle)


def warm_part(clis: list[str], rounds: int, settle: float) -> bool:
    ok = True
    for provider in clis:
        with offline(provider) as (_, cli):
            work = Path(cli.home) / "work"
            work.mkdir(exist_ok=True)
            first_turn(cli, work, None)  # the CLI's own first run in a fresh HOME, and its check
            cold = statistics.median(first_turn(cli, work, None) for _ in range(rounds))
            try:
                warm = statistics.median(
                    first_turn(cli, work, functools.partial(prewarm_in, work, settle))
                    for _ in range(rounds)
                )
            except AgentShimError as error:
                print(f"warm    {provider:8} cold_s={cold:.3f} warm=unsupported ({error.message})")
                ok = False
                continue
            ratio = warm / cold
            needs = provider in NODE_CLIS
            missed = needs and not ratio <= WARM_TARGET
            verdict = "MISSED" if missed else "ok"
            target = f"target<={WARM_TARGET}" if needs else "no target"
            print(
                f"warm    {provider:8} cold_s={cold:.3f} warm_s={warm:.3f} "
                f"ratio={ratio:.3f} {target} {verdict}",
                flush=True,
            )
            ok = ok and not missed
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clis", default=",".join(ALL_CLIS))
    parser.add_argument("--n", default="1,5,20")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3, help="first turns timed per case")
    parser.add_argument("--skip-sharing", action="store_true")
    parser.add_argument("--skip-warm", action="store_true")
    parser.add_argument(
        "--settle",
        type=float,
        default=1.0,
        help="seconds between prewarm and the measured first turn (a pool is filled ahead)",
    )
    parser.add_argument(
        "--headroom-mib",
        type=float,
        default=2048.0,
        help="memory left free when sizing a dedicated run (MiB)",
    )
    args = parser.parse_args()
    clis = [name for name in args.clis.split(",") if name]
    ns = [int(value) for value in args.n.split(",")]
    ok = True
    if not args.skip_sharing:
        ok = sharing_part(clis, ns, args.turns, args.headroom_mib) and ok
    if not args.skip_warm:
        ok = warm_part(clis, args.rounds, args.settle) and ok
    print("all targets met" if ok else "a target was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
