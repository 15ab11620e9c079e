"""Checking and reading the words of a CLI's argv, the same way for every provider."""

from __future__ import annotations

from collections.abc import Sequence

from agentshim.core.errors import InvalidRequestError

__all__ = ["checked_option_value", "word_after"]


def checked_option_value(cli: str, label: str, value: str) -> str:
    """Return ``value`` when it can follow an option as the next word of ``cli``'s argv.

    An option parser such as yargs reads a word starting with ``-`` as the next flag, and a
    value with whitespace or NUL is not one word; such values are refused.

    Raises:
        InvalidRequestError: ``value`` is empty, starts with ``-`` or holds whitespace or
            NUL; ``field`` is ``label`` and the message names ``cli``.
    """
    if not value or value.startswith("-") or any(c.isspace() or c == "\0" for c in value):
        raise InvalidRequestError(
            label,
            "empty, starting with '-' or holding whitespace",
            f"invalid {label} {value!r} for {cli}: it must be non-empty, must not start "
            "with '-' and must not contain whitespace",
        )
    return value


def word_after(argv: Sequence[str], *words: str) -> str | None:
    """Return the word that follows the first of ``words`` in ``argv``, or None.

    For reading back what a built argv passes, e.g. ``word_after(argv, "--resume", "-r")``.
    A word that ends ``argv`` has nothing after it and is skipped.
    """
    for index, word in enumerate(argv[:-1]):
        if word in words:
            return argv[index + 1]
    return None
