"""The frame-dispatch loop every JSONL stream parser shares: one line in, its events out.

A CLI that prints one JSON object per line (a *frame*, named by its ``type`` field) is read
the same way for every provider: decode the line, hand the frame to the provider's handler
for its type, and send the events the handler produced. What is not a frame, what has no
handler and what a handler cannot make sense of are reported here, once, with the same
events on every provider. The handlers stay in each provider's parser.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any, ClassVar, NamedTuple

from agentshim.core import lifecycle_kinds as lk
from agentshim.core.events import AgentEvent, Emit, Lifecycle, RawOutput, SessionStarted, Stderr
from agentshim.core.stderr_tail import StderrTail
from agentshim.core.stream import parse_json_object, scan_json

__all__ = [
    "UNKNOWN_DETAIL_CHARS",
    "Frame",
    "FrameDispatcher",
    "FrameHandler",
    "FrameParser",
    "LineSkip",
    "frame_label",
    "ignore_frame",
]

Frame = dict[str, Any]
"""One decoded frame: a JSON object."""

FrameHandler = Callable[[Frame, list[AgentEvent]], None]
"""Reads one frame and appends the events it means to the list; may raise on a bad shape."""

UNKNOWN_DETAIL_CHARS = 500
"""How much of an unknown frame's line its ``unknown_frame`` Lifecycle carries."""


_CLOSED = ("}\n", "}")


class LineSkip(NamedTuple):
    """Frames to drop without decoding, recognised from the first bytes of their line.

    A line is skipped when it starts with ``prefix``, the text from there to the next ``"``
    (a frame type, or a nested ``type``) is in ``names`` (or, with ``listed=False``, is not),
    and the line ends with ``}``: a cut-off line still reaches the decoder and comes out as
    RawOutput. With ``marker``, the name is the text after the first ``marker`` past the
    prefix instead (for a CLI that puts another field between the frame type and the nested
    ``type``); a line without the marker is decoded. For CLIs whose most frequent frames
    carry nothing a turn needs: recognising them this way saves decoding them, and a line
    without the prefix costs one ``startswith``.
    """

    prefix: str
    names: frozenset[str]
    listed: bool = True
    marker: str = ""


def frame_label(value: object) -> str:
    """A frame type as a label: a string as it is (cut to 100 characters), else ``<typename>``."""
    if type(value) is str:
        return value[:100]
    return f"<{type(value).__name__}>"


def ignore_frame(frame: Frame, out: list[AgentEvent]) -> None:
    """The handler for a frame type that carries nothing a turn's events or result need."""


