"""Live conformance tests: the real CLI binaries against the scripted model server.

Not part of the default run (``testpaths`` is ``tests/unit``): run ``scripts/conformance.sh``
or ``pytest tests/live/test_<provider>.py``. A provider's tests are skipped, with the reason,
when its binary is not installed (see ``binaries.py`` for where it is looked up).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .suite import Rig, make_rig


@pytest.fixture(scope="class")
def rig(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """The binary, HOME, model server and agent the tests of one provider class share."""
    provider: str = request.cls.provider
    yield from make_rig(provider, tmp_path_factory.mktemp(f"live-{provider}"))
