"""The bundled stand-in CLI through the library: structured answers, no made-up cost.

Each turn runs the stand-in as a real process (``stand_in_executor``) on the transport named,
so what is checked is what a caller of ``Agent`` sees.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim import Agent
from agentshim.core.conversation import TransportKind
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.doctor.model_server.schema_example import example_for
from agentshim.testing.stand_in import stand_in_executor

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "minLength": 40},
        "score": {"type": "integer", "minimum": 3, "maximum": 9},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "minItems": 2},
        "when": {"type": "string", "format": "date"},
    },
    "required": ["summary", "score", "tags", "when"],
    "additionalProperties": False,
    "$defs": {"tag": {"type": "string", "enum": ["red", "green"]}},
}

# The (provider, transport) pairs that take an output schema per turn: one-shot Claude Code
# (inline) and Codex (a file), and Codex's app-server (per turn/start).
STRUCTURED = [
    ("claude", TransportKind.ONE_SHOT),
    ("codex", TransportKind.ONE_SHOT),
    ("codex", TransportKind.LONG_LIVED),
]


def _agent(provider: str, transport: TransportKind) -> Agent:
    return Agent(
        provider,
        executor=stand_in_executor(provider),
        env=dict(os.environ),
        transport=transport,
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
    )


@pytest.mark.parametrize(("provider", "transport"), STRUCTURED)
def test_a_turn_with_an_output_schema_gets_a_value_that_satisfies_it(
    provider: str, transport: TransportKind, tmp_path: Path
) -> None:
    with _agent(provider, transport).start_session() as session:
        request = TurnRequest("Rate it.", output_schema=OutputSchema(SCHEMA, host_dir=tmp_path))
        result = session.turn(request).result
    value = result.structured_output
    assert isinstance(value, dict)
    assert set(value) == {"summary", "score", "tags", "when"}
    assert isinstance(value["summary"], str)
    assert len(value["summary"]) >= 40
    assert isinstance(value["score"], int)
    assert 3 <= value["score"] <= 9
    assert len(value["tags"]) >= 2
    assert set(value["tags"]) <= {"red", "green"}
    assert value["when"] == "2026-01-01"


@pytest.mark.parametrize(
    ("provider", "transport"),
    [(p, TransportKind.ONE_SHOT) for p, _ in STRUCTURED[:2]] + [("pi", TransportKind.LONG_LIVED)],
)
def test_a_turn_without_a_schema_answers_in_words_and_reports_no_cost(
    provider: str, transport: TransportKind
) -> None:
    with _agent(provider, transport).start_session() as session:
        result = session.turn(TurnRequest("x" * 100_000)).result
    assert "stand-in" in result.text
    assert result.structured_output is None
    assert result.cost_usd is None, "no model was called, so no cost is reported"
    assert result.usage.total_cost_usd is None


# -- the example builder, against a small validator of the schemas it is given -------------------


def _valid(value: object, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    if "$ref" in schema:
        return _valid(value, root["$defs"][schema["$ref"].rsplit("/", 1)[1]], root)
    if "enum" in schema:
        return value in schema["enum"]
    kind = schema["type"]
    if kind == "string":
        return (
            isinstance(value, str)
            and len(value) >= schema.get("minLength", 0)
            and len(value) <= schema.get("maxLength", len(value))
        )
    if kind in ("integer", "number"):
        if isinstance(value, bool) or not isinstance(
            value, int if kind == "integer" else (int, float)
        ):
            return False
        return (
            value >= schema.get("minimum", value)
            and value <= schema.get("maximum", value)
            and ("exclusiveMinimum" not in schema or value > schema["exclusiveMinimum"])
        )
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return (
            isinstance(value, list)
            and len(value) >= schema.get("minItems", 0)
            and all(_valid(item, schema["items"], root) for item in value)
        )
    if not isinstance(value, dict):
        return False
    properties = schema["properties"]
    return set(schema["required"]) <= set(value) and all(
        _valid(value[name], properties[name], root) for name in schema["required"]
    )


def _strings() -> st.SearchStrategy[dict[str, Any]]:
    def bounded(low: int, extra: int | None) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string", "minLength": low}
        if extra is not None:
            schema["maxLength"] = low + extra
        return schema

    return st.builds(bounded, st.integers(0, 30), st.none() | st.integers(0, 10))


def _numbers() -> st.SearchStrategy[dict[str, Any]]:
    def bounded(kind: str, low: int, span: int, exclusive: bool) -> dict[str, Any]:
        if exclusive:
            return {"type": kind, "exclusiveMinimum": low, "maximum": low + span + 1}
        return {"type": kind, "minimum": low, "maximum": low + span}

    return st.builds(
        bounded,
        st.sampled_from(["integer", "number"]),
        st.integers(-50, 50),
        st.integers(0, 5),
        st.booleans(),
    )


_LEAVES = (
    _strings()
    | _numbers()
    | st.just({"type": "boolean"})
    | st.just({"$ref": "#/$defs/color"})
    | st.lists(st.text(max_size=5), min_size=1, max_size=3, unique=True).map(
        lambda choices: {"type": "string", "enum": choices}
    )
)


def _extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    arrays = st.builds(
        lambda items, count: {"type": "array", "items": items, "minItems": count},
        children,
        st.integers(0, 3),
    )
    objects = st.dictionaries(
        st.from_regex(r"[a-z]{1,8}", fullmatch=True), children, max_size=4
    ).map(lambda props: {"type": "object", "properties": props, "required": list(props)})
    return arrays | objects


@given(st.recursive(_LEAVES, _extend, max_leaves=8))
def test_the_example_satisfies_every_schema_it_is_built_for(schema: dict[str, Any]) -> None:
    root = {**schema, "$defs": {"color": {"type": "string", "enum": ["red", "green"]}}}
    assert _valid(example_for(root), root, root)
