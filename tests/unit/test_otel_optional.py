"""Tracing is optional: without it, agentshim never loads OpenTelemetry."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_importing_agentshim_and_running_a_turn_loads_no_opentelemetry() -> None:
    script = textwrap.dedent(
        """
        import sys
        from agentshim import Agent, ApprovalPolicy, NativePermissions
        from agentshim.testing import FakeOutcome, FakeTransport

        agent = Agent(
            FakeTransport([FakeOutcome.success("ok")]),
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            max_cost_usd=1.0,
            unknown_cost=__import__("agentshim").UnknownCost.ALLOW,
        )
        assert agent.start_session().turn("go").result.text == "ok"
        loaded = sorted(name for name in sys.modules if name.startswith("opentelemetry"))
        print(loaded)
        sys.exit(1 if loaded else 0)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
