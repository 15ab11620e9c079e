"""Restore under an agent that fights back: links, directories, NaN, deleted files, dead hosts.

Every scenario runs on the real file system. The ones in ``TestAsAnUnprivilegedUser`` run as a
normal user: directly when the suite does, and in a forked child that drops to uid/gid 65534
when the suite runs as root (where permission checks are bypassed).
"""

from __future__ import annotations

import io
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.cli_agent import CliAgent
from agentshim.command import main
from agentshim.core.errors import McpConfigError
from agentshim.core.events import Lifecycle
from agentshim.core.mcp import StdioMcpServer
from agentshim.core.turn import TurnRequest
from agentshim.execution.executor import CommandRequest
from agentshim.mcp.install import install_json_config
from agentshim.mcp.recover import recover_config_files
from agentshim.mcp.restore import ORIGINAL_SUFFIX
from agentshim.testing import FakeExecutor, scripted_turn
from tests.unit.another_user import NOBODY, run_as_nobody

SECRET = "tok-5ecret-value-9f"
OURS = {"agentshim-srv": {"command": "/usr/bin/tool", "env": {"TOKEN": SECRET}}}
ORIGINAL = b'{\n  "mcpServers": {"user": {"command": "u"}},\n  "theme": "dark"\n}\n'
JSONC = (
    b"// Gemini settings, kept by hand\n"
    b'{\n  "theme": "dark", /* the only theme */\n'
    b'  "mcpServers": {\n    "user": {"command": "u"},\n  },\n}\n'
)
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Journals go to a directory of the test's own, never the user's state directory."""
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("AGENTSHIM_STATE_DIR", str(state))
    return state


def install(path: Path) -> Any:
    return install_json_config(path, ("mcpServers",), OURS)


def install_over(path: Path, *, mode: int | None = None) -> Any:
    """Writes the user's ORIGINAL file at ``path`` (with ``mode``), then installs our entry."""
    path.write_bytes(ORIGINAL)
    if mode is not None:
        path.chmod(mode)
    return install(path)


def written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def swap_directory_for_link(path: Path, target: Path) -> None:
    """The agent removes ``path`` and its directory, and links the directory's name to ``target``."""
    path.unlink()
    path.parent.rmdir()
    path.parent.symlink_to(target)


def new_dir(path: Path) -> Path:
    path.mkdir()
    return path


def swap_for_link(path: Path, target: Path | str) -> None:
    """What an agent does to redirect a write: ``path`` becomes a link to ``target``."""
    path.unlink()
    path.symlink_to(target)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def files_under(root: Path) -> Iterator[Path]:
    for directory, _dirs, names in os.walk(root):
        for name in names:
            yield Path(directory) / name


def assert_no_trace_of_ours(*roots: Path) -> None:
    """Neither agentshim's entry nor its secret is left in any file (links not followed).

    The name alone proves nothing: the user may have had a server of the same name.
    """
    for root in roots:
        for path in files_under(root):
            if path.is_symlink():
                continue
            data = path.read_bytes()
            assert SECRET.encode() not in data, path
            assert b"/usr/bin/tool" not in data, path


def merged_with(path: Path, **extra: Any) -> str:
    return json.dumps({**json.loads(path.read_text()), **extra})


