#!/usr/bin/env bash
# Real-CLI conformance: install the pinned CLIs (cached) and run tests/live for each provider.
#
# Usage: scripts/conformance.sh [--latest | --oldest | --matrix] [PROVIDER ...]
#        (default: every provider in agentshim/doctor/cli_versions.json, at its pinned version;
#        --latest: the newest version the npm registry serves, asking every package the CLI was
#        published under; --oldest: the oldest checked one; --matrix: each provider at its
#        oldest checked, pinned and newest version, one table row per distinct version)
# Env:   CONFORMANCE_JOBS   providers run at once (default 3)
#        PYTHON             the interpreter with agentshim and pytest (default .venv/bin/python)
#        AGENTSHIM_CLI_DIR  install cache (default ~/.cache/agentshim/clis)
#
# Prints a table (provider, pinned version, version run, scenarios passed/failed/skipped, wall
# time, a "stream" column for providers with a long-lived transport suite,
# tests/live/test_<provider>_stream.py, and a "tui" column for those with a terminal transport
# suite, tests/live/test_<provider>_tui.py: each its passed/failed/skipped and wall time, and a
# "moves" column for tests/live/test_portability.py, the conversation moved to another host
# through a PostgresStore) and the failures, then the frame types the parsers did not know ("unknown frames", per suite: a
# CLI that changed its output says where); exits 1 if any scenario of any suite failed or a
# CLI could not be installed.
set -uo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-.venv/bin/python}
JOBS=${CONFORMANCE_JOBS:-3}
rounds=(pinned)
case "${1:-}" in
    --latest) rounds=(newest); shift ;;
    --oldest) rounds=(oldest); shift ;;
    --matrix) rounds=(oldest pinned newest); shift ;;
esac
VERSIONS=agentshim/doctor/cli_versions.json
if [ $# -gt 0 ]; then
    providers=("$@")
else
    mapfile -t providers < <("$PY" -c 'import json; print("\n".join(json.load(open("'"$VERSIONS"'"))))')
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/agentshim-conformance.XXXXXX")
started=$(date +%s)

install_status=0

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
    AGENTSHIM_UNKNOWN_FRAMES_LOG="$out/$suite.frames" \
        timeout 900 "$py" -m pytest "$file" -p no:cacheprovider -rfEs \
        --junitxml="$out/$suite.xml" >"$out/$suite.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    echo "$rc $t0 $t1" >"$out/$suite.status"
    echo "    $suite done (exit $rc)"
}
export -f run_one

# One round: every provider at one version (pinned, oldest checked or newest), its results
# in $out/<round>/. A version a former round of the same provider already ran is not run again.
for round in "${rounds[@]}"; do
    dir="$out/$round"
    mkdir -p "$dir"
    case $round in
        newest) flag=(--latest) ;;
        oldest) flag=(--oldest) ;;
        *) flag=() ;;
    esac
    echo "==> installing $round CLIs (cached): ${providers[*]}"
    printf '%s\n' "${providers[@]}" |
        xargs -P "$JOBS" -I{} "$PY" scripts/install_clis.py "${flag[@]}" {} \
            >"$dir/installed.txt" 2>"$dir/install.log" || install_status=1
    cat "$dir/install.log" "$dir/installed.txt"
    # Each line of installed.txt is "provider version bin-path": the live tests run that version.
    suites=()
    while read -r provider version _; do
        [ -n "$provider" ] || continue
        if grep -qsx "$provider $version" "$out"/*/ran.txt; then
            echo "    $provider $version already ran in an earlier round"
            continue
        fi
        echo "$provider $version" >>"$dir/ran.txt"
        suites+=("$provider")
        for column in stream tui; do
            if [ -f "tests/live/test_${provider}_${column}.py" ]; then
                suites+=("${provider}_${column}")
            fi
        done
        suites+=("${provider}_moves")
    done <"$dir/installed.txt"
    [ ${#suites[@]} -gt 0 ] || continue
    echo "==> running tests/live at $round versions (${#suites[@]} suites), $JOBS at a time"
    (
        while read -r provider version _; do
            [ -n "$provider" ] && export "AGENTSHIM_LIVE_VERSION_${provider^^}=$version"
        done <"$dir/ran.txt"
        printf '%s\n' "${suites[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one "$@"' _ {} "$dir" "$PY"
    )
done

"$PY" - "$out" "$started" "$install_status" "${#rounds[@]}" "${rounds[@]}" "${providers[@]}" <<'PYEOF'
import json
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

out, started, install_status = Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
count = int(sys.argv[4])
rounds, providers = sys.argv[5 : 5 + count], sys.argv[5 + count :]
pins = json.loads(Path("agentshim/doctor/cli_versions.json").read_text())
rows, failures, unknown, bad = [], [], [], install_status != 0


def versions(round_dir, name):
    """provider -> version, from one round's ``name`` file."""
    found = {}
    path = round_dir / name
    for entry in path.read_text().splitlines() if path.exists() else ():
        if entry.strip():
            provider, version = entry.split()[:2]
            found[provider] = version
    return found


def tally(round_dir, suite, label):
    """(passed, failed, skipped, wall, exit code) of one suite; None if it did not run."""
    status = round_dir / f"{suite}.status"
    xml = round_dir / f"{suite}.xml"
    if not status.exists() or not xml.exists():
        return None
    frames = round_dir / f"{suite}.frames"
    if frames.exists():
        seen = Counter(frames.read_text().splitlines())
        unknown.append(f"{label}: " + ", ".join(f"{k} x{n}" for k, n in seen.most_common()))
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
    for round_name in rounds:
        round_dir = out / round_name
        installed = versions(round_dir, "installed.txt").get(provider)
        version = versions(round_dir, "ran.txt").get(provider)
        label = f"{provider} {version or installed or '?'}"
        if installed is not None and version is None:
            rows.append((provider, round_name, pinned, installed, "", "", "", "", "", "", "", "ran above"))
            continue
        columns = {}
        for column in ("stream", "tui", "moves"):
            columns[column] = "-"
            suite_file = "test_portability.py" if column == "moves" else f"test_{provider}_{column}.py"
            if not Path(f"tests/live/{suite_file}").exists():
                continue
            counted = tally(round_dir, f"{provider}_{column}", f"{label} [{column}]")
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
        counted = tally(round_dir, provider, label)
        if counted is None:
            rows.append((provider, round_name, pinned, version or "?", "-", "-", "-", "-", stream, tui, moves, "did not run"))
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
        rows.append((provider, round_name, pinned, version, passed, failed, skipped, f"{wall:.0f}s", stream, tui, moves, note))

header = ("provider", "which", "pinned", "ran", "passed", "failed", "skipped", "wall", "stream p/f/s", "tui p/f/s", "moves p/f/s", "")
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
if unknown:
    print("\nunknown frames (a parser had no handler for these types; the CLI changed its output):")
    for entry in unknown:
        print("  " + entry)
sys.exit(1 if bad else 0)
PYEOF
status=$?
if [ "$status" -eq 0 ]; then
    rm -rf "$out"
else
    echo "logs kept in $out (<round>/<suite>.log, .xml, .frames, install.log)"
fi
exit "$status"
