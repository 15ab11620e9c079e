"""``agentshim doctor``: is each provider's CLI installed, which version, logged in, runnable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO, cast

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import AgentShimError, CliCheckError, CliNotFoundError
from agentshim.core.profile import ProviderProfile
from agentshim.core.turn import TurnRequest
from agentshim.doctor.clis import (
    PinnedCli,
    VersionStatus,
    find_cli,
    pinned_clis,
    version_key,
    version_status,
)
from agentshim.doctor.model_server import ModelServer, Rule, Text
from agentshim.doctor.node_runtime import format_version, minimum_node
from agentshim.doctor.offline import OFFLINE_PROVIDERS, offline_cli
from agentshim.execution.env import interactive_env
from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.readiness import check_version
from agentshim.providers import DEFAULT_CATALOG

__all__ = ["OFFLINE_ANSWER", "Diagnosis", "diagnose", "write_report"]

#: What the scripted model answers in the offline check; the turn's text must be exactly this.
OFFLINE_ANSWER = "agentshim offline check: ok"

_CHECK_TIMEOUT_S = 30.0
_TURN_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Diagnosis:
    """What doctor found for one provider. Credentials are named, their values never read out.

    ``version_status`` is ``pinned``, ``checked`` (inside the checked range), ``untested``
    (outside it: not known to be broken) or ``unknown``. ``offline_check`` is None when not
    asked for, else ``"pass"`` or ``"fail: <reason>"``. ``problems`` are what makes the
    provider not ready; ``notes`` are worth knowing but do not.
    """

    provider: str
    display_name: str
    binary: str | None = None
    binary_source: str | None = None
    version: str | None = None
    version_status: str = VersionStatus.UNKNOWN.value
    pinned: str | None = None
    checked_range: str | None = None
    credentials: tuple[str, ...] = ()
    node: str | None = None
    node_required: str | None = None
    offline_check: str | None = None
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def ready(self) -> bool:
        """True when nothing in ``problems``: the CLI is on PATH, runs, and passed any check."""
        return not self.problems


def _credentials(profile: ProviderProfile, env: Mapping[str, str]) -> tuple[str, ...]:
    seen = [f"${name}" for name in profile.auth_env_vars if env.get(name)]
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    seen.extend(f"~/{relative}" for relative in profile.auth_files if (home / relative).is_file())
    return tuple(seen)


def _package_json(binary: Path, packages: Sequence[str]) -> Mapping[str, Any] | None:
    """The ``package.json`` of one of ``packages`` that ``binary`` belongs to, if any."""
    for directory in binary.resolve().parents:
        candidate = directory / "package.json"
        if candidate.is_file():
            try:
                data: Any = json.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            if isinstance(data, dict) and data.get("name") in packages:  # pyright: ignore[reportUnknownMemberType]
                return data  # pyright: ignore[reportUnknownVariableType]
    return None


def _runs_on_node(binary: Path) -> bool:
    try:
        with binary.resolve().open("rb") as handle:
            first = handle.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"node" in first


def _node_version(env: Mapping[str, str]) -> str | None:
    node = shutil.which("node", path=env.get("PATH"))
    if node is None:
        return None
    try:
        done = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def _node_facts(
    binary: Path, pin: PinnedCli, env: Mapping[str, str]
) -> tuple[str | None, str | None, list[str], list[str]]:
    """Node's version and the package's declared range; problems and notes about them."""
    problems: list[str] = []
    notes: list[str] = []
    manifest = _package_json(binary, pin.packages)
    engines: object = manifest.get("engines") if manifest is not None else None
    required: object = (
        cast("Mapping[str, object]", engines).get("node") if isinstance(engines, dict) else None
    )
    wanted = required if isinstance(required, str) else None
    needs_node = _runs_on_node(binary)
    if not needs_node and wanted is None:
        return None, None, problems, notes
    node = _node_version(env)
    if needs_node and node is None:
        problems.append("the CLI runs on Node.js, which is not on PATH")
    least = minimum_node(wanted) if wanted is not None else None
    found = version_key(node) if node is not None else None
    if least is not None and found is not None and found < least:
        text = (
            f"the package declares Node {wanted}; found {node}: install Node.js "
            f"{format_version(least)} or newer first on PATH (or let "
            f"`python scripts/install_clis.py {pin.provider}` provide one)"
        )
        if needs_node:
            problems.append(text)
        else:
            notes.append(text + " (its native binary does not run on Node)")
    return node, wanted, problems, notes


def _find(profile: ProviderProfile, env: Mapping[str, str]) -> tuple[Path | None, str | None]:
    try:
        return Path(HostCommandExecutor().find_binary(profile.binary, env)), "PATH"
    except CliNotFoundError:
        cached = find_cli(profile.name) if profile.name in pinned_clis() else None
        return (cached, "install cache") if cached is not None else (None, None)


def _offline_check(provider: str, binary: Path) -> str:
    """Run one turn of the real CLI against the bundled model server; ``pass`` or why not."""
    if provider not in OFFLINE_PROVIDERS:
        return "fail: no offline recipe for this provider"
    with tempfile.TemporaryDirectory(prefix="agentshim-doctor-") as tmp:
        root = Path(tmp)
        work = root / "work"
        work.mkdir()
        try:
            with ModelServer([Rule(respond=Text(OFFLINE_ANSWER))]) as server:
                cli = offline_cli(provider, server, root=root, bin_dir=binary.parent)
                agent = CliAgent(
                    provider, env=dict(cli.env), model=cli.model, check_timeout=_CHECK_TIMEOUT_S
                )
                request = TurnRequest(
                    "Reply with the offline check's answer.", extra_args=cli.extra_args
                )
                result = agent.run(request, cwd=str(work), timeout=_TURN_TIMEOUT_S)
        except AgentShimError as error:
            first = str(error).strip().splitlines()
            return f"fail: {type(error).__name__}: {first[0] if first else ''}"[:500]
    if result.text.strip() != OFFLINE_ANSWER:
        return f"fail: the turn answered {result.text[:200]!r}, not the scripted text"
    return "pass"


def diagnose(provider: str, *, offline_check: bool = False) -> Diagnosis:
    """Look at ``provider``'s CLI as ``agentshim run`` would find it; never calls a real model."""
    profile = DEFAULT_CATALOG.plugin(provider).profile
    env = interactive_env()
    pin = pinned_clis().get(provider)
    problems: list[str] = []
    notes: list[str] = []
    binary, source = _find(profile, env)
    credentials = _credentials(profile, env)
    base = Diagnosis(
        provider,
        profile.display_name,
        pinned=pin.pinned if pin else None,
        checked_range=f"{pin.oldest_checked} - {pin.newest_checked}" if pin else None,
        credentials=credentials,
    )
    if binary is None:
        install = profile.install_command
        hint = f"; install it with: {install}" if install else ""
        return _with(base, problems=[f"{profile.binary} is not on PATH{hint}"], notes=notes)
    if source != "PATH":
        problems.append(
            f"{profile.binary} is not on PATH (agentshim run will not find it); add "
            f"{binary.parent} to PATH"
        )
    version: str | None = None
    try:
        version = check_version(HostCommandExecutor(), str(binary), env, timeout=_CHECK_TIMEOUT_S)
    except CliCheckError as error:
        problems.append(f"--version failed: {error.detail}")
    status = version_status(pin, version) if pin is not None else VersionStatus.UNKNOWN
    if status is VersionStatus.UNTESTED and pin is not None:
        notes.append(
            f"version {version} is outside the checked range {pin.oldest_checked} - "
            f"{pin.newest_checked}: untested, not known to be broken"
        )
    node, node_required, node_problems, node_notes = (
        _node_facts(binary, pin, env) if pin is not None else (None, None, [], [])
    )
    problems.extend(node_problems)
    notes.extend(node_notes)
    if not credentials:
        notes.append("no credentials seen (a login kept in a system keychain is invisible here)")
    checked: str | None = None
    if offline_check:
        checked = _offline_check(provider, binary)
        if checked != "pass":
            problems.append(f"offline check {checked}")
    return _with(
        base,
        binary=str(binary),
        binary_source=source,
        version=version,
        version_status=status.value,
        node=node,
        node_required=node_required,
        offline_check=checked,
        problems=problems,
        notes=notes,
    )


