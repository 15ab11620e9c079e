#!/usr/bin/env python3
"""Generate agentshim/providers/codex/app_server/protocol.py from the codex app-server schema.

Usage:
    generate_codex_protocol.py                    # protocol.py from the checked-in schema.json
    generate_codex_protocol.py --schema-dir DIR   # prune DIR (generate-json-schema output) first
    generate_codex_protocol.py --from-cli [--codex PATH]
                                                  # export the installed CLI's schema, then prune
    generate_codex_protocol.py --check            # exit 1 when protocol.py is out of date

Two steps. Pruning reads the bundle ``codex app-server generate-json-schema --out DIR`` writes
(``codex_app_server_protocol.schemas.json``), keeps the roots ``codex_protocol/allowlist.json``
names (the client requests and their responses, the server notifications and requests handled)
and everything they reference, flattens the ``v2`` namespace into one, and writes
``codex_protocol/schema.json`` with the CLI version. Emitting reads that pruned schema and
writes ``protocol.py``: frozen dataclasses, str enums and tagged unions over the hand-written
runtime ``_wire.py``. A type reachable from anything the server sends is tolerant (unknown keys
kept, an unlisted enum value kept as str, an unknown union variant kept raw); a type only the
client sends is strict.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ALLOWLIST = HERE / "codex_protocol" / "allowlist.json"
SCHEMA = HERE / "codex_protocol" / "schema.json"
OUTPUT = ROOT / "agentshim" / "providers" / "codex" / "app_server" / "protocol.py"
BUNDLE = "codex_app_server_protocol.schemas.json"
_REF = re.compile(r"^#/definitions/(?:v2/)?([A-Za-z0-9_]+)$")

Json = Any


# -- pruning ---------------------------------------------------------------------------------


def _flatten(bundle: dict[str, Json]) -> dict[str, Json]:
    """Every definition by name, the ``v2`` namespace folded in (its names win)."""
    top = dict(bundle["definitions"])
    v2 = top.pop("v2", {})
    return {**top, **v2}


def _rewrite_refs(node: Json) -> Json:
    if isinstance(node, dict):
        out: dict[str, Json] = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                match = _REF.match(value)
                if match is None:
                    raise SystemExit(f"unsupported $ref {value!r}")
                out[key] = f"#/definitions/{match.group(1)}"
            elif key != "$schema":
                out[key] = _rewrite_refs(value)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(item) for item in node]
    return node


def _refs(node: Json) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value.rsplit("/", 1)[1])
            else:
                found |= _refs(value)
    elif isinstance(node, list):
        for item in node:
            found |= _refs(item)
    return found


def _methods(definitions: dict[str, Json], union: str) -> dict[str, str | None]:
    methods: dict[str, str | None] = {}
    for variant in definitions[union]["oneOf"]:
        props = variant["properties"]
        method = props["method"]["enum"][0]
        params = props.get("params", {}).get("$ref")
        methods[method] = params.rsplit("/", 1)[1] if params else None
    return methods


def prune(bundle: dict[str, Json], allowlist: dict[str, Json], version: str) -> dict[str, Json]:
    """The pruned schema: the allowlist's roots, their closure, the method tables."""
    definitions = {name: _rewrite_refs(d) for name, d in _flatten(bundle).items()}
    requests = _methods(definitions, "ClientRequest")
    notes = _methods(definitions, "ClientNotification")
    server_notes = _methods(definitions, "ServerNotification")
    server_requests = _methods(definitions, "ServerRequest")

    def pick(table: dict[str, str | None], method: str, what: str) -> str | None:
        if method not in table:
            raise SystemExit(f"the allowlist names {what} {method!r}, which the schema lacks")
        return table[method]

    methods: dict[str, Json] = {
        "client_requests": {
            m: {"params": pick(requests, m, "client request"), "result": r}
            for m, r in allowlist["client_requests"].items()
        },
        "client_notifications": {
            m: pick(notes, m, "client notification") for m in allowlist["client_notifications"]
        },
        "server_notifications": {
            m: pick(server_notes, m, "server notification")
            for m in allowlist["server_notifications"]
        },
        "server_requests": {
            m: {"params": pick(server_requests, m, "server request"), "result": r}
            for m, r in allowlist["server_requests"].items()
        },
    }
    opaque = set(allowlist.get("opaque", ()))
    roots = _roots(methods)
    kept: set[str] = set()
    stack = sorted(roots | opaque)
    while stack:
        name = stack.pop()
        if name in kept:
            continue
        if name not in definitions:
            raise SystemExit(f"{name} is referenced but not defined in the schema")
        kept.add(name)
        if name not in opaque:
            stack.extend(sorted(_refs(definitions[name])))
    pruned = {name: definitions[name] for name in sorted(kept)}
    for name in opaque:
        pruned[name] = {"description": pruned[name].get("description", ""), "x-opaque": True}
    return {
        "codex_cli_version": version,
        "source": "codex app-server generate-json-schema (" + BUNDLE + "), pruned",
        "methods": methods,
        "opaque": sorted(opaque),
        "definitions": dict(sorted(pruned.items())),
    }


