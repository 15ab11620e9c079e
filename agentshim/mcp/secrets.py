"""Keeping MCP servers' secrets out of config files: the file names a variable, the env has it.

A stdio server's ``env`` values and an HTTP server's header values are usually secrets. A CLI
that reads its MCP servers from a file in the workspace (Claude Code's ``.mcp.json``, Gemini
CLI's ``settings.json``, opencode's ``opencode.json``) expands references to environment
variables in it, each in its own syntax. So the file gets a reference to a fresh variable
(``AGENTSHIM_MCP_<random>_<n>``), and the value goes into the CLI's own environment for the
turn, which only this user's processes can read: no secret is ever written to disk, and the
file (often 0644, in a workspace others may read) holds nothing worth reading.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from agentshim.core.provider import McpInstallation, mcp_env, mcp_env_defaults

__all__ = [
    "SECRET_VARIABLE_PREFIX",
    "ReferenceStyle",
    "SecretReferences",
    "WithSecretEnv",
    "resolve_references",
]

SECRET_VARIABLE_PREFIX = "AGENTSHIM_MCP_"
"""How the variables carrying MCP secrets begin."""


@dataclass(frozen=True, slots=True)
class ReferenceStyle:
    """How one CLI writes a reference to an environment variable in its config file.

    A reference is ``before``, the variable's name, then ``after``: ``${NAME}`` for Claude
    Code and Gemini CLI, ``{env:NAME}`` for opencode. Called with a name, it returns the
    reference; :attr:`pattern` matches one.
    """

    before: str
    after: str

    def __call__(self, name: str) -> str:
        """The reference to the variable ``name``."""
        return f"{self.before}{name}{self.after}"

    @property
    def pattern(self) -> str:
        """A regular expression matching a whole reference; its one group is the name."""
        return f"{re.escape(self.before)}([A-Za-z_][A-Za-z0-9_]*){re.escape(self.after)}"


class SecretReferences:
    """The secrets of one install, each named by a fresh variable.

    ``style`` renders a reference to a variable as the CLI expands it (a ReferenceStyle,
    ``"${NAME}"`` for Claude Code and Gemini CLI, ``"{env:NAME}"`` for opencode). :meth:`refer`
    gives the mapping to write; ``env`` holds the values the CLI's environment must carry.
    """

    def __init__(self, style: Callable[[str], str]) -> None:
        self._style = style
        # Random per install: a variable inherited from an outer agentshim never collides.
        self._stem = f"{SECRET_VARIABLE_PREFIX}{secrets.token_hex(4).upper()}_"
        self.env: dict[str, str] = {}

    def refer(self, values: Mapping[str, str]) -> dict[str, str]:
        """``values`` with every value replaced by a reference to a variable now in ``env``."""
        referred: dict[str, str] = {}
        for key, value in values.items():
            name = f"{self._stem}{len(self.env)}"
            self.env[name] = value
            referred[key] = self._style(name)
        return referred


@dataclass(frozen=True, slots=True)
class WithSecretEnv:
    """An installation whose file holds references, and the env carrying their values."""

    inner: McpInstallation
    secret_env: Mapping[str, str] = field(default_factory=dict[str, str])

    @property
    def argv(self) -> Sequence[str]:
        """The inner installation's flags."""
        return self.inner.argv

    @property
    def env(self) -> Mapping[str, str]:
        """What the inner installation needs, and the secrets' variables."""
        return {**mcp_env(self.inner), **self.secret_env}

    @property
    def env_defaults(self) -> Mapping[str, str]:
        """The inner installation's defaults."""
        return mcp_env_defaults(self.inner)

    def restore(self) -> str | None:
        """Undo the inner installation."""
        return self.inner.restore()


def resolve_references(
    values: Mapping[str, object], env: Mapping[str, str], pattern: str
) -> dict[str, str]:
    """``values`` with each whole-value reference (``pattern``, one group: the name) resolved.

    What a test kit reports as installed: the value the CLI will see. A reference to a
    variable ``env`` lacks stays as written.
    """
    resolved: dict[str, str] = {}
    for key, value in values.items():
        text = str(value)
        found = re.fullmatch(pattern, text)
        resolved[str(key)] = env.get(found.group(1), text) if found else text
    return resolved
