"""The errors a value raises while it is built, beneath the rest of the exception tree.

:class:`AgentShimError` (the base), :class:`InvalidRequestError` and
:class:`ProviderCapabilityError` are defined here rather than in :mod:`agentshim.core.errors`
because the values (``TurnRequest``, ``ProviderUsage``, the events, the MCP server specs)
raise them, and :mod:`agentshim.core.errors` names some of those values (``TurnResult``,
``ParsedTurn``) in the errors that carry them: defining them there would close an import
circle. Import them from :mod:`agentshim.core.errors`, where the whole tree is named.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["AgentShimError", "InvalidRequestError", "ProviderCapabilityError"]

# Each class says it belongs to agentshim.core.errors, the module that names the tree: a
# traceback and a pickle name it there, where a caller imports it from.
_HOME = "agentshim.core.errors"


class AgentShimError(Exception):
    """Base of every error agentshim raises; catch this to catch them all.

    A subclass whose ``__init__`` takes more than ``message`` names those keyword arguments
    in ``_fields`` (only the ones it adds to its parent's), each kept as the attribute of the
    same name (set directly, or declared with its type in the class and set with ``_keep``);
    pickling and copying rebuild the error by passing them back with the message.
    """

    __module__ = _HOME
    _fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def _keep(self, **fields: object) -> None:
        """Keep each of ``fields`` (named in a ``_fields``) as the attribute of its name."""
        for name, value in fields.items():
            setattr(self, name, value)

    def __reduce__(self) -> tuple[Any, ...]:
        names = [name for cls in type(self).__mro__ for name in vars(cls).get("_fields", ())]
        state = {name: getattr(self, name) for name in names}
        state["message"] = self.message
        return (_rebuild, (type(self), state))

    def __str__(self) -> str:
        return self.message


def _rebuild(cls: type[AgentShimError], state: dict[str, Any]) -> AgentShimError:
    return cls(**state)


class InvalidRequestError(AgentShimError, ValueError):
    """A request agentshim cannot carry out as given, refused before anything ran.

    Examples: a timeout that is not a positive finite number of seconds, a NUL byte in an
    argument, an environment variable or a working directory, a relative path where an
    absolute one is required. ``field`` names what was wrong. It is also a ValueError, so code
    written against the standard library's checks still catches it.
    """

    __module__ = _HOME
    _fields = ("field", "problem")
    field: str
    problem: str

    def __init__(self, field: str, problem: str, message: str | None = None) -> None:
        super().__init__(message or f"invalid {field}: {problem}")
        self._keep(field=field, problem=problem)


class ProviderCapabilityError(AgentShimError):
    """The provider cannot do what the request asked (a flag, a schema, a mode)."""

    __module__ = _HOME
