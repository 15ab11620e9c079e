from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.errors import InvalidRequestError
from agentshim.core.usage import CostSource, ProviderUsage, TokenUsage, TokenWeights, UsageKeys


@st.composite
def usages(draw: st.DrawFn) -> TokenUsage:
    cache_read = draw(st.integers(0, 10**9))
    cache_write = draw(st.integers(0, 10**9))
    write_1h = draw(st.integers(0, cache_write))
    uncached = draw(st.integers(0, 10**9))
    reasoning = draw(st.integers(0, 10**9))
    output = reasoning + draw(st.integers(0, 10**9))
    return TokenUsage(
        input_tokens=uncached + cache_read + cache_write,
        cache_read_input_tokens=cache_read,
        cache_write_input_tokens=cache_write,
        cache_write_1h_input_tokens=write_1h,
        output_tokens=output,
        reasoning_output_tokens=reasoning,
        turns=draw(st.integers(0, 100)),
    )


class TestInvariants:
    def test_cache_tokens_cannot_exceed_input(self) -> None:
        with pytest.raises(ValueError, match="exceed input_tokens"):
            TokenUsage(input_tokens=10, cache_read_input_tokens=8, cache_write_input_tokens=3)

    def test_reasoning_cannot_exceed_output(self) -> None:
        with pytest.raises(ValueError, match="reasoning"):
            TokenUsage(output_tokens=1, reasoning_output_tokens=2)

    def test_nothing_negative(self) -> None:
        with pytest.raises(ValueError, match="negative"):
            TokenUsage(input_tokens=-1)

    def test_counts_must_be_ints(self) -> None:
        with pytest.raises(InvalidRequestError, match=r"TokenUsage\.input_tokens"):
            TokenUsage(input_tokens=1.5)  # type: ignore[arg-type]

    def test_derived_fields(self) -> None:
        usage = TokenUsage(
            input_tokens=100, cache_read_input_tokens=60, cache_write_input_tokens=10
        )
        assert usage.uncached_input_tokens == 30
        assert usage.cached_input_tokens == 60


class TestArithmetic:
    @given(usages(), usages())
    def test_addition_is_field_wise_and_keeps_invariants(
        self, a: TokenUsage, b: TokenUsage
    ) -> None:
        total = a + b
        assert total.input_tokens == a.input_tokens + b.input_tokens
        assert (
            total.cache_read_input_tokens == a.cache_read_input_tokens + b.cache_read_input_tokens
        )
        assert total.output_tokens == a.output_tokens + b.output_tokens
        assert total.turns == a.turns + b.turns
        assert total.uncached_input_tokens == a.uncached_input_tokens + b.uncached_input_tokens

    @given(usages(), usages())
    def test_addition_commutes(self, a: TokenUsage, b: TokenUsage) -> None:
        assert a + b == b + a

    @given(usages(), usages())
    def test_minus_undoes_plus(self, a: TokenUsage, b: TokenUsage) -> None:
        assert (a + b).minus(b) == a

    @given(usages())
    def test_dict_round_trip(self, usage: TokenUsage) -> None:
        assert TokenUsage.from_dict(usage.to_dict()) == usage

    def test_from_dict_accepts_the_old_alias(self) -> None:
        usage = TokenUsage.from_dict({"input_tokens": 10, "cached_input_tokens": 4})
        assert usage.cache_read_input_tokens == 4


class TestProviderUsage:
    def test_round_trip(self) -> None:
        usage = ProviderUsage(
            tokens=TokenUsage(input_tokens=5, output_tokens=2),
            total_cost_usd=0.25,
            provider="p",
            raw={"input": 5},
            increment_known=False,
            cost_source=CostSource.PRICED,
            model="m",
        )
        assert ProviderUsage.from_dict(usage.to_dict()) == usage

    def test_sum_keeps_unknown_cost_unknown_only_when_both_are(self) -> None:
        known = ProviderUsage(total_cost_usd=1.0)
        unknown = ProviderUsage()
        assert (known + unknown).total_cost_usd == 1.0
        assert (unknown + unknown).total_cost_usd is None
        assert (known + known).total_cost_usd == 2.0

    def test_an_unknown_increment_stays_unknown(self) -> None:
        assert not (ProviderUsage() + ProviderUsage(increment_known=False)).increment_known


class TestWeights:
    def test_weights_each_class(self) -> None:
        usage = TokenUsage(
            input_tokens=100,
            cache_read_input_tokens=50,
            cache_write_input_tokens=20,
            cache_write_1h_input_tokens=10,
            output_tokens=10,
        )
        weights = TokenWeights(
            uncached_input=1, cache_read=0.1, cache_write=1.25, cache_write_1h=2, output=4
        )
        assert weights.weigh(usage) == pytest.approx(30 + 5 + 12.5 + 20 + 40)


COUNTS = st.integers(0, 10**9)


class TestCacheApart:
    @given(COUNTS, COUNTS, COUNTS, COUNTS, COUNTS, st.integers(0, 100))
    def test_cache_counted_apart_is_folded_into_input(
        self, uncached: int, read: int, write: int, output: int, reasoning: int, turns: int
    ) -> None:
        usage = TokenUsage.cache_apart(
            uncached, read, write, output, reasoning=reasoning, turns=turns
        )
        assert usage.uncached_input_tokens == uncached
        assert usage.input_tokens == uncached + read + write
        assert (usage.cache_read_input_tokens, usage.cache_write_input_tokens) == (read, write)
        assert usage.cache_write_1h_input_tokens == 0
        assert usage.output_tokens == output
        assert usage.reasoning_output_tokens == min(reasoning, output)
        assert usage.turns == turns

    def test_a_negative_count_is_refused(self) -> None:
        with pytest.raises(InvalidRequestError, match="must not be negative"):
            TokenUsage.cache_apart(-1, 0, 0, 0)

    def test_keys_read_each_count_where_the_cli_puts_it(self) -> None:
        keys = UsageKeys("in", "read", "write", "out", "thought")
        usage = keys.read({"in": 10, "read": 5, "write": 2, "out": 8, "thought": 3})
        assert usage == TokenUsage(
            input_tokens=17,
            cache_read_input_tokens=5,
            cache_write_input_tokens=2,
            output_tokens=8,
            reasoning_output_tokens=3,
        )

    @pytest.mark.parametrize("bad", [None, "7", -3, 2.5, True, [1], {"n": 1}])
    def test_a_missing_or_malformed_count_reads_as_zero(self, bad: object) -> None:
        keys = UsageKeys("in", "read", "write", "out")
        usage = keys.read({"in": 10, "read": bad, "out": 4, "thought": 99})
        assert usage == TokenUsage(input_tokens=10, output_tokens=4)