def _roots(methods: dict[str, Json]) -> set[str]:
    roots: set[str] = set()
    for entry in [*methods["client_requests"].values(), *methods["server_requests"].values()]:
        roots |= {entry["params"], entry["result"]} - {None}
    for table in ("client_notifications", "server_notifications"):
        roots |= {p for p in methods[table].values() if p}
    return roots


def _server_roots(methods: dict[str, Json]) -> set[str]:
    """What the server sends: notifications, its requests' params, our requests' results."""
    roots = {p for p in methods["server_notifications"].values() if p}
    roots |= {e["params"] for e in methods["server_requests"].values() if e["params"]}
    roots |= {e["result"] for e in methods["client_requests"].values() if e["result"]}
    return roots


# -- emitting --------------------------------------------------------------------------------


def snake(name: str) -> str:
    """camelCase (or anything) as a snake_case Python identifier."""
    text = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)
    text = re.sub(r"[^0-9a-zA-Z_]", "_", text).lower()
    if text[:1].isdigit():
        text = "_" + text
    return text + "_" if keyword.iskeyword(text) or text in _RESERVED else text


_RESERVED = {"extra_keys", "to_wire", "from_wire", "raw", "tag"}


def pascal(name: str) -> str:
    """Any wire name as a PascalCase identifier."""
    parts = re.split(r"[^0-9a-zA-Z]+", name)
    text = "".join(part[:1].upper() + part[1:] for part in parts if part)
    return text if not text[:1].isdigit() else "N" + text


def member(value: str) -> str:
    """An enum value as an upper-case member name."""
    name = snake(value).rstrip("_").upper() or "EMPTY"
    return name if not name[:1].isdigit() else "V_" + name


@dataclass
class Kind:
    """How one schema node is written in Python: its type, its decoder, whether it nests."""

    type: str
    decoder: str


