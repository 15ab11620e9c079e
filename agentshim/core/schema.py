"""Output schemas: check them against a provider's dialect, fix them up, write them to disk.

Two dialects (:class:`~agentshim.core.profile.SchemaDialect`):

STRICT (Codex ``--output-schema``) is OpenAI's strict structured outputs: the root is an object
and not an ``anyOf``; every object, nullable ones included, declares ``properties`` (``{}`` for
none) and sets ``additionalProperties: false``; ``required`` lists exactly the keys of
``properties`` (an optional value is required and nullable instead); ``oneOf``, ``$schema``,
``$id`` and keywords beside a ``$ref`` are rejected.

OPEN (Claude Code ``--json-schema``) keeps optional properties and accepts schema-valued, true
or absent ``additionalProperties``, ``oneOf``, ``$schema``/``$id`` and ``$ref`` siblings.

Both need the root to be an object schema, every ``$ref`` to resolve inside the document, and
the schema to be expressible as JSON. The checks walk every subschema position: ``properties``,
``items``, ``prefixItems``, ``anyOf``, ``oneOf``, ``allOf``, ``not``, ``$defs``,
``definitions`` and a schema-valued ``additionalProperties``. A ``$ref`` is never followed: its
target is checked where it is defined.

:func:`dialect_problems` only reports (it is pure and never mutates its input);
:func:`normalize` rewrites a copy. Problems name the JSON pointer of the node they are about,
as ``#/properties/name``.
"""

from __future__ import annotations

import hashlib
import json
import math
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from agentshim.core._files import atomic_write
from agentshim.core.errors import AgentShimError, InvalidRequestError, SchemaDialectError
from agentshim.core.jsonvalues import json_kind
from agentshim.core.profile import SchemaDialect

__all__ = [
    "MAX_SCHEMA_DEPTH",
    "compact_json",
    "dialect_problems",
    "materialize",
    "normalize",
]

#: How deeply a schema may nest (counting every object and array) before it is refused.
MAX_SCHEMA_DEPTH = 200

# Keywords that say something about a value without constraining it; they stay on the outer
# node when normalize wraps a schema.
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "examples",
        "default",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
# Keywords that hold named subschemas, and keywords that hold lists of subschemas.
_SCHEMA_MAPS = ("properties", "$defs", "definitions")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
# Keywords that may sit beside a $ref without counting as its siblings: they hold definitions.
_REF_NEIGHBOURS = frozenset({"$ref", "$defs", "definitions"})
_NULL_SCHEMA: dict[str, Any] = {"type": "null"}


@dataclass(frozen=True, slots=True)
class _Dialect:
    """The rules of one dialect, shared by the check and by normalize."""

    name: str
    closed_objects: bool
    """Every object must declare properties and set additionalProperties to false."""
    all_required: bool
    """``required`` must list exactly the keys of ``properties``."""
    rejected_keywords: tuple[str, ...]
    """Keywords the dialect refuses anywhere."""
    dropped_keywords: tuple[str, ...]
    """The rejected keywords that are only metadata, so normalize may drop them."""
    ref_siblings: bool
    """Whether keywords may sit beside a ``$ref``."""
    root_any_of: bool
    """Whether the root may be an ``anyOf``."""


_STRICT = _Dialect(
    name="STRICT",
    closed_objects=True,
    all_required=True,
    rejected_keywords=("$schema", "$id", "oneOf"),
    dropped_keywords=("$schema", "$id"),
    ref_siblings=False,
    root_any_of=False,
)
_OPEN = _Dialect(
    name="OPEN",
    closed_objects=False,
    all_required=False,
    rejected_keywords=(),
    dropped_keywords=(),
    ref_siblings=True,
    root_any_of=True,
)


def _rules(dialect: SchemaDialect) -> _Dialect:
    return _STRICT if dialect is SchemaDialect.STRICT else _OPEN


