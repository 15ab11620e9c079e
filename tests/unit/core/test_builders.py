"""The parsers' fast builders give exactly the values the classes give."""

from __future__ import annotations

import pickle
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentshim.core import _builders
from agentshim.core import events as ev
from agentshim.core.usage import CostSource, ProviderUsage, TokenUsage

texts = st.text(max_size=20)
maybe_texts = st.none() | texts
counts = st.integers(min_value=0, max_value=10**12)
maybe_floats = st.none() | st.floats(allow_nan=False, min_value=0, max_value=1e6)
args = st.none() | texts | st.dictionaries(texts, st.integers(), max_size=3)


@st.composite
def token_usages(draw: st.DrawFn) -> tuple[int, ...]:
    """Counts that hold TokenUsage's invariants, as a parser makes them."""
    read, write, output = draw(counts), draw(counts), draw(counts)
    write_1h = draw(st.integers(min_value=0, max_value=write))
    reasoning = draw(st.integers(min_value=0, max_value=output))
    total_input = read + write + draw(counts)
    return (total_input, read, write, write_1h, output, reasoning, draw(counts))


def same(built: Any, called: Any, *, hashable: bool = True) -> None:
    assert type(built) is type(called)
    assert built == called
    if hashable:  # a usage holds its raw mapping, which has no hash
        assert hash(built) == hash(called)
    assert repr(built) == repr(called)
    assert pickle.loads(pickle.dumps(built)) == called


@given(texts, st.booleans(), texts, texts)
def test_text_and_lifecycle_events(text: str, delta: bool, kind: str, detail: str) -> None:
    same(_builders.build_assistant_text(text, delta), ev.AssistantText(text, delta))
    same(_builders.build_lifecycle(kind, detail), ev.Lifecycle(kind, detail))


@given(maybe_texts, texts, st.sampled_from(ev.ToolKind), texts, st.none() | st.integers())
def test_tool_events(
    tool_id: str | None, name: str, kind: ev.ToolKind, text: str, code: int | None
) -> None:
    same(
        _builders.build_tool_call(tool_id, name, text, kind), ev.ToolCall(tool_id, name, text, kind)
    )
    same(
        _builders.build_tool_call(tool_id, name, None, kind), ev.ToolCall(tool_id, name, None, kind)
    )
    result = ev.ToolResult(tool_id, name, text, "", code, 1.5, kind)
    same(_builders.build_tool_result(tool_id, name, text, "", code, 1.5, kind), result)


@given(
    token_usages(),
    maybe_floats,
    st.booleans(),
    st.sampled_from(CostSource),
    maybe_texts,
    st.sampled_from(ev.UsageScope),
    st.none() | counts,
)
def test_usage_values(
    values: tuple[int, ...],
    cost: float | None,
    known: bool,
    source: CostSource,
    model: str | None,
    scope: ev.UsageScope,
    duration: int | None,
) -> None:
    tokens = TokenUsage(*values)
    same(_builders.build_token_usage(*values), tokens)
    raw = {"input_tokens": values[0]}
    usage = ProviderUsage(tokens, cost, "p", raw, known, source, model)
    built = _builders.build_provider_usage(tokens, cost, "p", raw, known, source, model)
    same(built, usage, hashable=False)
    report = ev.UsageReport(usage, cost, scope, duration)
    same(_builders.build_usage_report(usage, cost, scope, duration), report, hashable=False)