@dataclass
class Emitter:
    definitions: dict[str, Json]
    tolerant: set[str]
    opaque: set[str]
    blocks: list[str] = field(default_factory=list[str])
    aliases: list[str] = field(default_factory=list[str])
    emitted: set[str] = field(default_factory=set[str])
    functions: list[str] = field(default_factory=list[str])
    requests: dict[str, tuple[str, str]] = field(default_factory=dict[str, tuple[str, str]])
    """Params class -> (its method, its result type), for METHOD and parse_result."""

    # -- nodes ---------------------------------------------------------------------------

    def kind(self, node: Json, owner: str, hint: str, tolerant: bool) -> Kind:
        """The Python type and decoder of ``node`` (inline types get named ``owner+hint``)."""
        if not isinstance(node, dict):
            return Kind("Any", "_w.raw")
        nullable, inner = _strip_null(node)
        base = self._kind(inner, owner, hint, tolerant)
        if nullable:
            return Kind(f"{base.type} | None", f"_w.nullable({base.decoder})")
        return base

    def _kind(self, node: dict[str, Json], owner: str, hint: str, tolerant: bool) -> Kind:
        if "$ref" in node:
            return self.named(node["$ref"].rsplit("/", 1)[1])
        if "allOf" in node and len(node["allOf"]) == 1:
            return self.kind(node["allOf"][0], owner, hint, tolerant)
        types = node.get("type")
        if "enum" in node and types in ("string", None) and len(node["enum"]) > 1:
            name = owner + pascal(hint)
            self.enum(name, node["enum"], node.get("description", ""), tolerant)
            return self._enum_kind(name, tolerant)
        if types == "string":
            return Kind("str", "_w.string")
        if types == "integer":
            return Kind("int", "_w.integer")
        if types == "number":
            return Kind("float", "_w.number")
        if types == "boolean":
            return Kind("bool", "_w.boolean")
        if types == "array" and isinstance(node.get("items"), dict):
            item = self.kind(node["items"], owner, hint + "Item", tolerant)
            return Kind(f"tuple[{item.type}, ...]", f"_w.array({item.decoder})")
        if types == "object" and node.get("properties"):
            name = owner + pascal(hint)
            self.dataclass(name, node, tolerant)
            return Kind(name, f"{name}.from_wire")
        if types == "object" and isinstance(node.get("additionalProperties"), dict):
            value = self.kind(node["additionalProperties"], owner, hint + "Value", tolerant)
            return Kind(f"Mapping[str, {value.type}]", f"_w.mapping({value.decoder})")
        return Kind("Any", "_w.raw")

    def _enum_kind(self, name: str, tolerant: bool) -> Kind:
        if tolerant:
            return Kind(f"{name} | str", f"_w.tolerant_enum({name})")
        return Kind(name, f"_w.strict_enum({name})")

    def named(self, name: str) -> Kind:
        """The kind of definition ``name``, emitting it on first use."""
        node = self.definitions[name]
        tolerant = name in self.tolerant
        if name in self.opaque:
            self.alias(name, "Any", node.get("description", ""))
            return Kind(name, "_w.raw")
        variants = node.get("oneOf") or node.get("anyOf")
        if variants is not None and not _is_nullable(variants):
            return self.union(name, node, variants, tolerant)
        if "enum" in node and node.get("type", "string") == "string":
            self.enum(name, node["enum"], node.get("description", ""), tolerant)
            return self._enum_kind(name, tolerant)
        if node.get("type") == "object" and node.get("properties"):
            self.dataclass(name, node, tolerant)
            return Kind(name, f"{name}.from_wire")
        kind = self._kind(node, name, "", tolerant)
        self.alias(name, kind.type, node.get("description", ""))
        return Kind(name, kind.decoder)

    # -- definitions ---------------------------------------------------------------------

    def alias(self, name: str, target: str, description: str) -> None:
        if name in self.emitted:
            return
        self.emitted.add(name)
        doc = _doc(description) or f"{name}: kept as the JSON the wire carries."
        self.aliases.append(f"{name}: TypeAlias = {json.dumps(target)}\n{_docstring(doc, '')}")

    def enum(self, name: str, values: list[Json], description: str, tolerant: bool) -> None:
        if name in self.emitted:
            return
        self.emitted.add(name)
        direction = "an unlisted value decodes as a plain str" if tolerant else "strict"
        doc = (_doc(description) + " " if description else "") + f"({direction})"
        lines = [f"class {name}(str, enum.Enum):", _docstring(doc, "    "), ""]
        seen: set[str] = set()
        for value in values:
            label = member(str(value))
            while label in seen:
                label += "_"
            seen.add(label)
            lines.append(f"    {label} = {json.dumps(value)}")
        self.blocks.append("\n".join(lines))

    def union(self, name: str, node: dict[str, Json], variants: list[Json], tolerant: bool) -> Kind:
        strings = [v for v in variants if _string_values(v) is not None]
        objects = [v for v in variants if isinstance(v, dict) and v.get("type") == "object"]
        if len(strings) == len(variants):
            values = [s for v in strings for s in _string_values(v) or []]
            self.enum(name, values, node.get("description", ""), tolerant)
            return self._enum_kind(name, tolerant)
        tag = _common_tag(objects) if len(objects) == len(variants) else None
        if tag is not None:
            self.tagged_union(name, node, objects, tag, tolerant)
            return Kind(name, f"{snake(name)}_from_wire")
        keys = [next(iter(v["properties"])) for v in objects if len(v.get("properties", {})) == 1]
        if len(strings) + len(keys) == len(variants):
            values = [s for v in strings for s in _string_values(v) or []]
            self.alias(name, "Any", _external_doc(node, values, keys))
            return Kind(
                name, f"_w.external({_tuple(values)}, {_tuple(keys)}, strict={not tolerant})"
            )
        self.alias(name, "Any", node.get("description", ""))
        return Kind(name, "_w.raw")

    def tagged_union(
        self, name: str, node: dict[str, Json], variants: list[Json], tag: str, tolerant: bool
    ) -> None:
        if name in self.emitted:
            return
        self.emitted.add(name)
        classes: list[tuple[str, str]] = []
        for variant in variants:
            value = variant["properties"][tag]["enum"][0]
            title = variant.get("title")
            cls = title if isinstance(title, str) and title.isidentifier() else pascal(value) + name
            if cls in self.emitted or cls in self.definitions:
                cls = pascal(value) + name
            self.emitted.add(cls)
            classes.append((value, cls))
            self.dataclass(cls, variant, tolerant, tag=(tag, value), force=True)
        members = [cls for _, cls in classes]
        unknown = f"Unknown{name}"
        if unknown in self.emitted or unknown in self.definitions:
            unknown = f"Unknown{name}Variant"
        if tolerant:
            members.append(unknown)
            self.blocks.append(_unknown_variant(unknown, name, tag))
        table = f"_{snake(name).upper()}_VARIANTS"
        entries = ", ".join(f"{json.dumps(v)}: {c}" for v, c in classes)
        doc = _doc(node.get("description", "")) or f"One of the {name} variants, by {tag!r}."
        self.aliases.append(f"{name}: TypeAlias = {' | '.join(members)}\n{_docstring(doc, '')}")
        fallback = (
            f"        return {unknown}(raw=dict(obj))"
            if tolerant
            else f"        raise _w.CodexProtocolError(path + {json.dumps('.' + tag)}, "
            f'f"{{tag!r}} is not a known {name} variant")'
        )
        self.functions.append(
            "\n".join(
                [
                    f"{table}: Mapping[str, Any] = MappingProxyType({{{entries}}})",
                    "",
                    "",
                    f'def {snake(name)}_from_wire(value: object, path: str = "{name}") -> {name}:',
                    f'    """Decode a {name}, by its {tag!r} member."""',
                    "    obj = _w.obj(value, path)",
                    f'    tag = _w.field(obj, "{tag}", path, _w.string)',
                    f"    cls = {table}.get(tag)",
                    "    if cls is None:",
                    fallback,
                    "    decoded: " + name + " = cls.from_wire(obj, path)",
                    "    return decoded",
                ]
            )
        )

    def dataclass(
        self,
        name: str,
        node: dict[str, Json],
        tolerant: bool,
        *,
        tag: tuple[str, str] | None = None,
        force: bool = False,
    ) -> None:
        if name in self.emitted and not force:
            return
        self.emitted.add(name)
        props: dict[str, Json] = node.get("properties", {})
        required = set(node.get("required", ()))
        fields: list[tuple[str, str, Kind, bool, bool]] = []
        for wire, schema in props.items():
            if tag is not None and wire == tag[0]:
                continue
            kind = self.kind(schema, name, wire, tolerant)
            nullable, _ = _strip_null(schema) if isinstance(schema, dict) else (True, schema)
            fields.append((wire, snake(wire), kind, wire in required, nullable))
        doc = _doc(node.get("description", "")) or f"The {name} object."
        lines = [
            "@dataclass(frozen=True, slots=True, kw_only=True)",
            f"class {name}:",
            _docstring(doc, "    "),
            "",
        ]
        if tag is not None:
            lines.append(f"    TAG: ClassVar[str] = {json.dumps(tag[1])}")
        if name in self.requests:
            lines.append(f"    METHOD: ClassVar[str] = {json.dumps(self.requests[name][0])}")
        for wire, attr, kind, req, nullable in fields:
            optional = not req or nullable
            annotation = (
                kind.type if not optional or "| None" in kind.type else kind.type + " | None"
            )
            default = " = None" if optional else ""
            lines.append(f"    {attr}: {annotation}{default}")
            description = props[wire].get("description") if isinstance(props[wire], dict) else None
            if description:
                lines.append(_docstring(_doc(description), "    "))
        if tolerant:
            lines.append(
                "    extra_keys: Mapping[str, Any] = _field(default_factory=dict[str, Any])"
            )
            lines.append('    """Members the schema does not list, kept to be re-encoded."""')
        known = sorted([*props])
        lines += [
            "",
            f"    _KEYS: ClassVar[frozenset[str]] = frozenset({_tuple(known)})",
            "",
            "    @classmethod",
            f'    def from_wire(cls, value: object, path: str = "{name}") -> {name}:',
            '        """Decode one from its JSON; CodexProtocolError names a bad member\'s path."""',
            "        obj = _w.obj(value, path)",
        ]
        if tag is not None:
            lines.append(f'        _w.tag(obj, "{tag[0]}", "{tag[1]}", path)')
        if not fields and not tolerant:
            lines.append("        _w.closed(obj, cls._KEYS, path)")
            lines.append("        return cls()")
        else:
            if not tolerant:
                lines.append("        _w.closed(obj, cls._KEYS, path)")
            lines.append("        return cls(")
            for wire, attr, kind, req, nullable in fields:
                if req and not nullable:
                    call = f'_w.field(obj, "{wire}", path, {kind.decoder})'
                elif req and not tolerant:
                    call = f'_w.present(obj, "{wire}", path, {kind.decoder})'
                else:
                    decoder = kind.decoder
                    if decoder.startswith("_w.nullable(") and decoder.endswith(")"):
                        decoder = decoder[len("_w.nullable(") : -1]
                    call = f'_w.optional(obj, "{wire}", path, {decoder})'
                lines.append(f"            {attr}={call},")
            if tolerant:
                lines.append("            extra_keys=_w.extra(obj, cls._KEYS),")
            lines.append("        )")
        lines += [
            "",
            "    def to_wire(self) -> dict[str, Any]:",
            '        """The exact JSON the other side expects (camelCase, None omitted unless required)."""',
            "        out: dict[str, Any] = {}",
        ]
        if tag is not None:
            lines.append(f'        out["{tag[0]}"] = {json.dumps(tag[1])}')
        for wire, attr, _, req, _ in fields:
            lines.append(f'        _w.put(out, "{wire}", self.{attr}, {req})')
        if tolerant:
            lines.append("        out.update(self.extra_keys)")
        lines.append("        return out")
        if name in self.requests:
            method, result = self.requests[name]
            lines += [
                "",
                "    @staticmethod",
                f"    def parse_result(result: object) -> {result}:",
                f'        """Decode the response to {method}."""',
                f'        return {self.named(result).decoder}(result, "Response.result")',
            ]
        self.blocks.append("\n".join(lines))


