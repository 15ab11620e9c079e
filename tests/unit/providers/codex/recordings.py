"""The Codex CLI recordings under tests/fixtures/codex, loaded for replay."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "codex"


@dataclass(frozen=True)
class Recording:
    name: str
    stdout: tuple[str, ...]
    stderr: tuple[str, ...]
    returncode: int
    argv: tuple[str, ...]


def _lines(path: Path) -> tuple[str, ...]:
    if not path.exists():
        return ()
    return tuple(path.read_text(encoding="utf-8").splitlines(keepends=True))


def load(name: str) -> Recording:
    meta = (FIXTURES / f"{name}.meta").read_text(encoding="utf-8")
    rc = re.search(r"\brc=(-?\d+)", meta)
    argv = re.search(r"\bargv=(.*)$", meta.strip())
    assert rc is not None, meta
    assert argv is not None, meta
    return Recording(
        name=name,
        stdout=_lines(FIXTURES / f"{name}.stdout.jsonl"),
        stderr=_lines(FIXTURES / f"{name}.stderr"),
        returncode=int(rc.group(1)),
        argv=tuple(argv.group(1).split()),
    )


def names() -> list[str]:
    return sorted(p.name[: -len(".meta")] for p in FIXTURES.glob("*.meta"))
