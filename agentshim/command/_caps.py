"""What each provider offers, as the command line shows it: transports and capabilities."""

from __future__ import annotations

from typing import Any

from agentshim.core.conversation import TransportKind
from agentshim.core.profile import McpMechanism, OutputSchemaStyle
from agentshim.providers import DEFAULT_CATALOG, provider_names
from agentshim.providers.catalog import transports_offered

__all__ = [
    "APPROVALS_NOTE",
    "CAPABILITY_HEADER",
    "capability_records",
    "capability_rows",
    "flag_name",
    "kind_of_flag",
    "table",
]


def flag_name(kind: TransportKind) -> str:
    """The ``--transport`` value of ``kind`` (``one-shot``, ``long-lived``)."""
    return kind.value.replace("_", "-")


def kind_of_flag(value: str) -> TransportKind:
    """The TransportKind a ``--transport`` value names (KeyError for none)."""
    for kind in TransportKind:
        if flag_name(kind) == value:
            return kind
    raise KeyError(value)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


_MCP = {
    McpMechanism.NONE: "no",
    McpMechanism.CONFIG_FILE: "config file",
    McpMechanism.CLI_FLAGS: "CLI flags",
}
_SCHEMA = {
    OutputSchemaStyle.NONE: "no",
    OutputSchemaStyle.INLINE_JSON: "inline JSON",
    OutputSchemaStyle.FILE_PATH: "file",
}

CAPABILITY_HEADER = (
    "provider",
    "resume",
    "MCP",
    "schema",
    "effort",
    "transports",
    "approvals",
)
"""The ``providers`` table's columns; it fits 80 columns (``providers --json`` has it all)."""

_APPROVALS_ONE_SHOT = "off"
_APPROVALS_LONG_LIVED = "off; asked*"
APPROVALS_NOTE = (
    "approvals: one-shot turns run with the CLI's approvals off (nothing is asked).\n"
    "* asked: on a long-lived transport (stream, tui) each request is answered by\n"
    "  the policy (deny, fail-turn) or a handler.\n"
    "Everything, sandbox modes included: agentshim providers --json"
)


def _approvals(transports: tuple[TransportKind, ...]) -> str:
    return _APPROVALS_ONE_SHOT if transports == (TransportKind.ONE_SHOT,) else _APPROVALS_LONG_LIVED


def capability_rows() -> list[tuple[str, ...]]:
    """One row per built-in provider, in the order of ``CAPABILITY_HEADER``."""
    rows: list[tuple[str, ...]] = []
    for name in provider_names():
        plugin = DEFAULT_CATALOG.plugin(name)
        profile = plugin.profile
        transports = transports_offered(plugin)
        rows.append(
            (
                name,
                _yes(profile.supports_resume),
                _MCP[profile.mcp].split()[0].replace("CLI", "flags"),
                _SCHEMA[profile.output_schema].split()[0],
                _yes(profile.supports_reasoning_effort),
                ",".join(flag_name(kind) for kind in transports),
                _approvals(transports),
            )
        )
    return rows


def capability_records() -> list[dict[str, Any]]:
    """Every built-in provider's capabilities as JSON-ready objects (``providers --json``)."""
    records: list[dict[str, Any]] = []
    for name in provider_names():
        plugin = DEFAULT_CATALOG.plugin(name)
        profile = plugin.profile
        transports = transports_offered(plugin)
        long_lived = transports != (TransportKind.ONE_SHOT,)
        records.append(
            {
                "provider": name,
                "cli": profile.display_name,
                "binary": profile.binary,
                "resume": profile.supports_resume,
                "mcp": _MCP[profile.mcp],
                "output_schema": _SCHEMA[profile.output_schema],
                "reasoning_effort": profile.supports_reasoning_effort,
                "transports": [flag_name(kind) for kind in transports],
                "sandbox_modes": [
                    mode.value.replace("_", "-") for mode in profile.native_permission_modes
                ],
                "approvals": {
                    "one-shot": ["off"],
                    **({"long-lived": ["deny", "fail-turn", "handler"]} if long_lived else {}),
                },
                "install": profile.install_command,
            }
        )
    return records


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """``rows`` under ``header`` in aligned columns."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(
            cell.ljust(width) for cell, width in zip(row, widths, strict=True)
        ).rstrip()

    return "\n".join([line(header), line(tuple("-" * w for w in widths)), *map(line, rows)])
