"""A turn's usage from ``thread/tokenUsage/updated``: thread totals in, the turn's share out.

Codex sends one update per model request: ``last`` is that request, ``total`` the thread's
running sum across turns and processes (a resumed thread replays its stored total at once),
``modelContextWindow`` the window. Input includes cached tokens and output includes reasoning,
which is the normalized breakdown already. The turn's usage is the difference of the totals
(an interrupt sends one more update with unchanged totals, whose ``last`` would count a request
twice); its context size is the last request's input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentshim.core.pricing import PricingTable, cost_usd
from agentshim.core.usage import CostSource, ProviderUsage, TokenUsage
from agentshim.providers.codex.model_data import PRICING_TABLE

from . import protocol as p

__all__ = ["ThreadUsage", "breakdown_raw"]

PROVIDER_NAME = "codex"

_Counts = tuple[int, int, int, int, int]


def _counts(usage: p.TokenUsageBreakdown) -> _Counts:
    read = max(usage.cached_input_tokens, 0)
    write = max(usage.cache_write_input_tokens or 0, 0)
    out = max(usage.output_tokens, 0)
    reasoning = max(usage.reasoning_output_tokens, 0)
    # A report that breaks the breakdown's invariants is widened, never rejected.
    return (max(usage.input_tokens, read + write), read, write, max(out, reasoning), reasoning)


def _tokens(counts: _Counts, turns: int) -> TokenUsage:
    inp, read, write, out, reasoning = counts
    return TokenUsage(
        input_tokens=inp,
        cache_read_input_tokens=read,
        cache_write_input_tokens=write,
        output_tokens=out,
        reasoning_output_tokens=reasoning,
        turns=turns,
    )


def breakdown_raw(counts: _Counts) -> Mapping[str, Any]:
    """A thread total as ``ProviderUsage.raw`` (the one-shot parser's keys, so either resumes)."""
    inp, read, write, out, reasoning = counts
    return {
        "input_tokens": inp,
        "cached_input_tokens": read,
        "cache_write_input_tokens": write,
        "output_tokens": out,
        "reasoning_output_tokens": reasoning,
    }


class ThreadUsage:
    """The thread's usage as the updates tell it, and each turn's share of it.

    ``model`` prices it (``pricing`` is Codex's table).
    """

    def __init__(self, *, model: str | None, pricing: PricingTable = PRICING_TABLE) -> None:
        self.model = model
        self._pricing = pricing
        self._total: _Counts | None = None
        self._turn_base: _Counts | None = None
        self._turn_updates = 0
        self._updates = 0
        self.context_tokens: int | None = None
        self.context_window: int | None = None

    def known(self, raw: Mapping[str, Any] | None) -> None:
        """Take a thread total handed over from before (``ProviderUsage.raw``) as the baseline."""
        if self._total is not None or raw is None:
            return
        if type(raw.get("input_tokens")) is not int or type(raw.get("output_tokens")) is not int:
            return  # not a Codex total (another provider's, or none)
        values: list[int] = []
        for key in breakdown_raw((0, 0, 0, 0, 0)):
            value: object = raw.get(key, 0)
            values.append(value if type(value) is int and value >= 0 else 0)
        inp, read, write, out, reasoning = values
        self._total = (max(inp, read + write), read, write, max(out, reasoning), reasoning)

    @property
    def updates(self) -> int:
        """How many updates were taken (a resumed thread's replay is awaited by this count)."""
        return self._updates

    def begin_turn(self) -> None:
        """A turn starts: its share counts from the total known now."""
        self._turn_base = self._total
        self._turn_updates = 0
        self.context_tokens = None

    def update(self, usage: p.ThreadTokenUsage) -> ProviderUsage | None:
        """Take one update; return the model call it reports (None when it reports no new one)."""
        self._updates += 1
        total = _counts(usage.total)
        previous = self._total
        self._total = total
        if usage.model_context_window is not None:
            self.context_window = usage.model_context_window
        if previous == total:
            return None  # the update an interrupt sends, or a replay of what is known
        self._turn_updates += 1
        self.context_tokens = max(usage.last.input_tokens, 0)
        return self._priced(_counts(usage.last), 0, total)

    def turn_usage(self) -> ProviderUsage | None:
        """The turn's share: the totals' difference since :meth:`begin_turn` (None: no update)."""
        total = self._total
        if total is None or self._turn_updates == 0:
            return None
        base = self._turn_base or (0, 0, 0, 0, 0)
        step = tuple(max(now - then, 0) for now, then in zip(total, base, strict=True))
        inp, read, write, out, reasoning = step
        counts: _Counts = (max(inp, read + write), read, write, max(out, reasoning), reasoning)
        return self._priced(counts, 1, total)

    def _priced(self, counts: _Counts, turns: int, total: _Counts) -> ProviderUsage:
        tokens = _tokens(counts, turns)
        pricing = self._pricing.get(self.model)
        if pricing is None:
            cost, source = None, CostSource.UNKNOWN_MODEL
        else:
            cost, source = cost_usd(tokens, pricing), CostSource.PRICED
        return ProviderUsage(
            tokens=tokens,
            total_cost_usd=cost,
            provider=PROVIDER_NAME,
            raw=breakdown_raw(total),
            increment_known=True,
            cost_source=source,
            model=self.model,
        )
