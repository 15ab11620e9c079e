"""Test doubles and helpers shipped for consumers' own tests (public API).

Build agents with ``FakeExecutor`` and ``scripted_turn`` and assert on TurnResult and the typed
events; never on internal attributes. Services test their Session logic with ``FakeTransport``.
Submodules not imported here: ``contracts`` and ``session_contracts`` (pytest mixins, they need
pytest). The scripted model API server and the real CLIs pointed at it, which ``agentshim
doctor`` ships with, are in :mod:`agentshim.doctor` (``model_server``, ``offline``, ``clis``).
"""

from __future__ import annotations

from agentshim.testing.checkpoints import CheckpointOp, FakeCheckpointStore
from agentshim.testing.clock import FakeClock, SequentialIds
from agentshim.testing.confinement import FakeConfinement, WrapCall
from agentshim.testing.conversation import (
    FAKE_PROFILE,
    FakeCall,
    FakeConversation,
    FakeOutcome,
    FakeSteerableConversation,
    FakeTransport,
)
from agentshim.testing.executor import FakeCommandHandle, FakeExecutor, FakeRun
from agentshim.testing.portability import FakePorter
from agentshim.testing.process import (
    EchoPeer,
    FakePeer,
    FakeProcess,
    GateMarker,
    PeerOutput,
    ReplayGates,
    SilentPeer,
)
from agentshim.testing.recording import RecordingEventHandler
from agentshim.testing.scripted import (
    ProviderTestKit,
    ScriptedRun,
    ScriptedTurn,
    ToolFailure,
    installed_mcp_servers,
    scripted_resume_failure,
    scripted_turn,
)

__all__ = [
    "FAKE_PROFILE",
    "CheckpointOp",
    "EchoPeer",
    "FakeCall",
    "FakeCheckpointStore",
    "FakeClock",
    "FakeCommandHandle",
    "FakeConfinement",
    "FakeConversation",
    "FakeExecutor",
    "FakeOutcome",
    "FakePeer",
    "FakePorter",
    "FakeProcess",
    "FakeRun",
    "FakeSteerableConversation",
    "FakeTransport",
    "GateMarker",
    "PeerOutput",
    "ProviderTestKit",
    "RecordingEventHandler",
    "ReplayGates",
    "ScriptedRun",
    "ScriptedTurn",
    "SequentialIds",
    "SilentPeer",
    "ToolFailure",
    "WrapCall",
    "installed_mcp_servers",
    "scripted_resume_failure",
    "scripted_turn",
]
