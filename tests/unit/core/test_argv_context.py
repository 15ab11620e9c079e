from __future__ import annotations

from agentshim.core.provider import ArgvContext


def test_the_mcp_flags_then_the_extra_args_end_the_argv() -> None:
    ctx = ArgvContext("/b", mcp_argv=("--mcp", "x"), extra_args=("--debug",))
    argv = ["/b", "-p"]
    assert ctx.ending(argv) == ["/b", "-p", "--mcp", "x", "--debug"]
    assert argv == ["/b", "-p"]


def test_without_either_the_argv_is_unchanged() -> None:
    assert ArgvContext("/b").ending(["/b"]) == ["/b"]
