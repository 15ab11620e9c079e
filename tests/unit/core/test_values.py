from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from agentshim.core.clock import SystemClock
from agentshim.core.errors import FailureKind, InvalidRequestError, InvalidSessionIdError
from agentshim.core.failures import kind_from_status, kind_from_text
from agentshim.core.ids import RandomIds, is_valid_session_id, validate_session_id
from agentshim.core.models import ModelSpec, ModelTable, api_model_id
from agentshim.core.permissions import NativeMode, NativePermissions
from agentshim.core.pricing import ModelPricing, PricingTable, cost_usd
from agentshim.core.profile import (
    McpMechanism,
    ProviderProfile,
    RenewalBudget,
)
from agentshim.core.usage import TokenUsage


def refused_field(build: Callable[[], object]) -> str | None:
    """The field named by the InvalidRequestError ``build()`` raises (the test fails without one)."""
    with pytest.raises(InvalidRequestError) as caught:
        build()
    return caught.value.field


class TestModels:
    def test_lookup_by_any_spelling(self) -> None:
        table = ModelTable(
            (ModelSpec("claude-sonnet-4-5", 200_000, aliases=("sonnet",)),), "1", "2026-01-01"
        )
        assert table.context_window("anthropic/claude-sonnet-4-5-20250929") == 200_000
        assert table.context_window("sonnet") == 200_000
        assert table.get("unknown") is None
        assert table.get(None) is None

    def test_merged_overrides(self) -> None:
        table = ModelTable((ModelSpec("a", 1), ModelSpec("b", 2)))
        assert table.merged([ModelSpec("a", 10)]).context_window("a") == 10
        assert table.merged([ModelSpec("a", 10)]).context_window("b") == 2

    @pytest.mark.parametrize(
        ("build", "field"),
        [
            (lambda: ModelSpec(""), "ModelSpec.id"),
            (lambda: ModelSpec("a", 0), "ModelSpec.context_window"),
            (lambda: ModelSpec("a", max_output_tokens=1.5), "ModelSpec.max_output_tokens"),
            (lambda: ModelSpec("a", aliases="sonnet"), "ModelSpec.aliases"),
            (lambda: ModelTable(("a",)), "ModelTable.models"),
            (lambda: api_model_id(None), "model_id"),
        ],
    )
    def test_bad_model_facts_are_refused(self, build: Callable[[], object], field: str) -> None:
        assert refused_field(build) == field


class TestPricing:
    def test_cost_uses_each_token_class(self) -> None:
        pricing = ModelPricing(
            3.0,
            15.0,
            cache_read_per_mtok=0.3,
            cache_write_per_mtok=3.75,
            cache_write_1h_per_mtok=6.0,
        )
        usage = TokenUsage(
            input_tokens=1_000_000 + 2_000_000 + 1_000_000,
            cache_read_input_tokens=2_000_000,
            cache_write_input_tokens=1_000_000,
            cache_write_1h_input_tokens=500_000,
            output_tokens=1_000_000,
        )
        assert cost_usd(usage, pricing) == pytest.approx(3.0 + 0.6 + 3.75 / 2 + 3.0 + 15.0)

    def test_missing_cache_prices_fall_back_to_input(self) -> None:
        usage = TokenUsage(input_tokens=2_000_000, cache_read_input_tokens=1_000_000)
        assert cost_usd(usage, ModelPricing(1.0, 2.0)) == pytest.approx(2.0)

    def test_unknown_model_costs_none_not_zero(self) -> None:
        table = PricingTable("v1", "2026-11-01", {"gpt-5": ModelPricing(1.25, 10.0)})
        assert table.cost("unknown", TokenUsage(input_tokens=5)) is None
        assert table.cost("openai/GPT-5", TokenUsage(output_tokens=1_000_000)) == pytest.approx(
            10.0
        )

    def test_negative_price_refused(self) -> None:
        with pytest.raises(InvalidRequestError, match="negative") as caught:
            ModelPricing(-1.0, 1.0)
        assert caught.value.field == "ModelPricing.input_per_mtok"

    @pytest.mark.parametrize(
        ("build", "field"),
        [
            (lambda: ModelPricing(1.0, float("nan")), "ModelPricing.output_per_mtok"),
            (
                lambda: ModelPricing(1.0, 1.0, cache_read_per_mtok="0.1"),
                "ModelPricing.cache_read_per_mtok",
            ),
            (lambda: PricingTable("v", "d", {"m": 1.0}), "PricingTable.prices"),
        ],
    )
    def test_prices_that_are_not_prices_are_refused(
        self, build: Callable[[], object], field: str
    ) -> None:
        assert refused_field(build) == field


