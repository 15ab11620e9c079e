"""Every ``Lifecycle`` kind agentshim emits is in the catalogue of ``core/lifecycle_kinds``.

Statically: each ``Lifecycle(...)`` call in the package names its kind with a catalogue
constant or prefix helper (directly, through a conditional, or through a local set from one);
the few that forward a kind given to them are listed, and their callers are checked instead.
Dynamically: every recorded CLI run, replayed through its provider's parser, emits only
catalogued kinds.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

from agentshim.core import lifecycle_kinds as lk
from agentshim.core.events import AgentEvent, Lifecycle
from agentshim.core.provider import StreamParser
from agentshim.providers import get_provider
from tests.unit.providers.fixtures import FIXTURES, capture_names, feed, load_capture

PACKAGE = Path(lk.__file__).resolve().parents[1]
CONSTANTS = {name for name in lk.__all__ if name.isupper()} - {"CATALOGUE", "PREFIXES"}
HELPERS = {"unknown_frame", "unknown_item", "unknown_block", "system"}

# Calls that take a kind from their caller, and which argument it is: their callers are
# checked like Lifecycle itself.
FORWARDING_CALLS = {"build_lifecycle": 0, "Notify": 0, "_forget": 2, "_add_to_turn": 2}
# (module, unparsed kind argument) of the calls that forward such a kind, or rebuild a
# recorded event.
FORWARDERS = {
    ("session.py", "command.kind"),
    ("transport/conversation.py", "event"),
    ("core/event_json.py", "_text(o, 'kind')"),
    ("core/session_policy.py", "kind"),
}


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def _catalogued(node: ast.expr, assigned: dict[str, list[ast.expr]]) -> bool:
    if isinstance(node, ast.IfExp):
        return _catalogued(node.body, assigned) and _catalogued(node.orelse, assigned)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value.id == "lk" and node.attr in CONSTANTS
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return (
            isinstance(node.func.value, ast.Name)
            and node.func.value.id == "lk"
            and (node.func.attr in HELPERS)
        )
    if isinstance(node, ast.Name) and node.id in assigned:
        return all(_catalogued(value, {}) for value in assigned[node.id])
    return False


def _assignments(scope: ast.AST) -> dict[str, list[ast.expr]]:
    assigned: dict[str, list[ast.expr]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                assigned.setdefault(target.id, []).append(node.value)
    return assigned


def _offences(path: Path, forwarded: set[tuple[str, str]] | None = None) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = path.relative_to(PACKAGE).as_posix()
    scopes: dict[ast.AST, ast.AST] = {}
    for scope in ast.walk(tree):
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(scope):
                scopes[node] = scope  # the innermost function wins: it is walked last
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        if name == "Lifecycle" and node.args:
            kind = node.args[0]
        elif name in FORWARDING_CALLS and len(node.args) > FORWARDING_CALLS[name]:
            kind = node.args[FORWARDING_CALLS[name]]
        else:
            continue
        if (module, ast.unparse(kind)) in FORWARDERS:
            if forwarded is not None:
                forwarded.add((module, ast.unparse(kind)))
            continue
        scope = scopes.get(node)
        if not _catalogued(kind, {} if scope is None else _assignments(scope)):
            found.append(f"{module}:{node.lineno}: {name}({ast.unparse(kind)}, ...)")
    return found


def test_every_lifecycle_the_package_emits_names_a_catalogued_kind() -> None:
    offences = sorted(
        {offence for path in sorted(PACKAGE.rglob("*.py")) for offence in _offences(path)}
    )
    assert offences == []


def test_every_listed_forwarder_still_exists() -> None:
    # A stale entry would let a free string through at a line that no longer forwards.
    forwarded: set[tuple[str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        _offences(path, forwarded)
    assert forwarded == FORWARDERS


def test_the_static_scan_finds_a_free_string() -> None:
    # The scan above is only worth something if it can fail.
    source = (
        "def f(emit, kind):\n    emit(Lifecycle('made_up', ''))\n    emit(Lifecycle(lk.WARNING))\n"
    )
    assert _offences_of_source(source) == ["Lifecycle('made_up', ...)"]


def _offences_of_source(source: str) -> list[str]:
    tree = ast.parse(source)
    return [
        f"Lifecycle({ast.unparse(node.args[0])}, ...)"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and _call_name(node) == "Lifecycle"
        and not _catalogued(node.args[0], {})
    ]


def test_each_catalogued_kind_says_when_it_is_emitted() -> None:
    assert {getattr(lk, name) for name in CONSTANTS} == set(lk.CATALOGUE)
    assert all(when.strip() for when in lk.CATALOGUE.values())
    assert all(when.strip() for when in lk.PREFIXES.values())


def test_the_prefix_helpers_build_catalogued_kinds() -> None:
    for helper in sorted(HELPERS):
        kind = getattr(lk, helper)("something")
        assert kind.endswith(":something")
        assert lk.is_catalogued(kind)
    assert not lk.is_catalogued("made_up")


def _replays() -> list[tuple[str, str]]:
    cases: list[tuple[str, str]] = []
    for provider_dir in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        provider = provider_dir.name
        if provider == "portability":
            continue
        folders = ["", *sorted(p.name for p in provider_dir.iterdir() if p.is_dir())]
        for folder in folders:
            prefix = f"{folder}/" if folder else ""
            cases += [(provider, prefix + case) for case in capture_names(provider, folder)]
    return cases


REPLAYS = _replays()


def test_there_are_recordings_to_replay() -> None:
    assert {provider for provider, _ in REPLAYS} >= {"claude", "codex", "gemini", "pi"}


@pytest.mark.parametrize(("provider", "case"), REPLAYS, ids=lambda value: str(value))
def test_a_recorded_run_emits_only_catalogued_kinds(provider: str, case: str) -> None:
    capture = load_capture(provider, case)
    plugin = get_provider(provider)

    def make(emit: Callable[[AgentEvent], None]) -> StreamParser:
        return plugin.new_parser(emit, expect_structured=False)

    _, events = feed(make, capture.stdout_lines, capture.stderr_lines)
    kinds = {event.kind for event in events if isinstance(event, Lifecycle)}
    assert sorted(kind for kind in kinds if not lk.is_catalogued(kind)) == []


def test_the_events_page_lists_every_kind() -> None:
    page = (PACKAGE.parent / "docs" / "events.md").read_text(encoding="utf-8")
    missing = [kind for kind in [*lk.CATALOGUE, *lk.PREFIXES] if f"| `{kind}" not in page]
    assert missing == []
