"""Conversation leases: at most one turn at a time in a conversation, across processes and machines.

A lease is a lock with a time-to-live. The holder renews it while its turn runs and releases
it when the turn ends; a holder that crashed stops renewing, so its lease expires and another
worker can go on. :class:`ConversationLeases` is the seam a service implements over the
database it already runs; :class:`InMemoryLeases` serves one process (the default), and
``SqliteStore`` (:mod:`agentshim.state.sqlite_store`) serves the processes of one machine.

:class:`LeaseKeeper` renews the leases taken through it; :class:`TurnLease` is how one turn
takes, waits for and releases its lease. Lease waits and time-to-live are real time, whatever
clock the session's policy runs on: the other holders live in real time.

Every grant carries a fencing token (:attr:`LeaseHolder.fence`), larger than any the store
granted before. A store that keeps checkpoints too refuses a write carrying an older token
than the current holder's (``LeaseLostError``), so a worker that paused past its lease cannot
overwrite what the new holder wrote.
"""

from __future__ import annotations

import itertools
import math
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

from agentshim.core._checks import instance, seconds
from agentshim.core.clock import StopSignal
from agentshim.core.errors import InvalidRequestError, LeaseTimeoutError
from agentshim.core.events import AgentEvent, Emit, SessionStarted

__all__ = [
    "ConversationLeases",
    "FencedLeases",
    "InMemoryLeases",
    "LeaseHolder",
    "LeaseKeeper",
    "QueuedLeases",
    "TurnLease",
    "conversation_key",
    "kept_leases",
    "validate_lease_key",
]

#: The first and the longest pause between two tries of a turn waiting for a held lease (s).
_FIRST_PAUSE_S = 0.001
_LONGEST_PAUSE_S = 0.02
_LONGEST_KEY = 400


def conversation_key(provider: str, session_id: str) -> str:
    """The lease key of ``provider``'s conversation ``session_id``, the same at both doors."""
    return f"{provider}/{session_id}"


def validate_lease_key(owner: str, key: object) -> str:
    """Return ``key``, or raise InvalidRequestError when it is not a lease key (1-400 characters)."""
    if not isinstance(key, str) or not 0 < len(key) <= _LONGEST_KEY:
        raise InvalidRequestError(
            "key",
            f"{key!r:.80} is not a lease key",
            f"{owner}: a lease key is a string of 1-{_LONGEST_KEY} characters, not {key!r:.80}",
        )
    return key


@dataclass(frozen=True, slots=True)
class LeaseHolder:
    """Who holds (or asks for) a lease: a process on a host, since when, with a unique token.

    ``since`` is wall-clock seconds since the epoch, comparable between machines; ``token``
    tells two holders in one process apart, and is what renew and release match on.
    ``fence`` is the fencing token of the grant: 0 in a holder that asks, and in the holder
    ``acquire`` returns the store's token for that grant, larger than every earlier grant's.
    It takes no part in equality: a holder is the same holder whatever grant it carries.
    """

    pid: int
    host: str
    since: float
    token: str
    fence: int = field(default=0, compare=False)

    @classmethod
    def here(cls) -> LeaseHolder:
        """A new holder for this process and host, from now, with a fresh token."""
        return cls(os.getpid(), socket.gethostname(), time.time(), secrets.token_hex(8))


@runtime_checkable
class ConversationLeases(Protocol):
    """Leases on conversations, by key: one holder per key until it releases or its lease expires.

    Implement it over a shared database to serialize turns across machines, and prove the
    implementation with ``agentshim.testing.contracts.LeasesContract``. Every method may be
    called from any thread; none of them waits for a held lease.
    """

    def acquire(self, key: str, holder: LeaseHolder, ttl: float) -> LeaseHolder:
        """Take ``key``'s lease for ``holder`` for ``ttl`` seconds if it is free or expired.

        Returns the holder of the lease after the call: ``holder`` when it was taken (or
        ``holder`` already held it, which renews it), else the live holder that keeps it;
        either carries the grant's fencing token in ``fence`` (a store that keeps none
        returns 0). A renewed grant keeps its token; a new grant gets a larger one.
        """
        ...

    def renew(self, key: str, holder: LeaseHolder, ttl: float) -> bool:
        """Extend ``holder``'s lease on ``key`` to ``ttl`` seconds from now.

        False when the lease is not ``holder``'s any more (released, or expired and taken).
        """
        ...

    def release(self, key: str, holder: LeaseHolder) -> None:
        """Give up ``holder``'s lease on ``key``; a lease someone else holds is left alone."""
        ...


