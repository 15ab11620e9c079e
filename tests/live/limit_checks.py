"""Live checks of spending limits and traces on a long-lived transport's real CLI."""

from __future__ import annotations

from typing import ClassVar

import pytest

from agentshim.core.errors import SpendingLimitError
from agentshim.core.events import ToolCall, UsageReport
from agentshim.doctor.model_server import Rule, Text

from .streams import HELLO, PROMPT_RETURN_S, Live, tool_then_text, wait_for

__all__ = ["LimitChecks"]


class LimitChecks:
    """A turn scripted to spend past ``max_cost_usd`` stops at the usage report that crossed."""

    long_tool: ClassVar[str] = "sleep 30"
    long_tool_seen: ClassVar[str] = "sleep 30"
    #: How long the tool the stopped turn started may take to end after the turn returned.
    tool_ends_within_s: ClassVar[float] = PROMPT_RETURN_S

    def test_a_turn_past_max_cost_usd_is_interrupted_at_the_crossing_report(
        self, live: Live
    ) -> None:
        live.script(*tool_then_text(self.long_tool))
        agent = live.agent(max_cost_usd=1e-9)
        with live.session(agent) as session:
            with pytest.raises(SpendingLimitError) as raised:
                session.turn("Sleep for a while.")
            error = raised.value
            assert error.limit_name == "max_cost_usd"
            assert error.result is not None
            assert error.result.interrupted, "the turn ran to its end"
            reports = [e for e in live.events if isinstance(e, UsageReport)]
            assert reports, "the CLI reported no usage"
            # The tool never got to finish: the first live report stopped the turn.
            calls = [e for e in live.events if isinstance(e, ToolCall)]
            assert len(calls) <= 1
            wait_for(
                lambda: not live.running(self.long_tool_seen), self.tool_ends_within_s, "the tool"
            )
            assert session.session_id == error.session_id
        live.script(Rule(respond=Text(HELLO)))
        with live.session(live.agent(), session_id=error.session_id) as again:
            after = again.turn("Now just say hello.")
        assert after.result.text == HELLO
        assert after.session_id == error.session_id
