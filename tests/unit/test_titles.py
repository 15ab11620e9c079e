"""Session titles: cleaning, the transcript probe (run with a real shell) and its parser."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim import Agent, ApprovalPolicy, CliAgent, NativePermissions, TransportKind
from agentshim.core.errors import InvalidSessionIdError, ProviderCapabilityError
from agentshim.core.events import SessionTitle
from agentshim.execution import HostCommandExecutor
from agentshim.testing import FakeExecutor
from agentshim.titles import OUT_OF_BAND_PROVIDERS, clean_title, parse_title, title_probe

SESSION = "6c1f0d0e-1111-4222-8333-444455556666"


def _title_line(title: object) -> str:
    return json.dumps({"type": "ai-title", "aiTitle": title, "sessionId": SESSION})


def _transcript(root: Path, lines: list[str], session_id: str = SESSION) -> Path:
    folder = root / "projects" / "-home-user-work"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _probe_output(root: Path, session_id: str = SESSION) -> str:
    probe = title_probe("claude", session_id)
    assert probe is not None
    done = subprocess.run(
        ["bash", "-c", probe],
        env={"CLAUDE_CONFIG_DIR": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    return done.stdout


class TestCleanTitle:
    def test_one_line_collapsed_and_trimmed(self) -> None:
        assert clean_title("  Fix the\n\tlogin   bug  ") == "Fix the login bug"

    def test_at_most_200_characters(self) -> None:
        assert clean_title("x" * 500) == "x" * 200

    @pytest.mark.parametrize("value", [None, 3, "", "   \n ", ["a"]])
    def test_nothing_usable_is_none(self, value: object) -> None:
        assert clean_title(value) is None

    @given(st.text())
    def test_a_clean_title_is_one_trimmed_line_and_cleaning_it_again_changes_nothing(
        self, value: str
    ) -> None:
        title = clean_title(value)
        if title is None:
            return
        assert len(title) <= 200
        assert title == title.strip()
        assert "\n" not in title
        assert "  " not in title
        assert clean_title(title) == title


class TestProbe:
    def test_only_claude_reads_its_title_out_of_band(self) -> None:
        # readsTitleOutOfBand: true for Claude Code's dialects only.
        assert frozenset({"claude"}) == OUT_OF_BAND_PROVIDERS

    def test_a_provider_with_titles_in_band_has_no_probe(self) -> None:
        for provider in ("codex", "opencode", "pi", "gemini", "copilot"):
            assert title_probe(provider, SESSION) is None

    @pytest.mark.parametrize(
        "unsafe", ["", "a b", "x;rm -rf /", "$(id)", "a'b", "../x/y", "x" * 129, ".."]
    )
    def test_an_unsafe_id_has_no_probe(self, unsafe: str) -> None:
        assert title_probe("claude", unsafe) is None

    def test_the_probe_prints_the_titles_and_the_newest_wins(self, tmp_path: Path) -> None:
        _transcript(
            tmp_path,
            [
                json.dumps({"type": "user", "message": {"content": "hi"}}),
                _title_line("First title"),
                json.dumps({"type": "assistant", "message": {"content": []}}),
                _title_line("Better   title"),
            ],
        )
        found = parse_title("claude", _probe_output(tmp_path))
        assert found == SessionTitle("Better title", _title_line("Better   title"))

    def test_no_transcript_is_no_title_and_no_failure(self, tmp_path: Path) -> None:
        assert _probe_output(tmp_path) == ""
        assert parse_title("claude", "") is None

    def test_only_the_session_s_own_transcript_is_read(self, tmp_path: Path) -> None:
        _transcript(tmp_path, [_title_line("Someone else")], session_id="other-session")
        assert parse_title("claude", _probe_output(tmp_path)) is None

    def test_a_line_the_agent_wrote_that_mentions_ai_title_does_not_count(
        self, tmp_path: Path
    ) -> None:
        forged = json.dumps(
            {"type": "user", "message": {"content": '{"type":"ai-title","aiTitle":"pwned"}'}}
        )
        _transcript(tmp_path, [_title_line("Real title"), forged, "not json ai-title"])
        output = _probe_output(tmp_path)
        assert "pwned" in output  # the grep is a substring match...
        found = parse_title("claude", output)
        assert found is not None
        assert found.title == "Real title"  # ...the parser is not


class TestParse:
    def test_a_record_without_a_usable_title_is_skipped(self) -> None:
        output = "\n".join([_title_line("Kept"), _title_line("  "), _title_line(7)])
        found = parse_title("claude", output)
        assert found is not None
        assert found.title == "Kept"

    def test_a_provider_with_titles_in_band_parses_nothing(self) -> None:
        assert parse_title("codex", _title_line("x")) is None


def _fake_claude(folder: Path) -> None:
    binary = folder / "claude"
    binary.write_text('#!/bin/sh\necho "2.1.197 (Claude Code)"\n')
    binary.chmod(0o755)


def _agent(env: dict[str, str], **options: Any) -> Agent:
    return Agent(
        "claude",
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        executor=HostCommandExecutor(),
        env=env,
        **options,
    )


class TestThroughTheAgent:
    @pytest.mark.parametrize(
        "make",
        [
            lambda env: CliAgent("claude", executor=HostCommandExecutor(), env=env),
            lambda env: _agent(env),
            lambda env: _agent(env, transport=TransportKind.LONG_LIVED),
        ],
        ids=["cli-agent", "agent", "stream-agent"],
    )
    def test_the_probe_runs_on_the_agents_own_install(
        self, tmp_path: Path, make: Callable[[dict[str, str]], CliAgent | Agent]
    ) -> None:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        _fake_claude(bin_dir)
        _transcript(tmp_path, [_title_line("Through the executor")])
        env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CLAUDE_CONFIG_DIR": str(tmp_path)}
        found = make(env).session_title(SESSION)
        assert found is not None
        assert found.title == "Through the executor"

    def test_an_unsafe_id_is_refused_before_anything_runs(self) -> None:
        fake = FakeExecutor([], binaries={"claude": "/usr/bin/claude"})
        agent = CliAgent("claude", executor=fake, env={"PATH": "/usr/bin"})
        with pytest.raises(InvalidSessionIdError):
            agent.session_title("$(id)")
        assert fake.requests == []

    def test_a_provider_with_titles_in_band_runs_nothing(self) -> None:
        fake = FakeExecutor([], binaries={"codex": "/usr/bin/codex"})
        agent = CliAgent("codex", executor=fake, env={"PATH": "/usr/bin"})
        assert agent.session_title(SESSION) is None
        assert fake.requests == []

    def test_an_agent_over_another_transport_says_it_cannot(self) -> None:
        from agentshim.testing import FakeTransport

        agent = Agent(
            FakeTransport(),
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
        )
        with pytest.raises(ProviderCapabilityError, match="session titles"):
            agent.session_title(SESSION)
