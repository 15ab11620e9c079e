"""Replaying a recorded long-lived transcript, and the script shared by the fake CLIs' processes.

A capture case's ``transcript.jsonl`` holds one record per chunk of bytes, each with its
direction (``in``, ``out``, ``err``, ``in_eof``, ``exit``). :class:`RecordedPeer` cuts it into
steps, one per line the recording wrote, each with the output that followed it, and plays
it back to a transport: a line written to it releases the output of the next recorded
input of the same kind (the skipped ones are dropped with their output), and the end of
stdin releases the rest with the recorded exit status. A protocol's recorded peer says what
a "kind" is and how the ids of our requests take the place of the recorded ones.

:class:`PeerScript` is the other half of every reactive fake: the scripted turns that all
the processes of one fake CLI play in order, so that a conversation's turns keep their order
across a process that died and the new one that continued it. :class:`PeerTurn` holds what
every fake's scripted turn has; :func:`json_frame` reads a line written to a fake and
:func:`id_replaced` and :func:`responses_readdressed` put our ids in place of recorded ones.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from agentshim.core.jsonvalues import as_mapping
from agentshim.execution.process import ProcessExited, SpawnRequest, StderrLine, StdoutLine

from .process import FakePeer, PeerOutput

__all__ = [
    "PeerScript",
    "PeerTurn",
    "RecordedPeer",
    "RecordedStep",
    "frame_line",
    "id_replaced",
    "json_frame",
    "no_tool_input",
    "responses_readdressed",
]


def frame_line(frame: Mapping[str, Any]) -> StdoutLine:
    """``frame`` printed as a CLI prints it: compact JSON on one line."""
    return StdoutLine(json.dumps(frame, separators=(",", ":")) + "\n")


def json_frame(line: str) -> dict[str, Any] | None:
    """The JSON object written on ``line``, as a dict of its own; None for JSON of another kind.

    Raises:
        ValueError: ``line`` is not JSON.
    """
    frame = as_mapping(json.loads(line))
    return dict(frame) if frame is not None else None


def _frame_or_none(text: str) -> dict[str, Any] | None:
    try:
        return json_frame(text)
    except ValueError:
        return None


@dataclass(slots=True)
class RecordedStep:
    """A recorded input frame (None: the start) and the output that followed it.

    ``folded`` holds the ids of recorded inputs folded into this step (see
    :meth:`RecordedPeer.folds`).
    """

    recorded: dict[str, Any] | None
    outputs: list[PeerOutput] = field(default_factory=list[PeerOutput])
    folded: set[str] = field(default_factory=set[str])


class RecordedPeer(FakePeer):
    """Plays a recorded transcript back, one step per line written to it.

    Subclasses say what a recorded input's kind is (:meth:`kind`) and how our ids replace
    the recorded ones in the output (:meth:`renamed`). ``exits_when_killed`` keeps a
    recorded exit with stdin still open as an exit at that point of the replay (else the
    process exits only when stdin closes, with status 0).

    Attributes:
        unmatched: Lines written to it that matched no recorded input.
    """

    def __init__(self, transcript: Path | str, *, exits_when_killed: bool = True) -> None:
        self._steps: deque[RecordedStep] = deque()
        self._exit = 0
        self.unmatched: list[str] = []
        step = RecordedStep(None)
        out_text = ""
        stdin_closed = False
        for raw in Path(transcript).read_text(encoding="utf-8").splitlines():
            record: dict[str, Any] = json.loads(raw)
            direction, data = record.get("dir"), record.get("data")
            if direction == "in" and isinstance(data, str):
                for line in data.splitlines():
                    recorded = _recorded_input(line)
                    if self.folds(recorded):
                        step.folded.add(str(recorded.get("id")))
                        continue
                    self._steps.append(step)
                    step = RecordedStep(recorded)
            elif direction == "out" and isinstance(data, str):
                out_text += data
                *complete, out_text = out_text.split("\n")
                for line in complete:
                    self.heard(line)
                    if line and not self.answers_folded(line, step.folded):
                        step.outputs.append(StdoutLine(line + "\n"))
            elif direction == "err" and isinstance(data, str):
                step.outputs.extend(StderrLine(line + "\n") for line in data.splitlines())
            elif direction == "in_eof":
                stdin_closed = True
            elif direction == "exit" and isinstance(data, int) and exits_when_killed:
                self._exit = data
                if not stdin_closed:
                    # It died on its own (or was killed) with stdin still open.
                    step.outputs.append(ProcessExited(data))
        self._steps.append(step)

    # -- what a protocol's recorded peer says ----------------------------------------------

    def kind(self, frame: Mapping[str, Any]) -> str:
        """What a written frame must share with a recorded input to match it."""
        return str(frame.get("type"))

    def renamed(
        self, recorded: Mapping[str, Any], sent: Mapping[str, Any], outputs: list[PeerOutput]
    ) -> list[PeerOutput]:
        """``outputs`` as answers to ``sent`` rather than to ``recorded`` (as they are, here)."""
        del recorded, sent
        return list(outputs)

    def folds(self, recorded: Mapping[str, Any]) -> bool:
        """Whether a recorded input was the recorder's own, folded into the step before it."""
        del recorded
        return False

    def answers_folded(self, line: str, folded: set[str]) -> bool:
        """Whether an output line is the answer to a folded input (and so not replayed)."""
        del line, folded
        return False

    def heard(self, line: str) -> None:
        """See each recorded output line once while the transcript is read."""

    # -- the process -----------------------------------------------------------------------

    def on_start(self) -> Iterable[PeerOutput]:
        """Print what the recording printed before its first input."""
        return self._steps.popleft().outputs

    def on_stdin(self, line: str) -> Iterable[PeerOutput]:
        """Print the recorded output that answered the matching recorded input."""
        sent = self.decode(line)
        if sent is None:
            return ()
        return self.replay(line, sent)

    def decode(self, line: str) -> Mapping[str, Any] | None:
        """The frame a written line holds (None: not a JSON object, ignored)."""
        return _frame_or_none(line)

    def replay(self, line: str, sent: Mapping[str, Any]) -> list[PeerOutput]:
        """Release the output of the next recorded input of ``sent``'s kind."""
        kind = self.kind(sent)
        while self._steps:
            step = self._steps.popleft()
            if step.recorded is not None and self.kind(step.recorded) == kind:
                return self.renamed(step.recorded, sent, step.outputs)
        self.unmatched.append(line)
        return []

    def upcoming(self) -> Iterable[RecordedStep]:
        """The steps not yet replayed, in order."""
        return iter(self._steps)

    def on_stdin_closed(self) -> Iterable[PeerOutput]:
        """Print what is left of the recording, then exit with its status."""
        rest: list[PeerOutput] = []
        while self._steps:
            rest.extend(self._steps.popleft().outputs)
        return [*rest, ProcessExited(self._exit)]


