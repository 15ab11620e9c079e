"""``ModelServer``: a scripted model API on 127.0.0.1 for running real CLIs offline."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from types import TracebackType

from .dispatch import Dispatcher
from .errors import ModelServerError
from .http_server import HttpServer
from .log import LoggedRequest, RequestLog
from .responses import Response, Text
from .rules import Rule
from .script_state import ScriptState

__all__ = ["NO_RULE_ANSWER", "NO_RULE_TEXT", "ModelServer"]

#: What a main-turn request that no rule matches is told (visible in the CLI's output).
NO_RULE_TEXT = "[agentshim model server: no rule matched this request]"

#: The default ``fallback``: an answer that says no rule matched.
NO_RULE_ANSWER = Text(NO_RULE_TEXT)

_CLOSE_TIMEOUT = 5.0


class ModelServer:
    """A scripted model API server on a free port of 127.0.0.1, serving on a background thread.

    It speaks Anthropic Messages, OpenAI Responses, OpenAI Chat Completions and Gemini, and
    answers each request with the first rule of ``script`` that matches it. Side requests
    (titles, Gemini's router, token counts, model lists) get built-in answers unless a rule
    names their kind; a main-turn request no rule matches gets ``fallback``. Every request
    is logged in ``requests``. ``GET /v1/models/<id>`` answers every id; a model named in
    ``context_windows`` also gets its window as ``max_input_tokens``. Use it as a context
    manager::

        with ModelServer([Rule(respond=Text("hello"))]) as server:
            env = {"ANTHROPIC_BASE_URL": server.base_url, ...}
    """

    def __init__(
        self,
        script: Sequence[Rule] = (),
        *,
        fallback: Response = NO_RULE_ANSWER,
        models: Sequence[str] = ("fake-model",),
        context_windows: Mapping[str, int] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._state = ScriptState(script)
        self._log = RequestLog()
        self._stopping = threading.Event()
        self._dispatcher = Dispatcher(
            self._state,
            self._log,
            fallback=fallback,
            models=models,
            stopping=self._stopping,
            context_windows=context_windows,
        )
        self._address = (host, port)
        self._httpd: HttpServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> ModelServer:
        """Bind and start serving; returns ``self``.

        Raises:
            ModelServerError: when already started, or when the address cannot be bound.
        """
        if self._httpd is not None:
            raise ModelServerError("ModelServer is already running; start it only once")
        try:
            httpd = HttpServer(self._address, self._dispatcher.answer)
        except OSError as exc:
            raise ModelServerError(
                f"ModelServer could not listen on {self._address[0]}:{self._address[1]}: "
                f"{exc}; use port=0 for a free port"
            ) from exc
        self._httpd = httpd
        self._stopping.clear()
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"agentshim-model-server:{httpd.server_address[1]}",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving: end hangs and delays, close client connections, free the port.

        Safe to call more than once.
        """
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.close_connections(_CLOSE_TIMEOUT)
        httpd.server_close()
        if thread is not None:
            thread.join(_CLOSE_TIMEOUT)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def port(self) -> int:
        """The port the server listens on.

        Raises:
            ModelServerError: when the server is not running.
        """
        if self._httpd is None:
            raise ModelServerError(
                "ModelServer is not running; use it as a context manager or call start()"
            )
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash, no ``/v1``)."""
        return f"http://{self._address[0]}:{self.port}"

    @property
    def requests(self) -> tuple[LoggedRequest, ...]:
        """Every request received so far, in arrival order."""
        return self._log.snapshot()

    @property
    def rule_uses(self) -> tuple[int, ...]:
        """How many requests each rule of the current script has answered."""
        return self._state.uses()

    def set_script(self, script: Sequence[Rule]) -> None:
        """Replace the rules (use counts restart at zero); the request log is kept."""
        self._state.replace(script)

    def clear_requests(self) -> None:
        """Forget the logged requests (numbering of new requests continues)."""
        self._log.clear()

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Wait until ``count`` requests are logged; False if ``timeout`` seconds pass first."""
        return self._log.wait_for(count, timeout)
