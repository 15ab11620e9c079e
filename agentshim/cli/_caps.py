"""What each provider offers, as the command line shows it: transports and capabilities."""

from __future__ import annotations

from agentshim.core.conversation import TransportKind
from agentshim.core.profile import McpMechanism, OutputSchemaStyle
from agentshim.providers import DEFAULT_CATALOG, provider_names
from agentshim.providers.catalog import transports_offered

__all__ = [
    "CAPABILITY_HEADER",
    "capability_rows",
    "flag_name",
    "kind_of_flag",
    "table",
]


def flag_name(kind: TransportKind) -> str:
    """The ``--transport`` value of ``kind`` (``one-shot``, ``stream``)."""
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
    "CLI",
    "resume",
    "MCP",
    "output schema",
    "reasoning effort",
    "transports",
    "sandbox modes",
    "approvals",
)


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
                profile.display_name,
                _yes(profile.supports_resume),
                _MCP[profile.mcp],
                _SCHEMA[profile.output_schema],
                _yes(profile.supports_reasoning_effort),
                ", ".join(flag_name(kind) for kind in transports),
                ", ".join(mode.value.replace("_", "-") for mode in profile.native_permission_modes),
                # One-shot turns run with the CLI's approvals off: nothing is ever asked.
                "off (one-shot)"
                if transports == (TransportKind.ONE_SHOT,)
                else "off (one-shot); deny, fail-turn, handler (long-lived)",
            )
        )
    return rows


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """``rows`` under ``header`` in aligned columns."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(
            cell.ljust(width) for cell, width in zip(row, widths, strict=True)
        ).rstrip()

    return "\n".join([line(header), line(tuple("-" * w for w in widths)), *map(line, rows)])
