#!/usr/bin/env python3
"""Record every conformance scenario from the real CLI binaries as test fixtures.

Usage: record_fixtures.py [--provider P ...] [--cli-version V] [--out DIR] [--scenario S ...]

For each provider this installs the pinned CLI (``agentshim.doctor.clis``; cached under
``~/.cache/agentshim/clis``), starts the scripted ``ModelServer``, points the CLI at it with
``agentshim.doctor.offline`` and runs each scenario of ``tests/live/scenarios.py`` with the
argv the provider's own ``build_argv`` makes and the prompt on stdin. It writes
``<out>/<provider>/recorded/rec_<case>.{stdout.jsonl,stderr,meta.json}`` for the oldest
checked version, ``recorded-<version>/`` for any other (so a second version's recordings sit
beside the first's instead of replacing them): what the CLI
printed, and the argv, exit code, CLI version, date and the requests the server saw. Paths of
the throw-away run directory are rewritten to neutral ones (``/home/user/work``,
``/opt/clis/<provider>``) so a re-recording diffs cleanly; ids, timestamps and the server's
port are left as recorded. Re-run it after a CLI upgrade and read the diff.

The hand-copied captures in ``<out>/<provider>/`` are never touched.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agentshim.core.errors import AgentShimError  # noqa: E402
from agentshim.core.events import AgentEvent  # noqa: E402
from agentshim.core.profile import OutputSchemaStyle  # noqa: E402
from agentshim.core.provider import ArgvContext, Provider  # noqa: E402
from agentshim.core.schema import compact_json  # noqa: E402
from agentshim.doctor.clis import PinnedCli, install_cli, install_dir, pinned_clis  # noqa: E402
from agentshim.doctor.model_server import ModelServer  # noqa: E402
from agentshim.doctor.offline import OfflineCli, offline_cli  # noqa: E402
from agentshim.providers import DEFAULT_CATALOG  # noqa: E402
from tests.live import scenarios as sc  # noqa: E402

DEFAULT_OUT = REPO / "tests" / "fixtures"
RECORDED_DIR = "recorded"
PREFIX = "rec_"
TURN_TIMEOUT = 240.0


@dataclass(frozen=True)
class Recording:
    case: str
    exit_code: int | None
    wall_s: float
    stdout: str
    stderr: str
    session_id: str | None
    timed_out: bool


class Neutralizer:
    """Rewrites the run's throw-away paths into stable, neutral ones."""

    def __init__(self, pairs: Sequence[tuple[str, str]]) -> None:
        expanded: list[tuple[str, str]] = []
        for real, neutral in pairs:
            expanded.append((real, neutral))
            # Claude Code names its project directory after the cwd with '/' replaced by '-'.
            expanded.append((real.replace("/", "-"), neutral.replace("/", "-")))
        self.pairs = sorted(expanded, key=lambda pair: len(pair[0]), reverse=True)

    def __call__(self, text: str) -> str:
        for real, neutral in self.pairs:
            text = text.replace(real, neutral)
        return text


def _turn_env(provider: Provider, cli: OfflineCli) -> dict[str, str]:
    """The env CliAgent would give the CLI: the offline env plus the provider's defaults."""
    env = dict(cli.env)
    defaults: Mapping[str, str] = getattr(provider, "env_defaults", None) or {}
    for key, value in defaults.items():
        env.setdefault(key, value)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        for key, value in provider.profile.container_env.items():
            env.setdefault(key, value)
    return env


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _run(
    argv: list[str], stdin: str, cwd: Path, env: Mapping[str, str]
) -> tuple[int | None, str, str, float, bool]:
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
    )
    timed_out = False
    try:
        out, err = process.communicate(stdin.encode(), timeout=TURN_TIMEOUT)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(process.pid)
        out, err = process.communicate()
    # Whatever the CLI left in its process group (Gemini CLI re-spawns itself) goes too.
    _kill_group(process.pid)
    wall = time.monotonic() - started
    code = None if timed_out else process.returncode
    return code, out.decode(errors="replace"), err.decode(errors="replace"), wall, timed_out


