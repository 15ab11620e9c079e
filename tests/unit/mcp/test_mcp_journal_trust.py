"""Recovery acts only on journal entries this user wrote, for the file they name.

A journal entry says which file to write and what bytes to put there, so one planted by
another local user (in a directory they could create or write), one naming a path outside the
workspace through ``..``, or one filed under another file's name must never be acted on.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

import pytest

from agentshim.command import main
from agentshim.core.errors import McpConfigError
from agentshim.mcp.install import install_json_config
from agentshim.mcp.journal import JournalEntry, journal_file_for
from agentshim.mcp.recover import recover_config_files

OURS = {"agentshim-srv": {"command": "/usr/bin/tool"}}
VICTIM = b"echo original\n"
PLANTED = b"echo PWNED\n"


def planted_entry(path: str) -> bytes:
    return JournalEntry(
        path=path,
        original=PLANTED,
        mode=0o755,
        owner=None,
        written_sha256="0" * 64,
        key_path=("mcpServers",),
        names=("x",),
        pid=1,
    ).to_bytes()


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / "victim.sh").write_bytes(VICTIM)
    (outside / "victim.sh").write_bytes(VICTIM)
    return workspace, outside


@pytest.fixture
def xdg_and_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No AGENTSHIM_STATE_DIR: a working XDG directory, and the temporary fallback."""
    monkeypatch.delenv("AGENTSHIM_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp / f"agentshim-{os.geteuid()}" / "mcp-journal"


class TestAJournalDirectoryOthersCouldChange:
    @pytest.mark.parametrize("open_one", ["journal", "state-root"])
    def test_is_skipped_with_a_note_and_nothing_in_it_is_acted_on(
        self, layout: tuple[Path, Path], xdg_and_temp: Path, open_one: str
    ) -> None:
        workspace, _ = layout
        fallback = xdg_and_temp
        fallback.mkdir(parents=True, mode=0o700)
        fallback.parent.chmod(0o700)
        (fallback if open_one == "journal" else fallback.parent).chmod(0o777)
        victim = workspace / "victim.sh"
        journal_file_for(victim, fallback).write_bytes(planted_entry(str(victim)))
        install_json_config(workspace / ".mcp.json", ("mcpServers",), OURS).restore()

        (result,) = recover_config_files(workspace)
        assert victim.read_bytes() == VICTIM
        assert not result.restored
        assert result.error is not None
        assert "skipped" in result.error
        out = io.StringIO()
        assert main(["mcp", "recover", str(workspace)], out=out) != 0
        assert "skipped" in out.getvalue()
        assert victim.read_bytes() == VICTIM

    def test_a_state_root_others_can_write_refuses_the_install(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        root = tmp_path / "state"
        root.mkdir()
        root.chmod(0o777)
        monkeypatch.setenv("AGENTSHIM_STATE_DIR", str(root))
        path = tmp_path / ".mcp.json"
        with pytest.raises(McpConfigError, match="not private"):
            install_json_config(path, ("mcpServers",), OURS)
        assert not path.exists()


class TestAnEntryThatLies:
    def test_a_path_climbing_out_of_the_workspace_is_not_restored(
        self, layout: tuple[Path, Path], journals: Path
    ) -> None:
        workspace, outside = layout
        climbing = f"{workspace}/../outside/victim.sh"
        journal_file_for(Path(climbing), journals).write_bytes(planted_entry(climbing))
        results = recover_config_files(workspace)
        assert (outside / "victim.sh").read_bytes() == VICTIM
        assert [r.restored for r in results] == [False]

    def test_an_entry_for_another_file_is_not_restored_by_an_install(
        self, layout: tuple[Path, Path], journals: Path
    ) -> None:
        workspace, outside = layout
        path = workspace / ".mcp.json"
        journal_file_for(path, journals).write_bytes(planted_entry(str(outside / "victim.sh")))
        with pytest.raises(McpConfigError, match="names another file"):
            install_json_config(path, ("mcpServers",), OURS)
        assert (outside / "victim.sh").read_bytes() == VICTIM
        assert not path.exists()

    def test_an_entry_filed_under_another_files_name_is_not_recovered(
        self, layout: tuple[Path, Path], journals: Path
    ) -> None:
        workspace, _ = layout
        victim = workspace / "victim.sh"
        journal_file_for(workspace / ".mcp.json", journals).write_bytes(planted_entry(str(victim)))
        (result,) = recover_config_files(workspace)
        assert victim.read_bytes() == VICTIM
        assert not result.restored
        assert result.error is not None


@pytest.fixture(autouse=True)
def state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("AGENTSHIM_STATE_DIR", str(state))
    return state


@pytest.fixture
def journals(state_dir: Path) -> Path:
    """This user's private journal directory, where a planted entry is filed."""
    directory = state_dir / "mcp-journal"
    directory.mkdir(mode=0o700)
    return directory
