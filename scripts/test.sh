#!/usr/bin/env bash
# Every gate and every unit test, failing on the first failure.
# Creates .venv (Python >= 3.10) and installs the project with its dev extras when needed.
set -euo pipefail
cd "$(dirname "$0")/.."

pick_python() {
    for candidate in "${PYTHON:-}" python3 python3.13 python3.12 python3.11 python3.10 python; do
        [ -n "$candidate" ] || continue
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    echo "scripts/test.sh: no Python >= 3.10 found (set PYTHON=/path/to/python)" >&2
    return 1
}

if [ ! -x .venv/bin/python ]; then
    "$(pick_python)" -m venv .venv
fi
stamp=.venv/.agentshim-dev-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
    touch "$stamp"
fi

bin=.venv/bin
step() { echo "==> $*"; "$@"; }
step "$bin/ruff" check .
step "$bin/ruff" format --check .
step "$bin/pyright"
step "$bin/lint-imports"
step "$bin/python" -m pytest "$@"
