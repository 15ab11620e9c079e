"""Process transport: running commands and long-lived processes, here or confined elsewhere.

Only :mod:`agentshim.core` is imported from here. The seam is :class:`CommandExecutor`;
:class:`HostCommandExecutor` is the real one, :class:`TransformingExecutor` and
:func:`confine` wrap any executor, and ``agentshim.testing`` holds the doubles.
"""

from __future__ import annotations

from .confinement import Confinement, PathMap, confine
from .docker import CONFINED_MARKER, DockerExecConfinement
from .executor import (
    CallbackSink,
    CommandExecutor,
    CommandHandle,
    CommandRequest,
    CommandResult,
    CommandStreamSink,
    NullSink,
)
from .host import HostCommandExecutor
from .host_process import HostProcess
from .process import (
    Process,
    ProcessExited,
    ProcessOutput,
    SpawnRequest,
    StderrLine,
    StdoutLine,
)
from .readiness import ProbeResult, ProbeSpec, run_probe
from .transform import TransformingExecutor

__all__ = [
    "CONFINED_MARKER",
    "CallbackSink",
    "CommandExecutor",
    "CommandHandle",
    "CommandRequest",
    "CommandResult",
    "CommandStreamSink",
    "Confinement",
    "DockerExecConfinement",
    "HostCommandExecutor",
    "HostProcess",
    "NullSink",
    "PathMap",
    "ProbeResult",
    "ProbeSpec",
    "Process",
    "ProcessExited",
    "ProcessOutput",
    "SpawnRequest",
    "StderrLine",
    "StdoutLine",
    "TransformingExecutor",
    "confine",
    "run_probe",
]
