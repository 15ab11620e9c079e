"""Test doubles and helpers shipped for consumers' own tests (public API).

Build agents with ``FakeExecutor`` and ``scripted_turn`` and assert on TurnResult and the typed
events; never on internal attributes.
"""

from __future__ import annotations

from agentshim.testing.clock import FakeClock, SequentialIds
from agentshim.testing.confinement import FakeConfinement
from agentshim.testing.executor import FakeCommandHandle, FakeExecutor, FakeRun
from agentshim.testing.process import (
    EchoPeer,
    FakePeer,
    FakeProcess,
    GateMarker,
    ReplayGates,
    SilentPeer,
)
from agentshim.testing.recording import RecordingEventHandler
from agentshim.testing.scripted import (
    installed_mcp_servers,
    scripted_resume_failure,
    scripted_turn,
)

__all__ = [
    "EchoPeer",
    "FakeClock",
    "FakeCommandHandle",
    "FakeConfinement",
    "FakeExecutor",
    "FakePeer",
    "FakeProcess",
    "FakeRun",
    "GateMarker",
    "RecordingEventHandler",
    "ReplayGates",
    "SequentialIds",
    "SilentPeer",
    "installed_mcp_servers",
    "scripted_resume_failure",
    "scripted_turn",
]
