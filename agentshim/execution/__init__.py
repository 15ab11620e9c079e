"""The executor seam: running commands and long-lived processes, here or confined elsewhere.

Only :mod:`agentshim.core` is imported from here. The seam is :class:`CommandExecutor`;
:class:`HostCommandExecutor` is the real one, :class:`TransformingExecutor` and
:func:`confine` wrap any executor, and ``agentshim.testing`` holds the doubles. Names are
imported on first use, so running a command does not import the container support.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from agentshim.core._lazy import lazy_attributes

if TYPE_CHECKING:
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
    from .pty_process import PtyExecutor, PtyProcess, PtySize
    from .readiness import ProbeResult, ProbeSpec, run_probe
    from .transform import TransformingExecutor

_SOURCES = MappingProxyType(
    {
        "CONFINED_MARKER": "agentshim.execution.docker",
        "CallbackSink": "agentshim.execution.executor",
        "CommandExecutor": "agentshim.execution.executor",
        "CommandHandle": "agentshim.execution.executor",
        "CommandRequest": "agentshim.execution.executor",
        "CommandResult": "agentshim.execution.executor",
        "CommandStreamSink": "agentshim.execution.executor",
        "Confinement": "agentshim.execution.confinement",
        "DockerExecConfinement": "agentshim.execution.docker",
        "HostCommandExecutor": "agentshim.execution.host",
        "HostProcess": "agentshim.execution.host_process",
        "NullSink": "agentshim.execution.executor",
        "PathMap": "agentshim.execution.confinement",
        "ProbeResult": "agentshim.execution.readiness",
        "PtyExecutor": "agentshim.execution.pty_process",
        "PtyProcess": "agentshim.execution.pty_process",
        "PtySize": "agentshim.execution.pty_process",
        "ProbeSpec": "agentshim.execution.readiness",
        "Process": "agentshim.execution.process",
        "ProcessExited": "agentshim.execution.process",
        "ProcessOutput": "agentshim.execution.process",
        "SpawnRequest": "agentshim.execution.process",
        "StderrLine": "agentshim.execution.process",
        "StdoutLine": "agentshim.execution.process",
        "TransformingExecutor": "agentshim.execution.transform",
        "confine": "agentshim.execution.confinement",
        "run_probe": "agentshim.execution.readiness",
    }
)

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
    "PtyExecutor",
    "PtyProcess",
    "PtySize",
    "SpawnRequest",
    "StderrLine",
    "StdoutLine",
    "TransformingExecutor",
    "confine",
    "run_probe",
]

__getattr__, __dir__ = lazy_attributes("agentshim.execution", _SOURCES, globals())
