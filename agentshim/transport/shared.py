"""Several conversations on one long-lived JSON-RPC process: a pool of shared processes.

Codex app-server threads and ACP sessions tag every frame with the conversation it belongs
to, so one CLI process can serve several conversations at once. :class:`ProcessPool` keeps,
per distinct process-wide configuration (argv and environment), at most
``ProcessSharing.max_processes`` processes; each conversation gets a :class:`SharedChannel`
on one of them, which a conversation reads and writes as it would its own
:class:`~agentshim.transport.channel.Channel`:

- its requests go out under ids unique on the process (the conversation's own ids are put
  back on the answers), so two conversations' requests never meet;
- what it reads is what a :class:`~agentshim.transport.router.FrameRouter` routed to it: the
  answers to its requests and the frames tagged with its conversation id (``bind_session``);
  a frame tagged with no conversation (a process-wide notice) goes to nobody;
- the process's stderr is kept once, for the process; a conversation that meets the
  process's end gets its tail before the exit, as a conversation on its own process would;
- closing it leaves the process to the others; the process ends when its last conversation
  leaves;
- ``kill`` kills the process, and so ends every conversation's turn on it, each as a process
  that died (their next turns start a new process and re-attach their conversations).

A process that has served ``ProcessSharing.recycle_after`` conversations takes no new one
(some CLIs cannot close a conversation, so a long-lived process only grows) and ends when the
conversations it has leave; a running turn is never disturbed.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Generator, Hashable, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from agentshim.core.clock import Monotonic
from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.events import Emit, RunStarted
from agentshim.core.sharing import ProcessSharing
from agentshim.core.stream import parse_json_object
from agentshim.execution.process import (
    Process,
    ProcessExited,
    ProcessOutput,
    StderrLine,
    StdoutLine,
    end_process,
)

from .channel import Channel
from .installed import InstalledCli
from .ndjson import encode_frame
from .router import FrameRouter, Mailbox
from .warm import WarmIdle

__all__ = [
    "PoolSlot",
    "ProcessPool",
    "ProcessSharing",
    "SessionKey",
    "SharedChannel",
    "SharedProcess",
    "SharingTransport",
    "WarmableConversation",
    "WarmingTransport",
    "bind_session",
    "join_shared",
    "once_per_process",
    "opening_session",
    "prewarm_pool",
    "warm_up",
]

SessionKey = Callable[[Mapping[str, Any]], str | None]
"""The conversation a frame from the process names (its ``threadId``, ``sessionId``), or None."""

_STDERR_TAIL = 200

_Answer = TypeVar("_Answer")


class SharedProcess:
    """One running CLI process and the conversations it serves (made by :class:`ProcessPool`).

    ``session_key`` finds the conversation a frame names.
    """

    def __init__(
        self,
        process: Process,
        argv: Sequence[str],
        session_key: SessionKey,
        *,
        monotonic: Monotonic,
        close_grace: float,
    ) -> None:
        self.argv = tuple(argv)
        self.process = process
        self._session_key = session_key
        self._close_grace = close_grace
        self.router = FrameRouter(
            process, self._route, unrouted=self._unrouted, monotonic=monotonic
        )
        self.stderr: deque[str] = deque(maxlen=_STDERR_TAIL)
        self._lock = threading.Lock()
        self._next_id = 0
        self._ready = threading.Lock()
        self._opening = threading.Lock()
        self.prepared = False
        self._handshake_answer: object = None
        self.sessions = 0
        """Conversations on it now."""
        self.taken = 0
        """Conversations it has taken in all."""
        self.retired = False
        """It takes no new conversation."""
        self.warm = False
        """It is kept running while no conversation is on it (a warm process)."""
        self._spares: dict[Hashable, object] = {}

    @property
    def ended(self) -> bool:
        """The process has ended (a read met its end, or it has been reaped)."""
        return self.router.exit is not None or self.process.wait(0) is not None

    def next_id(self) -> int:
        """A request id no other request on the process has."""
        with self._lock:
            self._next_id += 1
            return self._next_id

    def prepare_once(self, handshake: Callable[[], _Answer]) -> _Answer:
        """Run ``handshake`` if no conversation has completed it on this process yet.

        The first conversation on a process says hello for all; the others wait for it
        (a lock, not a poll) and get what its handshake returned (what the CLI said of
        itself). A handshake that raises leaves the process unprepared.
        """
        with self._ready:
            if not self.prepared:
                self._handshake_answer = handshake()
                self.prepared = True
            return cast(_Answer, self._handshake_answer)

    def leave_spare(self, key: Hashable, spare: object) -> None:
        """Keep ``spare`` (a thread opened ahead, say) for the next ``take_spare(key)``.

        What a warm process can do before anyone asks (Codex: a thread started with the
        settings a new conversation will most likely have) is done once, and handed over.
        """
        with self._lock:
            self._spares[key] = spare

    def take_spare(self, key: Hashable) -> object | None:
        """The spare left under ``key``, no longer kept; None when there is none."""
        with self._lock:
            return self._spares.pop(key, None)

    @contextmanager
    def opening(self) -> Generator[None, None, None]:
        """Hold the process's right to open a conversation (one ``session/new`` at a time).

        Gemini CLI 0.61.0 answers concurrent ``session/new`` requests each about twice as
        late as the one before (9 at once: 0.2 s to 26 s on raw pipes), while one at a time
        each takes about 50 ms; so conversations open their sessions on a shared process one
        after another. Turns are not serialized.
        """
        with self._opening:
            yield

    def _route(self, output: ProcessOutput) -> Hashable | None:
        if not isinstance(output, StdoutLine):
            return None
        frame = parse_json_object(output.text)
        if frame is None:
            return None
        if "method" not in frame:
            identifier = frame.get("id")
            return ("id", identifier) if type(identifier) is int else None
        params = frame.get("params")
        if not isinstance(params, dict):
            return None
        key = self._session_key(params)  # pyright: ignore[reportUnknownArgumentType]
        return None if key is None else ("session", key)

    def _unrouted(self, output: ProcessOutput) -> None:
        if isinstance(output, StderrLine):
            self.stderr.append(output.text)

    def close(self) -> None:
        """End the process: stdin EOF, then SIGTERM, then SIGKILL, each after the grace."""
        end_process(self.process, self._close_grace)


class SharedChannel(Channel):
    """One conversation's view of a :class:`SharedProcess`, used like its own Channel."""

    __slots__ = ("_box", "_ids", "_pool", "_shared", "_tail", "fresh")

    def __init__(self, pool: ProcessPool, shared: SharedProcess, *, fresh: bool) -> None:
        super().__init__(shared.process, shared.argv, monotonic=pool.monotonic)
        self._pool = pool
        self._shared = shared
        self._box: Mailbox = shared.router.open()
        self._ids: dict[int, object] = {}
        self._tail: deque[str] | None = None
        self.fresh = fresh
        """The process was started for this conversation (it was not running before)."""

    @property
    def exit(self) -> ProcessExited | None:
        """How the process ended, once this or another conversation met its end.

        A process that ended while nobody read it counts as ended too, so a conversation's
        next turn starts another process instead of writing to a dead one.
        """
        if self._exit is not None:
            return self._exit
        ended = self._shared.router.exit
        if ended is None:
            code = self._shared.process.wait(0)
            ended = None if code is None else ProcessExited(code)
        return ended

    @property
    def process(self) -> SharedProcess:
        """The shared process this conversation is on."""
        return self._shared

    def bind_session(self, key: str) -> None:
        """Deliver the frames that name conversation ``key`` to this channel."""
        self._shared.router.bind(("session", key), self._box)

    def send(self, frame: Mapping[str, Any]) -> None:
        """Write ``frame``; a request goes out under an id unique on the process.

        Raises:
            InvalidRequestError: the frame cannot be JSON (nothing is written).
            ProcessClosedError: the process is gone.
        """
        if "method" in frame and "id" in frame:
            wire = self._shared.next_id()
            self._ids[wire] = frame["id"]
            self._shared.router.bind(("id", wire), self._box)
            frame = {**frame, "id": wire}
        self._process.write(encode_frame(frame))

    def read(self, deadline: float | None) -> ProcessOutput | None:
        """The conversation's next output, or None at ``deadline`` or on a ``wake``."""
        if self._exit is not None:
            return self._exit
        tail = self._tail
        if tail is not None:
            return StderrLine(tail.popleft()) if tail else self._ended()
        output = self._shared.router.wait(self._box, deadline)
        if isinstance(output, ProcessExited):
            # Hand over what the process said on stderr before its end, then the end.
            self._tail = deque(self._shared.stderr)
            return self.read(deadline)
        if isinstance(output, StdoutLine):
            return self._readdressed(output)
        return output

    def _ended(self) -> ProcessExited | None:
        self._exit = self._shared.router.exit
        return self._exit

    def _readdressed(self, output: StdoutLine) -> StdoutLine:
        """An answer to one of our requests, under the id the conversation sent it with."""
        frame = parse_json_object(output.text)
        if frame is None or "method" in frame:
            return output
        wire = frame.get("id")
        if type(wire) is not int or wire not in self._ids:
            return output
        self._shared.router.unbind(("id", wire))
        return StdoutLine(json.dumps({**frame, "id": self._ids.pop(wire)}) + "\n")

    def keep_warm(self) -> None:
        """Keep the process running once no conversation is on it (until the pool cools)."""
        self._shared.warm = True

    def wake(self) -> None:
        """End this conversation's ``read`` blocked on another thread now; thread-safe."""
        self._shared.router.wake(self._box)

    def kill(self, wait: float = 5.0) -> None:
        """Kill the shared process now: every conversation on it meets its end."""
        self._process.kill()
        self._process.wait(wait)

    def close(self, grace: float) -> int | None:
        """Leave the process; it ends when its last conversation has left (None: it runs on)."""
        del grace
        self._shared.router.close(self._box)
        return self._pool.release(self._shared)


