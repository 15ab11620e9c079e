"""Codex ``--config key=value`` flags: rendering one, and reading every one out of an argv."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ._toml import TomlError, decode_value, join_key, split_key, toml_value

__all__ = ["CONFIG_FLAG", "config_flag", "read_config_flags"]

#: The long spelling agentshim renders; ``-c`` is the CLI's short one.
CONFIG_FLAG = "--config"


def config_flag(key: Sequence[str], value: object) -> list[str]:
    """Return ``["--config", "<dotted key>=<TOML value>"]`` for one override.

    Raises:
        TomlError: ``value`` has no TOML form (see ``toml_value``).
    """
    return [CONFIG_FLAG, f"{join_key(*key)}={toml_value(value)}"]


def _raw_overrides(argv: Sequence[str]) -> Iterator[str]:
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg in (CONFIG_FLAG, "-c") and index + 1 < len(argv):
            yield argv[index + 1]
            index += 2
            continue
        if arg.startswith(CONFIG_FLAG + "="):
            yield arg[len(CONFIG_FLAG) + 1 :]
        index += 1


def read_config_flags(argv: Sequence[str]) -> list[tuple[list[str], Any]]:
    """Return every ``--config``/``-c`` override in ``argv`` as (key segments, value), in order.

    The value is decoded as TOML; like Codex, a value that is not TOML is kept as the raw
    string with surrounding quotes trimmed. A key that is not a dotted TOML key falls back to
    a plain split on ``.``. An override without ``=`` is skipped.
    """
    overrides: list[tuple[list[str], Any]] = []
    for raw in _raw_overrides(argv):
        key_text, sep, value_text = raw.partition("=")
        if not sep or not key_text.strip():
            continue
        try:
            key = split_key(key_text.strip())
        except TomlError:
            key = key_text.strip().split(".")
        try:
            value: Any = decode_value(value_text)
        except TomlError:
            value = value_text.strip().strip("\"'")
        overrides.append((key, value))
    return overrides
