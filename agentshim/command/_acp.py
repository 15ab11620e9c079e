"""``agentshim run --acp "CMD ARGS"`` and ``agentshim doctor --acp "CMD ARGS"``: any ACP agent.

``run`` puts the agent named by its command line in a catalog of its own (the generic ACP
provider, :mod:`agentshim.providers.acp`) and runs the turn as for any provider. ``doctor``
starts the agent, sends ``initialize`` and reports what it answered: its protocol version
(and whether agentshim speaks it), what it offers, and how it lets a client authenticate.
Nothing is prompted: no model is called.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

from agentshim.acp.capabilities import SUPPORTED_VERSIONS, AgentCapabilities, read_initialize
from agentshim.acp.client import PROTOCOL_VERSION
from agentshim.acp.jsonrpc import Response, read_message, request
from agentshim.core.errors import AgentShimError
from agentshim.core.stream import parse_json_object
from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.process import ProcessExited, SpawnRequest, StderrLine
from agentshim.providers.acp import AcpAgentConfig, acp_catalog
from agentshim.providers.catalog import ProviderCatalog
from agentshim.transport.ndjson import encode_frame

__all__ = ["ACP_PROVIDER", "AcpCheck", "acp_run_catalog", "check_acp_agent", "write_acp_check"]

ACP_PROVIDER = "acp"
"""The provider name ``--acp`` gives the agent it names."""

_INIT_TIMEOUT_S = 30.0


def acp_run_catalog(command: str) -> ProviderCatalog:
    """The built-in catalog plus the agent ``command`` names, as provider ``acp``.

    Raises:
        InvalidRequestError: ``command`` holds no words.
    """
    config = AcpAgentConfig(name=ACP_PROVIDER, command=command, display_name=command)
    return acp_catalog(config)


@dataclass(frozen=True)
class AcpCheck:
    """What ``doctor --acp`` found: the command, the agent's answer, what is wrong.

    ``problems`` make it not ready: it did not start, did not answer ``initialize``, or
    chose a protocol version agentshim does not speak.
    """

    command: str
    agent: str | None = None
    protocol_version: int | None = None
    supported_versions: tuple[int, ...] = SUPPORTED_VERSIONS
    offers: Mapping[str, bool] = field(default_factory=dict[str, bool])
    auth_methods: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        """True when nothing in ``problems``."""
        return not self.problems


def _offers(capabilities: AgentCapabilities) -> dict[str, bool]:
    return {
        "session/load": capabilities.load_session,
        "session/resume": capabilities.resume_session,
        "session/list": capabilities.list_sessions,
        "session/close": capabilities.close_session,
        "session/fork": capabilities.fork_session,
        "image prompts": capabilities.image,
        "audio prompts": capabilities.audio,
        "embedded context": capabilities.embedded_context,
        "HTTP MCP servers": capabilities.mcp_http,
        "SSE MCP servers": capabilities.mcp_sse,
    }


def check_acp_agent(command: str, *, timeout: float = _INIT_TIMEOUT_S) -> AcpCheck:
    """Start ``command``, ask ``initialize``, and report the answer (the process is ended)."""
    try:
        config = AcpAgentConfig(name=ACP_PROVIDER, command=command)
        executor = HostCommandExecutor()
        env = dict(os.environ)
        binary = executor.find_binary(config.words[0], env)
        process = executor.spawn(SpawnRequest([binary, *config.words[1:]], env=env))
    except AgentShimError as error:
        return AcpCheck(command, problems=(f"could not start it: {error}",))
    params = {
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
        "clientInfo": {"name": "agentshim", "version": "doctor"},
    }
    stderr: list[str] = []
    try:
        process.write(encode_frame(request("doctor_1", "initialize", params)))
        deadline = time.monotonic() + timeout
        answer: Response | None = None
        while answer is None:
            output = process.next_output(max(deadline - time.monotonic(), 0.0))
            if output is None:
                return AcpCheck(command, problems=(f"no answer to initialize in {timeout:g} s",))
            if isinstance(output, ProcessExited):
                said = "".join(stderr).strip()[-300:]
                return AcpCheck(
                    command,
                    problems=(f"exited {output.returncode} before answering initialize: {said}",),
                )
            if isinstance(output, StderrLine):
                stderr.append(output.text)
                continue
            frame = parse_json_object(output.text)
            message = read_message(frame) if frame is not None else None
            if isinstance(message, Response) and message.request_id == "doctor_1":
                answer = message
    except AgentShimError as error:
        return AcpCheck(command, problems=(f"could not talk to it: {error}",))
    finally:
        process.close_stdin()
        if process.wait(2.0) is None:
            process.terminate()
            process.wait(None)
    if answer.error is not None:
        return AcpCheck(command, problems=(f"initialize failed: {answer.error.describe()}",))
    capabilities = read_initialize(answer.result or {})
    problems: tuple[str, ...] = ()
    if not capabilities.supported:
        problems = (
            f"it speaks ACP version {capabilities.protocol_version!r}; agentshim speaks "
            f"{', '.join(str(v) for v in SUPPORTED_VERSIONS)}",
        )
    return AcpCheck(
        command,
        agent=f"{capabilities.name or '?'} {capabilities.version}".strip(),
        protocol_version=capabilities.protocol_version,
        offers=_offers(capabilities),
        auth_methods=tuple(
            f"{method.method_id} ({method.name})" for method in capabilities.auth_methods
        ),
        problems=problems,
    )


def write_acp_check(check: AcpCheck, out: TextIO, *, as_json: bool) -> None:
    """Write ``check`` as lines a person reads, or as one JSON document."""
    if as_json:
        document: dict[str, Any] = {**asdict(check), "ready": check.ready}
        out.write(json.dumps(document, indent=2, sort_keys=True) + "\n")
        return
    lines = [f"ACP agent: {check.command}", f"  ready: {'yes' if check.ready else 'no'}"]
    if check.agent is not None:
        lines.append(f"  agent: {check.agent}")
        lines.append(f"  protocol version: {check.protocol_version}")
        offered = [name for name, has in check.offers.items() if has]
        lines.append(f"  offers: {', '.join(offered) or 'nothing optional'}")
        lines.append(f"  auth methods: {', '.join(check.auth_methods) or 'none'}")
    lines.extend(f"  problem: {problem}" for problem in check.problems)
    out.write("\n".join(lines) + "\n")