def _with(
    base: Diagnosis, *, problems: Sequence[str], notes: Sequence[str], **found: Any
) -> Diagnosis:
    return replace(base, problems=tuple(problems), notes=tuple(notes), **found)


def _text(diagnosis: Diagnosis) -> list[str]:
    lines = [
        f"{diagnosis.provider} ({diagnosis.display_name}): {'ready' if diagnosis.ready else 'NOT READY'}"
    ]
    if diagnosis.binary is not None:
        lines.append(f"  binary       {diagnosis.binary} ({diagnosis.binary_source})")
        lines.append(
            f"  version      {diagnosis.version or 'unknown'}: {diagnosis.version_status}"
            f" (pinned {diagnosis.pinned}, checked {diagnosis.checked_range})"
        )
    else:
        lines.append("  binary       not found")
    lines.append(f"  credentials  {', '.join(diagnosis.credentials) or 'none seen'}")
    if diagnosis.node is not None or diagnosis.node_required is not None:
        required = (
            f" (package declares {diagnosis.node_required})" if diagnosis.node_required else ""
        )
        lines.append(f"  node         {diagnosis.node or 'not found'}{required}")
    if diagnosis.offline_check is not None:
        lines.append(f"  offline      {diagnosis.offline_check}")
    lines.extend(f"  problem: {problem}" for problem in diagnosis.problems)
    lines.extend(f"  note: {note}" for note in diagnosis.notes)
    return lines


def write_report(diagnoses: Sequence[Diagnosis], out: TextIO, *, as_json: bool) -> None:
    """Write ``diagnoses`` as text, or as one JSON document (``ready`` included per provider)."""
    if as_json:
        document = [{**asdict(d), "ready": d.ready} for d in diagnoses]
        out.write(json.dumps(document, indent=2) + "\n")
        return
    for index, diagnosis in enumerate(diagnoses):
        if index:
            out.write("\n")
        out.write("\n".join(_text(diagnosis)) + "\n")
