"""The ACP Python SDK's own client (``agent-client-protocol``) against agentshim's fake agent.

The SDK's client parses every answer and update with its schema models, so a frame of the
fake's that is not valid v1 fails here: ``session/new`` and ``session/load`` results
included (a ``"modes": {}`` once did).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import acp
from acp.schema import (
    AllowedOutcome,
    RequestPermissionResponse,
    SessionConfigOptionSelect,
    SessionModeState,
)

from agentshim.testing.acp import AcpPeer, AcpPeers, AcpPeerTurn, AcpQuirks

ROOT = Path(__file__).parents[3]


class Recorder:
    """An SDK Client that keeps every update and allows what it is asked about."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.asked: list[Any] = []

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        allow = next(option for option in options if option.kind == "allow_once")
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    def text(self) -> str:
        return "".join(
            getattr(update.content, "text", "")
            for update in self.updates
            if getattr(update, "session_update", "") == "agent_message_chunk"
        )


async def _drive(recorder: Recorder, cwd: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    async with acp.spawn_agent_process(
        lambda _agent: recorder,  # type: ignore[arg-type,return-value]
        sys.executable,
        "-m",
        "agentshim.testing.acp_agent",
        env=env,
        cwd=cwd,
    ) as (connection, process):
        init = await connection.initialize(protocol_version=acp.PROTOCOL_VERSION)
        new = await connection.new_session(cwd=cwd, mcp_servers=[])
        plain = await connection.prompt(
            session_id=new.session_id, prompt=[acp.text_block("hello there")]
        )
        answer = recorder.text()
        tool = await connection.prompt(
            session_id=new.session_id, prompt=[acp.text_block("TOOL please")]
        )
        await connection.set_session_mode(session_id=new.session_id, mode_id="plan")
        loaded = await connection.load_session(cwd=cwd, session_id=new.session_id)
        await connection.close()
        process.stdin.close() if process.stdin else None
        code = await process.wait()
    return {
        "init": init,
        "new": new,
        "plain": plain,
        "answer": answer,
        "tool": tool,
        "loaded": loaded,
        "code": code,
    }


def test_the_sdk_client_runs_two_turns_a_tool_a_mode_switch_and_a_load(tmp_path: Path) -> None:
    recorder = Recorder()
    run = asyncio.run(_drive(recorder, str(tmp_path)))
    assert run["init"].protocol_version == 1
    assert run["new"].modes.current_mode_id == "default"
    assert [mode.id for mode in run["new"].modes.available_modes] == ["default", "plan"]
    assert run["plain"].stop_reason == "end_turn"
    assert "you said: hello there" in run["answer"]
    assert run["tool"].stop_reason == "end_turn"
    assert [call.title for call in recorder.asked] == ["touch tool.txt"]
    kinds = [getattr(update, "session_update", "") for update in recorder.updates]
    assert "current_mode_update" in kinds
    assert "tool_call_update" in kinds
    # The load replayed the conversation and named the session's modes.
    assert run["loaded"].modes.current_mode_id == "plan"
    assert kinds.count("user_message_chunk") == 2
    assert run["code"] == 0


def test_session_answers_name_modes_and_settings_in_their_v1_shapes() -> None:
    # The SDK's client reads a malformed ``modes`` as none; the models themselves do not.
    peer = AcpPeer(AcpPeers([AcpPeerTurn("x")], quirks=AcpQuirks()), ("fake",))

    def answer(line: dict[str, Any]) -> dict[str, Any]:
        outputs = [json.loads(out.text) for out in peer.on_stdin(json.dumps(line))]
        return next(frame["result"] for frame in outputs if frame.get("id") == line["id"])

    created = answer({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}})
    loaded = answer(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/load",
            "params": {"sessionId": created["sessionId"], "cwd": "/", "mcpServers": []},
        }
    )
    for result in (created, loaded):
        SessionModeState.model_validate(result["modes"])
        for option in result["configOptions"]:
            SessionConfigOptionSelect.model_validate(option)