def _recorded_input(line: str) -> dict[str, Any]:
    frame = _frame_or_none(line)
    # A recorded line that is not a frame (a test of the CLI's own parser) matches nothing.
    return frame if frame is not None else {"type": "<not a frame>"}


def no_tool_input() -> dict[str, Any]:
    """The tool input of a scripted turn that gives none: a fresh empty dict each time."""
    return {}


def id_replaced(
    outputs: Iterable[PeerOutput],
    old: object,
    new: object,
    spelled: Callable[[str], str] = json.dumps,
    *,
    count: int = -1,
) -> list[PeerOutput]:
    """``outputs`` with the recorded id ``old`` put as ``new`` in every stdout line.

    An id is found as ``spelled(id)`` (its JSON string by default), at most ``count`` times a
    line (-1: every time); unless both are strings and differ, ``outputs`` are kept as they are.
    """
    if not isinstance(old, str) or not isinstance(new, str) or old == new:
        return list(outputs)
    needle, replacement = spelled(old), spelled(new)
    return [
        StdoutLine(output.text.replace(needle, replacement, count))
        if isinstance(output, StdoutLine)
        else output
        for output in outputs
    ]


def responses_readdressed(
    outputs: Iterable[PeerOutput],
    ids: Mapping[object, object],
    write: Callable[[Mapping[str, Any]], StdoutLine] = frame_line,
) -> list[PeerOutput]:
    """``outputs`` with each JSON-RPC response to a recorded id in ``ids`` sent to its new id.

    A response is a stdout frame with an ``id`` and no ``method``; ``write`` prints the
    readdressed frame. Every other output is kept as it is.
    """
    readdressed: list[PeerOutput] = []
    for output in outputs:
        frame = _frame_or_none(output.text) if isinstance(output, StdoutLine) else None
        recorded = frame.get("id") if frame is not None and "method" not in frame else None
        # An id that is not a JSON-RPC one (a list, say) addresses nothing.
        known = recorded is not None and isinstance(recorded, Hashable) and recorded in ids
        if frame is not None and known:
            readdressed.append(write({**frame, "id": ids[recorded]}))
        else:
            readdressed.append(output)
    return readdressed


@dataclass(frozen=True, slots=True)
class PeerTurn:
    """What every scripted turn of a fake CLI process says: ``text``, after a tool call or not.

    With ``tool`` set, the model first calls that tool with ``tool_input``; each fake's own
    turn (ClaudePeerTurn, PiPeerTurn) adds how that call and the answer go.
    """

    text: str = "done"
    tool: str | None = None
    tool_input: Mapping[str, Any] = field(default_factory=no_tool_input)


TurnT = TypeVar("TurnT")
PeerT = TypeVar("PeerT", bound=FakePeer)


class PeerScript(Generic[TurnT, PeerT]):
    """The scripted turns every process of one fake CLI plays in order; thread-safe.

    A subclass is the factory given to ``FakeExecutor(peers=...)``: its ``__call__`` starts
    a process for a SpawnRequest and records it with :meth:`spawned`.

    Attributes:
        peers: Every process spawned, in order.
        requests: Their SpawnRequests.
    """

    def __init__(self, turns: Iterable[TurnT]) -> None:
        self._lock = threading.Lock()
        self._turns: deque[TurnT] = deque(turns)
        self._count = 0
        self.peers: list[PeerT] = []
        self.requests: list[SpawnRequest] = []

    def extend(self, turns: Iterable[TurnT]) -> None:
        """Add turns to the script."""
        with self._lock:
            self._turns.extend(turns)

    def next_turn(self) -> TurnT | None:
        """Take the next scripted turn (None when the script is used up)."""
        with self._lock:
            return self._turns.popleft() if self._turns else None

    def count(self) -> int:
        """Number the next process or id (1, 2, ...)."""
        with self._lock:
            self._count += 1
            return self._count

    def spawned(self, request: SpawnRequest, peer: PeerT | None) -> None:
        """Record a started process (``peer`` None: one that is no scripted peer)."""
        with self._lock:
            self.requests.append(request)
            if peer is not None:
                self.peers.append(peer)
