"""Settings every test shares.

One Hypothesis profile for the whole suite: the suite has to pass on a loaded two-core machine,
so no example is failed for taking long (no deadline, no "too slow" or "large base example"
health check), and no example database is written into the checkout. A test may still choose
how many examples it runs (``@settings(max_examples=...)``); it never sets timing of its own.
"""

from __future__ import annotations

import contextlib
import getpass
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "agentshim",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example],
    database=None,
    print_blob=True,
)
settings.load_profile("agentshim")


def pytest_configure() -> None:
    """Ctrl-C reaches the programs the tests start, however the run itself was started.

    A run started in the background by a shell without job control (``cmd &`` in a script)
    inherits SIGINT ignored, and an ignored signal stays ignored across exec, so the terminal
    tests' Ctrl-C would reach no program; a handled signal is reset to the default on exec.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish() -> None:
    """Remove pytest's per-user temp root when a green run left it empty.

    pytest removes each run's own directory (``tmp_path_retention_policy``) but keeps the root
    it made them in; a failed test's directory stays, and so does the root then.
    """
    root = Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}"
    with contextlib.suppress(OSError):
        root.rmdir()


@pytest.fixture(scope="session")
def postgres_uri() -> Iterator[str]:
    """One PostgreSQL server for the whole test run, started on first use, removed at the end."""
    from tests.postgres_server import embedded_postgres_uri

    with embedded_postgres_uri() as uri:
        yield uri
