"""The live script: rules plus how often each has answered, safe across handler threads."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from .facts import RequestFacts
from .responses import Response
from .rules import Rule

__all__ = ["ScriptState"]


class ScriptState:
    """Picks the first rule that accepts a request and still has uses left."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self._lock = threading.Lock()
        self._rules: tuple[Rule, ...] = ()
        self._uses: list[int] = []
        self.replace(rules)

    def replace(self, rules: Sequence[Rule]) -> None:
        """Swap in new rules; use counts start again from zero."""
        checked = tuple(rules)
        for position, rule in enumerate(checked):
            if not isinstance(rule, Rule):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise TypeError(
                    f"script item {position} is {type(rule).__name__}, not a Rule; "
                    "wrap responses as Rule(respond=..., match=Match(...))"
                )
        with self._lock:
            self._rules = checked
            self._uses = [0] * len(checked)

    def pick(self, facts: RequestFacts) -> tuple[int, Response] | None:
        """The answering rule's index and response, counting the use; None if none fits."""
        with self._lock:
            for index, rule in enumerate(self._rules):
                if rule.times is not None and self._uses[index] >= rule.times:
                    continue
                if rule.match.accepts(facts):
                    self._uses[index] += 1
                    return index, rule.respond
        return None

    def uses(self) -> tuple[int, ...]:
        """How many requests each rule has answered, in rule order."""
        with self._lock:
            return tuple(self._uses)