class TestPlantedLinks:
    def test_a_link_planted_in_place_of_the_file_is_never_written_through(
        self, tmp_path: Path
    ) -> None:
        workspace, outside = new_dir(tmp_path / "ws"), new_dir(tmp_path / "outside")
        victim = written(outside / "authorized_keys", b"ssh-ed25519 AAAA precious\n")
        victim.chmod(0o600)
        path = workspace / ".mcp.json"
        installation = install_over(path, mode=0o640)
        swap_for_link(path, victim)
        note = installation.restore()
        assert victim.read_bytes() == b"ssh-ed25519 AAAA precious\n"
        assert mode_of(victim) == 0o600
        assert not path.is_symlink()
        assert path.read_bytes() == ORIGINAL
        assert mode_of(path) == 0o640
        assert note is not None
        assert "link" in note
        assert str(victim) in note
        assert_no_trace_of_ours(workspace, outside)

    def test_a_link_planted_where_there_was_no_file_is_removed_and_its_target_kept(
        self, tmp_path: Path
    ) -> None:
        victim = written(tmp_path / "victim.json", b'{"precious": true}')
        workspace = new_dir(tmp_path / "ws")
        path = workspace / "opencode.json"
        installation = install(path)
        swap_for_link(path, victim)
        assert installation.restore() is not None
        assert not os.path.lexists(path)
        assert victim.read_bytes() == b'{"precious": true}'

    def test_a_link_planted_in_place_of_the_settings_directory(self, tmp_path: Path) -> None:
        workspace, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
        (workspace / ".gemini").mkdir(parents=True)
        elsewhere.mkdir()
        (elsewhere / "settings.json").write_bytes(b'{"theirs": 1}')
        path = workspace / ".gemini" / "settings.json"
        installation = install_over(path)
        swap_directory_for_link(path, elsewhere)
        note = installation.restore()
        assert (elsewhere / "settings.json").read_bytes() == b'{"theirs": 1}'
        assert not (workspace / ".gemini").is_symlink()
        assert path.read_bytes() == ORIGINAL
        assert note is not None
        assert "link" in note

    def test_a_link_that_was_there_at_install_is_refused_and_its_target_untouched(
        self, tmp_path: Path
    ) -> None:
        shared = written(tmp_path / "shared.json", ORIGINAL)
        path = tmp_path / ".mcp.json"
        path.symlink_to(shared)
        with pytest.raises(McpConfigError, match="symbolic link"):
            install(path)
        assert os.readlink(path) == str(shared)
        assert shared.read_bytes() == ORIGINAL
        assert_no_trace_of_ours(tmp_path)


class TestADirectoryRedirectedDuringTheTurn:
    """A linked directory is followed, but not blindly once it leads elsewhere."""

    def test_the_linked_directory_replaced_behind_the_same_link_is_not_written_through(
        self, tmp_path: Path
    ) -> None:
        workspace, outside = tmp_path / "ws", tmp_path / "outside"
        (workspace / "real").mkdir(parents=True)
        (workspace / ".gemini").symlink_to("real")
        path = written(workspace / ".gemini" / "settings.json", ORIGINAL)
        outside.mkdir()
        (outside / "settings.json").write_bytes(b"precious\n")
        installation = install(path)
        (workspace / "real").rename(workspace / "real.moved")
        (workspace / "real").symlink_to(outside)
        note = installation.restore()
        assert (outside / "settings.json").read_bytes() == b"precious\n"
        kept = workspace / f".gemini.settings.json{ORIGINAL_SUFFIX}"
        assert kept.read_bytes() == ORIGINAL
        assert note is not None
        assert str(kept) in note


class TestADirectoryAgentshimCreated:
    def test_replaced_by_a_link_is_unlinked_so_the_next_install_does_not_write_through_it(
        self, tmp_path: Path
    ) -> None:
        workspace, outside = new_dir(tmp_path / "ws"), new_dir(tmp_path / "outside")
        path = workspace / ".gemini" / "settings.json"
        first = install(path)
        swap_directory_for_link(path, outside)
        note = first.restore()
        assert note is not None
        assert "removed the link" in note
        assert not os.path.lexists(workspace / ".gemini")
        second = install(path)
        assert list(outside.iterdir()) == []
        assert second.restore() is None
        assert list(outside.iterdir()) == []
        assert list(workspace.iterdir()) == []


