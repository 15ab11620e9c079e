"""Live conformance tests: the real CLI binaries against the scripted model server.

Not part of the default run (``testpaths`` is ``tests/unit``): run ``scripts/conformance.sh``
or ``pytest tests/live/test_<provider>.py``. A provider's tests are skipped, with the reason,
when its binary is not installed (see ``binaries.py`` for where it is looked up).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentshim.core.events import AgentEvent
from agentshim.core.frames import Frame, FrameDispatcher, frame_label

from .suite import Rig, make_rig


@pytest.fixture(scope="class")
def rig(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """The binary, HOME, model server and agent the tests of one provider class share."""
    provider: str = request.cls.provider
    yield from make_rig(provider, tmp_path_factory.mktemp(f"live-{provider}"))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """An empty directory for the agent to work in (``tmp_path / "work"``; a CLI's HOME set
    up under ``tmp_path`` stays outside it)."""
    work = tmp_path / "work"
    work.mkdir()
    return work


#: Where the live run writes each frame type a parser did not know (one type per line);
#: ``scripts/conformance.sh`` sets it per suite and reports the types under its table, so a
#: run on a newer CLI says which frame changed.
UNKNOWN_FRAMES_ENV = "AGENTSHIM_UNKNOWN_FRAMES_LOG"


@pytest.fixture(autouse=True, scope="session")
def _log_unknown_frames() -> Iterator[None]:
    """Append the type of every frame a parser had no handler for to $AGENTSHIM_UNKNOWN_FRAMES_LOG."""
    target = os.environ.get(UNKNOWN_FRAMES_ENV)
    if not target:
        yield
        return
    original = FrameDispatcher.unknown_frame

    def logged(self: FrameDispatcher, frame: Frame, line: str) -> AgentEvent:
        event = original(self, frame, line)
        with open(target, "a", encoding="utf-8") as log:
            log.write(frame_label(frame.get("type")).replace("\n", " ") + "\n")
        return event

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(FrameDispatcher, "unknown_frame", logged)
        yield