class ProcessPool:
    """The shared processes of one transport, per process-wide configuration.

    ``start`` starts a process for an argv and environment; ``monotonic`` is what the
    conversations' deadlines are read on. Thread-safe.
    """

    def __init__(
        self,
        sharing: ProcessSharing,
        start: Callable[[Sequence[str], Mapping[str, str]], SharedProcess],
        *,
        monotonic: Monotonic,
    ) -> None:
        self.sharing = sharing
        self.monotonic = monotonic
        self._start = start
        self._lock = threading.Lock()
        self._processes: dict[tuple[Any, ...], list[SharedProcess]] = {}
        self._idle: WarmIdle | None = None
        self._due: dict[SharedProcess, float] = {}

    def attach(self, argv: Sequence[str], env: Mapping[str, str]) -> SharedChannel:
        """A channel on a process of this configuration, started when none can take it.

        Raises:
            CliNotFoundError / AgentShimError: the process could not be started.
        """
        key = (tuple(argv), tuple(sorted(env.items())))
        with self._lock:
            running = [p for p in self._processes.get(key, []) if not p.ended]
            self._processes[key] = running
            open_ = [p for p in running if not p.retired]
            least = min(open_, key=lambda p: p.sessions, default=None)
            fresh = least is None or (
                least.sessions > 0 and len(running) < self.sharing.max_processes
            )
            if fresh or least is None:
                least = self._start(argv, env)
                running.append(least)
            least.sessions += 1
            least.taken += 1
            self._due.pop(least, None)  # in use: not idle any more
            recycle = self.sharing.recycle_after
            if recycle is not None and least.taken >= recycle:
                least.retired = True
            return SharedChannel(self, least, fresh=fresh)

    def release(self, shared: SharedProcess) -> int | None:
        """A conversation left ``shared``; end it when it was the last (its status, else None)."""
        with self._lock:
            shared.sessions -= 1
            if shared.sessions > 0:
                return None
            idle, first = self._idle, None
            if shared.warm and not shared.retired and not shared.ended:
                # A warm process waits for the next conversation, for its idle time at most.
                if idle is None:
                    return None
                self._due[shared] = idle.due()
                first = min(self._due.values())
            else:
                self._drop(shared)
        if idle is not None and first is not None:
            idle.schedule.schedule(self, first)
            return None
        shared.close()
        return shared.process.wait(0)

    def keep_idle(self, idle: WarmIdle) -> None:
        """End a warm process once it has served nobody for ``idle.after`` seconds.

        The latest one given applies to every warm process of the pool, until :meth:`cool`.
        """
        with self._lock:
            self._idle = idle

    def release_if_idle(self) -> bool:
        """End the warm processes idle for their time; look again when the next is due."""
        with self._lock:
            idle = self._idle
            if idle is None:
                return False
            now = idle.monotonic()
            ripe = [shared for shared, due in self._due.items() if due <= now]
            for shared in ripe:
                self._drop(shared)
            following = min(self._due.values(), default=None)
        if following is not None:
            idle.schedule.schedule(self, following)
        for shared in ripe:
            shared.close()
        return bool(ripe)

    def _drop(self, shared: SharedProcess) -> None:
        """Forget ``shared`` (under the lock): it takes no conversation from now on."""
        self._due.pop(shared, None)
        for running in self._processes.values():
            if shared in running:
                running.remove(shared)

    def cool(self) -> None:
        """End every warm process no conversation is on; the busy ones end with their last."""
        idle: list[SharedProcess] = []
        with self._lock:
            for running in self._processes.values():
                for shared in list(running):
                    shared.warm = False
                    if shared.sessions == 0:
                        running.remove(shared)
                        idle.append(shared)
            self._due.clear()
            schedule, self._idle = self._idle, None
        if schedule is not None:
            schedule.schedule.forget(self)
        for shared in idle:
            shared.close()

    def processes(self) -> list[SharedProcess]:
        """The processes running now, of every configuration."""
        with self._lock:
            return [p for running in self._processes.values() for p in running if not p.ended]