def _string_values(node: Json) -> list[str] | None:
    if isinstance(node, dict) and "enum" in node and node.get("type", "string") == "string":
        values = node["enum"]
        if all(isinstance(v, str) for v in values):
            return list(values)
    return None


def _common_tag(variants: list[Json]) -> str | None:
    if not variants:
        return None
    candidates: set[str] | None = None
    for variant in variants:
        props = variant.get("properties", {})
        names = {
            k
            for k, p in props.items()
            if isinstance(p, dict)
            and isinstance(p.get("enum"), list)
            and len(p["enum"]) == 1
            and isinstance(p["enum"][0], str)
            and k in variant.get("required", ())
        }
        candidates = names if candidates is None else candidates & names
    if not candidates:
        return None
    return "type" if "type" in candidates else sorted(candidates)[0]


def _is_nullable(variants: list[Json]) -> bool:
    return len(variants) == 2 and any(v == {"type": "null"} for v in variants)


def _strip_null(node: dict[str, Json]) -> tuple[bool, dict[str, Json]]:
    types = node.get("type")
    if isinstance(types, list) and "null" in types:
        rest = [t for t in types if t != "null"]
        inner = {k: v for k, v in node.items() if k != "type"}
        if len(rest) == 1:
            inner["type"] = rest[0]
        return True, inner
    variants = node.get("anyOf") or node.get("oneOf")
    if isinstance(variants, list) and _is_nullable(variants):
        other = next(v for v in variants if v != {"type": "null"})
        return True, other
    return False, node


