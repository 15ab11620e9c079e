"""NativePermissions as the app-server's approval policy and sandbox.

``bypass()`` is ``approvalPolicy: "never"`` with ``danger-full-access``: nothing is asked.
Every other mode asks for what is not known to be safe (``"untrusted"``), so each request
reaches the conversation's approvals, which decide fail-closed; ``read_only()`` and
``workspace_write()`` are Codex's ``read-only`` and ``workspace-write`` sandboxes, the extra
roots and network access of the latter going on each ``turn/start`` as its sandbox policy.
"""

from __future__ import annotations

from agentshim.core.permissions import NativeMode, NativePermissions

from . import protocol as p

__all__ = ["approval_policy", "sandbox_mode", "sandbox_policy"]


def approval_policy(permissions: NativePermissions) -> str:
    """When Codex asks: never under bypass, else for everything not known to be safe."""
    return "never" if permissions.mode is NativeMode.BYPASS else "untrusted"


def sandbox_mode(permissions: NativePermissions) -> p.SandboxMode:
    """The thread's sandbox."""
    if permissions.mode is NativeMode.BYPASS:
        return p.SandboxMode.DANGER_FULL_ACCESS
    if permissions.mode is NativeMode.READ_ONLY:
        return p.SandboxMode.READ_ONLY
    return p.SandboxMode.WORKSPACE_WRITE


def sandbox_policy(permissions: NativePermissions) -> p.SandboxPolicy | None:
    """The per-turn sandbox policy when the thread's mode alone does not say it all."""
    if permissions.mode is not NativeMode.WORKSPACE_WRITE:
        return None
    if not permissions.writable_roots and not permissions.network:
        return None
    return p.WorkspaceWriteSandboxPolicy(
        writable_roots=tuple(permissions.writable_roots),
        network_access=permissions.network,
    )
