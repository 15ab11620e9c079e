"""Build a small value that satisfies a JSON Schema: built-in side-request answers, the stand-in.

What it honours: ``$ref`` (to ``#/...`` in the same schema), ``const``, ``enum``, ``anyOf`` /
``oneOf`` (the first branch), ``allOf`` (merged), a type or a list of types (the first that is
not ``null``), an object's required properties (all of them when none is marked required),
``minItems`` of an array (filled with examples of ``items``), ``minLength`` / ``maxLength``
and the common formats of a string, and ``minimum`` / ``maximum`` (also exclusive) of a
number. ``pattern`` and ``multipleOf`` are not honoured.
"""

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

#: An example of each string ``format`` a schema commonly asks for.
_FORMATS: Mapping[str, str] = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "email": "scripted@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "127.0.0.1",
    "hostname": "example.com",
}

_JSON_TYPES: Mapping[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}

_MAX_DEPTH = 8


def example_for(
    schema: Mapping[str, object], *, depth: int = 0, root: Mapping[str, object] | None = None
) -> JsonValue:
    """Return a value of the schema's type: required object fields filled, enums' first value.

    Fields with a known meaning get values that keep the asking CLI on its simple path
    (a title, "the user speaks next", the simplest routing score) when the schema lets them.
    ``root`` is the document a ``$ref`` points into (default: ``schema`` itself).
    """
    root = schema if root is None else root
    if depth > _MAX_DEPTH:
        return None
    ref = as_str(schema.get("$ref"))
    if ref:
        return example_for(_resolved(root, ref), depth=depth + 1, root=root)
    if "const" in schema:
        return _plain(schema["const"])
    choices = as_list(schema.get("enum"))
    if choices:
        return _plain(choices[0])
    for key in ("anyOf", "oneOf"):
        options = as_list(schema.get(key))
        if options:
            return example_for(as_object(options[0]), depth=depth + 1, root=root)
    parts = as_list(schema.get("allOf"))
    if parts:
        return example_for(_merged(schema, parts), depth=depth + 1, root=root)
    raw_kind = schema.get("type")
    # A list of types ("string", "null"): the first non-null one makes the best example.
    kinds = [as_str(k) for k in as_list(raw_kind) if as_str(k) != "null"] or [as_str(raw_kind)]
    kind = kinds[0].lower()
    properties = as_object(schema.get("properties"))
    if kind == "object" or (not kind and properties):
        return _object_example(schema, properties, depth, root)
    if kind == "array":
        count = _bound(schema.get("minItems")) or 0
        items = as_object(schema.get("items"))
        return [example_for(items, depth=depth + 1, root=root) for _ in range(int(count))]
    if kind == "string":
        return _string_example(schema)
    if kind in ("integer", "number"):
        return _number_example(schema, integer=kind == "integer")
    if kind == "boolean":
        return False
    return None


def _resolved(root: Mapping[str, object], ref: str) -> Mapping[str, object]:
    """The schema a local ``$ref`` (``#/$defs/Name``) names; empty when it names none."""
    if not ref.startswith("#"):
        return {}
    node: Mapping[str, object] = root
    for part in ref[1:].split("/"):
        if part:
            node = as_object(node.get(part.replace("~1", "/").replace("~0", "~")))
    return node


def _merged(schema: Mapping[str, object], parts: object) -> dict[str, object]:
    """``schema`` with its ``allOf`` parts folded in: properties and required added up."""
    merged: dict[str, object] = {k: v for k, v in schema.items() if k != "allOf"}
    properties = dict(as_object(merged.get("properties")))
    required = [as_str(name) for name in as_list(merged.get("required"))]
    for part in as_list(parts):
        part_schema = as_object(part)
        for key, value in part_schema.items():
            if key not in ("properties", "required"):
                merged.setdefault(key, value)
        properties.update(as_object(part_schema.get("properties")))
        required += [as_str(name) for name in as_list(part_schema.get("required"))]
    if properties:
        merged["properties"] = properties
    if required:
        merged["required"] = list(dict.fromkeys(required))
    return merged


def _bound(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _string_example(schema: Mapping[str, object]) -> str:
    text = _FORMATS.get(as_str(schema.get("format")), "scripted")
    shortest = int(_bound(schema.get("minLength")) or 0)
    longest = _bound(schema.get("maxLength"))
    if len(text) < shortest:
        text += "x" * (shortest - len(text))
    if longest is not None and len(text) > longest:
        text = text[: int(longest)]
    return text


def _number_example(schema: Mapping[str, object], *, integer: bool) -> int | float:
    step = 1 if integer else 0.5
    low, high = _bound(schema.get("minimum")), _bound(schema.get("maximum"))
    above, below = _bound(schema.get("exclusiveMinimum")), _bound(schema.get("exclusiveMaximum"))
    value = 1.0
    if low is not None and value < low:
        value = low
    if above is not None and value <= above:
        value = above + step
    if high is not None and value > high:
        value = high
    if below is not None and value >= below:
        value = below - step
    if integer:
        # A bound that is not whole rounds inward.
        whole = float(int(value))
        if (low is not None and whole < low) or (above is not None and whole <= above):
            whole += 1
        return int(whole)
    return value


#: The keywords a field's schema may have for a known value to be used: no other constraint.
_PLAIN_KEYWORDS = frozenset({"type", "enum", "description", "title"})


def _fits(value: JsonValue, schema: Mapping[str, object]) -> bool:
    """Whether a known field's value is what the field's schema asks for (type, enum)."""
    if not set(schema) <= _PLAIN_KEYWORDS:
        return False
    choices = as_list(schema.get("enum"))
    if choices:
        return value in choices
    kinds = [as_str(k) for k in as_list(schema.get("type"))] or [as_str(schema.get("type"))]
    known = [_JSON_TYPES[kind] for kind in kinds if kind in _JSON_TYPES]
    if not known and not any(kinds):
        return True  # the schema says nothing about the field's type
    return any(
        isinstance(value, types) and (bool in types or not isinstance(value, bool))
        for types in known
    )


def _object_example(
    schema: Mapping[str, object],
    properties: Mapping[str, object],
    depth: int,
    root: Mapping[str, object],
) -> JsonValue:
    required = [as_str(name) for name in as_list(schema.get("required"))]
    names = [name for name in required if name] or list(properties)
    value: dict[str, JsonValue] = {}
    for name in names:
        field_schema = as_object(properties.get(name))
        known = _KNOWN_FIELDS.get(name)
        if name in _KNOWN_FIELDS and _fits(known, field_schema):
            value[name] = known
        else:
            value[name] = example_for(field_schema, depth=depth + 1, root=root)
    return value


def _plain(value: object) -> JsonValue:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return None