def _tuple(values: list[str]) -> str:
    if not values:
        return "()"
    return "(" + ", ".join(json.dumps(v) for v in values) + ("," if len(values) == 1 else "") + ")"


def _doc(text: str) -> str:
    text = " ".join(str(text).split())
    return text.replace("\\", "\\\\").replace('"""', "'''")


def _docstring(text: str, indent: str) -> str:
    words = text.split()
    lines: list[str] = []
    line = ""
    width = 96 - len(indent)
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    if len(lines) == 1 and len(lines[0]) + 6 <= width:
        return f'{indent}"""{lines[0]}"""'
    body = "\n".join(f"{indent}{part}" for part in lines)
    return f'{indent}"""\n{body}\n{indent}"""'


def _external_doc(node: dict[str, Json], values: list[str], keys: list[str]) -> str:
    said = _doc(node.get("description", ""))
    shape = f"One of the strings {', '.join(values) or '(none)'}, or an object with one key of {', '.join(keys)}."
    return f"{said} {shape}".strip()


def _unknown_variant(cls: str, union: str, tag: str) -> str:
    return "\n".join(
        [
            "@dataclass(frozen=True, slots=True, kw_only=True)",
            f"class {cls}:",
            f'    """A {union} variant this schema does not list, kept as its JSON and re-encoded unchanged."""',
            "",
            "    raw: Mapping[str, Any]",
            "",
            "    @property",
            "    def tag(self) -> str:",
            f'        """Its {tag!r} member."""',
            f'        return str(self.raw.get("{tag}", ""))',
            "",
            "    def to_wire(self) -> dict[str, Any]:",
            '        """The JSON it was decoded from."""',
            "        return dict(self.raw)",
        ]
    )


