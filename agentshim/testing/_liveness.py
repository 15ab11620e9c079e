"""A liveness guard for the contract suites: a call that should end must end, however slow.

The suites never measure speed (a busy machine is slow, and that is no fault). Where the wrong
behaviour would make a call block (a wake that wakes nothing, an interrupt that stops nothing),
the call runs on a thread of its own and the test fails once a generous limit passes, instead
of hanging the whole run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["HANG_GUARD_S", "returns_within"]

_T = TypeVar("_T")

HANG_GUARD_S = 60.0
"""How long a call that should end may block before a test counts it as hung.

Only a guard against a hang, never a measure of speed: far longer than the right path takes
even on a loaded machine, so a slow machine cannot fail a test through it."""


def returns_within(limit: float, call: Callable[[], _T]) -> _T:
    """Return what ``call`` returns (or raise what it raises), run on a thread of its own.

    Fails the test if ``call`` is still running after ``limit`` seconds; that thread is then
    left behind (a daemon), blocked where the implementation under test blocked it.
    """
    returned: list[_T] = []
    raised: list[BaseException] = []

    def run() -> None:
        try:
            returned.append(call())
        except BaseException as error:  # handed over to the test's thread below
            raised.append(error)

    thread = threading.Thread(target=run, name="contract-call", daemon=True)
    thread.start()
    thread.join(limit)
    assert not thread.is_alive(), f"still blocked after {limit} s: it waited for the wrong thing"
    if raised:
        raise raised[0]
    return returned[0]
