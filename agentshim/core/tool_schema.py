"""The JSON Schema of a Python function's arguments, and the arguments a call hands it.

:func:`arguments_schema` reads a function's signature and annotations: ``str``, ``int``,
``float``, ``bool``, ``None``, ``list``/``Sequence``/``tuple[X, ...]``, ``dict``/``Mapping``
with string keys, ``Optional`` and other unions, ``Literal``, ``Enum`` subclasses,
``TypedDict`` and dataclasses (nested as objects), and ``Annotated[X, "description"]``. A
parameter without an annotation (or annotated ``Any``) takes any JSON value. :func:`bind`
turns the JSON arguments of a call back into the function's keyword arguments, building the
dataclasses and enums the annotations name, and says what is wrong when they do not fit.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union, cast

from agentshim.core.errors import InvalidRequestError
from agentshim.core.jsonvalues import json_kind

__all__ = ["ArgumentError", "arguments_schema", "bind"]

_PRIMITIVES: dict[object, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}
_ANNOTATED: Any = type(typing.Annotated[int, ""])


def _is_annotated(annotation: object) -> bool:
    return type(annotation) is _ANNOTATED


_UNION_TYPES: tuple[object, ...] = (Union, getattr(types, "UnionType", Union))


class ArgumentError(ValueError):
    """The arguments of a call do not fit the function; the text says which and why."""


def _hints(function: object) -> dict[str, Any]:
    try:
        return typing.get_type_hints(function, include_extras=True)
    except Exception as error:  # a forward reference the function's module cannot resolve
        raise InvalidRequestError(
            "tool.function",
            f"its annotations cannot be resolved ({error})",
            f"the annotations of {getattr(function, '__name__', function)!r} cannot be "
            f"resolved ({error}); import the names they use, or pass input_schema= yourself",
        ) from None


def _parameters(function: Callable[..., object]) -> list[inspect.Parameter]:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as error:
        raise InvalidRequestError(
            "tool.function", f"has no signature ({error})", f"a tool needs a signature: {error}"
        ) from None
    parameters = list(signature.parameters.values())
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.POSITIONAL_ONLY):
            raise InvalidRequestError(
                "tool.function",
                f"parameter {parameter.name!r} cannot be passed by name",
                f"tool parameter {parameter.name!r} is positional-only or *args; the agent "
                "passes arguments by name, so give every parameter a name",
            )
    return [p for p in parameters if p.kind is not p.VAR_KEYWORD]


def arguments_schema(function: Callable[..., object]) -> dict[str, Any]:
    """The JSON Schema (an object) of ``function``'s keyword arguments.

    A parameter without a default is required; a default that JSON can carry is shown as
    ``default``. ``**kwargs`` lets the object hold other properties.

    Raises:
        InvalidRequestError: a parameter cannot be passed by name, or an annotation has no
            JSON Schema (a class that is neither a dataclass, a TypedDict nor an Enum).
    """
    hints = _hints(function)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in _parameters(function):
        schema = _schema(hints.get(parameter.name, Any), parameter.name)
        if parameter.default is parameter.empty:
            required.append(parameter.name)
        elif _is_json(parameter.default):
            schema = {**schema, "default": _plain(parameter.default)}
        properties[parameter.name] = schema
    takes_more = any(
        p.kind is p.VAR_KEYWORD for p in inspect.signature(function).parameters.values()
    )
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    if not takes_more:
        result["additionalProperties"] = False
    return result


def _is_json(value: object) -> bool:
    try:
        json.dumps(_plain(value), allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _plain(value: object) -> object:
    if isinstance(value, enum.Enum):
        return cast("object", value.value)
    if isinstance(value, tuple):
        return [_plain(item) for item in cast("tuple[object, ...]", value)]
    return value


def _schema(annotation: Any, where: str) -> dict[str, Any]:
    if annotation is Any or annotation is object:
        return {}
    if _is_annotated(annotation):
        base, *extras = typing.get_args(annotation)
        schema = _schema(base, where)
        notes = [extra for extra in extras if isinstance(extra, str)]
        return {**schema, "description": " ".join(notes)} if notes else schema
    if annotation in _PRIMITIVES:
        return {"type": _PRIMITIVES[annotation]}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in _UNION_TYPES:
        return _union(args, where)
    if origin is Literal:
        values = [_plain(value) for value in args]
        return {"enum": values}
    if origin in (list, set, frozenset, Sequence) or annotation in (list, set, frozenset):
        items = _schema(args[0], where) if args else {}
        return {"type": "array", "items": items} if items else {"type": "array"}
    if origin is tuple or annotation is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema(args[0], where)}
        if args:
            prefix = [_schema(arg, where) for arg in args]
            n = len(prefix)
            return {"type": "array", "prefixItems": prefix, "minItems": n, "maxItems": n}
        return {"type": "array"}
    if origin in (dict, Mapping) or annotation in (dict, Mapping):
        if args and args[0] is not str:
            raise _unsupported(annotation, where, "a JSON object's keys are strings")
        values = _schema(args[1], where) if args else {}
        schema: dict[str, Any] = {"type": "object"}
        if values:
            schema["additionalProperties"] = values
        return schema
    if isinstance(annotation, type):
        return _class_schema(annotation, where)
    raise _unsupported(annotation, where, "it has no JSON Schema")


def _union(args: Sequence[Any], where: str) -> dict[str, Any]:
    members = [_schema(arg, where) for arg in args]
    if any(not member for member in members):
        return {}
    simple = [member.get("type") for member in members if set(member) == {"type"}]
    if len(simple) == len(members) and all(isinstance(kind, str) for kind in simple):
        return {"type": simple}
    return {"anyOf": members}


def _class_schema(cls: Any, where: str) -> dict[str, Any]:
    if issubclass(cls, enum.Enum):
        return {"enum": [member.value for member in cls]}
    if dataclasses.is_dataclass(cls):
        hints = _hints(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            properties[f.name] = _schema(hints.get(f.name, Any), f"{where}.{f.name}")
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                required.append(f.name)
        return _object(properties, required)
    if _is_typed_dict(cls):
        hints = _hints(cls)
        properties = {name: _schema(hint, f"{where}.{name}") for name, hint in hints.items()}
        keys = cast("frozenset[str]", getattr(cls, "__required_keys__", frozenset(hints)))
        return _object(properties, [name for name in hints if name in keys])
    raise _unsupported(cls, where, "only dataclasses, TypedDicts and Enums map to JSON")


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


def _is_typed_dict(cls: type) -> bool:
    marked: object = cls
    return (
        issubclass(cls, dict)
        and hasattr(marked, "__annotations__")
        and hasattr(marked, "__total__")
    )


def _unsupported(annotation: object, where: str, why: str) -> InvalidRequestError:
    return InvalidRequestError(
        "tool.function",
        f"parameter {where!r} is annotated {annotation!r}, which has no JSON Schema",
        f"tool parameter {where!r} is annotated {annotation!r} and {why}; use str, int, float, "
        "bool, lists, dicts, Literal, an Enum, a dataclass or a TypedDict, or pass "
        "input_schema= yourself",
    )


# --- binding a call's arguments --------------------------------------------------------------


def bind(function: Callable[..., object], arguments: object, *, derived: bool) -> dict[str, object]:
    """``arguments`` (a call's JSON object) as keyword arguments of ``function``.

    With ``derived`` (the schema came from the annotations) each value is checked against its
    annotation and dataclasses and enums are built; otherwise (an explicit schema) the
    values are passed as they came.

    Raises:
        ArgumentError: not an object, a required argument is missing, an unknown one is
            given, or a value does not fit its annotation.
    """
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise ArgumentError(f"the arguments must be a JSON object, not {json_kind(arguments)}")
    given = dict(cast("Mapping[str, object]", arguments))
    if not derived:
        return given
    hints = _hints(function)
    parameters = _parameters(function)
    names = {p.name for p in parameters}
    takes_more = any(
        p.kind is p.VAR_KEYWORD for p in inspect.signature(function).parameters.values()
    )
    unknown = sorted(set(given) - names)
    if unknown and not takes_more:
        raise ArgumentError(f"unknown argument(s) {', '.join(map(repr, unknown))}")
    bound: dict[str, object] = {}
    for parameter in parameters:
        if parameter.name not in given:
            if parameter.default is parameter.empty:
                raise ArgumentError(f"the required argument {parameter.name!r} is missing")
            continue
        hint = hints.get(parameter.name, Any)
        bound[parameter.name] = _convert(given.pop(parameter.name), hint, parameter.name)
    bound.update(given)
    return bound


def _convert(value: object, annotation: Any, where: str) -> object:
    if annotation is Any or annotation is object:
        return value
    if _is_annotated(annotation):
        return _convert(value, typing.get_args(annotation)[0], where)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation in _PRIMITIVES:
        return _primitive(value, cast("type", annotation), where)
    if origin in _UNION_TYPES:
        failures: list[ArgumentError] = []
        for member in args:
            try:
                return _convert(value, member, where)
            except ArgumentError as error:
                if member is not type(None):
                    failures.append(error)
        if len(failures) == 1:  # an Optional: what is wrong with the one real type
            raise failures[0]
        raise ArgumentError(f"argument {where!r}: {json_kind(value)} fits none of {annotation}")
    if origin is Literal:
        if any(value == _plain(option) for option in args):
            return next(option for option in args if value == _plain(option))
        raise ArgumentError(f"argument {where!r}: {value!r:.80} is not one of {list(args)!r}")
    if origin in (list, set, frozenset, Sequence, tuple) or annotation in (list, tuple):
        if not isinstance(value, list):
            raise ArgumentError(f"argument {where!r}: expected an array, got {json_kind(value)}")
        items = cast("list[object]", value)
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(items) != len(args):
                raise ArgumentError(f"argument {where!r}: expected {len(args)} items")
            return tuple(_convert(v, a, where) for v, a in zip(items, args, strict=True))
        item_type = args[0] if args else Any
        converted = [_convert(item, item_type, f"{where}[{i}]") for i, item in enumerate(items)]
        if origin is set:
            return set(converted)
        if origin is frozenset:
            return frozenset(converted)
        return tuple(converted) if origin is tuple else converted
    if origin in (dict, Mapping) or annotation in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise ArgumentError(f"argument {where!r}: expected an object, got {json_kind(value)}")
        values = args[1] if args else Any
        mapping = cast("Mapping[str, object]", value)
        return {k: _convert(v, values, f"{where}.{k}") for k, v in mapping.items()}
    if isinstance(annotation, type):
        return _instance(value, annotation, where)
    return value


def _primitive(value: object, kind: type, where: str) -> object:
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    ok = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
    if kind is type(None):
        ok = value is None
    if not ok:
        wanted = _PRIMITIVES[kind]
        raise ArgumentError(f"argument {where!r}: expected {wanted}, got {json_kind(value)}")
    return value


def _instance(value: object, cls: Any, where: str) -> object:
    if issubclass(cls, enum.Enum):
        for member in cls:
            if member.value == value:
                return member
        raise ArgumentError(f"argument {where!r}: {value!r:.80} is not a {cls.__name__}")
    if not isinstance(value, Mapping):
        raise ArgumentError(f"argument {where!r}: expected an object, got {json_kind(value)}")
    fields_given = dict(cast("Mapping[str, object]", value))
    hints = _hints(cls)
    if dataclasses.is_dataclass(cls):
        known = {f.name for f in dataclasses.fields(cls) if f.init}
        unknown = sorted(set(fields_given) - known)
        if unknown:
            raise ArgumentError(f"argument {where!r}: unknown field(s) {', '.join(unknown)}")
        converted = {
            k: _convert(v, hints.get(k, Any), f"{where}.{k}") for k, v in fields_given.items()
        }
        build = cast("Callable[..., object]", cls)
        try:
            return build(**converted)
        except TypeError as error:
            raise ArgumentError(f"argument {where!r}: {error}") from None
    if _is_typed_dict(cls):
        keys = cast("frozenset[str]", getattr(cls, "__required_keys__", frozenset(hints)))
        missing = sorted(keys - set(fields_given))
        if missing:
            raise ArgumentError(f"argument {where!r}: missing field(s) {', '.join(missing)}")
        built: dict[str, object] = {
            k: _convert(v, hints.get(k, Any), f"{where}.{k}") for k, v in fields_given.items()
        }
        return built
    return fields_given
