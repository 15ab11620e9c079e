"""MCP server specs: the values a turn passes to install its own MCP servers.

A server is a :class:`StdioMcpServer` (a command agentshim's CLI starts and talks to over
stdin/stdout) or an :class:`HttpMcpServer` (a URL it connects to). Both are frozen values,
checked when they are built. How a server is written into a provider's config (key names,
extra fields) is the provider's business; :func:`canonical` is the provider-neutral shape.
The merge and restore of a provider's JSON config file is in :mod:`agentshim.mcp.install`.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal, cast

from agentshim.core._checks import matching, seconds
from agentshim.core._error_base import InvalidRequestError, ProviderCapabilityError
from agentshim.core._readonly import empty_mapping

__all__ = [
    "HttpMcpServer",
    "McpServer",
    "McpTransport",
    "StdioMcpServer",
    "canonical",
    "mcp_servers_entry",
    "refuse_timeouts",
    "tool_timeout_ms",
    "url_carries_secrets",
]

#: How an HTTP MCP server is reached: streamable HTTP, or the older server-sent events.
McpTransport = Literal["http", "sse"]

_SERVER_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
# RFC 9110 token characters.
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _check_name(owner: str, name: object) -> None:
    hint = (
        f"invalid MCP server name {name!r} ({owner}.name): use 1-64 letters, digits, '.', "
        "'_' or '-'"
    )
    matching(owner, "name", name, _SERVER_NAME, "a valid server name", hint)


def _check_timeout(owner: str, label: str, value: object) -> None:
    if value is not None:
        seconds(owner, label, value, positive=True)


def _check_text(field: str, label: str, value: object) -> None:
    # The value is never in the message: an env or header value is often a secret.
    usable = isinstance(value, str) and "\0" not in value
    if usable:
        try:
            cast("str", value).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no config file or argv can carry it
            usable = False
    if not usable:
        got = (
            "a NUL character or a lone surrogate"
            if isinstance(value, str)
            else f"a {type(value).__name__}"
        )
        raise InvalidRequestError(
            field,
            f"{label} is not UTF-8 text without NUL characters",
            f"{label} must be a string without NUL characters that encodes as UTF-8, "
            f"not {got} ({field})",
        )


def _frozen_strings(field: str, label: str, values: Mapping[str, str]) -> Mapping[str, str]:
    if not isinstance(values, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InvalidRequestError(
            field,
            "not a mapping of strings",
            f"{label} must be a mapping of strings, not a {type(values).__name__} ({field})",
        )
    copied = dict(values)
    for key, value in copied.items():
        _check_text(field, f"{label} key", key)
        _check_text(field, f"{label}[{key!r}]", value)
    return MappingProxyType(copied)


def url_carries_secrets(url: str) -> bool:
    """Whether ``url`` holds user info (``user:password@``) or a query string (``?api_key=``).

    Either may be a credential, so such a URL is kept out of argv like a header value.
    """
    parts = urllib.parse.urlsplit(url)
    return "@" in parts.netloc or bool(parts.query)


class _McpServerValue:
    """Checks, hashing and pickling for an MCP server value, whose mappings are read-only proxies.

    Every server has a name and two timeouts, checked here around what its own ``_checked``
    checks; ``_checked`` returns the fields it normalized, which are set on the frozen value.
    """

    __slots__ = ()

    name: str
    startup_timeout: float | None
    tool_timeout: float | None

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _check_name(owner, self.name)
        normalized = self._checked(owner)
        _check_timeout(owner, "startup_timeout", self.startup_timeout)
        _check_timeout(owner, "tool_timeout", self.tool_timeout)
        for name, value in normalized.items():
            object.__setattr__(self, name, value)

    def _checked(self, owner: str) -> dict[str, object]:
        raise NotImplementedError

    def __hash__(self) -> int:
        return hash(_field_values(self, frozenset))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), _field_values(self, dict))


def _field_values(
    server: _McpServerValue, mapping: Callable[[Iterable[tuple[str, str]]], object]
) -> tuple[object, ...]:
    """``server``'s field values in order, each mapping passed through ``mapping`` as items.

    The mappings are read-only proxies, which neither hash nor pickle: ``frozenset`` gives a
    value to hash, ``dict`` one to pickle.
    """
    values: list[object] = []
    for f in fields(cast("StdioMcpServer | HttpMcpServer", server)):
        value: object = getattr(server, f.name)
        if isinstance(value, Mapping):
            value = mapping(cast("Mapping[str, str]", value).items())
        values.append(value)
    return tuple(values)


@dataclass(frozen=True, slots=True)
class StdioMcpServer(_McpServerValue):
    """An MCP server the CLI starts as a child process and speaks to over stdio.

    ``command`` is an absolute path or a bare name looked up on PATH; a relative path with a
    slash is refused, because the CLI may resolve it against a directory nobody expects.
    ``args`` and ``env`` are passed as given (``env`` adds to the CLI's environment).
    Timeouts are in seconds; None leaves the CLI's own default. Invalid values raise
    InvalidRequestError (a ValueError) when the server is built.
    """

    name: str
    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=empty_mapping)
    startup_timeout: float | None = None
    tool_timeout: float | None = None

    def _checked(self, owner: str) -> dict[str, object]:
        _check_text(f"{owner}.command", "MCP server command", self.command)
        if not self.command.strip():
            raise InvalidRequestError(
                f"{owner}.command",
                "empty",
                f"MCP server {self.name!r} has an empty command; pass an absolute path or a "
                "bare command name found on PATH",
            )
        if "/" in self.command and not os.path.isabs(self.command):
            raise InvalidRequestError(
                f"{owner}.command",
                f"{self.command!r} is a relative path",
                f"MCP server {self.name!r} command {self.command!r} is a relative path; "
                "pass an absolute path or a bare command name found on PATH",
            )
        one_string = isinstance(self.args, str)
        if one_string or not isinstance(self.args, Iterable):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                f"{owner}.args",
                f"{self.args!r} is not a sequence of strings",
                f"MCP server {self.name!r} args must be a sequence of strings, not "
                f"{'one string' if one_string else repr(self.args)}; pass one item per argument",
            )
        args = tuple(self.args)
        for arg in args:
            _check_text(f"{owner}.args", f"MCP server {self.name!r} argument", arg)
        env = _frozen_strings(f"{owner}.env", f"MCP server {self.name!r} env", self.env)
        for key in env:
            if not key or "=" in key:
                raise InvalidRequestError(
                    f"{owner}.env",
                    f"variable name {key!r} is invalid",
                    f"MCP server {self.name!r} env name {key!r} is invalid; a variable name "
                    "is non-empty and holds no '='",
                )
        return {"args": args, "env": env}

    # Named again: a frozen dataclass would replace an inherited __hash__ with its own.
    __hash__ = _McpServerValue.__hash__


@dataclass(frozen=True, slots=True)
class HttpMcpServer(_McpServerValue):
    """An MCP server the CLI reaches over HTTP (``"http"``, streamable) or ``"sse"``.

    ``url`` must be an http or https URL with a host; ``headers`` are sent with every
    request (an Authorization header, say). Timeouts are in seconds; None leaves the CLI's
    own default. Invalid values raise InvalidRequestError (a ValueError) when the server is
    built.
    """

    name: str
    url: str
    transport: McpTransport = "http"
    headers: Mapping[str, str] = field(default_factory=empty_mapping)
    startup_timeout: float | None = None
    tool_timeout: float | None = None

    def _checked(self, owner: str) -> dict[str, object]:
        _check_text(f"{owner}.url", "MCP server url", self.url)
        try:
            parts = urllib.parse.urlsplit(self.url)
        except ValueError:  # a malformed IPv6 host such as "http://[::1"
            parts = None
        if (
            parts is None
            or parts.scheme not in ("http", "https")
            or not parts.netloc
            or any(c.isspace() for c in self.url)
        ):
            raise InvalidRequestError(
                f"{owner}.url",
                f"{self.url!r} is not an http(s) URL with a host",
                f"MCP server {self.name!r} url {self.url!r} is not an http(s) URL with a host; "
                "pass one such as 'https://mcp.example.com/v1'",
            )
        if self.transport not in ("http", "sse"):
            raise InvalidRequestError(
                f"{owner}.transport",
                f"{self.transport!r} is not 'http' or 'sse'",
                f"MCP server {self.name!r} transport must be 'http' or 'sse', "
                f"not {self.transport!r}",
            )
        headers = _frozen_strings(
            f"{owner}.headers", f"MCP server {self.name!r} headers", self.headers
        )
        for key, value in headers.items():
            if not _HEADER_NAME.fullmatch(key):
                raise InvalidRequestError(
                    f"{owner}.headers",
                    f"header name {key!r} is invalid",
                    f"MCP server {self.name!r} header name {key!r} is invalid (headers); use "
                    "an HTTP token such as 'Authorization' or 'X-Api-Key'",
                )
            if "\r" in value or "\n" in value:
                raise InvalidRequestError(
                    f"{owner}.headers",
                    f"header {key!r} has a line break in its value",
                    f"MCP server {self.name!r} header {key!r} has a line break in its value "
                    "(headers), which would inject another header; remove it",
                )
        return {"headers": headers}

    # Named again: a frozen dataclass would replace an inherited __hash__ with its own.
    __hash__ = _McpServerValue.__hash__


#: Any MCP server agentshim can install.
McpServer = StdioMcpServer | HttpMcpServer


def canonical(server: McpServer) -> dict[str, Any]:
    """The provider-neutral shape of ``server``, as ``testing.installed_mcp_servers`` reports it.

    A stdio server gives ``{"command", "args", "env"}`` (always all three); an HTTP server
    gives ``{"url", "transport"}``. Headers and timeouts are left out on purpose: providers
    render them differently or not at all.
    """
    if isinstance(server, StdioMcpServer):
        return {"command": server.command, "args": list(server.args), "env": dict(server.env)}
    return {"url": server.url, "transport": server.transport}


def mcp_servers_entry(server: McpServer) -> dict[str, Any]:
    """``server`` as an entry of the ``mcpServers`` JSON object several CLIs read.

    Stdio: ``{"command", "args", "env"?}``; HTTP: ``{"type", "url", "headers"?}`` with
    ``type`` the transport (``"http"`` or ``"sse"``). ``env`` and ``headers`` are there only
    when set; timeouts are left to the provider, whose CLI names them its own way.
    """
    entry: dict[str, Any]
    if isinstance(server, StdioMcpServer):
        entry = {"command": server.command, "args": list(server.args)}
        if server.env:
            entry["env"] = dict(server.env)
    else:
        entry = {"type": server.transport, "url": server.url}
        if server.headers:
            entry["headers"] = dict(server.headers)
    return entry


def refuse_timeouts(server: McpServer, cli: str, *, tool_timeout: bool = False) -> None:
    """Refuse ``server`` when it sets a timeout ``cli`` has no setting for.

    No supported CLI has a startup timeout; ``tool_timeout`` says that ``cli`` has one for tool
    calls (see :func:`tool_timeout_ms`). A timeout is refused rather than silently dropped.

    Raises:
        ProviderCapabilityError: the server sets a timeout ``cli`` cannot; the message names
            the server, ``cli`` and the field to leave unset.
    """
    if tool_timeout:
        if server.startup_timeout is not None:
            raise ProviderCapabilityError(
                f"MCP server {server.name!r}: {cli} has no startup timeout setting; leave "
                "startup_timeout unset (tool_timeout is supported)"
            )
    elif server.startup_timeout is not None or server.tool_timeout is not None:
        raise ProviderCapabilityError(
            f"MCP server {server.name!r}: {cli} has no startup or tool timeout setting; leave "
            "startup_timeout and tool_timeout unset"
        )


def tool_timeout_ms(server: McpServer) -> int | None:
    """``server``'s tool timeout in whole milliseconds (at least 1), or None when unset."""
    if server.tool_timeout is None:
        return None
    return max(1, round(server.tool_timeout * 1000))
