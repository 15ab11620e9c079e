"""Live: ``agentshim run`` on every transport it offers, with the real CLIs, offline.

For each ``--transport`` / ``--provider`` pair the command offers (each provider's
``transports_offered``, so a new pair is tested here without a change), a real
``python -m agentshim run`` process runs one turn of the pinned CLI against the scripted
model server (``agentshim.doctor.offline``) and must print the model's answer and exit 0.
Skipped per provider when its binary is not installed.

Run with ``pytest tests/live/test_command_transports.py``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentshim.command import EXIT_OK
from agentshim.command._caps import flag_name
from agentshim.doctor.model_server import ModelServer, Rule, Text
from agentshim.doctor.offline import offline_cli
from agentshim.providers import DEFAULT_CATALOG, provider_names
from agentshim.providers.catalog import transports_offered

from .binaries import require_binary

ROOT = Path(__file__).resolve().parents[2]
ANSWER = "Hello from the scripted model."
HANG_GUARD_S = 120.0

PAIRS = [
    (flag_name(kind), name)
    for name in provider_names()
    for kind in transports_offered(DEFAULT_CATALOG.plugin(name))
]


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    with ModelServer([Rule(respond=Text(ANSWER))]) as running:
        yield running


@pytest.mark.parametrize(("transport", "provider"), PAIRS)
def test_run_answers_on_every_offered_transport(
    transport: str, provider: str, server: ModelServer, work: Path, tmp_path: Path
) -> None:
    binary = require_binary(provider)
    cli = offline_cli(provider, server, root=tmp_path, bin_dir=binary.path.parent)
    argv = [sys.executable, "-m", "agentshim", "run", "--provider", provider]
    argv += ["--transport", transport, "--timeout", "90", "--cwd", str(work)]
    if cli.model is not None:
        argv += ["--model", cli.model]
    # Killed on a hang: the CLI it started runs in a session of its own either way.
    try:
        done = subprocess.run(
            [*argv, "Say hello."],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env={**cli.env, "PYTHONPATH": str(ROOT)},
            cwd=work,
            start_new_session=True,
            timeout=HANG_GUARD_S,
            check=False,
        )
    except subprocess.TimeoutExpired as hung:
        pytest.fail(f"agentshim run hung for {HANG_GUARD_S:g} s:\n{hung.stdout!r}\n{hung.stderr!r}")
    assert done.returncode == EXIT_OK, f"{done.stdout}\n{done.stderr}"
    assert ANSWER in done.stdout
