"""Tools from typed functions: the JSON Schema their annotations give, and the calls it admits."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Optional, TypedDict

import pytest

from agentshim import Tool, TurnRequest, tool
from agentshim.core.errors import InvalidRequestError
from agentshim.core.tool_schema import ArgumentError, arguments_schema, bind


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class Options(TypedDict, total=False):
    deep: bool


def test_primitive_parameters_are_typed_and_those_without_default_are_required() -> None:
    def f(a: str, b: int, c: float = 1.5, d: bool = False) -> None: ...

    assert arguments_schema(f) == {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "integer"},
            "c": {"type": "number", "default": 1.5},
            "d": {"type": "boolean", "default": False},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }


def test_containers_unions_literals_and_enums_map_to_their_json_schema() -> None:
    def f(
        tags: list[str],
        counts: dict[str, int],
        pair: tuple[int, str],
        many: tuple[float, ...],
        mode: Literal["fast", "slow"],
        colour: Colour,
        maybe: Optional[int] = None,  # noqa: UP045 - the spelling under test
        either: int | str = 0,
    ) -> None: ...

    props = arguments_schema(f)["properties"]
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["pair"] == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "minItems": 2,
        "maxItems": 2,
    }
    assert props["many"] == {"type": "array", "items": {"type": "number"}}
    assert props["mode"] == {"enum": ["fast", "slow"]}
    assert props["colour"] == {"enum": ["red", "blue"]}
    assert props["maybe"] == {"type": ["integer", "null"], "default": None}
    assert props["either"] == {"type": ["integer", "string"], "default": 0}


def test_dataclasses_and_typed_dicts_become_nested_objects() -> None:
    def f(where: Point, options: Options) -> None: ...

    props = arguments_schema(f)["properties"]
    assert props["where"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "additionalProperties": False,
        "required": ["x"],
    }
    assert props["options"] == {
        "type": "object",
        "properties": {"deep": {"type": "boolean"}},
        "additionalProperties": False,
    }


def test_an_annotated_string_is_the_parameters_description_and_any_takes_anything() -> None:
    def f(n: Annotated[int, "how many"], anything: Any, untyped=None) -> None:  # type: ignore[no-untyped-def]
        del n, anything, untyped

    props = arguments_schema(f)["properties"]
    assert props["n"] == {"type": "integer", "description": "how many"}
    assert props["anything"] == {}
    assert props["untyped"] == {"default": None}


def test_kwargs_lets_other_properties_through() -> None:
    def f(a: str, **more: object) -> None: ...

    schema = arguments_schema(f)
    assert "additionalProperties" not in schema
    assert bind(f, {"a": "x", "b": 1}, derived=True) == {"a": "x", "b": 1}


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("def f(a, /): ...", "positional-only"),
        ("def f(*a): ...", "positional-only or \\*args"),
        ("def f(a: bytes): ...", "map to JSON"),
        ("def f(a: dict[int, str]): ...", "keys are strings"),
        ("def f(a: set): ...", None),
    ],
)
def test_what_has_no_json_schema_is_refused_when_the_tool_is_made(
    source: str, why: str | None
) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    if why is None:
        assert tool(namespace["f"]).input_schema["properties"]["a"] == {"type": "array"}
        return
    with pytest.raises(InvalidRequestError, match=why):
        tool(namespace["f"])


def test_tool_takes_name_description_and_schema_from_the_function_or_the_caller() -> None:
    def lookup(key: str) -> str:
        """Look a key up.

        More text.
        """
        return key

    made = tool(lookup)
    assert (made.name, made.description.splitlines()[0], made.derived) == (
        "lookup",
        "Look a key up.",
        True,
    )
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    given = tool(name="find", description="Find it.", input_schema=schema)(lookup)
    assert (given.name, given.description, dict(given.input_schema), given.derived) == (
        "find",
        "Find it.",
        schema,
        False,
    )
    assert made("x") == "x"  # still callable as the function


def test_async_functions_bad_names_schemas_and_timeouts_are_refused() -> None:
    async def later() -> None: ...

    with pytest.raises(InvalidRequestError, match="async"):
        tool(later)
    with pytest.raises(InvalidRequestError, match="tool name"):
        tool(name="no spaces")(lambda: None)
    with pytest.raises(InvalidRequestError, match=r"type.*object"):
        Tool("t", "", lambda: None, {"type": "string"})
    with pytest.raises(InvalidRequestError, match="timeout"):
        tool(name="t", timeout=0)(lambda: None)


def test_a_turn_takes_tools_or_plain_functions_and_refuses_the_same_name_twice() -> None:
    def a() -> None: ...

    request = TurnRequest("go", tools=[a, tool(name="b")(a)])
    assert [t.name for t in request.tools] == ["a", "b"]
    with pytest.raises(InvalidRequestError, match="more than once"):
        TurnRequest("go", tools=[a, a])
    with pytest.raises(InvalidRequestError, match="neither a Tool nor a function"):
        TurnRequest("go", tools=["a"])  # type: ignore[list-item]


def test_bind_builds_dataclasses_and_enums_and_converts_whole_numbers() -> None:
    def f(where: Point, colour: Colour, ratio: float, n: int, tags: tuple[str, ...]) -> None: ...

    bound = bind(
        f,
        {"where": {"x": 1}, "colour": "blue", "ratio": 2, "n": 3.0, "tags": ["a"]},
        derived=True,
    )
    assert bound == {
        "where": Point(1, 0),
        "colour": Colour.BLUE,
        "ratio": 2.0,
        "n": 3,
        "tags": ("a",),
    }


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "required argument 'key' is missing"),
        ({"key": "k", "other": 1}, "unknown argument"),
        ({"key": 3}, "expected string, got a number"),
        ({"key": "k", "n": True}, "expected integer, got a boolean"),
        ({"key": "k", "mode": "medium"}, "not one of"),
        ({"key": "k", "where": {"x": 1, "z": 2}}, "unknown field"),
        ([1], "must be a JSON object"),
    ],
)
def test_arguments_that_do_not_fit_say_what_is_wrong(arguments: object, message: str) -> None:
    def f(key: str, n: int = 0, mode: Literal["fast"] = "fast", where: Point | None = None) -> None:
        del key, n, mode, where

    with pytest.raises(ArgumentError, match=message):
        bind(f, arguments, derived=True)


def test_an_explicit_schema_passes_the_arguments_as_they_came() -> None:
    def f(**given: object) -> Mapping[str, object]:
        return given

    assert bind(f, {"anything": [1]}, derived=False) == {"anything": [1]}
