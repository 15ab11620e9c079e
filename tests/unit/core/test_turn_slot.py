from __future__ import annotations

import pytest

from agentshim.core.conversation import TurnSlot, TurnStop
from agentshim.core.errors import SessionStateError


def test_one_turn_at_a_time_and_the_slot_is_free_again_after_it() -> None:
    slot = TurnSlot("this test conversation")
    first = slot.begin()
    assert slot.running
    with pytest.raises(SessionStateError, match="already running in this test conversation"):
        slot.begin()
    slot.end()
    assert not slot.running
    assert slot.begin() is not first


def test_begin_returns_the_stop_it_was_given() -> None:
    stop = TurnStop()
    assert TurnSlot().begin(stop) is stop


def test_interrupt_stops_the_running_turn_and_does_nothing_without_one() -> None:
    slot = TurnSlot()
    slot.interrupt()
    stop = slot.begin()
    assert not stop.is_set()
    slot.interrupt()
    assert stop.is_set()
    slot.end()
    assert not slot.begin().is_set()


def test_close_refuses_later_turns_and_is_idempotent() -> None:
    slot = TurnSlot()
    slot.close()
    slot.close()
    assert slot.closed
    with pytest.raises(SessionStateError, match="this conversation is closed; open a new one"):
        slot.begin()
