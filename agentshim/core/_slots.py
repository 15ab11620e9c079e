"""A faster ``__init__`` for the frozen, slotted dataclasses parsers build once per frame.

A frozen dataclass's generated ``__init__`` stores each field through ``object.__setattr__``,
which is how it gets past its own ``__setattr__`` that refuses assignment. A slotted class has
a cheaper door: each slot's member descriptor can store the value directly. Building an event
that way costs about half as much (0.61 -> 0.28 us for a two-field event on CPython 3.11),
and parsers build one or more per line they read, so the saving shows in every provider's
throughput.

The replacement has the same signature (names, defaults, keyword-only markers) and still
calls ``__post_init__``; equality, hashing, ``repr``, pickling and ``dataclasses.replace``
are untouched. A class it cannot speed up (not a frozen slotted dataclass, or a field that is
not an ``__init__`` parameter) is returned unchanged. :func:`fast_value` is the one decorator
that makes a class such a dataclass and gives it that ``__init__``.

:func:`slot_builder` goes further for the few values a parser builds for nearly every line: a
plain function that takes every field positionally and returns the same value, for two thirds
(two fields) to a fifth (seven fields, with a ``__post_init__`` it skips) of the cost of
calling the class on CPython 3.11.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

_T = TypeVar("_T")
_F = TypeVar("_F")

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    # Only type checkers read the marker; Python 3.10's typing has no dataclass_transform.
    def dataclass_transform(**_: object) -> Callable[[_F], _F]:
        return lambda decorated: decorated


__all__ = ["fast_frozen_init", "fast_value", "slot_builder"]


class _NoValue:
    """Marks a parameter whose default comes from a factory."""

    __slots__ = ()

    def __repr__(self) -> str:
        # What the dataclass's own signature shows for such a parameter.
        return "<factory>"


_NO_VALUE = _NoValue()


def fast_frozen_init(cls: type[_T]) -> type[_T]:
    """Give a frozen, slotted dataclass an ``__init__`` that stores through its slots.

    Apply it above ``@dataclass(frozen=True, slots=True)``. Returns ``cls`` itself.
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        return cls
    fields = dataclasses.fields(cls)  # pyright: ignore[reportArgumentType]
    if not all(f.init for f in fields):
        return cls
    namespace: dict[str, Any] = {"_NO_VALUE": _NO_VALUE}
    positional: list[str] = []
    keyword_only: list[str] = []
    body: list[str] = []
    for index, f in enumerate(fields):
        name = f.name
        setter = f"_set{index}"
        namespace[setter] = cls.__dict__[name].__set__
        if f.default is not dataclasses.MISSING:
            namespace[f"_default{index}"] = f.default
            param = f"{name}=_default{index}"
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory{index}"] = f.default_factory
            param = f"{name}=_NO_VALUE"
            body.append(f"    if {name} is _NO_VALUE: {name} = _factory{index}()")
        else:
            param = name
        (keyword_only if f.kw_only else positional).append(param)
        body.append(f"    {setter}(self, {name})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    signature = ", ".join(["self", *positional, *(["*", *keyword_only] if keyword_only else [])])
    source = f"def __init__({signature}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init
    return cls


@dataclass_transform(frozen_default=True)
def fast_value(cls: type[_T]) -> type[_T]:
    """``@dataclass(frozen=True, slots=True)`` with :func:`fast_frozen_init`'s ``__init__``.

    The one decorator of a value built often enough for its construction cost to show (the
    events every parser emits): it returns the new slotted class.
    """
    return fast_frozen_init(dataclasses.dataclass(frozen=True, slots=True)(cls))


def slot_builder(cls: type[_T]) -> Callable[..., _T]:
    """A function ``build(field1, field2, ...)`` returning ``cls(field1, field2, ...)``, faster.

    Every field is a required positional parameter, in field order. The value is an instance
    of ``cls`` itself, equal to what calling the class gives, but built without the class call
    machinery: its fields are stored into an instance of a private class with the same slots
    (a plain store, where the frozen class needs a call per field), whose ``__class__`` is then
    set to ``cls``. ``__post_init__`` does NOT run: for a class that has one the caller must
    already hold what it checks. Raises TypeError for a class that is not a frozen slotted
    dataclass, or one whose slots are not all its fields.
    """
    params = getattr(cls, "__dataclass_params__", None)
    slots: tuple[str, ...] = tuple(cls.__dict__.get("__slots__", ()))
    fields = dataclasses.fields(cls) if params is not None else ()  # pyright: ignore[reportArgumentType]
    names = tuple(f.name for f in fields)
    if params is None or not params.frozen or not slots or slots != names:
        raise TypeError(f"slot_builder needs a frozen slotted dataclass, not {cls!r}")
    twin = type(f"_{cls.__name__}Layout", (), {"__slots__": slots})
    # The generated function's own names must not be any field's name (its parameters).
    own = "_"
    while any(name.startswith(own) for name in names):
        own += "_"
    namespace: dict[str, Any] = {f"{own}new": object.__new__, f"{own}twin": twin, f"{own}cls": cls}
    body = "".join(f"    {own}value.{name} = {name}\n" for name in names)
    source = (
        f"def build({', '.join(names)}):\n    {own}value = {own}new({own}twin)\n{body}"
        f"    {own}value.__class__ = {own}cls\n    return {own}value\n"
    )
    exec(source, namespace)
    build: Callable[..., _T] = namespace["build"]
    build.__qualname__ = build.__name__ = f"build_{cls.__name__}"
    build.__module__ = cls.__module__
    return build
