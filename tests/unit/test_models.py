"""Model ids, the catalogue and live context windows (the agent-stream seed's examples)."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator

import pytest

from agentshim.core.errors import InvalidRequestError
from agentshim.doctor.model_server import Hang, HttpError, Match, ModelServer, RequestKind, Rule
from agentshim.models import (
    CATALOGUE,
    MISS_RETRY_S,
    ContextWindows,
    ModelCredential,
    api_model_id,
    context_window_of,
)
from agentshim.providers.claude.model_data import MODEL_TABLE as CLAUDE_MODELS
from agentshim.testing.clock import FakeClock

KEY = ModelCredential("api-key", "sk-test")
MODELS_ENDPOINT = Match(kind=RequestKind.MODEL_LIST)


class TestSeedExamples:
    def test_api_model_id(self) -> None:
        assert api_model_id("claude-opus-5[1m]") == "claude-opus-5"
        assert api_model_id("us.anthropic.claude-sonnet-4-5-20250929-v1:0") == "claude-sonnet-4-5"
        assert api_model_id("claude-3-5-haiku@20241022") == "claude-3-5-haiku"

    def test_context_window_of(self) -> None:
        assert context_window_of("claude-opus-5") == 1000000
        assert context_window_of("claude-haiku-4-5") == 200000
        assert context_window_of("some-future-model") is None


class TestApiModelId:
    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            ("anthropic.claude-opus-4-1-20250805-v1:0", "claude-opus-4-1"),
            ("global.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
            ("claude-opus-4-1@20250805", "claude-opus-4-1"),
            ("Claude-Sonnet-4-5[1M]", "claude-sonnet-4-5"),
            ("anthropic/claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
            ("models/gemini-2.5-pro", "gemini-2.5-pro"),
            ("codex-mini-latest", "codex-mini"),
            ("gpt-5.6-sol", "gpt-5.6-sol"),
            ("claude-sonnet-4-5[1m]", "claude-sonnet-4-5"),
            ("GPT-5", "gpt-5"),
            ("gpt-4o-2024-08-06", "gpt-4o"),
        ],
    )
    def test_every_spelling_comes_back_to_the_api_id(self, raw: str, expected: str) -> None:
        assert api_model_id(raw) == expected

    def test_a_non_string_is_refused(self) -> None:
        with pytest.raises(InvalidRequestError, match="model_id"):
            api_model_id(3)  # type: ignore[arg-type]


class TestCatalogue:
    def test_any_1m_model_has_a_million_tokens(self) -> None:
        assert context_window_of("claude-sonnet-4-5[1m]") == 1_000_000
        assert context_window_of("some-future-model[1m]") == 1_000_000

    def test_nothing_is_none(self) -> None:
        assert context_window_of(None) is None
        assert context_window_of("") is None

    def test_the_default_models_of_the_pinned_clis_are_catalogued(self) -> None:
        # Claude Code 2.1.332's default, 2.1.197's default, Codex's, opencode's.
        for model in (
            "claude-opus-5-5",
            "claude-opus-4-8",
            "gpt-5.6-sol",
            "google-vertex/gemini-3-pro-preview",
        ):
            assert CATALOGUE.get(model) is not None, model
        assert context_window_of("claude-opus-5-5") == 1_000_000
        assert context_window_of("gpt-5.6-sol") == 1_050_000

    def test_every_entry_says_where_its_figures_came_from(self) -> None:
        assert CATALOGUE.models
        assert [spec.id for spec in CATALOGUE.models if not spec.source.strip()] == []

    def test_the_claude_default_of_2_1_332_is_priced(self) -> None:
        from agentshim.providers.claude.model_data import PRICING_TABLE

        assert CLAUDE_MODELS.get("claude-opus-5-5") is not None
        pricing = PRICING_TABLE.get("claude-opus-5-5")
        assert pricing is not None
        assert (pricing.input_per_mtok, pricing.output_per_mtok) == (4.0, 20.0)


class TestCredential:
    def test_an_api_key_goes_on_x_api_key(self) -> None:
        assert ModelCredential("api-key", "sk-1").headers() == {"x-api-key": "sk-1"}

    def test_an_oauth_token_goes_on_bearer_with_the_beta_header(self) -> None:
        assert ModelCredential("oauth", "tok").headers() == {
            "authorization": "Bearer tok",
            "anthropic-beta": "oauth-2025-04-20",
        }

    def test_the_value_is_not_in_repr(self) -> None:
        assert "sk-secret" not in repr(ModelCredential("api-key", "sk-secret"))

    @pytest.mark.parametrize(("kind", "value"), [("token", "x"), ("api-key", ""), ("oauth", 3)])
    def test_a_bad_credential_is_refused(self, kind: str, value: object) -> None:
        with pytest.raises(InvalidRequestError, match="ModelCredential"):
            ModelCredential(kind, value)  # type: ignore[arg-type]


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(context_windows={"claude-opus-5": 1_000_000, "claude-x-1": 321_000}) as s:
        yield s


class TestLive:
    def test_the_api_answer_is_the_window_and_the_headers_carry_the_credential(
        self, server: ModelServer
    ) -> None:
        windows = ContextWindows(base_url=server.base_url)
        assert windows.live("claude-x-1-20260101", KEY) == 321_000
        (request,) = server.requests
        assert request.path == "/v1/models/claude-x-1"
        headers = {k.lower(): v for k, v in request.headers.items()}
        assert headers["x-api-key"] == "sk-test"
        assert "authorization" not in headers

    def test_an_oauth_request_carries_bearer_and_beta(self, server: ModelServer) -> None:
        windows = ContextWindows(base_url=server.base_url)
        assert windows.live("claude-x-1", ModelCredential("oauth", "tok")) == 321_000
        headers = {k.lower(): v for k, v in server.requests[0].headers.items()}
        assert headers["authorization"] == "Bearer tok"
        assert headers["anthropic-beta"] == "oauth-2025-04-20"
        assert "x-api-key" not in headers

    def test_a_hit_is_kept_for_the_life_of_the_object(self, server: ModelServer) -> None:
        clock = FakeClock()
        windows = ContextWindows(base_url=server.base_url, clock=clock)
        assert windows.live("claude-x-1", KEY) == 321_000
        clock.advance(MISS_RETRY_S * 100)
        server.set_script([Rule(HttpError(500), MODELS_ENDPOINT)])
        assert windows.live("claude-x-1", KEY) == 321_000
        assert len(server.requests) == 1

    def test_a_miss_is_retried_after_ten_minutes_not_before(self, server: ModelServer) -> None:
        clock = FakeClock()
        windows = ContextWindows(base_url=server.base_url, clock=clock)
        server.set_script([Rule(HttpError(429), MODELS_ENDPOINT, times=1)])
        assert windows.live("claude-x-1", KEY) is None
        clock.advance(MISS_RETRY_S - 1)
        assert windows.live("claude-x-1", KEY) is None
        assert len(server.requests) == 1
        clock.advance(1)
        assert windows.live("claude-x-1", KEY) == 321_000
        assert len(server.requests) == 2

    def test_the_memo_belongs_to_the_object(self, server: ModelServer) -> None:
        ContextWindows(base_url=server.base_url).live("claude-x-1", KEY)
        ContextWindows(base_url=server.base_url).live("claude-x-1", KEY)
        assert len(server.requests) == 2

    @pytest.mark.parametrize("status", [401, 403, 404, 429, 500, 503, 529])
    def test_an_http_error_is_none(self, server: ModelServer, status: int) -> None:
        server.set_script([Rule(HttpError(status), MODELS_ENDPOINT)])
        assert ContextWindows(base_url=server.base_url).live("claude-x-1", KEY) is None

    def test_a_model_the_api_gives_no_window_is_none(self, server: ModelServer) -> None:
        assert ContextWindows(base_url=server.base_url).live("claude-unknown", KEY) is None

    def test_a_timeout_is_none(self, server: ModelServer) -> None:
        server.set_script([Rule(Hang(5.0), MODELS_ENDPOINT)])
        windows = ContextWindows(base_url=server.base_url, timeout=0.2)
        assert windows.live("claude-x-1", KEY) is None

    def test_no_network_is_none(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        windows = ContextWindows(base_url=f"http://127.0.0.1:{port}", timeout=1.0)
        assert windows.live("claude-x-1", KEY) is None

    @pytest.mark.parametrize(
        "body",
        [
            b"not json",
            b"[1, 2]",
            b'{"max_input_tokens": "lots"}',
            b'{"max_input_tokens": -5}',
            b'{"max_input_tokens": true}',
            b'{"max_input_tokens": 1.5}',
        ],
    )
    def test_garbage_is_none(self, body: bytes) -> None:
        with _serving(body) as base_url:
            assert ContextWindows(base_url=base_url).live("claude-x-1", KEY) is None

    def test_bad_settings_are_refused(self) -> None:
        with pytest.raises(InvalidRequestError, match="base_url"):
            ContextWindows(base_url="ftp://x")
        with pytest.raises(InvalidRequestError, match="timeout"):
            ContextWindows(timeout=0)


class TestResolve:
    def test_1m_wins_outright_without_asking(self, server: ModelServer) -> None:
        windows = ContextWindows(base_url=server.base_url)
        assert windows.resolve("claude-x-1[1m]", KEY) == 1_000_000
        assert server.requests == ()

    def test_the_api_comes_before_the_catalogue(self) -> None:
        # The catalogue says 200000 for claude-haiku-4-5; the API's answer wins.
        with ModelServer(context_windows={"claude-haiku-4-5": 250_000}) as server:
            windows = ContextWindows(base_url=server.base_url)
            assert windows.resolve("claude-haiku-4-5", KEY) == 250_000
            assert windows.resolve("claude-haiku-4-5", None) == 200_000

    def test_a_failed_lookup_falls_back_to_the_catalogue(self, server: ModelServer) -> None:
        server.set_script([Rule(HttpError(401), MODELS_ENDPOINT)])
        windows = ContextWindows(base_url=server.base_url)
        assert windows.resolve("claude-haiku-4-5", KEY) == 200_000

    def test_no_credential_is_the_catalogue_and_no_request(self, server: ModelServer) -> None:
        windows = ContextWindows(base_url=server.base_url)
        assert windows.resolve("claude-haiku-4-5", None) == 200_000
        assert windows.resolve("some-future-model", None) is None
        assert windows.resolve(None, KEY) is None
        assert server.requests == ()


class _Fixed(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        del format, args


class _serving:
    """A local server answering every GET with 200 and ``body``."""

    def __init__(self, body: bytes) -> None:
        handler = type("Handler", (_Fixed,), {"body": body})
        self._httpd = http.server.HTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


class _Dripping:
    """An HTTP server that answers a byte at a time, each well within a socket's timeout."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 999999\r\n\r\n" + b" " * 999999:
                if self.stop.wait(0.1):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return

    def close(self) -> None:
        self.stop.set()
        self.listener.close()
        self.thread.join(10)


def test_a_lookup_against_a_dripping_server_ends_within_its_budget() -> None:
    server = _Dripping()
    windows = ContextWindows(base_url=server.base_url, timeout=0.5)
    answers: list[int | None] = []
    asking = threading.Thread(target=lambda: answers.append(windows.live("claude-x-1", KEY)))
    try:
        asking.start()
        asking.join(30)  # a budget per read would let the drip hold it for a day
        assert not asking.is_alive(), "the lookup outlived its budget"
        assert answers == [None]
    finally:
        server.close()
