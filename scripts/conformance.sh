#!/usr/bin/env bash
# Real-CLI conformance: install the pinned CLIs (cached) and run tests/live for each provider.
#
# Usage: scripts/conformance.sh [--latest | --oldest] [PROVIDER ...]
#        (default: every provider in agentshim/testing/cli_versions.json, at its pinned version;
#        --latest: the newest version the npm registry serves; --oldest: the oldest checked one)
# Env:   CONFORMANCE_JOBS   providers run at once (default 3)
#        PYTHON             the interpreter with agentshim and pytest (default .venv/bin/python)
#        AGENTSHIM_CLI_DIR  install cache (default ~/.cache/agentshim/clis)
#
# Prints a table (provider, pinned version, version run, scenarios passed/failed/skipped, wall
# time, a "stream" column for providers with a long-lived transport suite,
# tests/live/test_<provider>_stream.py, and a "tui" column for those with a terminal transport
# suite, tests/live/test_<provider>_tui.py: each its passed/failed/skipped and wall time, and a
# "moves" column for tests/live/test_portability.py, the conversation moved to another host
# through a PostgresStore) and the failures; exits 1 if any scenario of any suite failed or a
# CLI could not be installed.
set -uo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-.venv/bin/python}
JOBS=${CONFORMANCE_JOBS:-3}
which=()
case "${1:-}" in
    --latest | --oldest) which=("$1"); shift ;;
esac
VERSIONS=agentshim/testing/cli_versions.json
if [ $# -gt 0 ]; then
    providers=("$@")
else
    mapfile -t providers < <("$PY" -c 'import json; print("\n".join(json.load(open("'"$VERSIONS"'"))))')
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/agentshim-conformance.XXXXXX")
started=$(date +%s)

echo "==> installing ${which[*]:-pinned} CLIs (cached): ${providers[*]}"
install_status=0
printf '%s\n' "${providers[@]}" |
    xargs -P "$JOBS" -I{} "$PY" scripts/install_clis.py "${which[@]}" {} \
        >"$out/installed.txt" 2>"$out/install.log" || install_status=1
cat "$out/install.log" "$out/installed.txt"
# Each line of installed.txt is "provider version bin-path": the live tests run that version.
while read -r provider version _; do
    [ -n "$provider" ] && export "AGENTSHIM_LIVE_VERSION_${provider^^}=$version"
done <"$out/installed.txt"

# A suite is a provider's one-shot scenarios (test_<provider>.py), its stream ones
# (test_<provider>_stream.py, where the provider has a long-lived transport) or its TUI ones
# (test_<provider>_tui.py, where it has a terminal transport).
run_one() {
    local suite=$1 out=$2 py=$3 t0 t1 rc file
    t0=$(date +%s.%N)
    file="tests/live/test_${suite}.py"
    # <provider>_moves: the portability test, for that provider only.
    case "$suite" in
        *_moves) file=tests/live/test_portability.py
            export AGENTSHIM_LIVE_PROVIDERS=${suite%_moves} ;;
    esac
    timeout 900 "$py" -m pytest "$file" -p no:cacheprovider -rfEs \
        --junitxml="$out/$suite.xml" >"$out/$suite.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    echo "$rc $t0 $t1" >"$out/$suite.status"
    echo "    $suite done (exit $rc)"
}
export -f run_one

suites=()
for provider in "${providers[@]}"; do
    suites+=("$provider")
    for column in stream tui; do
        if [ -f "tests/live/test_${provider}_${column}.py" ]; then
            suites+=("${provider}_${column}")
        fi
    done
    suites+=("${provider}_moves")
done

echo "==> running tests/live for ${#providers[@]} provider(s) (${#suites[@]} suites), $JOBS at a time"
printf '%s\n' "${suites[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one "$@"' _ {} "$out" "$PY"

"$PY" - "$out" "$started" "$install_status" "${providers[@]}" <<'PYEOF'
import json
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

out, started, install_status, providers = Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
pins = json.loads(Path("agentshim/testing/cli_versions.json").read_text())
ran = {}
for entry in (out / "installed.txt").read_text().splitlines():
    if entry.strip():
        name, version = entry.split()[:2]
        ran[name] = version
rows, failures, bad = [], [], install_status != 0


def tally(suite, label):
    """(passed, failed, skipped, wall, exit code) of one suite; None if it did not run."""
    status = out / f"{suite}.status"
    xml = out / f"{suite}.xml"
    if not status.exists() or not xml.exists():
        return None
    rc, t0, t1 = status.read_text().split()
    passed = failed = skipped = 0
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = case.get("name", "?")
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            failed += 1
            message = (problem.get("message") or "").splitlines()
            failures.append(f"{label}::{name}: {message[0][:300] if message else '?'}")
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped, float(t1) - float(t0), rc


for provider in providers:
    pinned = pins.get(provider, {}).get("pinned", "?")
    version = ran.get(provider, "?")
    columns = {}
    for column in ("stream", "tui", "moves"):
        columns[column] = "-"
        suite_file = "test_portability.py" if column == "moves" else f"test_{provider}_{column}.py"
        if not Path(f"tests/live/{suite_file}").exists():
            continue
        counted = tally(f"{provider}_{column}", f"{provider}[{column}]")
        if counted is None:
            columns[column], bad = "did not run", True
            continue
        s_passed, s_failed, s_skipped, s_wall, s_rc = counted
        columns[column] = f"{s_passed}/{s_failed}/{s_skipped} in {s_wall:.0f}s"
        if s_rc == "124":
            columns[column] += " (timed out)"
        if s_rc not in ("0", "5") or s_failed:
            bad = True
    stream, tui, moves = columns["stream"], columns["tui"], columns["moves"]
    counted = tally(provider, provider)
    if counted is None:
        rows.append((provider, pinned, version, "-", "-", "-", "-", stream, tui, moves, "did not run"))
        bad = True
        continue
    passed, failed, skipped, wall, rc = counted
    note = ""
    if skipped and not passed and not failed:
        note = "not installed"
    if rc not in ("0", "5") or failed:
        bad = True
        if rc == "124":
            note = "timed out"
    rows.append((provider, pinned, version, passed, failed, skipped, f"{wall:.0f}s", stream, tui, moves, note))

header = ("provider", "pinned", "ran", "passed", "failed", "skipped", "wall", "stream p/f/s", "tui p/f/s", "moves p/f/s", "")
widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
print()
print(line(header))
print(line(tuple("-" * w for w in widths)))
for row in rows:
    print(line(row))
print(f"\ntotal wall time: {time.time() - started:.0f}s")
if failures:
    print("\nfailures:")
    for failure in failures:
        print("  " + failure)
sys.exit(1 if bad else 0)
PYEOF
status=$?
if [ "$status" -eq 0 ]; then
    rm -rf "$out"
else
    echo "logs kept in $out (<suite>.log, <suite>.xml, install.log)"
fi
exit "$status"