class FrameDispatcher:
    """Dispatches JSONL frames to per-type handlers; never raises on input.

    For each line given to :meth:`feed` exactly one of these happens, before the next line:

    - a blank line, or one ``skip`` drops: nothing;
    - a line that is not one JSON object (text, an array, a number, broken or cut-off JSON,
      NaN): ``RawOutput`` with the line (its line ending removed);
    - a frame whose ``type`` has no handler (or is missing, or not a string):
      ``Lifecycle("unknown_frame:<type>", line)`` (``<NoneType>`` for a missing type; the
      detail is the stripped line cut to :data:`UNKNOWN_DETAIL_CHARS`);
    - otherwise the events its handler appended, in order;
    - unless the handler (or ``before``) raised: then the frame costs only itself, and its
      events are ``RawOutput`` with the line and ``Lifecycle("malformed_frame",
      "<type>: <exception>")``, whatever the handler had appended before raising.

    A handler should check what it reads before it changes its parser's state, so that a
    frame that raises leaves nothing half-recorded behind it.

    Events go to ``emit`` as each line is dispatched; an exception raised by ``emit`` (an event
    handler failing) propagates. ``before``, when given, sees every frame before its handler
    (for a field every frame may carry, such as a session id) and appends to the same list.

    :meth:`dispatch` does the same for one frame already decoded (a long-lived transport that
    frames its own input), and :meth:`frame_or_feed` decodes a line for a caller that routes
    some frame types itself. The dispatcher keeps nothing between calls, so it can be fed one
    line or one frame at a time for as long as the stream lasts.
    """

    __slots__ = (
        "_before",
        "_emit",
        "_handlers",
        "_skip",
        "_skip_at",
        "_skip_listed",
        "_skip_marker",
        "_skip_names",
    )

    def __init__(
        self,
        handlers: Mapping[str, FrameHandler],
        emit: Emit,
        *,
        skip: LineSkip | None = None,
        before: FrameHandler | None = None,
    ) -> None:
        """Dispatch to ``handlers`` (frame type -> handler), sending events to ``emit``."""
        # A plain dict: a read-only view answers get() slower, and this is read for every line.
        self._handlers = dict(handlers)
        self._emit = emit
        self._before = before
        # The skip test is inlined in feed, the hot path: these are its fields, unpacked.
        self._skip = skip.prefix if skip is not None else None
        self._skip_at = len(skip.prefix) if skip is not None else 0
        self._skip_names = skip.names if skip is not None else frozenset[str]()
        self._skip_listed = skip.listed if skip is not None else True
        self._skip_marker = skip.marker if skip is not None else ""

    def feed(self, line: str) -> None:
        """Read one line (trailing newline optional) and emit what it means; see the class."""
        prefix = self._skip
        if prefix is not None and line.startswith(prefix):
            start = self._skip_at
            marker = self._skip_marker
            if marker:
                found = line.find(marker, start)
                start = found + len(marker) if found >= 0 else len(line)
            end = line.find('"', start)
            if (
                end > 0
                and (line[start:end] in self._skip_names) is self._skip_listed
                and line.endswith(_CLOSED)
            ):
                return
        # parse_json_object's text path, inlined: this runs once for every line of every turn.
        # Whatever is not one whole JSON object (blank text, an array, a number, a broken or
        # cut-off object) fails one of the two tests below, so a line costs no test of its own
        # first.
        text = line.strip()
        frame: Any
        try:
            frame, end = scan_json(text, 0)
        except (ValueError, RecursionError, StopIteration):
            frame, end = None, -1
        if end != len(text) or frame.__class__ is not dict:
            if text:
                self._emit(RawOutput(line.rstrip("\r\n")))
            return
        self.dispatch(frame, line)

    def frame_or_feed(self, line: str) -> Frame | None:
        """The frame ``line`` holds, for a caller that routes some frame types itself.

        A line that is not one JSON object is fed instead (RawOutput, or nothing when blank)
        and None is returned, so only a frame reaches the caller.
        """
        frame = parse_json_object(line)
        if frame is None:
            self.feed(line)
        return frame

    def unknown_frame(self, frame: Frame, line: str) -> AgentEvent:
        """The event for a frame whose type has no handler: ``Lifecycle("unknown_frame:<type>")``.

        A parser whose CLI prints a vocabulary of its own may say otherwise (the generic
        ``jsonl`` provider keeps such a frame as RawOutput).
        """
        detail = line.strip()[:UNKNOWN_DETAIL_CHARS]
        return Lifecycle(lk.unknown_frame(frame_label(frame.get("type"))), detail)

    def dispatch(self, frame: Frame, line: str = "") -> None:
        """Hand one decoded frame to its handler and emit its events; ``line`` is its text.

        ``line`` is what the ``RawOutput`` of a malformed frame and the detail of an unknown
        one carry; without it a malformed frame gives only its Lifecycle, an unknown one an
        empty detail.
        """
        kind: Any = frame.get("type")
        try:
            handler = self._handlers.get(kind)
        except TypeError:  # an unhashable type (an object or an array) has no handler
            handler = None
        out: list[AgentEvent] = []
        try:
            if self._before is not None:
                self._before(frame, out)
            if handler is not None:
                handler(frame, out)
            else:
                out.append(self.unknown_frame(frame, line))
        except Exception as exc:  # a frame of an unexpected shape costs that frame, not the turn
            out = _malformed(kind, exc, line)
        emit = self._emit
        for event in out:
            emit(event)


def _malformed(kind: object, exc: Exception, line: str) -> list[AgentEvent]:
    malformed = Lifecycle(lk.MALFORMED_FRAME, f"{frame_label(kind)}: {exc!r}")
    text = line.rstrip("\r\n")
    return [RawOutput(text), malformed] if text else [malformed]


class FrameParser(FrameDispatcher):
    """A JSONL stream parser: a :class:`FrameDispatcher` over its stdout, plus its stderr.

    A subclass calls ``super().__init__`` with its handlers (and ``skip``/``before``) and
    writes ``finish``; the stderr it reads a failure from is ``_stderr``, a
    :class:`~agentshim.core.stderr_tail.StderrTail` made on first use.
    ``feed_stdout`` is :meth:`FrameDispatcher.feed` itself, so a line costs no extra call.
    With ``BLANK_STDERR`` true a blank stderr line is emitted too (as ``Stderr``) but not
    kept, for CLIs whose blank lines separate the parts of what they print. The session the
    stream names is ``_session_id``, announced once by :meth:`_start_session`.
    """

    __slots__ = ()

    BLANK_STDERR: ClassVar[bool] = False
    # Until the stream names its session; an instance's own value shadows this default.
    _session_id: str | None = None

    feed_stdout = FrameDispatcher.feed

    @cached_property
    def _stderr(self) -> StderrTail:
        """The stderr lines kept for summing up a failure."""
        # Cached in the instance dict, so every later read costs what a plain attribute does.
        return StderrTail(self._emit)

    def feed_stderr(self, line: str) -> None:
        """Take one stderr line: emit it as Stderr and keep it for summing up a failure.

        A blank line is neither emitted nor kept, unless ``BLANK_STDERR``: then it is emitted.
        """
        if self.BLANK_STDERR and not line.strip():
            self._emit(Stderr(line.rstrip("\r\n")))
        else:
            self._stderr.feed(line)

    def _start_session(self, session_id: object, out: list[AgentEvent]) -> bool:
        """Announce the turn's session (SessionStarted) from the first id the stream names.

        ``session_id`` counts when it is a non-empty string and no session is known yet; then
        it becomes ``_session_id`` and True is returned. Anything else changes nothing.
        """
        if self._session_id is None and type(session_id) is str and session_id:
            self._session_id = session_id
            out.append(SessionStarted(session_id))
            return True
        return False