@runtime_checkable
class FencedLeases(ConversationLeases, Protocol):
    """Leases that can say who holds a key now, with the grant's fencing token.

    A checkpoint store given such leases refuses writes fenced by an older grant.
    """

    def holder(self, key: str) -> LeaseHolder | None:
        """The live holder of ``key``'s lease (with its ``fence``), or None when it is free."""
        ...


@runtime_checkable
class QueuedLeases(ConversationLeases, Protocol):
    """Leases that can wait for a held key themselves: waiters woken by the store, served in order.

    A turn waiting on such leases makes no repeated tries: the store wakes it when the lease
    is released or expires (``PostgresStore`` with ``LISTEN/NOTIFY``), and hands the lease to
    the waiters of a key first come, first served.
    """

    def acquire_waiting(
        self, key: str, holder: LeaseHolder, ttl: float, stop: StopSignal, timeout: float | None
    ) -> LeaseHolder | None:
        """Take ``key``'s lease for ``holder``, waiting in line while others hold or wait for it.

        Returns the granted holder (with its ``fence``), or None when ``stop`` fired first.

        Raises:
            LeaseTimeoutError: the lease did not come to ``holder`` within ``timeout`` seconds.
        """
        ...


@dataclass(slots=True)
class _Granted:
    holder: LeaseHolder
    expires: float


class InMemoryLeases:
    """Leases kept in this process: serializes the turns of its threads, not of other processes.

    An entry lives only while its lease does, so the registry does not grow with the number
    of conversations ever seen. ``len()`` is the number of live leases.

    With ``expires=False`` a lease lasts until it is released, whatever its time-to-live:
    a holder in this process cannot outlive it, and a turn releases its lease however it
    ends, so nothing needs renewing (a LeaseKeeper starts no thread for such leases). An
    Agent's own in-process leases are of this kind.
    """

    def __init__(self, *, expires: bool = True) -> None:
        self._guard = threading.Lock()
        self._granted: dict[str, _Granted] = {}
        # One counter for every key: tokens only need to grow per key, and one counter does
        # not grow with the number of keys ever seen.
        self._fences = itertools.count(1)
        self.expires = expires
        """Whether a lease ends on its own when its time-to-live passes unrenewed."""

    def acquire(self, key: str, holder: LeaseHolder, ttl: float) -> LeaseHolder:
        """Take ``key``'s lease for ``holder`` unless another live holder has it."""
        validate_lease_key("InMemoryLeases.acquire", key)
        seconds("InMemoryLeases.acquire", "ttl", ttl, positive=True)
        now = time.monotonic()
        with self._guard:
            current = self._granted.get(key)
            live = current is not None and current.expires > now
            if current is not None and live and current.holder.token != holder.token:
                return current.holder
            expires = now + ttl if self.expires else math.inf
            if current is not None and live:  # the holder's own live grant: renewed
                current.expires = expires
                return current.holder
            granted = replace(holder, fence=next(self._fences))
            self._granted[key] = _Granted(granted, expires)
            return granted

    def holder(self, key: str) -> LeaseHolder | None:
        """The live holder of ``key``'s lease, or None."""
        validate_lease_key("InMemoryLeases.holder", key)
        with self._guard:
            current = self._granted.get(key)
            if current is None or current.expires <= time.monotonic():
                return None
            return current.holder

    def renew(self, key: str, holder: LeaseHolder, ttl: float) -> bool:
        """Extend ``holder``'s lease; False when it is not ``holder``'s any more."""
        validate_lease_key("InMemoryLeases.renew", key)
        seconds("InMemoryLeases.renew", "ttl", ttl, positive=True)
        with self._guard:
            current = self._granted.get(key)
            if current is None or current.holder.token != holder.token:
                return False
            current.expires = time.monotonic() + ttl if self.expires else math.inf
            return True

    def release(self, key: str, holder: LeaseHolder) -> None:
        """Drop ``holder``'s lease on ``key``, if it still has it."""
        validate_lease_key("InMemoryLeases.release", key)
        with self._guard:
            current = self._granted.get(key)
            if current is not None and current.holder.token == holder.token:
                del self._granted[key]

    def __len__(self) -> int:
        """The number of leases held and not expired."""
        now = time.monotonic()
        with self._guard:
            return sum(1 for granted in self._granted.values() if granted.expires > now)


@dataclass(slots=True)
class _Renewal:
    key: str
    holder: LeaseHolder
    ttl: float
    due: float = field(default=0.0)
    on_lost: Callable[[], None] | None = None


