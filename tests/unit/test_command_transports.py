"""Every ``--transport`` / ``--provider`` pair ``agentshim run`` offers runs on the stand-in.

The pairs come from where the command takes them (each provider's ``transports_offered``),
so a provider or transport added later is tested here without a change. Each run is a real
``python -m agentshim`` process in its own session, killed with its process group if it is
still running after a hang guard of 20 s. A pair the command does not offer is refused at
once with the usage status and a message naming the providers that do offer it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentshim.command import EXIT_OK, EXIT_USAGE
from agentshim.command._caps import flag_name
from agentshim.core.conversation import TransportKind
from agentshim.providers import DEFAULT_CATALOG, provider_names
from agentshim.providers.catalog import transports_offered

ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD_S = 20.0


def _offered(provider: str) -> tuple[TransportKind, ...]:
    return transports_offered(DEFAULT_CATALOG.plugin(provider))


OFFERED = [(flag_name(kind), name) for name in provider_names() for kind in _offered(name)]
EVERY_TRANSPORT = list(dict.fromkeys(flag for flag, _ in OFFERED))
REFUSED = [
    (flag, name)
    for name in provider_names()
    for flag in EVERY_TRANSPORT
    if (flag, name) not in OFFERED
]


def agentshim(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -m agentshim *args``; fail the test if it outlives the hang guard."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), "NO_COLOR": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "agentshim", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"agentshim {' '.join(args)} hung for {HANG_GUARD_S:g} s:\n{out}\n{err}")
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_every_transport_the_help_offers_is_a_pair_here() -> None:
    help_text = " ".join(agentshim_help().split())
    for flag in EVERY_TRANSPORT:
        assert flag in help_text


def agentshim_help() -> str:
    return subprocess.run(
        [sys.executable, "-m", "agentshim", "run", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=HANG_GUARD_S,
    ).stdout


@pytest.mark.parametrize(("transport", "provider"), OFFERED)
def test_an_offered_pair_runs_a_turn_on_the_stand_in(
    transport: str, provider: str, tmp_path: Path
) -> None:
    done = agentshim(
        "run",
        "--stand-in",
        "--transport",
        transport,
        "--provider",
        provider,
        "--json",
        "hi",
        tmp=tmp_path,
    )
    assert done.returncode == EXIT_OK, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "stand-in" in result["text"]
    assert result["cost_usd"] is None, "no model was called: no cost is reported"
    assert result["usage"]["cost_source"] != "reported"
    assert list(tmp_path.iterdir()) == [], "the run left a temporary file behind"


@pytest.mark.parametrize(("transport", "provider"), REFUSED)
def test_a_pair_not_offered_is_refused_at_once(
    transport: str, provider: str, tmp_path: Path
) -> None:
    done = agentshim(
        "run", "--stand-in", "--transport", transport, "--provider", provider, "hi", tmp=tmp_path
    )
    assert done.returncode == EXIT_USAGE
    assert done.stdout == ""
    having = [name for (name,) in [(n,) for n in provider_names()] if (transport, name) in OFFERED]
    assert f"{provider} does not offer {transport}" in done.stderr
    for name in having:
        assert name in done.stderr


def test_the_plain_prompt_shows_the_answer_and_a_summary_without_cost(tmp_path: Path) -> None:
    done = agentshim(
        "run", "--stand-in", "--transport", "long-lived", "--provider", "codex", "hi", tmp=tmp_path
    )
    assert done.returncode == EXIT_OK, done.stderr
    assert "no model was called" in done.stdout
    assert "$" not in done.stdout.splitlines()[-1], "the summary shows no made-up cost"
