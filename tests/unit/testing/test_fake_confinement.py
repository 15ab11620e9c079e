from __future__ import annotations

import pytest

from agentshim import InvalidRequestError
from agentshim.execution import PathMap
from agentshim.testing.confinement import FakeConfinement, WrapCall
from agentshim.testing.contracts import ConfinementContract


class TestFakeConfinementContract(ConfinementContract):
    def make_confinement(self) -> FakeConfinement:
        return FakeConfinement(env={"HOME": "/root"})


class TestMappedFakeConfinementContract(ConfinementContract):
    visible_host_path = "/home/me/project/src"

    def make_confinement(self) -> FakeConfinement:
        return FakeConfinement(paths=PathMap({"/home/me/project": "/workspace"}))


def test_wraps_and_reaps_are_recorded() -> None:
    confinement = FakeConfinement(prefix=("box", "--"), env={"HOME": "/root"})
    assert confinement.wrap(["cli", "-p"], "/w", ["HOME"]) == ["box", "--", "cli", "-p"]
    confinement.reap()
    confinement.reap()
    assert confinement.wraps == [WrapCall(("cli", "-p"), "/w", ("HOME",))]
    assert confinement.reaps == 2
    assert confinement.env == {"HOME": "/root"}
    assert FakeConfinement(paths=PathMap({"/a": "/b"})).agent_path("/a/x") == "/b/x"


def test_a_relative_or_unmapped_host_path_is_refused_as_a_real_confinement_refuses_it() -> None:
    with pytest.raises(InvalidRequestError, match="relative") as caught:
        FakeConfinement().agent_path("src/a.py")
    assert caught.value.field == "host_path"
    assert FakeConfinement().agent_path("/src/a.py") == "/src/a.py"
    with pytest.raises(InvalidRequestError):
        FakeConfinement(paths=PathMap({"/home/me": "/w"})).agent_path("/elsewhere/a.py")
