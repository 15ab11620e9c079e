"""Build a small value that satisfies a JSON Schema, for built-in side-request answers."""

from __future__ import annotations

from collections.abc import Mapping

from ._json import JsonValue, as_list, as_object, as_str

__all__ = ["example_for"]

#: Values for fields whose meaning matters to the CLI that asked (keyed by property name).
_KNOWN_FIELDS: Mapping[str, JsonValue] = {
    "title": "Scripted session",
    "isNewTopic": False,
    "next_speaker": "user",
    "complexity_score": 1,
    "complexity_reasoning": "Scripted routing answer.",
    "reasoning": "Scripted answer.",
    "model_choice": "flash",
}

_MAX_DEPTH = 8


def example_for(schema: Mapping[str, object], *, depth: int = 0) -> JsonValue:
    """Return a value of the schema's type: required object fields filled, enums' first value.

    Fields with a known meaning get values that keep the asking CLI on its simple path
    (a title, "the user speaks next", the simplest routing score).
    """
    if depth > _MAX_DEPTH:
        return None
    if "const" in schema:
        return _plain(schema["const"])
    choices = as_list(schema.get("enum"))
    if choices:
        return _plain(choices[0])
    for key in ("anyOf", "oneOf", "allOf"):
        options = as_list(schema.get(key))
        if options:
            return example_for(as_object(options[0]), depth=depth + 1)
    raw_kind = schema.get("type")
    # A list of types ("string", "null"): the first non-null one makes the best example.
    kinds = [as_str(k) for k in as_list(raw_kind) if as_str(k) != "null"] or [as_str(raw_kind)]
    kind = kinds[0].lower()
    properties = as_object(schema.get("properties"))
    if kind == "object" or (not kind and properties):
        return _object_example(schema, properties, depth)
    if kind == "array":
        return []
    if kind == "string":
        return "scripted"
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return False
    return None


def _object_example(
    schema: Mapping[str, object], properties: Mapping[str, object], depth: int
) -> JsonValue:
    required = [as_str(name) for name in as_list(schema.get("required"))]
    names = [name for name in required if name] or list(properties)
    value: dict[str, JsonValue] = {}
    for name in names:
        if name in _KNOWN_FIELDS:
            value[name] = _KNOWN_FIELDS[name]
        else:
            value[name] = example_for(as_object(properties.get(name)), depth=depth + 1)
    return value


def _plain(value: object) -> JsonValue:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return None
