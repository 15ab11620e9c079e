"""Token accounting in one normalized breakdown shared by every provider.

The normalized breakdown: ``input_tokens`` counts every prompt token the model read, including
cache reads and cache writes; ``cache_read_input_tokens`` and ``cache_write_input_tokens`` are
parts of it, and ``uncached_input_tokens`` is the rest. ``output_tokens`` counts every generated
token, including ``reasoning_output_tokens``. A CLI that reports cache tokens disjoint from input
(Claude Code, opencode, Pi, Copilot) has them folded in by its parser, through
:meth:`TokenUsage.cache_apart` where a frame is not on the hot path.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from agentshim.core._error_base import InvalidRequestError
from agentshim.core._readonly import empty_mapping
from agentshim.core._slots import fast_value
from agentshim.core.jsonvalues import as_count

__all__ = ["CostSource", "ProviderUsage", "TokenUsage", "TokenWeights", "UsageKeys"]

_COUNT_FIELDS = (
    "input_tokens",
    "cache_read_input_tokens",
    "cache_write_input_tokens",
    "cache_write_1h_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "turns",
)


@fast_value
class TokenUsage:
    """Token counts in the normalized breakdown; adds field-wise into session totals.

    Invariants, checked at construction: nothing is negative, cache reads plus cache writes
    never exceed ``input_tokens``, 1-hour cache writes never exceed cache writes, and reasoning
    never exceeds ``output_tokens``.
    """

    input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    cache_write_1h_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0
    turns: int = 0

    def __post_init__(self) -> None:
        # Parsers build one of these per usage frame: check the common valid case in one
        # expression and leave the per-field messages to the slow path.
        i, cr, cw, cw1 = (
            self.input_tokens,
            self.cache_read_input_tokens,
            self.cache_write_input_tokens,
            self.cache_write_1h_input_tokens,
        )
        o, r, t = self.output_tokens, self.reasoning_output_tokens, self.turns
        if (
            type(i) is int
            and type(cr) is int
            and type(cw) is int
            and type(cw1) is int
            and type(o) is int
            and type(r) is int
            and type(t) is int
            and cr >= 0
            and cw >= cw1 >= 0
            and i >= cr + cw
            and o >= r >= 0
            and t >= 0
        ):
            return
        self._explain_invalid()

    def _explain_invalid(self) -> None:
        for name in _COUNT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidRequestError(f"TokenUsage.{name}", f"must be an int, got {value!r}")
            if value < 0:
                raise InvalidRequestError(
                    f"TokenUsage.{name}", f"must not be negative, got {value}"
                )
        if self.cache_read_input_tokens + self.cache_write_input_tokens > self.input_tokens:
            raise InvalidRequestError(
                "TokenUsage.input_tokens",
                "cache reads plus cache writes exceed input_tokens "
                f"({self.cache_read_input_tokens} + {self.cache_write_input_tokens} > "
                f"{self.input_tokens}); fold cache tokens into input_tokens first",
            )
        if self.cache_write_1h_input_tokens > self.cache_write_input_tokens:
            raise InvalidRequestError(
                "TokenUsage.cache_write_1h_input_tokens",
                "cache_write_1h_input_tokens exceeds cache_write_input_tokens "
                f"({self.cache_write_1h_input_tokens} > {self.cache_write_input_tokens})",
            )
        if self.reasoning_output_tokens > self.output_tokens:
            raise InvalidRequestError(
                "TokenUsage.reasoning_output_tokens",
                "reasoning_output_tokens exceeds output_tokens "
                f"({self.reasoning_output_tokens} > {self.output_tokens})",
            )

    @classmethod
    def cache_apart(
        cls,
        uncached_input: int,
        cache_read: int,
        cache_write: int,
        output: int,
        *,
        reasoning: int = 0,
        turns: int = 0,
    ) -> TokenUsage:
        """The breakdown of a CLI that counts cache reads and writes apart from its input.

        They are folded into ``input_tokens``, as the normalized breakdown counts them.
        ``reasoning`` is the part of ``output`` spent reasoning; a count above ``output``
        is cut to it, since the output includes it. Raises InvalidRequestError for a
        negative count, as the constructor does.
        """
        return cls(
            uncached_input + cache_read + cache_write,
            cache_read,
            cache_write,
            0,
            output,
            min(reasoning, output),
            turns,
        )

    @property
    def uncached_input_tokens(self) -> int:
        """Input tokens that were neither read from nor written to a cache."""
        return self.input_tokens - self.cache_read_input_tokens - self.cache_write_input_tokens

    @property
    def cached_input_tokens(self) -> int:
        """Deprecated alias of ``cache_read_input_tokens``."""
        return self.cache_read_input_tokens

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        if not isinstance(other, TokenUsage):  # pyright: ignore[reportUnnecessaryIsInstance]
            return NotImplemented
        return TokenUsage(*(getattr(self, n) + getattr(other, n) for n in _COUNT_FIELDS))

    def minus(self, baseline: TokenUsage) -> TokenUsage | None:
        """Return ``self - baseline`` field-wise, or None when any field would go negative."""
        values = [getattr(self, n) - getattr(baseline, n) for n in _COUNT_FIELDS]
        if any(v < 0 for v in values):
            return None
        try:
            return TokenUsage(*values)
        except ValueError:
            return None

    def to_dict(self) -> dict[str, int]:
        """Return the counts as a plain dict (JSON-ready)."""
        return {n: getattr(self, n) for n in _COUNT_FIELDS}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TokenUsage:
        """Build from ``to_dict`` output; unknown keys are ignored, the old alias is accepted."""
        values = {n: int(data[n]) for n in _COUNT_FIELDS if n in data}
        if "cache_read_input_tokens" not in values and "cached_input_tokens" in data:
            values["cache_read_input_tokens"] = int(data["cached_input_tokens"])
        return cls(**values)


@dataclass(frozen=True, slots=True)
class UsageKeys:
    """The keys under which a CLI that counts cache apart from its input reports each count."""

    input: str
    cache_read: str
    cache_write: str
    output: str
    reasoning: str | None = None

    def read(self, counts: Mapping[str, Any]) -> TokenUsage:
        """The counts under these keys, folded by :meth:`TokenUsage.cache_apart`.

        A missing or malformed count reads as 0 (:func:`~agentshim.core.jsonvalues.as_count`).
        """
        get = counts.get
        reasoning = 0 if self.reasoning is None else as_count(get(self.reasoning))
        return TokenUsage.cache_apart(
            as_count(get(self.input)),
            as_count(get(self.cache_read)),
            as_count(get(self.cache_write)),
            as_count(get(self.output)),
            reasoning=reasoning,
        )


@fast_value
class TokenWeights:
    """Relative weight of each token class, for comparing usage in one number.

    Defaults follow the common list-price ratios: cache reads a tenth of fresh input, 5-minute
    cache writes a quarter more, 1-hour cache writes double.
    """

    uncached_input: float = 1.0
    cache_read: float = 0.1
    cache_write: float = 1.25
    cache_write_1h: float = 2.0
    output: float = 1.0

    def weigh(self, usage: TokenUsage) -> float:
        """Return the weighted token count of ``usage``."""
        write_5m = usage.cache_write_input_tokens - usage.cache_write_1h_input_tokens
        return (
            usage.uncached_input_tokens * self.uncached_input
            + usage.cache_read_input_tokens * self.cache_read
            + write_5m * self.cache_write
            + usage.cache_write_1h_input_tokens * self.cache_write_1h
            + usage.output_tokens * self.output
        )


class CostSource(enum.Enum):
    """Where a cost figure came from, or why there is none."""

    REPORTED = "reported"
    """The CLI reported the cost itself."""
    PRICED = "priced"
    """agentshim priced the reported tokens from its pricing table."""
    UNKNOWN_MODEL = "unknown_model"
    """No price is known for the model, so the cost is None (never 0)."""
    NOT_REPORTED = "not_reported"
    """The CLI reported nothing to price, so the cost is None."""


@fast_value
class ProviderUsage:
    """One turn's accounting as a provider reported it, normalized.

    ``increment_known`` is False when the CLI's counts could not be turned into this turn's
    share (a cumulative report without a baseline, or a CLI that reports no counts at all); the
    token counts are then not a measured zero. ``raw`` is the provider's last raw usage mapping,
    kept for diagnostics and as the next turn's baseline where reports are cumulative.
    """

    tokens: TokenUsage = field(default_factory=TokenUsage)
    total_cost_usd: float | None = None
    provider: str = ""
    raw: Mapping[str, Any] = field(default_factory=empty_mapping)
    increment_known: bool = True
    cost_source: CostSource = CostSource.NOT_REPORTED
    model: str | None = None

    def __add__(self, other: ProviderUsage) -> ProviderUsage:
        if not isinstance(other, ProviderUsage):  # pyright: ignore[reportUnnecessaryIsInstance]
            return NotImplemented
        costs = [c for c in (self.total_cost_usd, other.total_cost_usd) if c is not None]
        cost = sum(costs) if costs else None
        return ProviderUsage(
            tokens=self.tokens + other.tokens,
            total_cost_usd=cost,
            provider=other.provider or self.provider,
            raw=other.raw,
            increment_known=self.increment_known and other.increment_known,
            cost_source=other.cost_source,
            model=other.model or self.model,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # ``raw`` is a read-only view, which cannot be pickled; its contents can.
        return (ProviderUsage.from_dict, (self.to_dict(),))

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict; ``from_dict`` reverses it."""
        return {
            "tokens": self.tokens.to_dict(),
            "total_cost_usd": self.total_cost_usd,
            "provider": self.provider,
            "raw": dict(self.raw),
            "increment_known": self.increment_known,
            "cost_source": self.cost_source.value,
            "model": self.model,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProviderUsage:
        """Rebuild from ``to_dict`` output."""
        cost = data.get("total_cost_usd")
        return cls(
            tokens=TokenUsage.from_dict(data.get("tokens") or {}),
            total_cost_usd=float(cost) if cost is not None else None,
            provider=str(data.get("provider") or ""),
            raw=MappingProxyType(dict(data.get("raw") or {})),
            increment_known=bool(data.get("increment_known", True)),
            cost_source=CostSource(data.get("cost_source", CostSource.NOT_REPORTED.value)),
            model=data.get("model"),
        )
