"""fast_frozen_init: the same constructor a frozen slotted dataclass has, only cheaper."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import dataclass, field

import pytest

from agentshim.core._slots import fast_frozen_init, slot_builder
from agentshim.core.events import Lifecycle, ToolCall
from agentshim.core.usage import ProviderUsage, TokenUsage


def _tags() -> list[str]:
    return ["fresh"]


def _sample(name: str) -> type:
    """The same frozen slotted dataclass each call: one is compared with the sped-up other."""
    fields = [
        ("name", str),
        ("count", int, field(default=1)),
        ("tags", list[str], field(default_factory=_tags)),
        ("note", "str | None", field(default=None, kw_only=True)),
    ]
    cls = dataclasses.make_dataclass(name, fields, frozen=True, slots=True)
    cls.__module__ = __name__  # pickle finds the class by module and name
    return cls


Plain = _sample("Plain")
Fast = fast_frozen_init(_sample("Fast"))


@fast_frozen_init
@dataclass(frozen=True, slots=True)
class Checked:
    value: int

    def __post_init__(self) -> None:
        if self.value < 0:
            raise ValueError("value must not be negative")


def test_the_signature_is_the_dataclass_one() -> None:
    assert str(inspect.signature(Fast)) == str(inspect.signature(Plain))
    assert Fast.__init__.__qualname__ == "Fast.__init__"


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("a",), {}),
        (("a", 3), {}),
        (("a", 3, ["x"]), {"note": "n"}),
        ((), {"name": "a", "tags": [], "note": None}),
    ],
)
def test_values_are_stored_as_the_dataclass_stores_them(
    args: tuple[object, ...], kwargs: dict[str, object]
) -> None:
    fast = Fast(*args, **kwargs)  # pyright: ignore[reportArgumentType]
    plain = Plain(*args, **kwargs)  # pyright: ignore[reportArgumentType]
    assert dataclasses.astuple(fast) == dataclasses.astuple(plain)
    assert repr(fast).removeprefix("Fast") == repr(plain).removeprefix("Plain")


def test_a_factory_default_is_fresh_for_each_instance() -> None:
    first, second = Fast("a"), Fast("b")
    assert first.tags == ["fresh"]
    assert first.tags is not second.tags


def test_bad_calls_fail_as_they_would_without_it() -> None:
    with pytest.raises(TypeError):
        Fast()  # pyright: ignore[reportCallIssue]
    with pytest.raises(TypeError):
        Fast("a", 1, [], None)  # pyright: ignore[reportCallIssue]
    with pytest.raises(TypeError):
        Fast("a", nope=1)  # pyright: ignore[reportCallIssue]


def test_instances_stay_frozen_comparable_and_picklable() -> None:
    value = Fast("a", 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.name = "b"  # pyright: ignore[reportAttributeAccessIssue]
    assert value == Fast("a", 2)
    assert hash(Lifecycle("k", "d")) == hash(Lifecycle("k", "d"))
    assert pickle.loads(pickle.dumps(value)) == value
    assert dataclasses.replace(value, count=5) == Fast("a", 5)


def test_post_init_still_runs() -> None:
    assert Checked(1).value == 1
    with pytest.raises(ValueError, match="negative"):
        Checked(-1)
    with pytest.raises(ValueError, match="reasoning"):
        TokenUsage(output_tokens=1, reasoning_output_tokens=2)


def test_the_library_values_keep_their_defaults() -> None:
    assert ProviderUsage().tokens == TokenUsage()
    assert ProviderUsage().raw == {}
    call = ToolCall("id", "Bash", {"command": "ls"})
    assert call == ToolCall(tool_id="id", tool="Bash", args={"command": "ls"})


@dataclass(frozen=True)
class NoSlots:
    name: str


@dataclass(slots=True)
class Mutable:
    name: str


def test_classes_it_cannot_speed_up_are_left_alone() -> None:
    @dataclass(frozen=True, slots=True)
    class Derived:
        name: str
        size: int = field(init=False, default=0)

    for cls in (NoSlots, Mutable, Derived):
        before = cls.__init__
        assert fast_frozen_init(cls) is cls
        assert cls.__init__ is before


# -- slot_builder --------------------------------------------------------------------------


def test_a_builder_gives_the_value_the_class_gives() -> None:
    build = slot_builder(Fast)
    value = build("a", 2, ["x"], "n")
    assert type(value) is Fast
    assert value == Fast("a", 2, ["x"], note="n")
    assert hash(build("a", 2, (), None)) == hash(Fast("a", 2, (), note=None))  # pyright: ignore[reportArgumentType]
    assert repr(value) == repr(Fast("a", 2, ["x"], note="n"))
    assert pickle.loads(pickle.dumps(value)) == value
    assert dataclasses.replace(value, count=5) == Fast("a", 5, ["x"], note="n")
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.name = "b"  # pyright: ignore[reportAttributeAccessIssue]


def test_a_builder_takes_every_field_positionally() -> None:
    build = slot_builder(Fast)
    assert list(inspect.signature(build).parameters) == ["name", "count", "tags", "note"]
    with pytest.raises(TypeError):
        build("a")


def test_a_builder_skips_post_init() -> None:
    # What the builder promises: the caller checks; the class call still refuses.
    assert slot_builder(Checked)(-1).value == -1
    with pytest.raises(ValueError, match="negative"):
        Checked(-1)


def test_a_builder_is_refused_for_a_class_it_cannot_build() -> None:
    @dataclass(frozen=True, slots=True)
    class Base:
        name: str

    @dataclass(frozen=True, slots=True)
    class Derived(Base):
        size: int

    for cls in (NoSlots, Mutable, Derived, int):
        with pytest.raises(TypeError, match="frozen slotted dataclass"):
            slot_builder(cls)


def test_a_builder_takes_fields_named_like_its_own_variables() -> None:
    @dataclass(frozen=True, slots=True)
    class Awkward:
        value: int
        _new: int
        _cls: str

    assert slot_builder(Awkward)(1, 2, "c") == Awkward(1, 2, "c")
