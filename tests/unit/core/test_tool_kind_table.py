"""A provider's tool table by kind, and the lookup every provider's ``tool_kind`` is made of."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.events import ToolKind
from agentshim.core.stream import tool_kind_in
from agentshim.core.tool_kind_table import kinds_by_name, tool_kind_reader

GROUPS = {
    ToolKind.COMMAND: ("bash", "shell_output"),
    ToolKind.FILE_CHANGE: ("edit", "write"),
    ToolKind.SEARCH: ("grep",),
}
NAMES = st.one_of(
    st.sampled_from(["bash", "edit", "grep", "mcp__srv__tool", "mcp_", "", "Bash"]),
    st.text(max_size=20),
)


def test_groups_become_one_entry_per_name() -> None:
    table = kinds_by_name(GROUPS)
    assert dict(table) == {
        "bash": ToolKind.COMMAND,
        "shell_output": ToolKind.COMMAND,
        "edit": ToolKind.FILE_CHANGE,
        "write": ToolKind.FILE_CHANGE,
        "grep": ToolKind.SEARCH,
    }


def test_the_table_is_read_only() -> None:
    table = kinds_by_name(GROUPS)
    with pytest.raises(TypeError):
        table["new"] = ToolKind.WEB  # type: ignore[index]


def test_the_reader_keeps_its_own_copy_of_the_table() -> None:
    kinds = {"bash": ToolKind.COMMAND}
    reader = tool_kind_reader(kinds)
    kinds["bash"] = ToolKind.WEB
    assert reader("bash") is ToolKind.COMMAND


@given(NAMES, st.sampled_from([None, "mcp__", "mcp_", "agentshim_"]))
def test_the_reader_answers_as_tool_kind_in(name: str, prefix: str | None) -> None:
    table = kinds_by_name(GROUPS)
    reader = tool_kind_reader(table, mcp_prefix=prefix)
    assert reader(name) is tool_kind_in(table, name, mcp_prefix=prefix)


def test_a_name_outside_the_table_is_mcp_only_in_the_mcp_form() -> None:
    reader = tool_kind_reader(kinds_by_name(GROUPS), mcp_prefix="mcp__")
    assert reader("mcp__srv__tool") is ToolKind.MCP
    assert reader("srv__tool") is ToolKind.OTHER
    assert reader("grep") is ToolKind.SEARCH