class LeaseKeeper:
    """A ConversationLeases that renews every lease taken through it until it is released.

    Renewal happens every third of the lease's time-to-live on one helper thread, which runs
    only while at least one lease taken through this keeper is held and is joined when the
    last one is released: a turn's own thread sits in its CLI's output loop, and a CLI can be
    silent for minutes during a tool call, so nothing on that thread could renew in time. An
    ``Agent`` shares one keeper among its sessions, so concurrent turns share one thread.

    A renewal that finds the lease gone (it expired and another holder took it) is reported
    through ``log`` and to the callback given with :meth:`on_lost` (a session stops its turn
    there); one that raises is reported through ``log`` and tried again a third of the
    time-to-live later. Either way the store's fencing refuses the lost holder's writes.
    """

    def __init__(
        self, leases: ConversationLeases, *, log: Callable[[str], None] | None = None
    ) -> None:
        self.leases = leases
        self._log: Callable[[str], None] = log or _ignore
        self._cond = threading.Condition()
        self._held: dict[str, _Renewal] = {}
        self._thread: threading.Thread | None = None

    def acquire(self, key: str, holder: LeaseHolder, ttl: float) -> LeaseHolder:
        """Take the lease as ``leases.acquire`` does, and renew it from now on while it is held."""
        got = self.leases.acquire(key, holder, ttl)
        if got.token == holder.token:
            self._keep(key, holder, ttl)
        return got

    def _keep(self, key: str, holder: LeaseHolder, ttl: float) -> None:
        """Renew ``holder``'s new grant from now on (not a lease that never runs out)."""
        if getattr(self.leases, "expires", True) is False:
            return
        try:
            with self._cond:
                self._held[holder.token] = _Renewal(key, holder, ttl, time.monotonic() + ttl / 3)
                # Not alive: a forked child inherits the record of a thread it does not have.
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(
                        target=self._renew_while_held, name="agentshim-lease-renewal", daemon=True
                    )
                    self._thread.start()
                else:
                    self._cond.notify_all()
        except BaseException:
            self.release(key, holder)
            raise

    def renew(self, key: str, holder: LeaseHolder, ttl: float) -> bool:
        """Renew at once, as ``leases.renew`` does."""
        return self.leases.renew(key, holder, ttl)

    def acquire_waiting(
        self, key: str, holder: LeaseHolder, ttl: float, stop: StopSignal, timeout: float | None
    ) -> LeaseHolder | None:
        """Wait in line as ``leases.acquire_waiting`` does (QueuedLeases), then renew the grant.

        Raises:
            InvalidRequestError: the leases cannot wait (they are not QueuedLeases).
        """
        leases = self.leases
        if not isinstance(leases, QueuedLeases):
            raise InvalidRequestError(
                "leases", "not QueuedLeases", "these leases cannot wait; use acquire"
            )
        got = leases.acquire_waiting(key, holder, ttl, stop, timeout)
        if got is not None:
            self._keep(key, holder, ttl)
        return got

    def holder(self, key: str) -> LeaseHolder | None:
        """The live holder of ``key`` where the leases can tell (FencedLeases), else None."""
        leases = self.leases
        return leases.holder(key) if isinstance(leases, FencedLeases) else None

    def on_lost(self, holder: LeaseHolder, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the renewal thread) if ``holder``'s lease is found lost.

        Only a lease taken through this keeper and still renewed is watched; the callback
        must not block.
        """
        with self._cond:
            renewal = self._held.get(holder.token)
            if renewal is not None:
                renewal.on_lost = callback

    def release(self, key: str, holder: LeaseHolder) -> None:
        """Stop renewing ``holder``'s lease and release it, joining the helper thread after the last.

        A release that fails (a database that stays locked) is reported through ``log``,
        not raised: the turn is over either way, and the lease expires on its own.
        """
        done: threading.Thread | None = None
        with self._cond:
            self._held.pop(holder.token, None)
            if not self._held and self._thread is not None:
                done, self._thread = self._thread, None
                self._cond.notify_all()
        try:
            self.leases.release(key, holder)
        except Exception as error:
            self._log(f"releasing the lease on {key!r} failed, so it expires instead: {error!r}")
        finally:
            if done is not None and done is not threading.current_thread() and done.is_alive():
                done.join()

    def _renew_while_held(self) -> None:
        me = threading.current_thread()
        while True:
            with self._cond:
                if self._thread is not me:
                    return
                if not self._held:
                    # Its one lease was lost; the turn's release ends this thread.
                    self._cond.wait()
                    continue
                now = time.monotonic()
                due = [renewal for renewal in self._held.values() if renewal.due <= now]
                if not due:
                    self._cond.wait(min(renewal.due for renewal in self._held.values()) - now)
                    continue
                for renewal in due:
                    renewal.due = now + renewal.ttl / 3
            for renewal in due:
                self._renew(renewal)

    def _renew(self, renewal: _Renewal) -> None:
        try:
            kept = self.leases.renew(renewal.key, renewal.holder, renewal.ttl)
        except Exception as error:
            # The next renewal may get through (a database that was busy); the lease has
            # two more thirds of its life.
            self._log(f"renewing the lease on {renewal.key!r} failed: {error!r}")
            return
        if not kept:
            self._log(
                f"the lease on {renewal.key!r} expired before it was renewed and another "
                "holder may have taken it; this turn's checkpoint will not overwrite theirs"
            )
            with self._cond:
                self._held.pop(renewal.holder.token, None)
            if renewal.on_lost is not None:
                try:
                    renewal.on_lost()
                except Exception as error:
                    self._log(f"reacting to the lost lease on {renewal.key!r} failed: {error!r}")


def kept_leases(
    owner: str, leases: ConversationLeases | None, log: Callable[[str], None]
) -> ConversationLeases | None:
    """``owner``'s ``leases`` checked and held by one LeaseKeeper (None stays None).

    One keeper, so the renewals of all the owner's running turns share one thread; leases
    that are a keeper already are kept as they are.

    Raises:
        InvalidRequestError: ``leases`` is not a ConversationLeases.
    """
    if leases is None:
        return None
    hint = "a ConversationLeases such as InMemoryLeases() or SqliteStore(path), or None"
    instance(owner, "leases", leases, ConversationLeases, hint)
    return leases if isinstance(leases, LeaseKeeper) else LeaseKeeper(leases, log=log)


def _ignore(_: str) -> None:
    """Drop a log line."""


class TurnLease:
    """The lease one turn holds on its conversation; one object serves one turn.

    ``wait`` takes a lease by key before anything runs, waiting while another holder has it;
    a fresh turn knows no conversation yet, so its events go through ``watching``, which
    takes the lease the moment ``SessionStarted`` names the conversation. ``release`` frees
    whatever was taken. ``on_lost`` is called (from the renewal thread) when the lease is
    found taken by another holder while this turn runs; ``fence`` is the grant's token.
    """

    __slots__ = ("_held", "_leases", "_on_lost", "_timeout", "_ttl")

    def __init__(
        self,
        leases: ConversationLeases,
        ttl: float,
        timeout: float | None,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        self._leases = leases
        self._ttl = ttl
        self._timeout = timeout
        self._on_lost = on_lost
        self._held: tuple[str, LeaseHolder] | None = None

    @property
    def fence(self) -> int:
        """The fencing token of the lease held (0 when none is held or the store keeps none)."""
        held = self._held
        return held[1].fence if held is not None else 0

    def _hold(self, key: str, granted: LeaseHolder) -> None:
        self._held = (key, granted)
        if self._on_lost is not None and isinstance(self._leases, LeaseKeeper):
            self._leases.on_lost(granted, self._on_lost)

    def wait(self, key: str, stop: StopSignal) -> bool:
        """Take ``key``'s lease; False (nothing taken) when ``stop`` fires first.

        Raises:
            LeaseTimeoutError: another holder kept it for ``timeout`` seconds.
        """
        holder = LeaseHolder.here()
        timeout = self._timeout
        leases = self._leases
        queued = leases.leases if isinstance(leases, LeaseKeeper) else leases
        if isinstance(queued, QueuedLeases):
            waiting = leases if isinstance(leases, LeaseKeeper) else queued
            granted = waiting.acquire_waiting(key, holder, self._ttl, stop, timeout)
            if granted is None:
                return False
            self._hold(key, granted)
            return True
        deadline = time.monotonic() + timeout if timeout is not None else float("inf")
        pause = _FIRST_PAUSE_S
        while True:
            current = self._leases.acquire(key, holder, self._ttl)
            if current.token == holder.token:
                self._hold(key, current)
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0 and timeout is not None:
                raise LeaseTimeoutError(key, current.pid, current.host, current.since, timeout)
            if stop.wait(min(pause, remaining)):
                return False
            pause = min(pause * 2, _LONGEST_PAUSE_S)

    def watching(self, emit: Emit, key_of: Callable[[str], str]) -> Emit:
        """``emit``, taking the lease on ``key_of(session_id)`` first when an event names one.

        The lease is taken only if it is free: the conversation is brand new, so another
        holder can only be one that adopted its id mid-turn, and that one waits for this turn.
        """

        def leasing_emit(event: AgentEvent) -> None:
            if self._held is None and isinstance(event, SessionStarted):
                key = key_of(event.session_id)
                holder = LeaseHolder.here()
                granted = self._leases.acquire(key, holder, self._ttl)
                if granted.token == holder.token:
                    self._hold(key, granted)
            emit(event)

        return leasing_emit

    def release(self) -> None:
        """Release the lease this turn holds, if any; idempotent."""
        held, self._held = self._held, None
        if held is not None:
            self._leases.release(*held)