HEADER = '''"""The codex app-server protocol types agentshim speaks (codex-cli {version}).

GENERATED by scripts/generate_codex_protocol.py from scripts/codex_protocol/schema.json; do not
edit. Regenerate after a CLI bump (docs/development.md) and read the diff.

Objects are frozen, keyword-only dataclasses; ``to_wire()`` gives the JSON the other side
expects and ``from_wire()`` decodes it. Types the server sends are tolerant (unknown keys kept
in ``extra_keys``, an unlisted enum value kept as a str, an unknown variant kept raw); types only
the client sends are strict. Envelopes and the codec live in ``_wire``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as _field
from types import MappingProxyType
from typing import Any, ClassVar, TypeAlias

from . import _wire as _w
from ._wire import (
    ClientNotification,
    ClientRequest,
    CodexProtocolError,
    ErrorResponse,
    Notification,
    Response,
    ServerRequest,
    UnknownParams,
)

CLI_VERSION = "{version}"
"""The codex-cli version whose schema this was generated from."""
'''


def emit(schema: dict[str, Json]) -> str:
    """The text of protocol.py for the pruned ``schema``."""
    definitions: dict[str, Json] = schema["definitions"]
    methods = schema["methods"]
    opaque = set(schema.get("opaque", ()))
    tolerant: set[str] = set()
    stack = sorted(_server_roots(methods))
    while stack:
        name = stack.pop()
        if name in tolerant:
            continue
        tolerant.add(name)
        if name not in opaque:
            stack.extend(sorted(_refs(definitions[name])))
    emitter = Emitter(definitions, tolerant, opaque)
    for method, entry in methods["client_requests"].items():
        emitter.requests[entry["params"]] = (method, entry["result"])
    for name in sorted(_roots(methods)):
        emitter.named(name)
    out = [HEADER.format(version=schema["codex_cli_version"])]
    out += [block + "\n" for block in emitter.blocks]
    out += [alias + "\n" for alias in emitter.aliases]
    out += [function + "\n" for function in emitter.functions]
    out.append(_tables(methods, emitter))
    text = "\n\n\n".join(part.rstrip("\n") for part in out) + "\n"
    return text


