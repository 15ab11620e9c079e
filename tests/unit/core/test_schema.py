from __future__ import annotations

import copy
import hashlib
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.core.errors import AgentShimError, InvalidRequestError, SchemaDialectError
from agentshim.core.profile import SchemaDialect
from agentshim.core.schema import compact_json, dialect_problems, materialize, normalize
from agentshim.core.turn import OutputSchema
from tests.unit.core.json_strategies import finite_json

STRICT = SchemaDialect.STRICT
OPEN = SchemaDialect.OPEN


def strict_object(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
        **extra,
    }


# A schema as Pydantic writes it for a model with an optional field and a nested model.
PYDANTIC_LIKE: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Report",
    "type": "object",
    "properties": {
        "summary": {"type": "string", "description": "One line.", "title": "Summary"},
        "score": {"type": "integer", "default": 0, "examples": [1, 2]},
        "author": {"$ref": "#/$defs/Person", "description": "Who wrote it."},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["summary"],
    "$defs": {
        "Person": {
            "type": "object",
            "title": "Person",
            "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
            "required": ["name"],
        }
    },
}


class TestStrictProblems:
    def test_valid_schema_has_none(self) -> None:
        schema = strict_object(
            {
                "name": {"type": "string", "description": "kept"},
                "maybe": {"type": ["object", "null"], **strict_object({"x": {"type": "number"}})},
                "ref": {"$ref": "#/$defs/Item"},
                "choice": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
            **{"$defs": {"Item": strict_object({})}},
        )
        schema["properties"]["maybe"]["type"] = ["object", "null"]
        assert dialect_problems(schema, STRICT) == []

    def test_pydantic_style_schema(self) -> None:
        problems = dialect_problems(PYDANTIC_LIKE, STRICT)
        assert problems == [
            "#: STRICT does not accept $schema (normalize drops it)",
            "#: an object must set additionalProperties to false (it is absent)",
            "#: required must list exactly the keys of properties (not required: score, "
            "author, tags); make optional values required and nullable",
            "#/properties/author: STRICT does not accept keywords beside a $ref "
            "(description); normalize moves them onto an anyOf wrapper",
            "#/$defs/Person: an object must set additionalProperties to false (it is absent)",
            "#/$defs/Person: required must list exactly the keys of properties "
            "(not required: email); make optional values required and nullable",
        ]

    def test_root_must_be_an_object(self) -> None:
        assert dialect_problems({"type": "string"}, STRICT) == [
            '#: the root must be an object schema ("type": "object")'
        ]

    def test_root_must_not_be_any_of(self) -> None:
        schema = {"type": "object", "anyOf": [strict_object({}), strict_object({})]}
        problems = dialect_problems(schema, STRICT)
        assert "#: the root must not be an anyOf under STRICT" in problems

    def test_object_without_properties(self) -> None:
        schema = strict_object({"inner": {"type": "object", "additionalProperties": False}})
        assert dialect_problems(schema, STRICT) == [
            "#/properties/inner: an object must declare properties (use {} for none)"
        ]

    def test_nullable_object_is_still_an_object(self) -> None:
        schema = strict_object({"inner": {"type": ["object", "null"], "properties": {}}})
        assert dialect_problems(schema, STRICT) == [
            "#/properties/inner: an object must set additionalProperties to false (it is absent)"
        ]

    def test_open_maps_are_named_as_such(self) -> None:
        schema = strict_object(
            {
                "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
                "anything": {"type": "object", "additionalProperties": True},
            }
        )
        problems = dialect_problems(schema, STRICT)
        assert len(problems) == 2
        assert problems[0].startswith("#/properties/counts: is an open map")
        assert problems[1].startswith("#/properties/anything: is an open map")

    def test_required_naming_unknown_property(self) -> None:
        schema = strict_object({"a": {"type": "string"}})
        schema["required"] = ["a", "ghost"]
        assert dialect_problems(schema, STRICT) == [
            "#: required must list exactly the keys of properties (not a property: ghost); "
            "make optional values required and nullable"
        ]

    def test_one_of_id_and_schema_rejected(self) -> None:
        schema = strict_object(
            {"u": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}, **{"$id": "urn:x"}
        )
        assert dialect_problems(schema, STRICT) == [
            "#: STRICT does not accept $id (normalize drops it)",
            "#/properties/u: STRICT does not accept oneOf; use anyOf",
        ]

    def test_recurses_through_every_subschema_position(self) -> None:
        loose = {"type": "object", "properties": {}}
        schema = strict_object(
            {
                "list": {"type": "array", "items": loose},
                "tuple": {"type": "array", "items": [loose]},
                "alt": {"anyOf": [loose, {"type": "null"}]},
            },
            **{"$defs": {"D": loose}, "definitions": {"E": loose}},
        )
        paths = [p.split(":")[0] for p in dialect_problems(schema, STRICT)]
        assert paths == [
            "#/properties/list/items",
            "#/properties/tuple/items/0",
            "#/properties/alt/anyOf/0",
            "#/$defs/D",
            "#/definitions/E",
        ]

    def test_ref_target_checked_where_defined_not_where_used(self) -> None:
        schema = strict_object(
            {"a": {"$ref": "#/$defs/Loose"}, "b": {"$ref": "#/$defs/Loose"}},
            **{"$defs": {"Loose": {"type": "object", "properties": {}}}},
        )
        assert dialect_problems(schema, STRICT) == [
            "#/$defs/Loose: an object must set additionalProperties to false (it is absent)"
        ]

    def test_pointer_escapes_slash_and_tilde(self) -> None:
        schema = strict_object({"a/b~c": {"type": "object", "properties": {}}})
        (problem,) = dialect_problems(schema, STRICT)
        assert problem.startswith("#/properties/a~1b~0c: ")


class TestRefs:
    @pytest.mark.parametrize("dialect", [STRICT, OPEN])
    @pytest.mark.parametrize(
        "ref", ["#/$defs/Missing", "other.json#/$defs/A", "#anchor", "#/properties/x/9"]
    )
    def test_unresolvable_ref(self, dialect: SchemaDialect, ref: str) -> None:
        schema = strict_object({"x": {"$ref": ref}}, **{"$defs": {"A": strict_object({})}})
        assert dialect_problems(schema, dialect) == [
            f"#/properties/x: $ref {ref!r} does not resolve inside the document"
        ]

    @pytest.mark.parametrize(
        "ref", ["#", "#/$defs/A", "#/$defs/A%20B", "#/$defs/x~1y", "#/properties/list/items/0"]
    )
    def test_resolvable_refs(self, ref: str) -> None:
        schema = strict_object(
            {"x": {"$ref": ref}, "list": {"type": "array", "items": [{"type": "string"}]}},
            **{
                "$defs": {
                    "A": strict_object({}),
                    "A B": strict_object({}),
                    "x/y": strict_object({}),
                }
            },
        )
        assert dialect_problems(schema, STRICT) == []

    def test_ref_to_something_that_is_not_a_schema(self) -> None:
        schema = strict_object({"x": {"$ref": "#/required"}})
        assert dialect_problems(schema, OPEN) == [
            "#/properties/x: $ref '#/required' points at an array, not a schema"
        ]


class TestOpenProblems:
    def test_accepts_what_strict_rejects(self) -> None:
        schema = dict(PYDANTIC_LIKE)
        schema["properties"] = {
            **PYDANTIC_LIKE["properties"],
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        }
        assert dialect_problems(schema, OPEN) == []

    def test_root_must_be_an_object(self) -> None:
        assert dialect_problems({"type": "array"}, OPEN) == [
            '#: the root must be an object schema ("type": "object")'
        ]

    def test_malformed_keywords(self) -> None:
        schema = {
            "type": "object",
            "properties": {
                "a": {"type": 5},
                "b": {"anyOf": []},
                "c": {"required": "a"},
                "d": "string",
                "e": {"additionalProperties": "no"},
            },
        }
        assert dialect_problems(schema, OPEN) == [
            "#/properties/a: type must be a string or an array of strings",
            "#/properties/b: anyOf must be a non-empty array of schemas",
            "#/properties/c: required must be an array of property names",
            "#/properties/d: a schema must be an object or a boolean, not a string",
            "#/properties/e: additionalProperties must be a boolean or a schema",
        ]


class TestInexpressibleSchemas:
    class Opaque:
        pass

    @pytest.mark.parametrize(
        ("value", "fragment"),
        [
            (math.nan, "nan cannot be written as JSON"),
            (math.inf, "inf cannot be written as JSON"),
            ({1, 2}, "a set cannot be written as JSON"),
            (Opaque(), "a Opaque cannot be written as JSON"),
            (b"bytes", "a bytes cannot be written as JSON"),
            ("\ud800", "lone surrogate"),
        ],
    )
    def test_reported_by_check_and_refused_by_rewriters(self, value: Any, fragment: str) -> None:
        schema = {"type": "object", "properties": {"x": {"type": "number", "default": value}}}
        for dialect in (STRICT, OPEN):
            problems = dialect_problems(schema, dialect)
            assert len(problems) == 1
            assert problems[0].startswith("#/properties/x/default: ")
            assert fragment in problems[0]
        for rewrite in (
            lambda: normalize(schema, STRICT),
            lambda: normalize(schema, OPEN),
            lambda: compact_json(schema),
            lambda: materialize(schema, Path(tempfile.gettempdir())),
        ):
            with pytest.raises(SchemaDialectError) as caught:
                rewrite()
            assert caught.value.problems == problems
            assert fragment in str(caught.value)

    def test_non_string_key(self) -> None:
        schema: dict[Any, Any] = {"type": "object", "properties": {1: {"type": "string"}}}
        assert dialect_problems(schema, OPEN) == [
            "#/properties: key 1 is not a string, which JSON requires"
        ]
        with pytest.raises(SchemaDialectError):
            normalize(schema, STRICT)

    def test_cycle(self) -> None:
        schema: dict[str, Any] = {"type": "object", "properties": {}}
        schema["properties"]["self"] = schema
        (problem,) = dialect_problems(schema, STRICT)
        assert problem.startswith("#/properties/self: the schema contains itself")
        with pytest.raises(SchemaDialectError):
            normalize(schema, OPEN)

    def test_deep_nesting(self) -> None:
        schema: dict[str, Any] = {"type": "object", "properties": {}}
        node = schema
        for _ in range(5000):
            child: dict[str, Any] = {"type": "object", "properties": {}}
            node["properties"]["x"] = child
            node = child
        (problem,) = dialect_problems(schema, OPEN)
        assert "nests deeper than" in problem
        with pytest.raises(SchemaDialectError):
            compact_json(schema)

    @pytest.mark.parametrize("root", [[], "text", None, 3])
    def test_root_that_is_not_an_object(self, root: Any) -> None:
        assert dialect_problems(root, STRICT)[0].startswith("#: the schema must be a JSON object")
        with pytest.raises(SchemaDialectError):
            normalize(root, STRICT)

    def test_tuples_and_mappings_are_fine(self) -> None:
        from types import MappingProxyType

        schema = MappingProxyType(
            {"type": "object", "properties": {"e": {"enum": ("a", "b")}}, "required": ("e",)}
        )
        assert json.loads(compact_json(schema))["properties"]["e"]["enum"] == ["a", "b"]


class TestNormalizeStrict:
    def test_pydantic_style_schema(self) -> None:
        result = normalize(PYDANTIC_LIKE, STRICT)
        assert result == {
            "title": "Report",
            "type": "object",
            "properties": {
                "summary": {"type": "string", "description": "One line.", "title": "Summary"},
                "score": {"type": ["integer", "null"], "default": 0, "examples": [1, 2]},
                "author": {
                    "description": "Who wrote it.",
                    "anyOf": [{"$ref": "#/$defs/Person"}, {"type": "null"}],
                },
                "tags": {"type": ["array", "null"], "items": {"type": "string"}},
            },
            "required": ["summary", "score", "author", "tags"],
            "$defs": {
                "Person": {
                    "type": "object",
                    "title": "Person",
                    "properties": {
                        "name": {"type": "string"},
                        "email": {"type": ["string", "null"]},
                    },
                    "required": ["name", "email"],
                    "additionalProperties": False,
                }
            },
            "additionalProperties": False,
        }
        assert dialect_problems(result, STRICT) == []

    def test_required_ref_with_siblings_gets_wrapper_only(self) -> None:
        schema = {
            "type": "object",
            "properties": {"r": {"$ref": "#/$defs/A", "title": "R", "examples": [{}]}},
            "required": ["r"],
            "$defs": {"A": {"type": "object", "properties": {}}},
        }
        result = normalize(schema, STRICT)
        assert result["properties"]["r"] == {
            "title": "R",
            "examples": [{}],
            "anyOf": [{"$ref": "#/$defs/A"}],
        }
        assert dialect_problems(result, STRICT) == []

    @pytest.mark.parametrize(
        ("optional", "nullable"),
        [
            ({"type": "string"}, {"type": ["string", "null"]}),
            ({"type": ["string", "integer"]}, {"type": ["string", "integer", "null"]}),
            ({"type": ["string", "null"]}, {"type": ["string", "null"]}),
            (
                {"type": "string", "enum": ["a", "b"]},
                {"type": ["string", "null"], "enum": ["a", "b", None]},
            ),
            ({"enum": ["a", 1]}, {"enum": ["a", 1, None]}),
            ({"$ref": "#/$defs/A"}, {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}),
            (
                {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
            ),
            (
                {"anyOf": [{"type": "string"}, {"type": "null"}]},
                {"anyOf": [{"type": "string"}, {"type": "null"}]},
            ),
            (
                {"const": "x", "description": "d"},
                {"description": "d", "anyOf": [{"const": "x"}, {"type": "null"}]},
            ),
            ({"description": "anything"}, {"description": "anything"}),
            (True, True),
        ],
    )
    def test_optional_properties_become_required_and_nullable(
        self, optional: Any, nullable: Any
    ) -> None:
        schema = {
            "type": "object",
            "properties": {"p": optional},
            "$defs": {"A": {"type": "object", "properties": {}}},
        }
        result = normalize(schema, STRICT)
        assert result["properties"]["p"] == nullable
        assert result["required"] == ["p"]
        assert dialect_problems(result, STRICT) == []

    def test_closes_objects_everywhere(self) -> None:
        schema = {
            "type": "object",
            "properties": {
                "list": {"type": "array", "items": {"type": "object"}},
                "open": {"type": "object", "additionalProperties": True, "properties": {"a": {}}},
            },
            "required": ["list", "open"],
        }
        result = normalize(schema, STRICT)
        assert result["properties"]["list"]["items"] == {
            "type": "object",
            "properties": {},
            "additionalProperties": False,
            "required": [],
        }
        assert result["properties"]["open"]["additionalProperties"] is False
        assert dialect_problems(result, STRICT) == []

    def test_open_map_stays_open_and_is_still_reported(self) -> None:
        counts = {"type": "object", "additionalProperties": {"type": "integer"}}
        schema = {"type": "object", "properties": {"counts": counts}, "required": ["counts"]}
        result = normalize(schema, STRICT)
        assert result["properties"]["counts"] == counts
        (problem,) = dialect_problems(result, STRICT)
        assert problem.startswith("#/properties/counts: is an open map")

    def test_drops_schema_and_id_only_under_strict(self) -> None:
        schema = {"$schema": "s", "$id": "urn:x", "type": "object", "properties": {}}
        assert "$schema" not in normalize(schema, STRICT)
        assert "$id" not in normalize(schema, STRICT)
        assert normalize(schema, OPEN)["$schema"] == "s"

    def test_one_of_is_left_for_the_caller(self) -> None:
        schema = strict_object({"u": {"oneOf": [{"type": "string"}, {"type": "integer"}]}})
        result = normalize(schema, STRICT)
        assert result["properties"]["u"] == schema["properties"]["u"]
        assert dialect_problems(result, STRICT) == [
            "#/properties/u: STRICT does not accept oneOf; use anyOf"
        ]

    def test_does_not_mutate_and_returns_a_copy(self) -> None:
        before = copy.deepcopy(PYDANTIC_LIKE)
        result = normalize(PYDANTIC_LIKE, STRICT)
        assert before == PYDANTIC_LIKE
        result["properties"]["summary"]["description"] = "changed"
        assert PYDANTIC_LIKE["properties"]["summary"]["description"] == "One line."

    def test_open_leaves_a_valid_schema_alone(self) -> None:
        result = normalize(PYDANTIC_LIKE, OPEN)
        assert result == PYDANTIC_LIKE
        assert result is not PYDANTIC_LIKE


class TestCompactJsonAndMaterialize:
    def test_compact_json_keeps_order_and_text(self) -> None:
        schema = {"type": "object", "properties": {"z": {"description": "é ☃"}, "a": {}}}
        assert compact_json(schema) == (
            '{"type":"object","properties":{"z":{"description":"é ☃"},"a":{}}}'
        )

    def test_materialize_is_content_addressed(self, tmp_path: Path) -> None:
        path = materialize(PYDANTIC_LIKE, tmp_path / "schemas")
        data = compact_json(PYDANTIC_LIKE).encode()
        assert path == tmp_path / "schemas" / f"{hashlib.sha256(data).hexdigest()}.json"
        assert path.read_bytes() == data
        assert json.loads(path.read_text()) == PYDANTIC_LIKE

    def test_materialize_is_idempotent(self, tmp_path: Path) -> None:
        first = materialize(PYDANTIC_LIKE, tmp_path)
        inode = first.stat().st_ino
        second = materialize(copy.deepcopy(PYDANTIC_LIKE), tmp_path)
        assert second == first
        assert second.stat().st_ino == inode
        assert [p.name for p in tmp_path.iterdir()] == [first.name]

    def test_materialize_repairs_a_damaged_file(self, tmp_path: Path) -> None:
        path = materialize(PYDANTIC_LIKE, tmp_path)
        path.write_text("{trunc")
        assert materialize(PYDANTIC_LIKE, tmp_path) == path
        assert json.loads(path.read_text()) == PYDANTIC_LIKE

    def test_different_schemas_different_files(self, tmp_path: Path) -> None:
        a = materialize({"type": "object"}, tmp_path)
        b = materialize({"type": "object", "properties": {}}, tmp_path)
        assert a != b

    def test_unwritable_directory_is_a_typed_error(self, tmp_path: Path) -> None:
        blocker = tmp_path / "file"
        blocker.write_text("not a directory")
        with pytest.raises(AgentShimError, match="cannot write the output schema"):
            materialize(PYDANTIC_LIKE, blocker / "schemas")

    def test_a_relative_directory_is_refused_and_nothing_is_written(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        with pytest.raises(InvalidRequestError, match="absolute"):
            materialize(PYDANTIC_LIKE, Path("relative/dir"))
        with pytest.raises(InvalidRequestError, match="absolute"):
            OutputSchema(PYDANTIC_LIKE, Path("relative/dir"))
        assert list(tmp_path.iterdir()) == []


# --- property tests --------------------------------------------------------------------------

property_names = st.text(alphabet="abxyz_/~ é", min_size=1, max_size=4)
DEF_NAMES = ("A", "B~/x")
annotations = st.fixed_dictionaries(
    {},
    optional={
        "description": st.text(max_size=6),
        "title": st.text(max_size=4),
        "examples": st.lists(st.integers(), max_size=2),
    },
)
scalar_types = st.sampled_from(["string", "integer", "number", "boolean", "null"])

leaves = st.one_of(
    st.builds(lambda t, a: {"type": t, **a}, scalar_types, annotations),
    st.builds(
        lambda values, typed, a: {**({"type": "string"} if typed else {}), "enum": values, **a},
        st.lists(st.text(max_size=3), min_size=1, max_size=3, unique=True),
        st.booleans(),
        annotations,
    ),
    st.builds(lambda v, a: {"const": v, **a}, st.integers(), annotations),
    annotations,
    st.builds(
        lambda name, a: {"$ref": "#/$defs/" + name.replace("~", "~0").replace("/", "~1"), **a},
        st.sampled_from(DEF_NAMES),
        annotations,
    ),
)


def objects(children: st.SearchStrategy[Any], *, open_maps: bool) -> st.SearchStrategy[Any]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        props = draw(st.dictionaries(property_names, children, max_size=3))
        node: dict[str, Any] = {"type": "object", **draw(annotations)}
        if props or draw(st.booleans()):
            node["properties"] = props
        if props:
            node["required"] = draw(st.lists(st.sampled_from(sorted(props)), unique=True))
        extra_choices: list[Any] = ["absent", False]
        if props or open_maps:
            extra_choices += [True, "schema"]
        extra = draw(st.sampled_from(extra_choices))
        if extra == "schema":
            node["additionalProperties"] = draw(children)
        elif extra != "absent":
            node["additionalProperties"] = extra
        if draw(st.booleans()):
            node["type"] = ["object", "null"]
        return node

    return build()


def nodes(*, open_maps: bool, depth: int = 3) -> st.SearchStrategy[Any]:
    if depth == 0:
        return leaves
    children = nodes(open_maps=open_maps, depth=depth - 1)
    arrays = st.builds(
        lambda items, a: {"type": "array", "items": items, **a}, children, annotations
    )
    any_ofs = st.builds(
        lambda branches, a: {"anyOf": branches, **a},
        st.lists(children, min_size=1, max_size=2),
        annotations,
    )
    return leaves | arrays | any_ofs | objects(children, open_maps=open_maps)


NODES = {flag: nodes(open_maps=flag) for flag in (False, True)}


@st.composite
def schemas(draw: st.DrawFn, *, open_maps: bool) -> dict[str, Any]:
    node = NODES[open_maps]
    root = draw(objects(node, open_maps=open_maps))
    root["type"] = "object"
    if not root.get("properties") and root.get("additionalProperties") not in (None, False):
        root["properties"] = {"p": draw(node)}  # the root itself is never an open map
    root["$defs"] = {name: draw(node) for name in DEF_NAMES}
    if draw(st.booleans()):
        root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return root


def all_descriptions(node: Any) -> list[str]:
    """Every description, except inside additionalProperties (closing an object drops those)."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                found.append(value)
            elif key != "additionalProperties":
                found.extend(all_descriptions(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(all_descriptions(value))
    return found


json_keys = st.sampled_from(
    ["type", "properties", "items", "anyOf", "oneOf", "$ref", "$defs", "required", "enum"]
) | st.text(max_size=3)
json_objects = finite_json(
    texts=st.text(max_size=4), keys=json_keys, dict_size=4, max_leaves=15
).filter(lambda v: isinstance(v, dict))


# Generating nested schemas is the slow part; keep the example count modest and do not let a
# busy machine fail the run on generation speed.
schema_settings = settings(max_examples=60)


class TestSchemaProperties:
    @schema_settings
    @given(schemas(open_maps=False))
    def test_normalized_closed_schemas_have_no_strict_problems(
        self, schema: dict[str, Any]
    ) -> None:
        assert dialect_problems(normalize(schema, STRICT), STRICT) == []

    @schema_settings
    @given(schemas(open_maps=True))
    def test_only_open_maps_remain_after_normalize(self, schema: dict[str, Any]) -> None:
        for problem in dialect_problems(normalize(schema, STRICT), STRICT):
            assert "is an open map" in problem

    @schema_settings
    @given(schemas(open_maps=True))
    def test_generated_schemas_are_open_and_normalize_keeps_them(
        self, schema: dict[str, Any]
    ) -> None:
        assert dialect_problems(schema, OPEN) == []
        assert normalize(schema, OPEN) == schema

    @schema_settings
    @given(schemas(open_maps=True))
    def test_normalize_is_idempotent_and_keeps_descriptions(self, schema: dict[str, Any]) -> None:
        once = normalize(schema, STRICT)
        assert normalize(once, STRICT) == once
        assert sorted(all_descriptions(once)) == sorted(all_descriptions(schema))

    @schema_settings
    @given(schemas(open_maps=True) | json_objects, st.sampled_from([STRICT, OPEN]))
    def test_check_and_normalize_never_mutate(
        self, schema: dict[str, Any], dialect: SchemaDialect
    ) -> None:
        before = copy.deepcopy(schema)
        dialect_problems(schema, dialect)
        assert schema == before
        normalize(schema, dialect)
        assert schema == before

    @schema_settings
    @given(json_objects, st.sampled_from([STRICT, OPEN]))
    def test_arbitrary_json_never_raises(
        self, schema: dict[str, Any], dialect: SchemaDialect
    ) -> None:
        problems = dialect_problems(schema, dialect)
        assert all(p.startswith("#") for p in problems)
        normalized = normalize(schema, dialect)
        dialect_problems(normalized, dialect)
        assert json.loads(compact_json(normalized)) == normalized
