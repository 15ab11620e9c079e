from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from agentshim.core.errors import AgentShimError
from agentshim.doctor.model_server import (
    Api,
    Hang,
    HttpError,
    ModelServer,
    ModelServerError,
    RequestKind,
    Rule,
    Text,
)


def msg_body(text: str = "hi", stream: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": text}],
    }
    if stream:
        body["stream"] = True
    return body


def test_binds_loopback_on_a_free_port_and_frees_it_on_exit():
    with ModelServer() as first, ModelServer() as second:
        assert first.base_url.startswith("http://127.0.0.1:")
        assert first.port != second.port
        port = first.port
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))


def test_every_request_is_logged_with_method_path_query_headers_and_body(server, client):
    client.post("/v1/messages?beta=true", msg_body("log me"), headers={"x-api-key": "dummy"})
    client.request("HEAD", "/")
    client.request("GET", "/v1/models")
    first, head, models = server.requests
    assert (first.method, first.path, first.query) == ("POST", "/v1/messages", {"beta": "true"})
    assert first.header("X-API-KEY") == "dummy"
    assert first.body == msg_body("log me")
    assert first.api is Api.ANTHROPIC_MESSAGES
    assert first.kind is RequestKind.MAIN
    assert first.facts.user_text == "log me"
    assert (head.method, head.path, head.kind) == ("HEAD", "/", RequestKind.OTHER)
    assert models.kind is RequestKind.MODEL_LIST
    assert [r.index for r in server.requests] == [0, 1, 2]


def test_non_json_body_is_logged_raw(server, client):
    request = urllib.request.Request(
        server.base_url + "/v1/messages", data=b"not json", method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as resp:
        assert resp.status == 200
    logged = server.requests[-1]
    assert logged.body is None
    assert logged.raw_body == b"not json"


def test_unknown_paths_and_head_get_a_harmless_200(client):
    head = client.request("HEAD", "/")
    assert (head.status, head.text) == (200, "")
    other = client.post("/api/event_logging/batch", {"events": []})
    assert (other.status, other.json()) == (200, {})


def test_model_lists(client):
    listing = client.request("GET", "/v1/models").json()
    assert listing["object"] == "list"
    assert [m["id"] for m in listing["data"]] == ["fake-model"]
    one = client.request("GET", "/v1/models/claude-x").json()
    assert one["id"] == "claude-x"


def test_http_error_carries_status_body_and_headers(server, client):
    server.set_script(
        [Rule(respond=HttpError(529, headers={"retry-after": "1", "x-should-retry": "false"}))]
    )
    answer = client.post("/v1/messages", msg_body())
    assert answer.status == 529
    assert answer.headers["retry-after"] == "1"
    assert answer.headers["x-should-retry"] == "false"
    assert answer.json()["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    assert answer.json()["request_id"].startswith("req_")


def test_http_error_with_verbatim_body(server, client):
    server.set_script([Rule(respond=HttpError(503, body="upstream down"))])
    answer = client.post("/v1/messages", msg_body())
    assert (answer.status, answer.text) == (503, "upstream down")


def test_hang_holds_then_drops_the_connection(server, client):
    server.set_script([Rule(respond=Hang(0.3))])
    started = time.monotonic()
    # The client would wait a minute: a dropped connection, not the client giving up, ends it.
    with pytest.raises(http.client.RemoteDisconnected):
        client.post("/v1/messages", msg_body(), timeout=60)
    assert time.monotonic() - started >= 0.25
    assert len(server.requests) == 1


def post_raw(sock: socket.socket, body: dict[str, Any]) -> None:
    payload = json.dumps(body).encode()
    sock.sendall(
        b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )


def test_hang_after_text_streams_partial_output_before_the_hang_ends(server):
    # A ten-minute hang: partial text held back until the hang ends would never arrive here.
    server.set_script([Rule(respond=Hang(600, after_text="thinking..."))])

    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        post_raw(sock, msg_body(stream=True))
        received = b""
        while b"thinking..." not in received:
            chunk = sock.recv(4096)
            assert chunk, "the connection closed before the partial text arrived"
            received += chunk
        server.close()
        while chunk := sock.recv(4096):
            received += chunk
    assert b"message_stop" not in received


def test_hang_after_text_drops_the_stream_unfinished_when_the_hang_ends(server):
    server.set_script([Rule(respond=Hang(0.3, after_text="thinking..."))])

    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        started = time.monotonic()
        post_raw(sock, msg_body(stream=True))
        received = b""
        while chunk := sock.recv(4096):
            received += chunk
        assert time.monotonic() - started >= 0.25
    assert b"thinking..." in received
    assert b"message_stop" not in received
    assert not received.endswith(b"0\r\n\r\n")


def test_close_ends_a_long_hang_and_leaves_no_thread_behind():
    before = set(threading.enumerate())
    # A ten-minute hang and a client that would wait as long: only close() can end this call.
    server = ModelServer([Rule(respond=Hang(600))]).start()
    errors: list[BaseException] = []

    def call() -> None:
        request = urllib.request.Request(
            server.base_url + "/v1/messages", data=b"{}", method="POST"
        )
        try:
            urllib.request.urlopen(request, timeout=600)
        except BaseException as exc:
            errors.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    assert server.wait_for_requests(1, timeout=60)
    server.close()
    caller.join(60)
    assert not caller.is_alive()
    assert [type(e) for e in errors] == [http.client.RemoteDisconnected]
    # The thread that served the hanging request ends too, instead of waiting out the hang.
    for thread in set(threading.enumerate()) - before:
        thread.join(60)
        assert not thread.is_alive(), f"{thread.name} outlived the server"


def test_delay_per_chunk_paces_the_stream(server, client):
    server.set_script([Rule(respond=Text("abcd", chunk_size=1, delay_per_chunk=0.05))])
    started = time.monotonic()
    events = client.post("/v1/messages", msg_body(stream=True)).events()
    assert time.monotonic() - started >= 0.2
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert text == "abcd"


def test_concurrent_requests_are_all_answered_and_counted(server, client):
    server.set_script([Rule(respond=Text("ok"))])
    answers: list[int] = []

    def call() -> None:
        answers.append(client.post("/v1/messages", msg_body()).status)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert answers == [200] * 8
    assert server.rule_uses == (8,)
    assert sorted(r.index for r in server.requests) == list(range(8))


def test_keep_alive_connection_serves_several_requests(server):
    server.set_script([Rule(respond=Text("again"))])
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        for _ in range(3):
            conn.request(
                "POST",
                "/v1/messages",
                json.dumps(msg_body(stream=True)),
                {"Content-Type": "application/json"},
            )
            response = conn.getresponse()
            assert b"message_stop" in response.read()
    finally:
        conn.close()
    assert len(server.requests) == 3


def test_clear_requests_and_wait_for_requests(server, client):
    client.request("HEAD", "/")
    assert server.wait_for_requests(1, timeout=60)
    server.clear_requests()
    assert server.requests == ()
    assert not server.wait_for_requests(1, timeout=0.05)


def test_misuse_raises_a_typed_error():
    server = ModelServer()
    with pytest.raises(ModelServerError, match="not running"):
        _ = server.base_url
    with server, pytest.raises(ModelServerError, match="already running"):
        server.start()
    server.close()
    assert issubclass(ModelServerError, AgentShimError)


def test_taken_port_is_a_typed_error():
    with ModelServer() as running:
        clash = ModelServer(port=running.port)
        with pytest.raises(ModelServerError, match="could not listen"):
            clash.start()