@runtime_checkable
class SharingTransport(Protocol):
    """A long-lived transport whose conversations can share processes.

    ``sharing`` is how (None: each conversation keeps a process of its own); set it before
    the first conversation opens.
    """

    sharing: ProcessSharing | None


@runtime_checkable
class WarmingTransport(Protocol):
    """A long-lived transport that can start processes before any conversation needs one."""

    def prewarm(self, count: int, spec: ConversationSpec, idle: WarmIdle | None = None) -> None:
        """Start ``count`` processes for conversations like ``spec`` and keep them warm.

        With ``idle``, a warm process that serves no conversation for ``idle.after`` seconds
        is ended.
        """
        ...

    def release_warm(self) -> None:
        """End the warm processes no conversation is on."""
        ...


class PoolSlot:
    """A transport's :class:`ProcessPool`, made on first use from its resolved CLI.

    ``session_key`` finds the conversation a frame of this protocol names.
    """

    def __init__(self, session_key: SessionKey) -> None:
        self._session_key = session_key
        self._lock = threading.Lock()
        self._pool: ProcessPool | None = None

    def get(
        self, sharing: ProcessSharing | None, context: InstalledCli, *, close_grace: float
    ) -> ProcessPool | None:
        """The pool (made now if needed); None when ``sharing`` is None."""
        if sharing is None:
            return None
        with self._lock:
            if self._pool is None:
                session_key = self._session_key

                def start(argv: Sequence[str], env: Mapping[str, str]) -> SharedProcess:
                    process = context.spawn(argv, env)
                    return SharedProcess(
                        process,
                        argv,
                        session_key,
                        monotonic=context.monotonic,
                        close_grace=close_grace,
                    )

                self._pool = ProcessPool(sharing, start, monotonic=context.monotonic)
            return self._pool


