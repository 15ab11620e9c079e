from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from agentshim.core._files import atomic_write


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class TestAtomicWrite:
    def test_writes_bytes(self, tmp_path: Path) -> None:
        target = tmp_path / "out.bin"
        atomic_write(target, b"\x00\x01binary\xff")
        assert target.read_bytes() == b"\x00\x01binary\xff"

    def test_writes_str_as_utf8(self, tmp_path: Path) -> None:
        target = tmp_path / "out.txt"
        atomic_write(str(target), "héllo ☃\n")
        assert target.read_bytes() == "héllo ☃\n".encode()

    def test_replaces_existing_contents(self, tmp_path: Path) -> None:
        target = tmp_path / "out.txt"
        target.write_text("a much longer original text than the replacement")
        atomic_write(target, "short")
        assert target.read_text() == "short"

    def test_keeps_the_mode_of_an_existing_file(self, tmp_path: Path) -> None:
        target = tmp_path / "secret.json"
        target.write_text("{}")
        target.chmod(0o640)
        atomic_write(target, "{}")
        assert _mode(target) == 0o640

    def test_new_file_gets_the_default_mode(self, tmp_path: Path) -> None:
        target = tmp_path / "new.json"
        atomic_write(target, "{}")
        assert _mode(target) == 0o666 & ~_current_umask()

    def test_leaves_no_temporary_files(self, tmp_path: Path) -> None:
        target = tmp_path / "out.txt"
        for text in ("one", "two", "three"):
            atomic_write(target, text)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]

    def test_failure_leaves_target_and_directory_clean(self, tmp_path: Path) -> None:
        target = tmp_path / "taken"
        target.mkdir()
        (target / "inside").write_text("kept")
        with pytest.raises(OSError):
            atomic_write(target, "data")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
        assert (target / "inside").read_text() == "kept"

    def test_missing_directory_raises(self, tmp_path: Path) -> None:
        with pytest.raises(FileNotFoundError):
            atomic_write(tmp_path / "absent" / "out.txt", "data")

    def test_writes_through_a_symlink(self, tmp_path: Path) -> None:
        real = tmp_path / "real.json"
        real.write_text("old")
        link = tmp_path / "link.json"
        link.symlink_to(real)
        atomic_write(link, "new")
        assert link.is_symlink()
        assert real.read_text() == "new"

    def test_large_payload(self, tmp_path: Path) -> None:
        data = os.urandom(3 * 1024 * 1024 + 7)
        target = tmp_path / "big.bin"
        atomic_write(target, data)
        assert target.read_bytes() == data
