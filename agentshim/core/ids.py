"""Identifier allocation as an injected dependency, so tests get predictable ids."""

from __future__ import annotations

import secrets
from typing import Protocol, runtime_checkable

from agentshim.core.errors import InvalidSessionIdError

__all__ = ["IdAllocator", "RandomIds", "is_valid_session_id", "validate_session_id"]


@runtime_checkable
class IdAllocator(Protocol):
    """Hands out identifiers that are unique for the allocator's lifetime."""

    def new_id(self, prefix: str) -> str:
        """Return a fresh id starting with ``prefix``."""
        ...


class RandomIds:
    """Random ids: ``<prefix>_<24 hex digits>``, unique with overwhelming probability."""

    def new_id(self, prefix: str) -> str:
        """Return ``prefix`` joined to 96 random bits in hex."""
        return f"{prefix}_{secrets.token_hex(12)}"


_SESSION_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def is_valid_session_id(session_id: str, *, max_length: int = 128) -> bool:
    """Return True when ``session_id`` is 1..max_length characters of ``[A-Za-z0-9._-]``.

    Such an id is safe to place in argv and in a file name: ``.`` and ``..`` alone are refused,
    and so is a leading ``-``, which a CLI would read as an option.
    """
    return (
        0 < len(session_id) <= max_length
        and session_id not in (".", "..")
        and not session_id.startswith("-")
        and all(c in _SESSION_ID_CHARS for c in session_id)
    )


def validate_session_id(session_id: str, *, max_length: int = 128) -> str:
    """Return ``session_id`` unchanged, or raise InvalidSessionIdError when it is not safe."""
    if not isinstance(session_id, str) or not is_valid_session_id(  # pyright: ignore[reportUnnecessaryIsInstance]
        session_id, max_length=max_length
    ):
        raise InvalidSessionIdError(str(session_id))
    return session_id
