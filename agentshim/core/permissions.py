"""What the agent's own sandbox allows, and what happens when it asks for permission."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass

__all__ = ["ApprovalPolicy", "NativeMode", "NativePermissions"]


class NativeMode(enum.Enum):
    """The agent CLI's own sandbox mode."""

    BYPASS = "bypass"
    """Sandbox and approvals off; only safe inside an outside confinement."""
    READ_ONLY = "read_only"
    WORKSPACE_WRITE = "workspace_write"


class ApprovalPolicy(enum.Enum):
    """What a transport does when the agent asks for permission or input; it never waits."""

    DENY = "deny"
    """Answer no and let the agent carry on."""
    FAIL_TURN = "fail_turn"
    """Fail the turn."""


@dataclass(frozen=True, slots=True)
class NativePermissions:
    """A validated native-sandbox setting; build one with bypass(), read_only() or workspace_write()."""

    mode: NativeMode
    writable_roots: tuple[str, ...] = ()
    network: bool = False

    def __post_init__(self) -> None:
        if self.mode is not NativeMode.WORKSPACE_WRITE and (self.writable_roots or self.network):
            raise ValueError(
                f"writable_roots and network are only valid with workspace_write, not {self.mode.value}"
            )
        for root in self.writable_roots:
            if not os.path.isabs(root):
                raise ValueError(f"writable root {root!r} must be an absolute path")

    @classmethod
    def bypass(cls) -> NativePermissions:
        """Turn the agent's sandbox and approvals off."""
        return cls(NativeMode.BYPASS)

    @classmethod
    def read_only(cls) -> NativePermissions:
        """Let the agent read but not write."""
        return cls(NativeMode.READ_ONLY)

    @classmethod
    def workspace_write(
        cls, writable_roots: tuple[str, ...] | list[str] = (), *, network: bool = False
    ) -> NativePermissions:
        """Let the agent write in its cwd and ``writable_roots`` (absolute), with optional network."""
        return cls(NativeMode.WORKSPACE_WRITE, tuple(writable_roots), network)
