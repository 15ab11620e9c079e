"""Replay every recorded conformance fixture through CliAgent and check it as the live test does.

The fixtures under ``tests/fixtures/<provider>/recorded/`` (the oldest checked CLI version) and
``recorded-<version>/`` (each later one) are what the real CLIs printed for the scenarios of
``tests/live/scenarios.py`` (``scripts/record_fixtures.py``). Fed back
through ``CliAgent`` with a ``FakeExecutor``, each must give the same result the live run
gives: text, session, usage as scripted, tool calls and results, or the error type and kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import AgentShimError
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.testing import FakeExecutor, FakeRun, RecordingEventHandler
from tests.live import checks
from tests.live import scenarios as sc
from tests.unit.providers.fixtures import FIXTURES, capture_names, load_capture

PROVIDERS = ("claude", "codex", "gemini", "opencode", "copilot", "pi")


@dataclass(frozen=True)
class Recorded:
    provider: str
    case: str
    meta: dict[str, Any]
    run: FakeRun
    folder: str = "recorded"

    @property
    def version(self) -> str:
        return str(self.meta["cli"]["version"])

    @property
    def scenario(self) -> sc.Scenario:
        return sc.BY_NAME[self.meta["scenario"]]


def _load(provider: str, folder: str, name: str) -> Recorded:
    capture = load_capture(provider, f"{folder}/{name}")
    meta = dict(capture.meta)
    return Recorded(meta["provider"], meta["case"], meta, capture.fake_run(), folder)


def _folders(provider: str) -> list[str]:
    """``recorded`` and every ``recorded-<version>`` of ``provider``."""
    found = sorted(p.name for p in (FIXTURES / provider).glob("recorded-*") if p.is_dir())
    return ["recorded", *found]


def _recordings() -> list[Recorded]:
    return [
        _load(provider, folder, name)
        for provider in sorted(PROVIDERS)
        for folder in _folders(provider)
        for name in capture_names(provider, folder)
    ]


RECORDED = _recordings()
SINGLE_TURN = [r for r in RECORDED if r.case not in ("resume", "resume_first")]
RESUMED = [r for r in RECORDED if r.case == "resume"]


def _by_case(provider: str, folder: str, case: str) -> Recorded:
    return next(
        r for r in RECORDED if r.provider == provider and r.folder == folder and r.case == case
    )


def _id(recorded: Recorded) -> str:
    return f"{recorded.provider}-{recorded.version}-{recorded.case}"


def _agent(
    provider: str, runs: list[FakeRun], events: RecordingEventHandler
) -> tuple[CliAgent, FakeExecutor]:
    executor = FakeExecutor(runs)
    agent = CliAgent(provider, env={"PATH": "/usr/bin"}, executor=executor, event_handlers=events)
    return agent, executor


def _reports_tokens(provider: str) -> bool:
    return provider not in sc.PROVIDERS_WITHOUT_TOKEN_COUNTS


def test_every_provider_has_recordings() -> None:
    recorded = {r.provider for r in RECORDED}
    assert recorded == set(PROVIDERS)
    for provider in PROVIDERS:
        for folder in _folders(provider):
            cases = {r.case for r in RECORDED if r.provider == provider and r.folder == folder}
            wanted = {s.name for s in sc.SCENARIOS if s.schema is None}
            missing = sorted(wanted - cases)
            assert not missing, f"{provider} {folder} lacks recordings of {missing}"


def test_recordings_hold_no_paths_of_the_recording_machine() -> None:
    for path in FIXTURES.glob("*/recorded*/rec_*"):
        text = path.read_text(encoding="utf-8")
        assert "agentshim-rec-" not in text, path
        assert "/.cache/agentshim/clis/" not in text, path


@pytest.mark.parametrize("recorded", SINGLE_TURN, ids=_id)
def test_single_turn_replays_like_the_live_run(recorded: Recorded, tmp_path: Path) -> None:
    scenario = recorded.scenario
    events = RecordingEventHandler()
    agent, _ = _agent(recorded.provider, [recorded.run], events)
    session_id = sc.missing_session_id(recorded.provider) if scenario.resume == "missing" else None
    session = agent.start_session(session_id=session_id)
    request = TurnRequest(prompt=scenario.prompt)
    if scenario.schema is not None:
        request = TurnRequest(
            prompt=scenario.prompt, output_schema=OutputSchema(scenario.schema, host_dir=tmp_path)
        )
    if scenario.failure is not None:
        with pytest.raises(AgentShimError) as caught:
            session.turn(request)
        checks.check_failure(caught.value, scenario)
        return
    result = session.turn(request)
    if scenario.schema is not None:
        assert result.structured_output == scenario.structured
        checks.check_session(events.events, result)
        return
    checks.check_answer(
        events.events,
        scenario,
        result,
        reports_tokens=_reports_tokens(recorded.provider),
        provider=recorded.provider,
    )
    assert result.resumed is False


@pytest.mark.parametrize("recorded", RESUMED, ids=_id)
def test_resumed_turn_replays_like_the_live_run(recorded: Recorded) -> None:
    first = _by_case(recorded.provider, recorded.folder, "resume_first")
    setup = sc.RESUME.setup
    assert setup is not None
    events = RecordingEventHandler()
    agent, executor = _agent(recorded.provider, [first.run, recorded.run], events)
    session = agent.start_session()
    one = session.turn(TurnRequest(prompt=setup.prompt))
    two = session.turn(TurnRequest(prompt=sc.RESUME.prompt))
    reports = _reports_tokens(recorded.provider)
    assert one.text == setup.text
    checks.check_usage(one, setup.usage, reports_tokens=reports)
    assert two.text == sc.RESUME.text
    assert two.session_id == one.session_id == first.meta["session_id"]
    assert two.resumed is True
    checks.check_usage(two, sc.RESUME.usage, reports_tokens=reports)
    assert one.session_id is not None
    resumed_argv = executor.requests[1].argv
    assert any(one.session_id in arg for arg in resumed_argv), resumed_argv
