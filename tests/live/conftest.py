"""Live conformance tests: the real CLI binaries against the scripted model server.

Not part of the default run (``testpaths`` is ``tests/unit``): run ``scripts/conformance.sh``
or ``pytest tests/live/test_<provider>.py``. A provider's tests are skipped, with the reason,
when its binary is not installed (see ``binaries.py`` for where it is looked up).
"""

from __future__ import annotations
