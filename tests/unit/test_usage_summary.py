"""summarize_usage: which number comes from where, on made-up reports and recorded turns."""

from __future__ import annotations

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.events import AssistantText, UsageReport, UsageScope
from agentshim.core.summary import UsageSummary, summarize_usage
from agentshim.core.usage import CostSource, ProviderUsage, TokenUsage
from agentshim.testing import FakeExecutor, RecordingEventHandler
from tests.live import scenarios as sc
from tests.unit.providers.fixtures import capture_names, load_capture

PROVIDERS = ("claude", "codex", "gemini", "opencode", "copilot", "pi")


def _call(inp: int, out: int, cost: float | None = None) -> UsageReport:
    source = CostSource.REPORTED if cost is not None else CostSource.NOT_REPORTED
    usage = ProviderUsage(TokenUsage(input_tokens=inp, output_tokens=out), cost, cost_source=source)
    return UsageReport(usage, cost, UsageScope.CALL)


def _turn(
    inp: int,
    out: int,
    *,
    cost: float | None = None,
    source: CostSource = CostSource.REPORTED,
    turns: int = 1,
    duration_ms: int | None = None,
    known: bool = True,
) -> UsageReport:
    usage = ProviderUsage(
        TokenUsage(input_tokens=inp, output_tokens=out, turns=turns),
        cost,
        increment_known=known,
        cost_source=source if cost is not None else CostSource.NOT_REPORTED,
    )
    return UsageReport(usage, cost, UsageScope.TURN, duration_ms)


class TestRules:
    def test_nothing_measured_is_none(self) -> None:
        assert summarize_usage([]) is None
        assert summarize_usage([AssistantText("hi")]) is None
        unknown = UsageReport(ProviderUsage(increment_known=False))
        assert summarize_usage([unknown]) is None

    def test_a_turn_in_flight_counts_its_calls(self) -> None:
        summary = summarize_usage([_call(100, 1), AssistantText("..."), _call(150, 1)])
        assert summary is not None
        assert (summary.tokens.input_tokens, summary.tokens.output_tokens) == (250, 2)
        assert summary.calls == 2
        assert (summary.cost_usd, summary.turns, summary.duration_ms) == (None, None, None)

    def test_a_finished_turn_counts_its_own_total_not_its_calls(self) -> None:
        summary = summarize_usage(
            [_call(100, 1), _call(100, 1), _turn(200, 40, cost=0.01, duration_ms=900)]
        )
        assert summary is not None
        assert (summary.tokens.input_tokens, summary.tokens.output_tokens) == (200, 40)
        assert (summary.cost_usd, summary.turns, summary.duration_ms) == (0.01, 1, 900)

    def test_a_second_turn_in_flight_adds_to_the_first(self) -> None:
        summary = summarize_usage([_call(100, 1), _turn(100, 20, cost=0.5), _call(300, 1)])
        assert summary is not None
        assert summary.tokens.input_tokens == 400
        assert summary.cost_usd == 0.5
        assert summary.context_tokens == 300

    def test_the_harness_total_is_the_fallback_without_calls(self) -> None:
        summary = summarize_usage([_turn(10, 2), _turn(5, 1, duration_ms=3)])
        assert summary is not None
        assert (summary.tokens.input_tokens, summary.calls, summary.turns) == (15, 0, 2)
        assert summary.duration_ms == 3
        assert summary.context_tokens is None

    def test_a_cost_the_library_priced_is_not_a_reported_cost(self) -> None:
        summary = summarize_usage([_turn(10, 2, cost=0.2, source=CostSource.PRICED)])
        assert summary is not None
        assert summary.cost_usd is None

    def test_calls_that_report_their_cost_are_summed(self) -> None:
        summary = summarize_usage([_call(10, 1, 0.25), _call(10, 1, 0.5)])
        assert summary is not None
        assert summary.cost_usd == 0.75

    def test_a_turn_without_known_counts_keeps_its_calls(self) -> None:
        summary = summarize_usage([_call(70, 3), _turn(0, 0, known=False)])
        assert summary is not None
        assert summary.tokens.input_tokens == 70

    def test_context_is_the_latest_call_against_the_window(self) -> None:
        summary = summarize_usage([_call(100, 1), _call(50_000, 1)], context_window=200_000)
        assert summary == UsageSummary(
            tokens=TokenUsage(input_tokens=50_100, output_tokens=2),
            calls=2,
            context_tokens=50_000,
            context_window=200_000,
        )
        assert summary.context_fraction == 0.25

    def test_no_window_no_fraction(self) -> None:
        summary = summarize_usage([_call(100, 1)])
        assert summary is not None
        assert summary.context_fraction is None


def _recorded_cases() -> list[tuple[str, str]]:
    cases: list[tuple[str, str]] = []
    for provider in PROVIDERS:
        for name in capture_names(provider, "recorded"):
            meta = load_capture(provider, f"recorded/{name}").meta
            if meta.get("case") in ("plain_answer", "shell_tool", "two_tool_calls"):
                cases.append((provider, name))
    return cases


@pytest.mark.parametrize(("provider", "name"), _recorded_cases())
def test_a_recorded_turn_summarizes_to_its_result(provider: str, name: str) -> None:
    capture = load_capture(provider, f"recorded/{name}")
    events = RecordingEventHandler()
    agent = CliAgent(
        provider,
        env={"PATH": "/usr/bin"},
        executor=FakeExecutor([capture.fake_run()]),
        event_handlers=events,
    )
    result = agent.run(sc.BY_NAME[capture.meta["scenario"]].prompt)
    summary = summarize_usage(events.events, context_window=result.context_window)
    if provider in sc.PROVIDERS_WITHOUT_TOKEN_COUNTS:
        assert summary is None or summary.tokens == TokenUsage()
        return
    assert summary is not None
    tokens = result.usage.tokens
    assert summary.tokens.input_tokens == tokens.input_tokens
    assert summary.tokens.output_tokens == tokens.output_tokens
    if result.usage.cost_source is CostSource.REPORTED:
        assert summary.cost_usd == pytest.approx(result.cost_usd)
    else:
        assert summary.cost_usd is None
    assert summary.context_window == result.context_window


class TestTurnResultWindow:
    def _run(self, provider: str, model: str | None, **scripted: object) -> object:
        from agentshim.providers import get_plugin
        from agentshim.testing import scripted_turn

        binary = get_plugin(provider).profile.binary
        fake = FakeExecutor(
            scripted_turn(provider, text="ok", session_id="s-1", **scripted),  # type: ignore[arg-type]
            binaries={binary: f"/usr/bin/{binary}"},
        )
        agent = CliAgent(provider, model=model, executor=fake, env={"PATH": "/usr/bin"})
        return agent.run("do it")

    def test_what_the_cli_reports_comes_first(self) -> None:
        # Claude Code's modelUsage names the window of the model it ran.
        result = self._run("claude", None, usage=TokenUsage(input_tokens=10, output_tokens=1))
        assert result.context_window == 200_000  # type: ignore[attr-defined]

    def test_then_the_catalogue_for_the_model_asked_for(self) -> None:
        result = self._run("codex", "gpt-5.1-codex")
        assert result.context_window == 400_000  # type: ignore[attr-defined]

    def test_an_unknown_model_has_no_window(self) -> None:
        result = self._run("codex", "some-future-model")
        assert result.context_window is None  # type: ignore[attr-defined]