def _as_dict(value: object) -> dict[str, Any] | None:
    """``value`` as a JSON object, or None; plain copies only ever have string keys."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def _as_list(value: object) -> list[Any] | None:
    """``value`` as a JSON array, or None."""
    return cast("list[Any]", value) if isinstance(value, list) else None


def _strings(value: object) -> list[str] | None:
    """``value`` as an array of strings, or None if it is anything else."""
    items = _as_list(value)
    if items is None or not all(isinstance(item, str) for item in items):
        return None
    return cast("list[str]", items)


# --- JSON pointers ---------------------------------------------------------------------------


def _pointer(path: Sequence[str | int]) -> str:
    return "#" + "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _resolve_ref(root: Any, ref: str) -> tuple[bool, Any]:
    """Follow a same-document ``$ref``; (False, None) when it leads nowhere."""
    if not ref.startswith("#"):
        return False, None
    fragment = urllib.parse.unquote(ref[1:])
    if fragment == "":
        return True, root
    if not fragment.startswith("/"):
        return False, None  # a plain-name anchor; agentshim does not resolve those
    node: Any = root
    for token in fragment[1:].split("/"):
        key = token.replace("~1", "/").replace("~0", "~")
        as_dict, as_list = _as_dict(node), _as_list(node)
        if as_dict is not None and key in as_dict:
            node = as_dict[key]
        elif as_list is not None and key.isdigit() and int(key) < len(as_list):
            node = as_list[int(key)]
        else:
            return False, None
    return True, node


# --- plain JSON copies -----------------------------------------------------------------------


def _plain_copy(value: Any, problems: list[str]) -> Any:
    """A deep copy made of dicts, lists and JSON scalars; what JSON cannot say goes to problems."""
    return _copy(value, [], problems, set())


def _copy(value: Any, path: list[str | int], problems: list[str], active: set[int]) -> Any:
    marker = id(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        if not _encodable(value):
            problems.append(f"{_pointer(path)}: a string with a lone surrogate is not valid JSON")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            problems.append(f"{_pointer(path)}: {value!r} cannot be written as JSON")
        return value
    if not isinstance(value, Mapping | list | tuple):
        problems.append(
            f"{_pointer(path)}: a {type(value).__name__} cannot be written as JSON; "
            "use objects, arrays, strings, numbers, booleans and null"
        )
        return None
    if len(path) >= MAX_SCHEMA_DEPTH:
        problems.append(f"{_pointer(path)}: the schema nests deeper than {MAX_SCHEMA_DEPTH} levels")
        return None
    if marker in active:
        problems.append(f"{_pointer(path)}: the schema contains itself, which JSON cannot say")
        return None
    active.add(marker)
    try:
        if isinstance(value, Mapping):
            result: dict[str, Any] = {}
            mapping = cast("Mapping[object, Any]", value)
            for key, item in mapping.items():
                if not isinstance(key, str):
                    problems.append(
                        f"{_pointer(path)}: key {key!r} is not a string, which JSON requires"
                    )
                    continue
                if not _encodable(key):
                    problems.append(f"{_pointer(path)}: key {key!r} has a lone surrogate")
                path.append(key)
                result[key] = _copy(item, path, problems, active)
                path.pop()
            return result
        items: list[Any] = []
        for index, item in enumerate(cast("Sequence[Any]", value)):
            path.append(index)
            items.append(_copy(item, path, problems, active))
            path.pop()
        return items
    finally:
        active.discard(marker)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _expressible_copy(schema: Any) -> dict[str, Any]:
    """A plain copy of ``schema``; SchemaDialectError if JSON cannot express it or it is no object."""
    problems: list[str] = []
    plain = _plain_copy(schema, problems)
    if problems:
        raise SchemaDialectError(
            problems,
            "the output schema cannot be written as JSON: "
            + "; ".join(problems)
            + " (build it from dicts, lists, strings, finite numbers, booleans and None)",
        )
    root = _as_dict(plain)
    if root is None:
        raise SchemaDialectError([f"#: the schema must be a JSON object, not {json_kind(plain)}"])
    return root


# --- shared structure ------------------------------------------------------------------------


def _types(node: dict[str, Any]) -> list[str]:
    declared = node.get("type")
    if isinstance(declared, str):
        return [declared]
    return [t for t in _as_list(declared) or [] if isinstance(t, str)]


def _is_object(node: dict[str, Any]) -> bool:
    """Whether a node describes an object: its type says so, or it has properties and no type."""
    if "type" in node:
        return "object" in _types(node)
    return "properties" in node


def _is_open_map(node: dict[str, Any]) -> bool:
    """An object with no properties whose additionalProperties is a schema or true."""
    extra = node.get("additionalProperties")
    has_extra = extra is True or isinstance(extra, dict)
    return _is_object(node) and has_extra and not node.get("properties")


def _subschemas(node: dict[str, Any]) -> list[tuple[tuple[str | int, ...], Any]]:
    """Every (relative path, value) of a subschema position in ``node``."""
    found: list[tuple[tuple[str | int, ...], Any]] = []
    for keyword in _SCHEMA_MAPS:
        for name, member in (_as_dict(node.get(keyword)) or {}).items():
            found.append(((keyword, name), member))
    for keyword in _SCHEMA_LISTS:
        for index, member in enumerate(_as_list(node.get(keyword)) or []):
            found.append(((keyword, index), member))
    items = node.get("items")
    item_list = _as_list(items)
    if item_list is not None:
        for index, member in enumerate(item_list):
            found.append((("items", index), member))
    elif "items" in node:
        found.append((("items",), items))
    for keyword in ("additionalProperties", "not"):
        if isinstance(node.get(keyword), dict):
            found.append(((keyword,), node[keyword]))
    return found


# --- checking --------------------------------------------------------------------------------


def dialect_problems(schema: Mapping[str, Any], dialect: SchemaDialect) -> list[str]:
    """Every way ``schema`` breaks ``dialect``; empty when a provider can take it as it is.

    Pure: the schema is read, never changed, and nothing is raised for a malformed one. Each
    problem names the JSON pointer of the node it is about, e.g.
    ``#/properties/tags: an object must set additionalProperties to false (it is absent)``.
    Problems that mention an *open map* are objects whose keys are not known in advance; STRICT
    cannot express those and :func:`normalize` deliberately leaves them open.
    """
    problems: list[str] = []
    plain = _plain_copy(schema, problems)
    if problems:
        return problems
    rules = _rules(dialect)
    root = _as_dict(plain)
    if root is None:
        return [f"#: the schema must be a JSON object, not {json_kind(plain)}"]
    if root.get("type") != "object":
        problems.append('#: the root must be an object schema ("type": "object")')
    if not rules.root_any_of and "anyOf" in root:
        problems.append(f"#: the root must not be an anyOf under {rules.name}")
    _check(root, root, [], rules, problems)
    return problems


def _check(
    node: Any, root: dict[str, Any], path: list[str | int], rules: _Dialect, problems: list[str]
) -> None:
    where = _pointer(path)
    if isinstance(node, bool):
        return
    schema = _as_dict(node)
    if schema is None:
        problems.append(f"{where}: a schema must be an object or a boolean, not {json_kind(node)}")
        return
    _check_shapes(schema, where, problems)
    for keyword in rules.rejected_keywords:
        if keyword in schema:
            advice = " (normalize drops it)" if keyword in rules.dropped_keywords else ""
            if keyword == "oneOf":
                advice = "; use anyOf"
            problems.append(f"{where}: {rules.name} does not accept {keyword}{advice}")
    if "$ref" in schema:
        _check_ref(schema, root, where, rules, problems)
    if rules.closed_objects and _is_object(schema):
        _check_closed_object(schema, where, rules, problems)
    for relative, member in _subschemas(schema):
        path.extend(relative)
        _check(member, root, path, rules, problems)
        del path[len(path) - len(relative) :]


def _check_shapes(schema: dict[str, Any], where: str, problems: list[str]) -> None:
    """Keywords whose value has the wrong JSON type for what they mean."""
    for keyword in _SCHEMA_MAPS:
        if keyword in schema and not isinstance(schema[keyword], dict):
            problems.append(f"{where}: {keyword} must be an object of schemas")
    for keyword in ("anyOf", "oneOf", "allOf"):
        if keyword in schema and not (isinstance(schema[keyword], list) and schema[keyword]):
            problems.append(f"{where}: {keyword} must be a non-empty array of schemas")
    if "required" in schema and _strings(schema["required"]) is None:
        problems.append(f"{where}: required must be an array of property names")
    if "type" in schema:
        declared = schema["type"]
        if not isinstance(declared, str) and _strings(declared) is None:
            problems.append(f"{where}: type must be a string or an array of strings")
    extra = schema.get("additionalProperties", True)
    if not isinstance(extra, bool | dict):
        problems.append(f"{where}: additionalProperties must be a boolean or a schema")


def _check_ref(
    schema: dict[str, Any], root: dict[str, Any], where: str, rules: _Dialect, problems: list[str]
) -> None:
    ref = schema["$ref"]
    if not isinstance(ref, str):
        problems.append(f"{where}: $ref must be a string")
        return
    found, target = _resolve_ref(root, ref)
    if not found:
        problems.append(f"{where}: $ref {ref!r} does not resolve inside the document")
    elif not isinstance(target, bool | dict):
        problems.append(f"{where}: $ref {ref!r} points at {json_kind(target)}, not a schema")
    siblings = sorted(k for k in schema if k not in _REF_NEIGHBOURS)
    if siblings and not rules.ref_siblings:
        problems.append(
            f"{where}: {rules.name} does not accept keywords beside a $ref "
            f"({', '.join(siblings)}); normalize moves them onto an anyOf wrapper"
        )


def _check_closed_object(
    schema: dict[str, Any], where: str, rules: _Dialect, problems: list[str]
) -> None:
    if _is_open_map(schema):
        extra = schema["additionalProperties"]
        what = "true" if extra is True else "a schema"
        problems.append(
            f"{where}: is an open map (additionalProperties is {what}, no properties), "
            f"which {rules.name} cannot express; give it fixed properties"
        )
        return
    properties = _as_dict(schema.get("properties"))
    if properties is None:
        problems.append(f"{where}: an object must declare properties (use {{}} for none)")
        properties = {}
    extra = schema.get("additionalProperties", "absent")
    if extra is not False:
        shown = "absent" if extra == "absent" else "true" if extra is True else "a schema"
        problems.append(
            f"{where}: an object must set additionalProperties to false (it is {shown})"
        )
    required = _strings(schema.get("required", []))
    if rules.all_required and required is not None:
        listed = set(required)
        missing = [k for k in properties if k not in listed]
        unknown = sorted(k for k in listed if k not in properties)
        if missing or unknown:
            parts: list[str] = []
            if missing:
                parts.append("not required: " + ", ".join(missing))
            if unknown:
                parts.append("not a property: " + ", ".join(unknown))
            problems.append(
                f"{where}: required must list exactly the keys of properties "
                f"({'; '.join(parts)}); make optional values required and nullable"
            )


# --- normalizing -----------------------------------------------------------------------------


def normalize(schema: Mapping[str, Any], dialect: SchemaDialect) -> dict[str, Any]:
    """A copy of ``schema`` rewritten to fit ``dialect`` where that keeps its meaning.

    ``schema`` itself is never changed. Titles, descriptions, examples and defaults stay on
    every node. Under OPEN a valid schema comes back as it was. Under STRICT:

    - ``$schema`` and ``$id`` are dropped;
    - keywords beside a ``$ref`` move onto a wrapper: ``{"description": d, "anyOf":
      [{"$ref": r}]}``;
    - every object gets ``properties`` (``{}`` if it had none) and ``additionalProperties:
      false``, and ``required`` becomes every property, with the ones that were optional made
      nullable (``"type": ["string", "null"]``, ``null`` added to an ``enum``, or an ``anyOf``
      with ``{"type": "null"}``);
    - an open map (``additionalProperties`` a schema or true, and no properties) stays open,
      since closing it would change what the schema accepts; :func:`dialect_problems` still
      reports it, so ``dialect_problems(normalize(s, d), d)`` tells whether ``s`` can go native.

    ``oneOf`` is left alone (turning it into ``anyOf`` would change its meaning), as are a root
    that is not an object and a ``$ref`` that leads nowhere: normalize cannot fix those.

    Raises:
        SchemaDialectError: the schema is not a JSON object or holds something JSON cannot
            express (NaN, a non-string key, a set, an arbitrary object, a cycle).
    """
    plain = _expressible_copy(schema)
    _normalize_node(plain, _rules(dialect))
    return plain


def _normalize_node(node: Any, rules: _Dialect) -> Any:
    """Rewrite one node (a fresh plain copy, so it may be changed in place) for ``rules``."""
    schema = _as_dict(node)
    if schema is None:
        return node
    for keyword in rules.dropped_keywords:
        schema.pop(keyword, None)
    for relative, member in _subschemas(schema):
        _replace(schema, relative, _normalize_node(member, rules))
    if not rules.ref_siblings and "$ref" in schema and "anyOf" not in schema:
        siblings = [k for k in schema if k not in _REF_NEIGHBOURS]
        if siblings:
            ref = schema.pop("$ref")
            schema["anyOf"] = [{"$ref": ref}]
    if rules.closed_objects and _is_object(schema) and not _is_open_map(schema):
        _close_object(schema, rules)
    return schema


def _replace(schema: dict[str, Any], relative: tuple[str | int, ...], value: Any) -> None:
    container: Any = schema
    for part in relative[:-1]:
        container = container[part]
    container[relative[-1]] = value


def _close_object(schema: dict[str, Any], rules: _Dialect) -> None:
    declared: object = schema.setdefault("properties", {})
    props = _as_dict(declared)
    if props is None:
        return  # malformed; dialect_problems reports it, and guessing would lose what it says
    schema["additionalProperties"] = False
    if not rules.all_required:
        return
    listed = set(_strings(schema.get("required")) or [])
    for name, member in props.items():
        if name not in listed:
            props[name] = _nullable(member)
    schema["required"] = list(props)


def _nullable(member: Any) -> Any:
    """``member`` widened to also accept null."""
    schema = _as_dict(member)
    if schema is None:
        return member  # true accepts null already; false stays impossible on purpose
    if "$ref" in schema:
        return _wrap_nullable(schema)
    if "type" in schema and "const" not in schema:
        types = _types(schema)
        if "null" not in types:
            declared = schema["type"]
            schema["type"] = [*types, "null"] if isinstance(declared, list) else [declared, "null"]
        _add_null_to_enum(schema)
        return schema
    any_of = _as_list(schema.get("anyOf"))
    if any_of is not None and "type" not in schema:
        if not any(_accepts_null(branch) for branch in any_of):
            any_of.append(dict(_NULL_SCHEMA))
        return schema
    if "enum" in schema and "const" not in schema:
        _add_null_to_enum(schema)
        return schema
    if all(key in _ANNOTATIONS for key in schema):
        return schema  # an unconstrained schema accepts null already
    return _wrap_nullable(schema)


def _add_null_to_enum(schema: dict[str, Any]) -> None:
    enum = _as_list(schema.get("enum"))
    if enum is not None and None not in enum:
        schema["enum"] = [*enum, None]


def _wrap_nullable(schema: dict[str, Any]) -> dict[str, Any]:
    outer = {k: v for k, v in schema.items() if k in _ANNOTATIONS}
    inner = {k: v for k, v in schema.items() if k not in _ANNOTATIONS}
    outer["anyOf"] = [inner, dict(_NULL_SCHEMA)]
    return outer


def _accepts_null(branch: Any) -> bool:
    if branch is True:
        return True
    schema = _as_dict(branch)
    if schema is None:
        return False
    return "null" in _types(schema) or all(key in _ANNOTATIONS for key in schema)


# --- serializing -----------------------------------------------------------------------------


def compact_json(schema: Mapping[str, Any]) -> str:
    """``schema`` as compact JSON text (no spaces, key order kept, non-ASCII kept as is).

    Raises:
        SchemaDialectError: the schema holds something JSON cannot express.
    """
    plain = _expressible_copy(schema)
    return json.dumps(plain, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def materialize(schema: Mapping[str, Any], host_dir: Path) -> Path:
    """Write ``schema`` to ``host_dir/<sha256 of its compact JSON>.json`` and return the path.

    The name is the content's hash, so the same schema always lands in the same file and a
    file that already holds it is left alone; a new file is written atomically, so a reader
    never sees half a schema. ``host_dir`` is created if missing. Files are never removed.

    Raises:
        SchemaDialectError: the schema holds something JSON cannot express.
        InvalidRequestError: ``host_dir`` is not absolute.
        AgentShimError: the file could not be written (the message names the directory).
    """
    if not Path(host_dir).is_absolute():
        raise InvalidRequestError(
            "host_dir", f"must be an absolute directory, got {str(host_dir)!r}"
        )
    data = compact_json(schema).encode("utf-8")
    target = Path(host_dir) / f"{hashlib.sha256(data).hexdigest()}.json"
    try:
        if target.read_bytes() == data:
            return target
    except OSError:
        pass  # absent or unreadable: (re)write it below
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, data)
    except OSError as exc:
        raise AgentShimError(
            f"cannot write the output schema to {target.parent}: {exc.strerror or exc}; "
            "pass a writable directory for schema files"
        ) from exc
    return target
