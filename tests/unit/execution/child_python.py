"""What a fresh Python interpreter has imported, for the tests that keep imports lazy."""

from __future__ import annotations

import subprocess
import sys


def modules_loaded_by(statement: str, prefix: str) -> list[str]:
    """The modules under ``prefix`` a new interpreter holds after running ``statement``."""
    script = f"import sys; {statement}; print('\\n'.join(sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    return sorted(name for name in loaded.splitlines() if name.startswith(prefix))
