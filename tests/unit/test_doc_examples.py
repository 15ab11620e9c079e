"""Every ```python block in README.md and docs/ runs as written: offline, in a fresh namespace.

A block whose first line is ``# needs: <what>`` (a real agent CLI, the network) is skipped; the
comment tells a reader what it takes to run it.
"""

from __future__ import annotations

import ipaddress
import re
import signal
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
NEEDS = "# needs:"
TIMEOUT_S = 8.0

# A fence line "```python" (nothing else on it), the code, a closing "```" line.
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _blocks(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (line number of the block's first code line, code) for each python block."""
    text = path.read_text(encoding="utf-8")
    for match in _BLOCK.finditer(text):
        yield text.count("\n", 0, match.start(1)) + 1, match.group(1)


def _cases() -> list[Any]:
    cases: list[Any] = []
    for path in _doc_files():
        name = path.relative_to(ROOT).as_posix()
        for line, code in _blocks(path):
            first = code.lstrip().splitlines()[0] if code.strip() else ""
            marks = [pytest.mark.skip(reason=first)] if first.startswith(NEEDS) else []
            cases.append(pytest.param(path, line, code, id=f"{name}:{line}", marks=marks))
    return cases


def _is_local(address: object) -> bool:
    if not isinstance(address, tuple) or not address:
        return True  # an AF_UNIX path
    host = str(address[0])  # pyright: ignore[reportUnknownArgumentType]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse every connection that leaves the machine (loopback and Unix sockets still work)."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> None:
        if not _is_local(address):
            raise OSError(f"doc examples must not use the network (connect to {address!r})")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _is_local(address):
            raise OSError(f"doc examples must not use the network (connect to {address!r})")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


@pytest.fixture
def deadline() -> Iterator[None]:
    """Fail a block that runs longer than TIMEOUT_S (where SIGALRM exists)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"the example ran longer than {TIMEOUT_S} s")

    previous: Callable[[int, FrameType | None], Any] | int | None = signal.signal(
        signal.SIGALRM, expire
    )
    signal.setitimer(signal.ITIMER_REAL, TIMEOUT_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.usefixtures("no_network", "deadline")
@pytest.mark.parametrize(("path", "line", "code"), _cases())
def test_example_runs(
    path: Path, line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # Padded so a traceback names the document's own file and line.
    compiled = compile("\n" * (line - 1) + code, str(path), "exec", dont_inherit=True)
    exec(compiled, {"__name__": "__main__"})


def test_the_readme_has_runnable_examples() -> None:
    runnable = [
        code for _, code in _blocks(ROOT / "README.md") if not code.lstrip().startswith(NEEDS)
    ]
    assert len(runnable) >= 3


def test_skipped_examples_say_what_they_need_and_compile() -> None:
    skipped = 0
    for path in _doc_files():
        for line, code in _blocks(path):
            first = code.lstrip().splitlines()[0] if code.strip() else ""
            if not first.startswith(NEEDS):
                continue
            skipped += 1
            assert first[len(NEEDS) :].strip(), f"{path.name}:{line}: '# needs:' names nothing"
            compile("\n" * (line - 1) + code, str(path), "exec", dont_inherit=True)
    assert skipped >= 1


@pytest.mark.usefixtures("no_network")
def test_the_examples_cannot_reach_the_network() -> None:
    with pytest.raises(OSError, match="must not use the network"):
        socket.create_connection(("192.0.2.1", 80), timeout=1)
