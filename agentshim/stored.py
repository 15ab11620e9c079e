"""Reading a CLI's output from a log into events that can be stored, each with its source line.

A service that runs an agent and tails its output by byte offset needs three things: whole
lines out of byte chunks (:func:`split_complete_lines`), events paired with the line each came
from (:func:`parse_lines`), and a stored form of every event (:func:`event_to_json`,
:func:`event_from_json`). The pairing makes the reading reversible: the event is this
library's reading of the line, the source is the line, so a wrong reading can be redone later.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from agentshim.core.errors import InvalidRequestError
from agentshim.core.event_json import EVENT_FORMAT_VERSION, event_from_json, event_to_json
from agentshim.core.events import AgentEvent
from agentshim.core.stream import split_complete_lines
from agentshim.providers import DEFAULT_CATALOG, HARNESS_CATALOG, ProviderCatalog

__all__ = [
    "EVENT_FORMAT_VERSION",
    "SourcedEvent",
    "event_from_json",
    "event_to_json",
    "parse_lines",
    "split_complete_lines",
]


@dataclass(frozen=True, slots=True)
class SourcedEvent:
    """An event and the (trimmed) output line it was read from."""

    event: AgentEvent
    source: str


def _ignore(_: str) -> None:
    """Drop a log line."""


def parse_lines(
    provider: str,
    lines: Iterable[str],
    *,
    budget: int,
    catalog: ProviderCatalog = DEFAULT_CATALOG,
    log: Callable[[str], None] | None = None,
) -> list[SourcedEvent]:
    """The events ``provider``'s parser reads from ``lines``, each with its trimmed line.

    Blank lines give nothing; a line that is not one of the CLI's frames gives what the
    parser makes of it (RawOutput for text). At most ``budget`` events come back from one call,
    so a runaway session cannot pass a ceiling in one chunk: the lines after the one that
    reached it are not read. A parser that raises on a line costs that line (reported through
    ``log``), not the call. One parser reads all of ``lines``; nothing is kept between calls.
    ``provider`` is a name in ``catalog``, or ``jsonl`` or ``text`` (the harness providers).

    Raises:
        InvalidRequestError: ``budget`` is not a positive int.
        UnknownProviderError: ``provider`` is not in ``catalog``.
    """
    if type(budget) is not int or budget < 1:
        raise InvalidRequestError(
            "budget",
            f"{budget!r} is not a positive int",
            f"budget must be the most events one call may give (a positive int), not {budget!r}",
        )
    report = log or _ignore
    read: list[AgentEvent] = []
    # The generic harness providers are found without naming their catalog.
    if provider not in catalog and provider in HARNESS_CATALOG:
        catalog = HARNESS_CATALOG
    plugin = catalog.plugin(provider)
    parser = plugin.create_provider().new_parser(read.append, expect_structured=False)
    sourced: list[SourcedEvent] = []
    for line in lines:
        source = line.strip()
        if not source:
            continue
        del read[:]
        try:
            parser.feed_stdout(line)
        except Exception as error:  # a parser's fault costs its line, not the pass
            report(f"agentshim: the {provider} parser failed on a line ({error!r}); skipped it")
            continue
        for event in read:
            sourced.append(SourcedEvent(event, source))
            if len(sourced) >= budget:
                return sourced
    return sourced