class TestThroughATurn:
    def test_the_note_reaches_the_agents_log_and_the_link_target_is_untouched(
        self, tmp_path: Path
    ) -> None:
        victim = written(tmp_path / "victim", b"precious\n")
        workspace = new_dir(tmp_path / "ws")
        path = written(workspace / ".mcp.json", ORIGINAL)

        def agent_plants_a_link(request: CommandRequest) -> Any:
            # The file names a variable; the secret itself is only in the CLI's environment.
            assert SECRET not in path.read_text()
            assert SECRET in request.env.values()
            swap_for_link(path, victim)
            return scripted_turn("claude", text="done")

        log: list[str] = []
        events: list[object] = []
        cli = CliAgent(
            "claude",
            executor=FakeExecutor(agent_plants_a_link, binaries={"claude": "/usr/bin/claude"}),
            env={"PATH": "/usr/bin"},
            log=log.append,
            event_handlers=events.append,
        )
        server = StdioMcpServer("agentshim-srv", "/usr/bin/tool", env={"TOKEN": SECRET})
        result = cli.run(TurnRequest("hi", cwd=str(workspace), mcp_servers=(server,)))
        assert result.text == "done"
        assert victim.read_bytes() == b"precious\n"
        assert path.read_bytes() == ORIGINAL
        assert any(str(victim) in line for line in log), log
        assert len(result.notices) == 1
        assert str(victim) in result.notices[0]
        assert Lifecycle("mcp_config_restore", result.notices[0]) in events

    def test_an_original_kept_next_to_the_file_is_on_the_result(self, tmp_path: Path) -> None:
        workspace = new_dir(tmp_path / "ws")
        path = written(workspace / ".mcp.json", ORIGINAL)

        def agent_makes_it_a_directory(request: CommandRequest) -> Any:
            path.unlink()
            path.mkdir()
            return scripted_turn("claude", text="done")

        cli = CliAgent(
            "claude",
            executor=FakeExecutor(
                agent_makes_it_a_directory, binaries={"claude": "/usr/bin/claude"}
            ),
            env={"PATH": "/usr/bin"},
        )
        server = StdioMcpServer("agentshim-srv", "/usr/bin/tool")
        result = cli.run(TurnRequest("hi", cwd=str(workspace), mcp_servers=(server,)))
        kept = workspace / ".mcp.json.agentshim-original"
        assert kept.read_bytes() == ORIGINAL
        assert path.is_dir()
        assert len(result.notices) == 1
        assert str(kept) in result.notices[0] or kept.name in result.notices[0]

    def test_an_exact_restore_leaves_no_notice(self, tmp_path: Path) -> None:
        workspace = new_dir(tmp_path / "ws")
        (workspace / ".mcp.json").write_bytes(ORIGINAL)
        cli = CliAgent(
            "claude",
            executor=FakeExecutor(
                scripted_turn("claude", text="done"), binaries={"claude": "/usr/bin/claude"}
            ),
            env={"PATH": "/usr/bin"},
        )
        server = StdioMcpServer("agentshim-srv", "/usr/bin/tool")
        result = cli.run(TurnRequest("hi", cwd=str(workspace), mcp_servers=(server,)))
        assert result.notices == ()
        assert (workspace / ".mcp.json").read_bytes() == ORIGINAL