def _session_id(provider: Provider, stdout: str, stderr: str, structured: bool) -> str | None:
    events: list[AgentEvent] = []
    parser = provider.new_parser(events.append, expect_structured=structured)
    for line in stdout.splitlines(keepends=True):
        parser.feed_stdout(line)
    for line in stderr.splitlines(keepends=True):
        parser.feed_stderr(line)
    return parser.finish().session_id


def _cli_version(binary: Path, env: Mapping[str, str]) -> str:
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            env=dict(env),
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unknown ({error})"
    return (
        (done.stdout.strip() or done.stderr.strip()).splitlines()[0]
        if (done.stdout or done.stderr)
        else ""
    )


def recorded_dir(pin: PinnedCli, version: str) -> str:
    """``recorded`` for the oldest checked version, ``recorded-<version>`` for any other."""
    return RECORDED_DIR if version == pin.oldest_checked else f"{RECORDED_DIR}-{version}"


class ProviderRecorder:
    """Records the scenarios of one provider in one throw-away HOME."""

    def __init__(self, name: str, pin: PinnedCli, version: str, binary: Path, out: Path) -> None:
        self.name = name
        self.pin = pin
        self.cli_version = version
        self.binary = binary
        self.out = out / name / recorded_dir(pin, version)
        self.provider: Provider = DEFAULT_CATALOG.plugin(name).create_provider()

    def record(self, cases: Sequence[sc.Scenario]) -> list[Recording]:
        self.out.mkdir(parents=True, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix=f"agentshim-rec-{self.name}-"))
        try:
            return self._record_in(root, cases)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def _record_in(self, root: Path, cases: Sequence[sc.Scenario]) -> list[Recording]:
        work = root / "work"
        work.mkdir()
        install = install_dir(self.name, self.cli_version)
        with ModelServer() as server:
            cli = offline_cli(self.name, server, root=root, bin_dir=self.binary.parent)
            env = _turn_env(self.provider, cli)
            self.neutral = Neutralizer(
                (
                    (str(work), "/home/user/work"),
                    (str(cli.home), "/home/user"),
                    (str(root / "tmp"), "/tmp/agentshim"),
                    (str(root), "/opt/agentshim-run"),
                    (str(install), f"/opt/clis/{self.name}"),
                )
            )
            self.version = _cli_version(self.binary, env)
            done: list[Recording] = []
            for scenario in cases:
                if scenario.schema is not None and (
                    self.provider.profile.output_schema is OutputSchemaStyle.NONE
                ):
                    print(f"  {self.name}/{scenario.name}: skipped (no output schema)", flush=True)
                    continue
                resume_id: str | None = None
                if scenario.resume == "missing":
                    resume_id = sc.missing_session_id(self.name)
                server.set_script(scenario.rules)
                if scenario.resume == "previous" and scenario.setup is not None:
                    first = self._turn(
                        server,
                        cli,
                        env,
                        work,
                        root,
                        scenario.setup,
                        None,
                        case=f"{scenario.name}_first",
                    )
                    done.append(first)
                    resume_id = first.session_id
                done.append(
                    self._turn(
                        server, cli, env, work, root, scenario, resume_id, case=scenario.name
                    )
                )
            return done

    def _turn(
        self,
        server: ModelServer,
        cli: OfflineCli,
        env: Mapping[str, str],
        work: Path,
        root: Path,
        scenario: sc.Scenario,
        resume_id: str | None,
        *,
        case: str,
    ) -> Recording:
        schema_inline = schema_path = None
        style = self.provider.profile.output_schema
        if scenario.schema is not None and style is OutputSchemaStyle.INLINE_JSON:
            schema_inline = compact_json(scenario.schema)
        elif scenario.schema is not None and style is OutputSchemaStyle.FILE_PATH:
            path = root / "schema" / "schema.json"
            path.parent.mkdir(exist_ok=True)
            path.write_text(json.dumps(scenario.schema), encoding="utf-8")
            schema_path = str(path)
        argv = self.provider.build_argv(
            ArgvContext(
                binary_path=str(self.binary),
                model=cli.model,
                env=env,
                resume_session_id=resume_id,
                schema_inline=schema_inline,
                schema_path=schema_path,
                extra_args=cli.extra_args,
                cwd=str(work),
            )
        )
        server.clear_requests()
        code, stdout, stderr, wall, timed_out = _run(argv, scenario.prompt, work, env)
        session = _session_id(self.provider, stdout, stderr, scenario.schema is not None)
        recording = Recording(case, code, wall, stdout, stderr, session, timed_out)
        self._write(recording, scenario, argv, env, server)
        lines = len(stdout.splitlines())
        print(
            f"  {self.name}/{case}: exit {code} in {wall:.1f}s, {lines} stdout lines",
            flush=True,
        )
        return recording

    def _write(
        self,
        recording: Recording,
        scenario: sc.Scenario,
        argv: Sequence[str],
        env: Mapping[str, str],
        server: ModelServer,
    ) -> None:
        n = self.neutral
        base = self.out / f"{PREFIX}{recording.case}"
        Path(f"{base}.stdout.jsonl").write_text(n(recording.stdout), encoding="utf-8")
        Path(f"{base}.stderr").write_text(n(recording.stderr), encoding="utf-8")
        meta: dict[str, Any] = {
            "provider": self.name,
            "case": recording.case,
            "scenario": scenario.name,
            "description": scenario.description,
            "cli": {
                "package": self.pin.package_for(self.cli_version),
                "version": self.cli_version,
                "version_output": n(self.version),
            },
            "recorded_at": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            ),
            "argv": [n(arg) for arg in argv],
            "cwd": "/home/user/work",
            "stdin": scenario.prompt,
            "env": {k: n(v) for k, v in sorted(env.items()) if k != "PATH"},
            "exit_code": recording.exit_code,
            "timed_out": recording.timed_out,
            "wall_s": round(recording.wall_s, 2),
            "session_id": recording.session_id,
            "requests": [
                {
                    "method": r.method,
                    "path": r.path,
                    "kind": r.kind.value,
                    "rule": r.rule_index,
                }
                for r in server.requests
            ],
        }
        Path(f"{base}.meta.json").write_text(
            json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", action="append", help="provider to record (repeatable)")
    parser.add_argument("--cli-version", help="record this CLI version instead of the pinned one")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="fixtures directory")
    parser.add_argument("--scenario", action="append", help="record only this scenario")
    args = parser.parse_args(argv)
    pins = pinned_clis()
    names = args.provider or list(pins)
    unknown = [name for name in names if name not in pins]
    if unknown:
        parser.error(f"unknown provider(s) {', '.join(unknown)}; known: {', '.join(pins)}")
    if args.cli_version and len(names) != 1:
        parser.error("--cli-version needs exactly one --provider")
    cases = list(sc.SCENARIOS)
    if args.scenario:
        missing = [s for s in args.scenario if s not in sc.BY_NAME]
        if missing:
            parser.error(
                f"unknown scenario(s) {', '.join(missing)}; known: {', '.join(sc.BY_NAME)}"
            )
        wanted = set(args.scenario)
        cases = [s for s in cases if s.name in wanted]
    failed = 0
    for name in names:
        pin = pins[name]
        version = args.cli_version or pin.pinned
        try:
            binary = install_cli(name, version, log=print)
        except AgentShimError as error:
            print(f"{name}: cannot install {pin.spec(version)}: {error}", file=sys.stderr)
            failed += 1
            continue
        print(f"recording {name} ({pin.spec(version)})", flush=True)
        ProviderRecorder(name, pin, version, binary, args.out).record(cases)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
