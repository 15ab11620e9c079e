"""Module attributes imported on first use (PEP 562), so importing a package stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(
    package: str, sources: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return a module's ``__getattr__`` and ``__dir__`` for names imported on first use.

    ``sources`` maps each public name to the module that defines it. The first access imports
    that module and stores the value in ``namespace`` (the package's ``globals()``), so later
    accesses cost nothing; an unknown name raises AttributeError as usual. ``dir()`` lists
    the package's ``__all__``.
    """

    def __getattr__(name: str) -> Any:
        module_name = sources.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(namespace.get("__all__", sources))

    return __getattr__, __dir__
