"""Live: Gemini CLI's ACP transport (``gemini --acp``), the real pinned binary against the
model server, as ``streams.py`` describes: the checks every ACP agent passes
(``acp_stream_checks.py``), stalls, the long-lived contract, and what is Gemini's own (an
interrupt while the handler decides, a killed process whose session loads again, an MCP
server that lives as long as the session, a TurnRequest sent as one prompt).

Run with ``pytest tests/live/test_gemini_stream.py``; skipped when gemini is not installed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import CliDiedError
from agentshim.core.events import ApprovalAnswered
from agentshim.core.mcp import StdioMcpServer
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.doctor.model_server import Hang, Rule, Text
from agentshim.execution.process import SpawnRequest
from agentshim.session import Session
from agentshim.testing.session_contracts import ConversationContract, TransportContract

from .acp_stream_checks import AcpStreamChecks
from .stream_checks import StallChecks
from .stream_contracts import (
    SEED_MARKER,
    ContractRig,
    LiveConversationContract,
    LiveTransportContract,
    contract_fixture,
)
from .streams import (
    HELLO,
    NEEDS_PROC,
    PROMPT_RETURN_S,
    TURN_TIMEOUT,
    Background,
    Live,
    run_processes,
    suite_fixtures,
    tool_then_text,
    wait_for,
)
from .suite import MCP_STUB

pytestmark = NEEDS_PROC

rig, live = suite_fixtures("gemini")


def _next_minute() -> None:
    # Gemini CLI loses a session loaded in the wall-clock minute it was created in; a new
    # Agent cannot know when that was, so the test waits for the next minute itself.
    time.sleep(61.0 - time.time() % 60.0)


class TestAcpChecks(AcpStreamChecks, StallChecks):
    """The checks every ACP agent passes, on Gemini CLI.

    workspace_write() runs it in auto_edit mode: a shell command it does not consider safe
    (touch) is asked about; a denied one is answered as a tool result, and the turn goes on.
    """

    replays_history = True
    a_denial_ends_the_turn = False
    stall_s = 5.0

    def check_spawn(self, request: SpawnRequest, first: TurnResult) -> None:
        assert request.argv[1:] == ("--acp", "--approval-mode", "yolo")

    def before_load(self) -> None:
        _next_minute()


def test_interrupt_while_the_handler_decides_ends_the_turn(live: Live) -> None:
    # Gemini CLI holds the prompt open until its permission request is answered; the
    # transport answers it "cancelled", so the turn ends and the command never runs.
    session_box: list[Session] = []

    def interrupt_then_allow(_: ApprovalRequest) -> ApprovalDecision:
        session_box[0].interrupt()
        return ApprovalDecision.allow()

    agent = live.agent(
        permissions=NativePermissions.workspace_write(), approvals=interrupt_then_allow
    )
    live.script(*tool_then_text("touch never.txt"))
    with live.session(agent) as session:
        session_box.append(session)
        started = time.monotonic()
        result = session.turn("Create never.txt.").result
        assert time.monotonic() - started < TURN_TIMEOUT
        assert result.interrupted
        live.script(Rule(respond=Text(HELLO)))
        assert session.turn("Say hello.").result.text == HELLO
    assert not (live.work / "never.txt").exists()
    assert [a.decided_by for a in live.events if isinstance(a, ApprovalAnswered)] == ["interrupted"]


def test_kill_9_mid_turn_raises_cli_died_and_the_next_turn_loads_the_session(
    live: Live,
) -> None:
    live.script(Rule(respond=Text(HELLO)))
    with live.session() as session:
        first = session.turn("Say hello.").result
        live.script(Rule(respond=Hang(60.0, after_text="Thinking")))
        running = Background(lambda: session.turn("Think.").result)
        wait_for(lambda: bool(live.server.requests) and len(live.server.requests) >= 2, 30, "call")
        _, process = live.executor.spawned[0]
        os.killpg(process.pid, signal.SIGKILL)
        with pytest.raises(CliDiedError) as caught:
            running.join(PROMPT_RETURN_S + TURN_TIMEOUT)
        assert caught.value.session_id == first.session_id
        live.script(Rule(respond=Text(HELLO)))
        third = session.turn("Say hello again.").result
    assert third.text == HELLO
    assert third.session_id == first.session_id
    assert len(live.executor.spawned) == 2


def test_an_mcp_server_starts_with_the_session_and_close_ends_cli_and_server(
    live: Live, tmp_path: Path
) -> None:
    # With a stdio MCP child, Gemini CLI does not exit on stdin EOF: closing goes on to
    # SIGTERM its process group, and nothing of the session is left running.
    marker = tmp_path / "mcp-stub-started"
    server = StdioMcpServer(
        name="agentshim-stub", command=sys.executable, args=(str(MCP_STUB), str(marker))
    )
    live.script(Rule(respond=Text(HELLO)))
    agent = live.agent()
    session = agent.start_session(str(live.work), mcp_servers=(server,))
    assert session.turn("Say hello.").result.text == HELLO
    assert marker.exists(), "the MCP server given to session/new was not started"
    ((request, _),) = live.executor.spawned
    assert not any("agentshim-stub" in arg for arg in request.argv)
    started = time.monotonic()
    session.close()
    assert time.monotonic() - started < 20.0
    wait_for(
        lambda: not run_processes(live.rig.cli.home, str(MCP_STUB)), 5.0, "the MCP server ending"
    )


def test_a_turn_request_is_one_prompt(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    agent = live.agent()
    conversation = agent.transport.open(
        ConversationSpec(
            cwd=str(live.work),
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
        )
    )
    try:
        result = conversation.turn(TurnRequest("Say hello."), live.events.append)
    finally:
        conversation.close()
    assert result.text == HELLO


# -- the shared contracts, on the real CLI ---------------------------------------------


def _seed(contract: ContractRig, session_id: str) -> None:
    """Make the CLI hold session ``session_id`` here: one headless turn that starts it.

    A load in the minute of creation loses the session, so this returns in a later one.
    """
    argv = [str(contract.rig.binary), "--session-id", session_id, "--yolo"]
    argv += ["--output-format", "json"]
    subprocess.run(
        argv,
        input=f"{SEED_MARKER}: start the session.",
        text=True,
        cwd=contract.work,
        env=dict(contract.rig.cli.env),
        capture_output=True,
        timeout=TURN_TIMEOUT,
        check=True,
    )
    _next_minute()


contract_rig = contract_fixture(_seed)


class TestStreamConversationContract(LiveConversationContract, ConversationContract):
    """The Conversation contract on real Gemini CLI ACP sessions."""


class TestStreamTransportContract(LiveTransportContract, TransportContract):
    """The Transport contract on the real Gemini CLI ACP transport."""
