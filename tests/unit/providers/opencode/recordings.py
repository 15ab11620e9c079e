"""The recorded opencode runs under tests/fixtures/opencode/, loaded for replay."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agentshim.testing import FakeRun

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "opencode"


@dataclass(frozen=True)
class Recording:
    name: str
    stdout: tuple[str, ...]
    stderr: tuple[str, ...]
    returncode: int
    argv: str

    def fake_run(self) -> FakeRun:
        return FakeRun(stdout=self.stdout, stderr=self.stderr, returncode=self.returncode)


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
        argv=argv.group(1),
    )


def names() -> list[str]:
    return sorted(p.name.removesuffix(".stdout.jsonl") for p in FIXTURES.glob("*.stdout.jsonl"))