class TestReplacedOrRemoved:
    def test_a_directory_in_place_of_the_file_keeps_the_original_next_to_it(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / ".mcp.json"
        installation = install_over(path, mode=0o600)
        path.unlink()
        path.mkdir()
        (path / "agent-work.txt").write_text("keep me")
        note = installation.restore()
        aside = tmp_path / (".mcp.json" + ORIGINAL_SUFFIX)
        assert (path / "agent-work.txt").read_text() == "keep me"
        assert aside.read_bytes() == ORIGINAL
        assert mode_of(aside) == 0o600
        assert note is not None
        assert str(aside) in note
        assert_no_trace_of_ours(tmp_path)

    def test_the_settings_directory_removed_entirely_comes_back(self, tmp_path: Path) -> None:
        settings_dir = new_dir(tmp_path / ".gemini")
        settings_dir.chmod(0o750)
        path = settings_dir / "settings.json"
        installation = install_over(path, mode=0o600)
        path.unlink()
        settings_dir.rmdir()
        note = installation.restore()
        assert path.read_bytes() == ORIGINAL
        assert mode_of(path) == 0o600
        assert mode_of(settings_dir) == 0o750
        assert note is not None
        assert "removed" in note

    def test_a_deleted_0600_file_comes_back_0600(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        installation = install_over(path, mode=0o600)
        path.unlink()
        assert "deleted" in (installation.restore() or "")
        assert path.read_bytes() == ORIGINAL
        assert mode_of(path) == 0o600

    def test_a_chmod_by_the_agent_is_undone(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        installation = install_over(path, mode=0o600)
        path.chmod(0o666)
        assert installation.restore() is None
        assert mode_of(path) == 0o600
        assert path.read_bytes() == ORIGINAL

    def test_a_fifo_in_place_of_the_file_is_not_opened(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        installation = install_over(path)
        path.unlink()
        os.mkfifo(path)
        assert installation.restore() is not None  # would hang if it opened the FIFO
        assert path.read_bytes() == ORIGINAL


class TestRewrites:
    def test_a_nan_in_the_agents_rewrite_does_not_leave_our_entries(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        installation = install_over(path)
        path.write_text(merged_with(path).replace('"theme"', '"ratio": NaN, "theme"'))
        note = installation.restore()
        assert path.read_bytes() == ORIGINAL
        assert note is not None
        assert "NaN" in note
        assert_no_trace_of_ours(tmp_path)

    @pytest.mark.parametrize("value", ["1e999", "-1e999", '"\\ud800"', '{"\\udfff": 1}'])
    def test_an_infinite_number_or_a_lone_surrogate_does_not_leave_our_entries(
        self, tmp_path: Path, value: str
    ) -> None:
        path = tmp_path / ".mcp.json"
        installation = install_over(path)
        path.write_text(merged_with(path, agent="__V__").replace('"__V__"', value))
        note = installation.restore()
        assert path.read_bytes() == ORIGINAL
        assert note is not None
        assert "unusable" in note
        assert_no_trace_of_ours(tmp_path)
        assert recover_config_files(tmp_path) == []
        install(path).restore()  # the next turn's install is not wedged
        assert path.read_bytes() == ORIGINAL

    def test_a_changed_file_keeps_the_agents_change_and_the_original_next_to_it(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / ".mcp.json"
        installation = install_over(path, mode=0o640)
        path.write_text(merged_with(path, agent="added"))
        note = installation.restore()
        assert json.loads(path.read_bytes()) == {**json.loads(ORIGINAL), "agent": "added"}
        aside = tmp_path / (".mcp.json" + ORIGINAL_SUFFIX)
        assert aside.read_bytes() == ORIGINAL
        assert mode_of(aside) == 0o640
        assert note is not None
        assert str(aside) in note
        assert_no_trace_of_ours(tmp_path)


class TestJsonc:
    def test_comments_survive_byte_for_byte(self, tmp_path: Path) -> None:
        path = tmp_path / ".gemini" / "settings.json"
        path.parent.mkdir()
        path.write_bytes(JSONC)
        installation = install(path)
        during = json.loads(path.read_text())  # the CLI reads plain JSON during the turn
        assert set(during["mcpServers"]) == {"user", "agentshim-srv"}
        assert during["theme"] == "dark"
        assert installation.restore() is None
        assert path.read_bytes() == JSONC

    def test_a_changed_jsonc_file_keeps_its_commented_original_next_to_it(
        self, tmp_path: Path
    ) -> None:
        path = written(tmp_path / "opencode.json", JSONC)
        installation = install(path)
        path.write_text(merged_with(path, agent=1))
        assert installation.restore() is not None
        assert (tmp_path / ("opencode.json" + ORIGINAL_SUFFIX)).read_bytes() == JSONC
        assert json.loads(path.read_text())["agent"] == 1
        assert_no_trace_of_ours(tmp_path)

    def test_a_cli_that_reads_strict_json_refuses_it(self, tmp_path: Path) -> None:
        path = written(tmp_path / ".mcp.json", JSONC)
        with pytest.raises(McpConfigError, match="JSONC"):
            install_json_config(path, ("mcpServers",), OURS, jsonc=False)
        assert path.read_bytes() == JSONC


_KILLED_CHILD = """
import os, sys, time
from pathlib import Path
from agentshim.mcp.install import install_json_config
install_json_config(Path(sys.argv[1]), ("mcpServers",), {json_ours})
print("installed", flush=True)
time.sleep(60)
"""


def install_in_a_child_and_kill_it(path: Path) -> None:
    """A real host process installs, then is SIGKILLed mid-turn (no restore ever runs)."""
    code = _KILLED_CHILD.replace("{json_ours}", repr(OURS))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "installed"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert SECRET in path.read_text()  # what a dead turn leaves behind


class TestHostKilledMidTurn:
    def test_the_next_install_restores_first(self, tmp_path: Path) -> None:
        path = written(tmp_path / ".mcp.json", ORIGINAL)
        path.chmod(0o600)
        install_in_a_child_and_kill_it(path)
        installation = install(path)
        note = installation.restore()
        assert note is not None
        assert "never ended" in note
        assert path.read_bytes() == ORIGINAL
        assert mode_of(path) == 0o600
        assert recover_config_files(tmp_path) == []

    def test_killed_between_the_journal_and_the_write(self, tmp_path: Path) -> None:
        path = tmp_path / ".gemini" / "settings.json"
        code = (
            "import os, sys\n"
            "from pathlib import Path\n"
            "import agentshim.mcp.install as m\n"
            "m.atomic_write = lambda *a: os.kill(os.getpid(), 9)\n"
            "m.install_json_config(Path(sys.argv[1]), ('mcpServers',), {'s': {'c': 1}})\n"
        )
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", code, str(path)], env=env, check=False)
        assert done.returncode == -signal.SIGKILL
        assert path.parent.is_dir()  # created before the process died
        assert [r.restored for r in recover_config_files(tmp_path)] == [True]
        assert os.listdir(tmp_path) == []

    def test_the_recover_command_restores_it_by_hand(self, tmp_path: Path) -> None:
        path = tmp_path / ".gemini" / "settings.json"
        path.parent.mkdir()
        path.write_bytes(JSONC)
        install_in_a_child_and_kill_it(path)
        out = io.StringIO()
        assert main(["mcp", "recover", str(tmp_path)], out=out) == 0  # nothing left to restore
        assert f"restored: {path}" in out.getvalue()
        assert path.read_bytes() == JSONC
        out = io.StringIO()
        assert main(["mcp", "recover", str(tmp_path)], out=out) == 0
        assert "nothing to recover" in out.getvalue()

    def test_the_recover_command_leaves_other_workspaces_and_live_turns_alone(
        self, tmp_path: Path
    ) -> None:
        mine, live = new_dir(tmp_path / "mine"), new_dir(tmp_path / "live")
        (mine / ".mcp.json").write_bytes(ORIGINAL)
        install_in_a_child_and_kill_it(mine / ".mcp.json")
        running = install(live / ".mcp.json")
        assert main(["mcp", "recover", str(live)], out=io.StringIO()) == 1  # in use
        assert SECRET in (mine / ".mcp.json").read_text()
        assert SECRET in (live / ".mcp.json").read_text()
        assert running.restore() is None
        assert not (live / ".mcp.json").exists()
        assert main(["mcp", "recover", str(tmp_path)], out=io.StringIO()) == 0  # restored
        assert (mine / ".mcp.json").read_bytes() == ORIGINAL

    def test_a_damaged_journal_is_reported_not_trusted(
        self, tmp_path: Path, state_dir: Path
    ) -> None:
        path = written(tmp_path / ".mcp.json", ORIGINAL)
        install_in_a_child_and_kill_it(path)
        (journal,) = (state_dir / "mcp-journal").iterdir()
        journal.write_bytes(b'{"version": 1, "path": "/etc/passwd"')
        with pytest.raises(McpConfigError, match="damaged") as raised:
            install(path)
        assert str(journal) in str(raised.value)
        out = io.StringIO()
        assert main(["mcp", "recover", str(tmp_path)], out=out) == 1  # not restored
        assert "damaged journal" in out.getvalue()
        assert journal.exists()

    def test_the_cli_entry_point_runs_it(self, tmp_path: Path) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "agentshim", "mcp", "recover", str(tmp_path)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "nothing to recover" in done.stdout


class TestTwoInstallsIntoOneFile:
    def test_the_second_waits_for_the_first_to_restore(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        first = install_over(path)
        second: list[Any] = []
        waiter = threading.Thread(target=lambda: second.append(install(path)))
        waiter.start()
        time.sleep(0.3)
        assert second == []  # blocked: it would take the first turn's entries for the user's
        assert first.restore() is None
        waiter.join(10)
        assert len(second) == 1
        assert second[0].restore() is None
        assert path.read_bytes() == ORIGINAL

    def test_across_processes(self, tmp_path: Path) -> None:
        path = written(tmp_path / ".mcp.json", ORIGINAL)
        code = (
            "import sys, time\n"
            "from pathlib import Path\n"
            "from agentshim.mcp.install import install_json_config\n"
            "i = install_json_config(Path(sys.argv[1]), ('mcpServers',), "
            "{'other-srv': {'command': 'x'}})\n"
            "print('installed', flush=True)\n"
            "time.sleep(0.5)\n"
            "assert i.restore() is None\n"
        )
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        child = subprocess.Popen(
            [sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, env=env, text=True
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "installed"
        installation = install(path)  # waits for the child's restore
        assert child.wait(10) == 0
        assert "other-srv" not in path.read_text()
        assert installation.restore() is None
        assert path.read_bytes() == ORIGINAL


# --- as a normal user ------------------------------------------------------------------------


def as_unprivileged_user(scenario: Callable[[Path], None]) -> None:
    """Run ``scenario(directory)`` as a normal user, in a directory that user owns.

    As root, a forked child drops to uid/gid 65534 first and reports back through a pipe.
    """
    base = Path(tempfile.mkdtemp(prefix="agentshim-unprivileged-", dir="/tmp"))

    def in_base() -> None:
        os.environ["AGENTSHIM_STATE_DIR"] = str(base / "state")
        scenario(base)

    try:
        if os.geteuid() != 0:
            in_base()
            return
        os.chown(base, NOBODY, NOBODY)
        # The child cannot import from root's interpreter once it has dropped privileges, so
        # whatever the scenario loads lazily (the BOM-aware codec) is loaded here first.
        b"{}".decode("utf-8-sig")
        run_as_nobody(in_base)
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)


def _planted_link_and_deleted_0600(base: Path) -> None:
    workspace, outside = new_dir(base / "ws"), new_dir(base / "outside")
    victim = written(outside / "notes.txt", b"mine\n")
    path = workspace / ".mcp.json"
    installation = install_over(path, mode=0o600)
    swap_for_link(path, victim)
    assert installation.restore() is not None
    assert victim.read_bytes() == b"mine\n"
    assert path.read_bytes() == ORIGINAL
    assert mode_of(path) == 0o600
    installation = install(path)
    path.unlink()
    assert installation.restore() is not None
    assert path.read_bytes() == ORIGINAL
    assert mode_of(path) == 0o600


def _workspace_made_read_only_during_the_turn(base: Path) -> None:
    # Only a normal user can be refused: root writes into a 0555 directory anyway.
    workspace = new_dir(base / "ws")
    path = workspace / ".mcp.json"
    installation = install_over(path)
    workspace.chmod(0o555)
    note = installation.restore()
    assert note is not None
    assert "mcp recover" in note, note
    assert SECRET in path.read_text()
    workspace.chmod(0o755)
    recovered = recover_config_files(workspace)
    assert [(r.path, r.restored) for r in recovered] == [(str(path), True)]
    assert path.read_bytes() == ORIGINAL


def _journal_directory_not_writable(base: Path) -> None:
    state = base / "state"
    state.mkdir(mode=0o500)
    path = written(base / ".mcp.json", ORIGINAL)
    with pytest.raises(McpConfigError, match="AGENTSHIM_STATE_DIR"):
        install(path)
    assert path.read_bytes() == ORIGINAL


class TestAsAnUnprivilegedUser:
    def test_planted_link_and_deleted_0600_file(self) -> None:
        as_unprivileged_user(_planted_link_and_deleted_0600)

    def test_a_workspace_made_read_only_keeps_the_journal_for_recover(self) -> None:
        as_unprivileged_user(_workspace_made_read_only_during_the_turn)

    def test_a_journal_directory_it_cannot_write_refuses_the_install(self) -> None:
        as_unprivileged_user(_journal_directory_not_writable)


# --- the property ----------------------------------------------------------------------------

ACTIONS = ("rewrite", "delete", "directory", "symlink", "chmod", "nan", "nothing")
originals = st.one_of(
    st.none(),
    st.sampled_from([ORIGINAL, JSONC, b"{}", b'{"mcpServers": {"agentshim-srv": {"x": 1}}}']),
    st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=3), max_size=3).map(
        lambda d: json.dumps(d).encode()
    ),
    st.sampled_from([b"{ not json", b"[1]", b"\xff\xfe", b'{"mcpServers": 3}']),
)


def _act(action: str, path: Path, outside: Path) -> None:
    if action == "rewrite":
        path.write_text(merged_with(path, agent="changed"))
    elif action == "delete":
        path.unlink()
    elif action == "directory":
        path.unlink()
        path.mkdir()
        (path / "work").write_text("agent's")
    elif action == "symlink":
        swap_for_link(path, outside)
    elif action == "chmod":
        path.chmod(0o666)
    elif action == "nan":
        path.write_text(merged_with(path)[:-1] + ', "x": NaN}')


class TestRestoreProperty:
    @settings(max_examples=80)
    @given(originals, st.sampled_from([0o600, 0o644, 0o640]), st.sampled_from(ACTIONS))
    def test_the_original_survives_every_action_and_nothing_of_ours_remains(
        self, original: bytes | None, mode: int, action: str
    ) -> None:
        with tempfile.TemporaryDirectory() as directory:
            workspace, elsewhere = (
                new_dir(Path(directory) / "ws"),
                new_dir(Path(directory) / "elsewhere"),
            )
            outside = written(elsewhere / "target", b"not yours")
            path = workspace / "settings.json"
            if original is not None:
                path.write_bytes(original)
                path.chmod(mode)
            try:
                installation = install(path)
            except McpConfigError:
                assert original is not None
                assert path.read_bytes() == original
                assert mode_of(path) == mode
                return
            _act(action, path, outside)
            note = installation.restore()
            assert outside.read_bytes() == b"not yours"
            aside = workspace / ("settings.json" + ORIGINAL_SUFFIX)
            if original is not None:
                if os.path.isfile(path) and not path.is_symlink() and path.read_bytes() == original:
                    assert mode_of(path) == mode
                else:
                    assert aside.read_bytes() == original
                    assert mode_of(aside) == mode
                    assert note is not None
                    assert str(aside) in note
            else:
                assert not aside.exists()
            assert not path.is_symlink()
            assert_no_trace_of_ours(workspace)
            assert os.listdir(os.environ["AGENTSHIM_STATE_DIR"] + "/mcp-journal") == []


json_tokens = st.one_of(
    st.floats().map(json.dumps),  # NaN, Infinity and -Infinity included
    st.text(st.characters(codec=None, categories=["Cs", "Ll", "Nd"])).map(json.dumps),
    st.builds("{}e{}".format, st.integers(-9, 9), st.integers(-400, 400)),  # 1e999: inf
)


class TestAnyValueInTheAgentsRewrite:
    @settings(max_examples=80)
    @given(json_tokens)
    def test_never_leaves_our_entries_nor_wedges_the_next_install(self, token: str) -> None:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / ".mcp.json"
            installation = install_over(path)
            path.write_text(merged_with(path, agent="__V__").replace('"__V__"', token))
            installation.restore()
            assert_no_trace_of_ours(Path(directory))
            install(path).restore()
            assert_no_trace_of_ours(Path(directory))
            assert os.listdir(os.environ["AGENTSHIM_STATE_DIR"] + "/mcp-journal") == []


class TestAnInstallationDroppedWithoutRestore:
    def test_the_next_install_does_not_wait_forever_and_undoes_it(self, tmp_path: Path) -> None:
        path = written(tmp_path / ".mcp.json", ORIGINAL)
        install(path)  # dropped: a caller that lost its installation
        installation = install(path)
        assert "never ended" in (installation.restore() or "")
        assert path.read_bytes() == ORIGINAL


class TestTheJournal:
    def test_private_and_without_the_servers_secrets(self, tmp_path: Path, state_dir: Path) -> None:
        path = tmp_path / ".mcp.json"
        installation = install_over(path)
        (journal,) = (state_dir / "mcp-journal").iterdir()
        assert mode_of(state_dir / "mcp-journal") == 0o700
        assert mode_of(journal) == 0o600
        assert SECRET.encode() not in journal.read_bytes()
        assert installation.restore() is None
        assert list((state_dir / "mcp-journal").iterdir()) == []

    def test_a_journal_directory_others_can_write_is_refused(
        self, tmp_path: Path, state_dir: Path
    ) -> None:
        (state_dir / "mcp-journal").mkdir(mode=0o700)
        (state_dir / "mcp-journal").chmod(0o777)
        path = tmp_path / ".mcp.json"
        with pytest.raises(McpConfigError, match="not private"):
            install(path)
        assert not path.exists()