def join_shared(
    pool: ProcessPool, argv: Sequence[str], env: Mapping[str, str], emit: Emit
) -> SharedChannel:
    """A conversation's channel on a process of ``pool`` for ``argv`` and ``env``.

    ``RunStarted`` reports the argv the conversation runs on, as a process of its own would.
    """
    emit(RunStarted(tuple(argv)))
    return pool.attach(argv, env)


def once_per_process(channel: Channel, handshake: Callable[[], _Answer]) -> _Answer:
    """Run ``handshake`` now, or, on a shared process, only if no conversation has run it yet.

    Returns what the handshake returned, on a shared process what its first run returned.
    """
    if isinstance(channel, SharedChannel):
        return channel.process.prepare_once(handshake)
    return handshake()


def bind_session(channel: Channel, session_id: str) -> None:
    """On a shared process, deliver the frames naming ``session_id`` to ``channel``."""
    if isinstance(channel, SharedChannel):
        channel.bind_session(session_id)


class WarmableConversation(Protocol):
    """A conversation that can start its process and session before its first turn."""

    def warm(self) -> None:
        """Start (or join) its process and open its session now; keep the process warm."""
        ...

    def close(self) -> None:
        """Leave the process (a warm one keeps running)."""
        ...


def warm_up(open_conversation: Callable[[], WarmableConversation], count: int) -> None:
    """Start ``count`` warm processes: open that many conversations, warm each, close them.

    Each conversation holds its process while the next one is warmed, so a pool with room
    for them starts ``count`` processes; closed, they leave the processes warm. The
    conversations' sessions are thrown away (for opencode this is what makes a process
    quick: its first session is slow to make).
    """
    opened: list[WarmableConversation] = []
    try:
        for _ in range(count):
            conversation = open_conversation()
            opened.append(conversation)
            conversation.warm()
    finally:
        for conversation in opened:
            conversation.close()


def prewarm_pool(
    pool: ProcessPool | None,
    open_conversation: Callable[[], WarmableConversation],
    count: int,
    idle: WarmIdle | None,
) -> None:
    """Start up to ``count`` warm processes in ``pool`` (at most its ``max_processes``).

    With ``idle``, each is ended once it has served no conversation for ``idle.after``
    seconds (the latest ``idle`` given applies to all the pool's warm processes).

    Raises:
        ProviderCapabilityError: there is no pool (the transport does not share processes).
    """
    if pool is None:
        raise ProviderCapabilityError(
            "warm processes are kept by a transport that shares them; pass "
            "share_processes=ProcessSharing(...)"
        )
    if idle is not None:
        pool.keep_idle(idle)
    warm_up(open_conversation, min(count, pool.sharing.max_processes))


def opening_session(channel: Channel) -> AbstractContextManager[None]:
    """While a conversation opens its session: one at a time on a shared process."""
    if isinstance(channel, SharedChannel):
        return channel.process.opening()
    return nullcontext()
