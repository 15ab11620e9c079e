"""Running part of a test as another user (uid/gid 65534), for tests of what that user can reach."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable

NOBODY = 65534
"""The uid and gid the scenario runs as."""


def run_as_nobody(scenario: Callable[[], None]) -> None:
    """Run ``scenario`` in a forked child that dropped to uid/gid 65534; its failure fails here.

    Needs root. The child reports a failure's traceback through a pipe, so the assertion that
    fails here shows what failed there.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            assert os.geteuid() == NOBODY
            scenario()
            status = 0
        except BaseException:
            os.write(write_end, traceback.format_exc().encode())
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, report