class TestPermissionsAndProfile:
    def test_constructors(self) -> None:
        assert NativePermissions.bypass().mode is NativeMode.BYPASS
        assert NativePermissions.read_only().mode is NativeMode.READ_ONLY
        perms = NativePermissions.workspace_write(["/tmp/x"], network=True)
        assert perms.writable_roots == ("/tmp/x",)
        assert perms.network

    def test_roots_only_with_workspace_write(self) -> None:
        with pytest.raises(InvalidRequestError, match="workspace_write") as caught:
            NativePermissions(NativeMode.READ_ONLY, ("/tmp",))
        assert caught.value.field == "NativePermissions.writable_roots"

    def test_roots_must_be_absolute(self) -> None:
        with pytest.raises(InvalidRequestError, match="absolute"):
            NativePermissions.workspace_write(["relative"])
        with pytest.raises(InvalidRequestError, match=r"NativePermissions\.mode"):
            NativePermissions("workspace_write")  # type: ignore[arg-type]

    def test_profile_checks_mcp_file_consistency(self) -> None:
        with pytest.raises(InvalidRequestError, match="mcp_config_file"):
            ProviderProfile(name="x", display_name="X", mcp=McpMechanism.CONFIG_FILE)

    def test_profile_binary_is_its_name_unless_given(self) -> None:
        assert ProviderProfile(name="x", display_name="X").binary == "x"
        assert ProviderProfile(name="x", display_name="X", binary="x-cli").binary == "x-cli"

    def test_profile_env_is_read_only(self) -> None:
        profile = ProviderProfile(name="x", display_name="X", container_env={"A": "1"})
        with pytest.raises(TypeError):
            profile.container_env["B"] = "2"  # type: ignore[index]

    def test_renewal_budget_validates(self) -> None:
        with pytest.raises(InvalidRequestError, match="positive") as caught:
            RenewalBudget(max_turns=0)
        assert caught.value.field == "RenewalBudget.max_turns"
        for bad in ("3", True, 2.5):
            with pytest.raises(InvalidRequestError, match="max_turns"):
                RenewalBudget(max_turns=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidRequestError, match="max_turn_duration"):
            RenewalBudget(max_turn_duration=float("nan"))
        assert RenewalBudget(max_turn_duration=0.5).max_turn_duration == 0.5


class TestIds:
    @pytest.mark.parametrize("good", ["abc", "0199-aa.b_c", "a" * 128, "ses_01J"])
    def test_valid(self, good: str) -> None:
        assert validate_session_id(good) == good

    @pytest.mark.parametrize(
        "bad", ["", ".", "..", "-rf", "a/b", "../x", "a b", "a" * 129, "x;rm", "-\n"]
    )
    def test_invalid(self, bad: str) -> None:
        assert not is_valid_session_id(bad)
        with pytest.raises(InvalidSessionIdError):
            validate_session_id(bad)

    def test_random_ids_are_unique_and_prefixed(self) -> None:
        ids = {RandomIds().new_id("turn") for _ in range(100)}
        assert len(ids) == 100
        assert all(i.startswith("turn_") for i in ids)


# How an HTTP status and a CLI's error text are classified.
KINDS_BY_STATUS = {
    401: FailureKind.AUTH,
    403: FailureKind.AUTH,
    429: FailureKind.TRANSIENT,
    500: FailureKind.TRANSIENT,
    529: FailureKind.TRANSIENT,
    400: FailureKind.OTHER,
}
KINDS_BY_TEXT = {
    "Prompt is too long": FailureKind.CONTEXT_OVERFLOW,
    "503 while compacting: prompt is too long": FailureKind.CONTEXT_OVERFLOW,
    "Your input exceeds the context window of this model": FailureKind.CONTEXT_OVERFLOW,
    "You've hit your usage limit": FailureKind.USAGE_LIMIT,
    "Invalid API key": FailureKind.AUTH,
    "API Error: 529 Overloaded": FailureKind.TRANSIENT,
    "something odd": None,
    "": None,
}


class TestFailures:
    @pytest.mark.parametrize(("status", "kind"), KINDS_BY_STATUS.items())
    def test_status(self, status: int, kind: FailureKind) -> None:
        assert kind_from_status(status) is kind

    @pytest.mark.parametrize(("text", "kind"), KINDS_BY_TEXT.items())
    def test_text(self, text: str, kind: FailureKind | None) -> None:
        assert kind_from_text(text) is kind


class FiredOnceWaitedOn:
    """A stop signal that another thread fires as soon as a wait on it has begun."""

    def __init__(self) -> None:
        self.fired = threading.Event()
        self.setters: list[threading.Thread] = []

    def is_set(self) -> bool:
        return self.fired.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        setter = threading.Thread(target=self.fired.set)
        self.setters.append(setter)
        setter.start()
        return self.fired.wait(timeout)


class TestClock:
    def test_wait_returns_early_when_stopped(self) -> None:
        # An hour's wait: one that slept instead of waiting on the signal would hang the
        # waiter, which the guard below turns into a failure.
        stop = FiredOnceWaitedOn()
        answers: list[bool] = []
        waiter = threading.Thread(
            target=lambda: answers.append(SystemClock().wait(3600, stop)), daemon=True
        )
        waiter.start()
        waiter.join(60)  # only a hang guard
        assert not waiter.is_alive(), "the wait did not end when its stop signal fired"
        assert answers == [True]
        assert stop.setters  # stopped during the wait, not before it began
        for setter in stop.setters:
            setter.join()
