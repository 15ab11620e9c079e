"""Test doubles and helpers shipped for consumers' own tests (public API).

Build agents with ``FakeExecutor`` and ``scripted_turn`` and assert on TurnResult and the typed
events; never on internal attributes. Services test their Session logic with ``FakeTransport``.
Submodules not imported here: ``contracts`` and ``session_contracts`` (pytest mixins, they need
pytest). The scripted model API server and the real CLIs pointed at it, which ``agentshim
doctor`` ships with, are in :mod:`agentshim.doctor` (``model_server``, ``offline``, ``clis``).
``stand_in_executor`` (runs the bundled stand-in CLI in place of a provider's) is imported on
first use: the stand-in runs as ``python -m agentshim.testing.stand_in``, which must not find
its module imported already by this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentshim.core._lazy import lazy_attributes
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

if TYPE_CHECKING:
    from agentshim.testing.stand_in import stand_in_executor

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
    "stand_in_executor",
]

__getattr__, __dir__ = lazy_attributes(
    "agentshim.testing", {"stand_in_executor": "agentshim.testing.stand_in"}, globals()
)
