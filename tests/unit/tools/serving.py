"""Serving a LocalToolServer on the test's thread while a client runs on another."""

from __future__ import annotations

import os
import selectors
import threading
from collections.abc import Callable

from agentshim.tools import LocalToolServer


def serve_while(serving: LocalToolServer, client: Callable[[], None]) -> None:
    """Run ``client`` on a thread and serve the socket on this one until it is done."""
    done_read, done_write = os.pipe()

    def run() -> None:
        try:
            client()
        finally:
            os.write(done_write, b"x")

    worker = threading.Thread(target=run)
    worker.start()
    with selectors.DefaultSelector() as selector:
        selector.register(serving.fileno(), selectors.EVENT_READ, "serve")
        selector.register(done_read, selectors.EVENT_READ, "done")
        finished = False
        while not finished:
            for key, _ in selector.select(60):
                if key.data == "done":
                    finished = True
                else:
                    serving.ready()
    worker.join(60)
    os.close(done_read)
    os.close(done_write)
