"""HTTP plumbing: read a request, write JSON or a chunked SSE stream, drop a connection.

Kept apart from what the server answers so the answering logic never touches sockets.
"""

from __future__ import annotations

import gzip
import socket
import threading
import zlib
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import cast

from ._json import dumps

__all__ = ["Connection", "HttpServer"]


class Connection:
    """One request on one connection, as the answering code sees it."""

    def __init__(self, handler: _Handler) -> None:
        self._handler = handler
        self.method = handler.command
        self.target = handler.path
        self.headers: Mapping[str, str] = dict(handler.headers.items())
        #: Whether a status line has gone out (after that, only dropping is left).
        self.started = False

    def read_body(self) -> bytes:
        """The request body, de-chunked and decompressed (gzip, deflate) when needed."""
        handler = self._handler
        encoding = handler.headers.get("Transfer-Encoding", "").lower()
        if "chunked" in encoding:
            raw = self._read_chunked()
        else:
            try:
                length = int(handler.headers.get("Content-Length") or 0)
            except ValueError:
                length = 0
            raw = handler.rfile.read(length) if length > 0 else b""
        compression = handler.headers.get("Content-Encoding", "").lower()
        try:
            if compression == "gzip":
                return gzip.decompress(raw)
            if compression == "deflate":
                return zlib.decompress(raw)
        except (OSError, zlib.error):
            return raw
        return raw

    def _read_chunked(self) -> bytes:
        rfile = self._handler.rfile
        data = bytearray()
        while True:
            size_line = rfile.readline()
            if not size_line:
                break
            try:
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            except ValueError:
                break
            if size == 0:
                while rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                break
            data += rfile.read(size)
            rfile.readline()
        return bytes(data)

    def _head(self, status: int, headers: Mapping[str, str]) -> None:
        self.started = True
        self._handler.send_response(status)
        for name, value in headers.items():
            self._handler.send_header(name, value)

    def send_bytes(
        self, status: int, body: bytes, content_type: str, headers: Mapping[str, str]
    ) -> None:
        """A complete response (the body is left out for HEAD)."""
        self._head(status, headers)
        self._handler.send_header("Content-Type", content_type)
        self._handler.send_header("Content-Length", str(len(body)))
        self._handler.end_headers()
        if self.method != "HEAD":
            self._handler.wfile.write(body)
        self._handler.wfile.flush()

    def send_json(self, status: int, payload: object, headers: Mapping[str, str]) -> None:
        """A JSON response; a string payload is sent verbatim."""
        text = payload if isinstance(payload, str) else dumps(payload)
        self.send_bytes(status, text.encode(), "application/json", headers)

    def start_stream(self, headers: Mapping[str, str]) -> None:
        """Begin a 200 ``text/event-stream`` response with chunked transfer encoding."""
        self._head(200, headers)
        self._handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self._handler.send_header("Cache-Control", "no-cache")
        self._handler.send_header("Transfer-Encoding", "chunked")
        self._handler.end_headers()
        self._handler.wfile.flush()

    def write_chunk(self, data: bytes) -> None:
        """Send one piece of the stream right away."""
        if data:
            self._handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self._handler.wfile.flush()

    def end_stream(self) -> None:
        """Finish the stream properly (the connection may be reused)."""
        self._handler.wfile.write(b"0\r\n\r\n")
        self._handler.wfile.flush()

    def drop(self) -> None:
        """Close the connection after this request without finishing any response."""
        self._handler.close_connection = True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "agentshim-model-server"
    sys_version = ""
    # A client that stops talking mid-request must not pin a thread forever.
    timeout = 300

    def setup(self) -> None:
        super().setup()
        # Deltas are tiny writes; without this, Nagle plus delayed ACKs stall each by ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        cast("HttpServer", self.server).track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            cast("HttpServer", self.server).track(self.connection, add=False)

    def log_message(self, format: str, *args: object) -> None:
        """Stay quiet: the request log is the record."""

    def _serve(self) -> None:
        server = cast("HttpServer", self.server)
        connection = Connection(self)
        try:
            server.answer(connection)
        except OSError:
            # The client went away mid-answer; nothing is left to tell it.
            self.close_connection = True

    do_GET = _serve
    do_POST = _serve
    do_HEAD = _serve
    do_PUT = _serve
    do_DELETE = _serve
    do_PATCH = _serve
    do_OPTIONS = _serve


class HttpServer(ThreadingHTTPServer):
    """A threading HTTP server that hands each request to ``answer`` and tracks connections.

    Tracking lets ``close_connections`` wake threads blocked on idle keep-alive sockets, so
    shutting down never waits on a client that is still connected.
    """

    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], answer: Callable[[Connection], None]) -> None:
        super().__init__(address, _Handler)
        self.answer = answer
        self._open: set[socket.socket] = set()
        self._open_changed = threading.Condition()

    def track(self, sock: socket.socket, *, add: bool) -> None:
        """Register or forget a client socket."""
        with self._open_changed:
            if add:
                self._open.add(sock)
            else:
                self._open.discard(sock)
            self._open_changed.notify_all()

    def close_connections(self, timeout: float) -> None:
        """Shut every client socket and wait (up to ``timeout``) for their threads to end."""
        with self._open_changed:
            for sock in list(self._open):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self._open_changed.wait_for(lambda: not self._open, timeout)
