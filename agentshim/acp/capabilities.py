"""What an agent says of itself in its ``initialize`` answer, read once per process.

The protocol version it chose, who it is, which optional methods it offers (``session/load``,
``session/resume``, ``session/list``, ``session/close``, ``session/fork``), which prompt
content it takes beyond text, and how a client may authenticate with it. A field the agent
leaves out has the protocol's default (the method is not offered).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from agentshim.core.jsonvalues import as_mapping, as_str, list_or_empty

__all__ = [
    "SUPPORTED_VERSIONS",
    "AgentCapabilities",
    "AgentSession",
    "AuthMethod",
    "read_initialize",
    "read_sessions",
]

SUPPORTED_VERSIONS: tuple[int, ...] = (1,)
"""The ACP versions this client speaks."""


@dataclass(frozen=True, slots=True)
class AuthMethod:
    """One way the agent lets a client authenticate (``authMethods`` of ``initialize``)."""

    method_id: str
    name: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class AgentCapabilities:
    """An agent's ``initialize`` answer: its version, identity and what it offers.

    ``protocol_version`` is None when the answer named none (or not as a number).
    ``image``, ``audio`` and ``embedded_context`` are the prompt content it takes besides
    text and resource links (which every agent takes).
    """

    protocol_version: int | None
    name: str = ""
    version: str = ""
    load_session: bool = False
    image: bool = False
    audio: bool = False
    embedded_context: bool = False
    mcp_http: bool = False
    mcp_sse: bool = False
    list_sessions: bool = False
    resume_session: bool = False
    close_session: bool = False
    fork_session: bool = False
    auth_methods: tuple[AuthMethod, ...] = ()

    @property
    def supported(self) -> bool:
        """Whether this client speaks the version the agent chose."""
        return self.protocol_version in SUPPORTED_VERSIONS

    def describe(self) -> str:
        """The agent, its version and what it offers, as one line."""
        offered = [
            label
            for label, has in (
                ("load", self.load_session),
                ("resume", self.resume_session),
                ("list", self.list_sessions),
                ("close", self.close_session),
                ("fork", self.fork_session),
                ("image", self.image),
                ("audio", self.audio),
                ("embedded context", self.embedded_context),
            )
            if has
        ]
        who = f"{self.name or '?'} {self.version}".strip()
        return f"{who}, ACP {self.protocol_version}, offers: {', '.join(offered) or 'nothing optional'}"


def _flag(mapping: Mapping[str, Any], key: str) -> bool:
    return mapping.get(key) is True


def _present(mapping: Mapping[str, Any], key: str) -> bool:
    return as_mapping(mapping.get(key)) is not None


def _identified(entries: object, id_key: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each object of the list ``entries`` whose ``id_key`` is a non-empty string, with it.

    Anything else in the list (not an object, no such id) is skipped.
    """
    for entry in list_or_empty(entries):
        obj = as_mapping(entry) or {}
        identifier = as_str(obj.get(id_key))
        if identifier:
            yield identifier, obj


def read_initialize(result: Mapping[str, Any]) -> AgentCapabilities:
    """The capabilities in an ``initialize`` result; never raises on a bad shape."""
    version = result.get("protocolVersion")
    info = as_mapping(result.get("agentInfo")) or {}
    agent = as_mapping(result.get("agentCapabilities")) or {}
    prompt = as_mapping(agent.get("promptCapabilities")) or {}
    mcp = as_mapping(agent.get("mcpCapabilities")) or {}
    session = as_mapping(agent.get("sessionCapabilities")) or {}
    methods = tuple(
        AuthMethod(
            method_id,
            as_str(method.get("name")) or method_id,
            as_str(method.get("description")) or "",
        )
        for method_id, method in _identified(result.get("authMethods"), "id")
    )
    return AgentCapabilities(
        protocol_version=version if type(version) is int else None,
        name=as_str(info.get("name")) or "",
        version=as_str(info.get("version")) or "",
        load_session=_flag(agent, "loadSession"),
        image=_flag(prompt, "image"),
        audio=_flag(prompt, "audio"),
        embedded_context=_flag(prompt, "embeddedContext"),
        mcp_http=_flag(mcp, "http"),
        mcp_sse=_flag(mcp, "sse"),
        list_sessions=_present(session, "list"),
        resume_session=_present(session, "resume"),
        close_session=_present(session, "close"),
        fork_session=_present(session, "fork"),
        auth_methods=methods,
    )


@dataclass(frozen=True, slots=True)
class AgentSession:
    """One session an agent lists (``session/list``): its id, directory, title and last change."""

    session_id: str
    cwd: str
    title: str = ""
    updated_at: str = ""


def read_sessions(result: Mapping[str, Any]) -> tuple[tuple[AgentSession, ...], str | None]:
    """The sessions of a ``session/list`` result, and its ``nextCursor`` (None: the last page)."""
    sessions = tuple(
        AgentSession(
            session_id,
            as_str(info.get("cwd")) or "",
            as_str(info.get("title")) or "",
            as_str(info.get("updatedAt")) or "",
        )
        for session_id, info in _identified(result.get("sessions"), "sessionId")
    )
    return sessions, as_str(result.get("nextCursor"))
