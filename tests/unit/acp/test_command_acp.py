"""``agentshim run --acp`` and ``agentshim doctor --acp`` against the shipped fake ACP agent."""

from __future__ import annotations

import io
import json
import shlex
import sys

import pytest

from agentshim.command import main

FAKE = shlex.join([sys.executable, "-m", "agentshim.testing.acp_agent"])


def test_doctor_reports_the_agents_version_offers_and_auth_methods() -> None:
    out = io.StringIO()
    assert main(["doctor", "--acp", FAKE, "--json"], out=out, err=io.StringIO()) == 0
    report = json.loads(out.getvalue())
    assert report["ready"] is True
    assert report["protocol_version"] == 1
    assert report["offers"]["session/load"] is True
    assert report["offers"]["session/fork"] is False
    assert report["auth_methods"] == []


def test_doctor_says_why_a_command_is_no_acp_agent() -> None:
    out = io.StringIO()
    command = shlex.join([sys.executable, "-c", "print('hello')"])
    assert main(["doctor", "--acp", command], out=out, err=io.StringIO()) == 1
    assert "problem:" in out.getvalue()
    assert "initialize" in out.getvalue()


def test_run_runs_one_turn_of_the_agent_the_command_starts() -> None:
    out, err = io.StringIO(), io.StringIO()
    status = main(["run", "--acp", FAKE, "--json", "hello there"], out=out, err=err)
    assert status == 0, err.getvalue()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert "you said: hello there" in lines[-1]["text"]


def test_an_empty_acp_command_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as caught:
        main(["run", "--acp", "  ", "hi"], out=io.StringIO(), err=io.StringIO())
    assert caught.value.code == 2
