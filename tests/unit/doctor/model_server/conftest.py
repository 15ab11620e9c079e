from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from agentshim.doctor.model_server import ModelServer


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    text: str

    def json(self) -> Any:
        return json.loads(self.text)

    def events(self) -> list[tuple[str | None, Any]]:
        """Parse an SSE body into (event name, data) pairs; data is JSON when it parses."""
        out: list[tuple[str | None, Any]] = []
        for block in self.text.split("\n\n"):
            if not block.strip():
                continue
            name: str | None = None
            data_lines: list[str] = []
            for line in block.split("\n"):
                if line.startswith("event: "):
                    name = line[len("event: ") :]
                elif line.startswith("data: "):
                    data_lines.append(line[len("data: ") :])
            raw = "\n".join(data_lines)
            try:
                data: Any = json.loads(raw)
            except ValueError:
                data = raw
            out.append((name, data))
        return out


class Client:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 5.0,
    ) -> Answer:
        data = None if body is None else json.dumps(body).encode()
        all_headers = {"content-type": "application/json", **(headers or {})}
        req = urllib.request.Request(
            self.base_url + path, data=data, headers=all_headers, method=method
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return Answer(resp.status, dict(resp.headers.items()), resp.read().decode())
        except urllib.error.HTTPError as err:
            return Answer(err.code, dict(err.headers.items()), err.read().decode())

    def post(self, path: str, body: Any, **kwargs: Any) -> Answer:
        return self.request("POST", path, body, **kwargs)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as srv:
        yield srv


@pytest.fixture
def client(server: ModelServer) -> Client:
    return Client(server.base_url)


@pytest.fixture
def client_factory() -> type[Client]:
    return Client


@pytest.fixture(scope="module")
def shared_server() -> Iterator[tuple[ModelServer, Client]]:
    """One server for a whole module (property tests send many requests)."""
    with ModelServer() as srv:
        yield srv, Client(srv.base_url)
