"""What a ``codex app-server`` process is: its capabilities, and the argv that starts one.

::

    codex app-server [--config shell_environment_policy.set.PATH="<env PATH>"]
        --config shell_environment_policy.set.AGENTSHIM_TOOL_RUN="<marker>"
        [--config mcp_servers.<name>.<field>=<value> ...] [extra args]

The prompt, the model, the reasoning effort, the permissions and the output schema are never
in it: they travel in ``thread/start`` and ``turn/start``. MCP servers are the one-shot
provider's ``--config`` flags (their env and header values go in the environment, never in
argv). Every command the agent runs carries the marker in its environment, so the commands an
interrupted turn left running can be found and ended without ending the process.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.profile import OutputSchemaStyle, ProviderProfile
from agentshim.providers.codex._config_flags import config_flag
from agentshim.providers.codex._toml import TomlError
from agentshim.providers.codex.provider import PROFILE

__all__ = ["APP_SERVER_PROFILE", "TOOL_MARKER", "app_server_argv", "thread_config"]

APP_SERVER_PROFILE: ProviderProfile = dataclasses.replace(
    PROFILE, output_schema=OutputSchemaStyle.INLINE_JSON
)
"""Codex CLI over app-server: the one-shot capabilities, the output schema inline per turn."""

TOOL_MARKER = "AGENTSHIM_TOOL_RUN"
"""The variable every command the agent runs carries (its name avoids KEY, SECRET, TOKEN,
which Codex keeps out of its tools' environment)."""


def app_server_argv(
    binary: str,
    *,
    path: str | None,
    marker: str | None,
    mcp_argv: Sequence[str] = (),
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The argv of one long-lived process (see the module docstring).

    ``marker`` None leaves the marker out: a process shared by several conversations gets
    each one's marker per thread (:func:`thread_config`).

    Raises:
        ProviderCapabilityError: a value has no TOML form.
    """
    argv = [binary, "app-server"]
    try:
        if path:
            argv += config_flag(("shell_environment_policy", "set", "PATH"), path)
        if marker is not None:
            argv += config_flag(("shell_environment_policy", "set", TOOL_MARKER), marker)
    except TomlError as error:
        raise ProviderCapabilityError(
            f"a setting cannot be passed to Codex as TOML: {error}"
        ) from error
    return [*argv, *mcp_argv, *extra_args]


def thread_config(*, path: str | None, marker: str) -> dict[str, object]:
    """The ``config`` of one thread on a shared process: its commands' ``PATH`` and marker.

    Codex applies a thread's config over the process's, so every command of that thread, and
    of no other, carries the marker an interrupt's clean-up ends them by.
    """
    variables = {TOOL_MARKER: marker}
    if path:
        variables["PATH"] = path
    return {"shell_environment_policy": {"set": variables}}