def _tables(methods: dict[str, Json], emitter: Emitter) -> str:
    def decoder(name: str | None) -> str:
        return "None" if name is None else emitter.named(name).decoder

    def table(title: str, doc: str, rows: dict[str, str]) -> list[str]:
        body = [f"    {json.dumps(m)}: {d}," for m, d in sorted(rows.items())]
        return [
            f"{title}: Mapping[str, Any] = MappingProxyType({{",
            *body,
            "})",
            f'"""{doc}"""',
            "",
        ]

    lines = table(
        "CLIENT_REQUESTS",
        "Each client request's params decoder, by method.",
        {m: decoder(e["params"]) for m, e in methods["client_requests"].items()},
    )
    lines += table(
        "CLIENT_RESULTS",
        "Each client request's result decoder, by method.",
        {m: decoder(e["result"]) for m, e in methods["client_requests"].items()},
    )
    lines += table(
        "CLIENT_NOTIFICATIONS",
        "Each client notification's params decoder (None: it has none), by method.",
        {m: decoder(p) for m, p in methods["client_notifications"].items()},
    )
    lines += table(
        "SERVER_NOTIFICATIONS",
        "Each server notification's params decoder, by method.",
        {m: decoder(p) for m, p in methods["server_notifications"].items()},
    )
    lines += table(
        "SERVER_REQUESTS",
        "Each server request's params decoder, by method.",
        {m: decoder(e["params"]) for m, e in methods["server_requests"].items()},
    )
    lines += table(
        "SERVER_RESULTS",
        "Each server request's reply decoder, by method.",
        {m: decoder(e["result"]) for m, e in methods["server_requests"].items()},
    )
    lines += [
        "",
        "def parse_server_message(value: object) -> Notification | ServerRequest | Response | ErrorResponse:",
        '    """One decoded line from the server; an unlisted method keeps its params as UnknownParams."""',
        "    return _w.parse_message(value, SERVER_NOTIFICATIONS, SERVER_REQUESTS)",
        "",
        "",
        "def parse_client_message(value: object) -> ClientRequest | ClientNotification | Response | ErrorResponse:",
        '    """One decoded line from the client (for fakes and tests): the inverse direction."""',
        "    return _w.parse_client(value, CLIENT_REQUESTS, CLIENT_NOTIFICATIONS)",
        "",
        "",
        "def reply(request_id: int | str, result: object) -> dict[str, Any]:",
        '    """The reply to server request ``request_id``: ``{"id", "result"}``."""',
        "    return _w.reply(request_id, result)",
        "",
        "",
        "def request(request_id: int | str, params: object) -> dict[str, Any]:",
        '    """The client request carrying ``params`` (a params class with METHOD)."""',
        "    return _w.request(request_id, params)",
        "",
        "",
        "__all__ = [",
        '    "CLI_VERSION",',
        '    "CodexProtocolError",',
        '    "ErrorResponse",',
        '    "Notification",',
        '    "Response",',
        '    "ServerRequest",',
        '    "UnknownParams",',
        '    "parse_client_message",',
        '    "parse_server_message",',
        '    "reply",',
        '    "request",',
        "]",
    ]
    return "\n".join(lines)


# -- the command -----------------------------------------------------------------------------


def _cli_version(codex: str) -> str:
    out = subprocess.run([codex, "--version"], capture_output=True, text=True, check=True)
    return out.stdout.strip().split()[-1]


def export_from_cli(codex: str, out_dir: Path) -> str:
    """Run the CLI's schema export into ``out_dir``; return the CLI version."""
    subprocess.run(
        [codex, "app-server", "generate-json-schema", "--out", str(out_dir)],
        check=True,
        capture_output=True,
    )
    return _cli_version(codex)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--schema-dir", type=Path, help="generate-json-schema output to prune")
    source.add_argument("--from-cli", action="store_true", help="export from the installed CLI")
    parser.add_argument("--codex", default="codex", help="the codex binary (with --from-cli)")
    parser.add_argument("--cli-version", help="the CLI version (with --schema-dir)")
    parser.add_argument("--check", action="store_true", help="fail when protocol.py is stale")
    args = parser.parse_args(argv)
    allowlist = json.loads(ALLOWLIST.read_text())
    if args.from_cli or args.schema_dir is not None:
        with tempfile.TemporaryDirectory() as scratch:
            if args.from_cli:
                codex = shutil.which(args.codex) or args.codex
                version = export_from_cli(codex, Path(scratch))
                schema_dir = Path(scratch)
            else:
                schema_dir = args.schema_dir
                version = args.cli_version or "unknown"
            bundle = json.loads((schema_dir / BUNDLE).read_text())
        pruned = prune(bundle, allowlist, version)
        SCHEMA.write_text(json.dumps(pruned, indent=1, sort_keys=False) + "\n")
        print(f"wrote {SCHEMA.relative_to(ROOT)} ({len(pruned['definitions'])} definitions)")
    schema = json.loads(SCHEMA.read_text())
    text = emit(schema)
    if args.check:
        if OUTPUT.read_text() != text:
            print(f"{OUTPUT.relative_to(ROOT)} is stale: run {Path(__file__).name}")
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
