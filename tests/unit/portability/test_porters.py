"""Each provider's porter on the files its real CLI wrote (tests/fixtures/portability).

The files were recorded with the pinned CLIs against the scripted model server (turn 1 in
``/tmp/agentshim-port/<provider>/A/ws-alpha``, see ``scripts/record_portability.py``). A
porter exports them from one HOME and imports them into another HOME for another workspace
path, through a real HostCommandExecutor (``sh``, ``tar``, ``base64``); a stand-in CLI script
answers ``--version`` (and opencode's ``export``/``import``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from agentshim.core.errors import ConversationImportError
from agentshim.core.portability import ConversationPorter, unpack_state
from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.state_files import StateFiles
from agentshim.providers import get_plugin
from agentshim.providers.portability import porter_for

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "portability"
A1 = "/tmp/agentshim-port/{provider}/A/ws-alpha"
B1 = "/srv/other host/ws-beta"
SESSIONS = {
    "claude": "c8628327-3ccc-48a0-8c29-c46943650b97",
    "codex": "01a23437-2d43-7541-af55-64d7ded1c291",
    "gemini": "e8a915a0-e87c-40d0-bf93-cf75b15dd917",
    "pi": "01a23437-50ee-7706-901d-d75584fd2938",
    "copilot": "59c625e9-f43c-4c49-b24f-e0e958111204",
    "opencode": "ses_dcbc88009ffexToDdY5DAs9Q0z",
}
VERSIONS = {
    "claude": "2.1.332 (Claude Code)",
    "codex": "codex-cli 0.171.0",
    "gemini": "0.61.0",
    "pi": "0.73.1",
    "copilot": "GitHub Copilot CLI 1.0.102.",
    "opencode": "1.18.33",
}
OPENCODE = r"""
case "$1" in
  --version) echo "$VERSION" ;;
  export) echo "Exporting session: $2" >&2; cat "$EXPORT" ;;
  import) cp "$2" "$HOME/imported.json"; pwd > "$HOME/imported.cwd" ;;
esac
"""


class Host:
    """A HOME, a stand-in CLI binary and a porter on them."""

    def __init__(self, root: Path, provider: str, version: str) -> None:
        self.home = root / "home"
        self.home.mkdir(parents=True)
        self.binary = root / "cli"
        script = OPENCODE if provider == "opencode" else 'echo "$VERSION"\n'
        self.binary.write_text("#!/bin/sh\n" + script)
        self.binary.chmod(0o755)
        env = {
            "HOME": str(self.home),
            "PATH": os.environ["PATH"],
            "VERSION": version,
            "EXPORT": str(FIXTURES / "opencode" / "export.json"),
        }
        files = StateFiles(HostCommandExecutor(), env, timeout=60)
        porter = porter_for(get_plugin(provider).profile, files, str(self.binary))
        assert porter is not None
        self.porter: ConversationPorter = porter

    def files(self) -> dict[str, bytes]:
        return {
            str(path.relative_to(self.home)): path.read_bytes()
            for path in sorted(self.home.rglob("*"))
            if path.is_file()
        }


def _host_a(tmp_path: Path, provider: str) -> Host:
    host = Host(tmp_path / "A", provider, VERSIONS[provider])
    if provider != "opencode":
        shutil.copytree(FIXTURES / provider / "home", host.home, dirs_exist_ok=True)
    return host


def _workspaces(tmp_path: Path, provider: str) -> tuple[str, str]:
    """Turn 1's and turn 2's workspace paths: real directories where the CLI runs in them."""
    if provider != "opencode":
        return A1.format(provider=provider), B1
    a, b = tmp_path / "ws-alpha", tmp_path / "other host" / "ws-beta"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    return str(a), str(b)


def _moved(tmp_path: Path, provider: str) -> tuple[Host, Host, bytes]:
    a_cwd, b_cwd = _workspaces(tmp_path, provider)
    a = _host_a(tmp_path, provider)
    blob = a.porter.export_blob(SESSIONS[provider], a_cwd)
    assert blob is not None
    b = Host(tmp_path / "B", provider, VERSIONS[provider])
    assert b.porter.import_blob(blob, b_cwd) == SESSIONS[provider]
    return a, b, blob


def _fixture(provider: str, path: str) -> bytes:
    return (FIXTURES / provider / "home" / path).read_bytes()


def test_claude_moves_the_transcript_into_the_new_workspaces_project_directory(
    tmp_path: Path,
) -> None:
    sid = SESSIONS["claude"]
    _, b, _ = _moved(tmp_path, "claude")
    old = f".claude/projects/-tmp-agentshim-port-claude-A-ws-alpha/{sid}.jsonl"
    assert b.files() == {
        f".claude/projects/-srv-other-host-ws-beta/{sid}.jsonl": _fixture("claude", old)
    }


def test_codex_keeps_the_rollout_where_it_was(tmp_path: Path) -> None:
    a, b, _ = _moved(tmp_path, "codex")
    assert b.files() == a.files()


def test_pi_moves_the_session_and_rewrites_its_header_cwd(tmp_path: Path) -> None:
    a, b, _ = _moved(tmp_path, "pi")
    ((old_path, old),) = a.files().items()
    ((new_path, new),) = b.files().items()
    name = old_path.rsplit("/", 1)[1]
    assert new_path == f".pi/agent/sessions/--srv-other host-ws-beta--/{name}"
    old_header, _, old_rest = old.partition(b"\n")
    new_header, _, new_rest = new.partition(b"\n")
    assert new_rest == old_rest
    assert json.loads(new_header) == {**json.loads(old_header), "cwd": B1}


def test_gemini_files_the_chat_under_the_project_id_of_the_new_workspace(
    tmp_path: Path,
) -> None:
    a, b, _ = _moved(tmp_path, "gemini")
    chat = ".gemini/tmp/ws-alpha/chats/session-2026-12-02T00-46-e8a915a0.jsonl"
    files = b.files()
    moved = files[".gemini/tmp/ws-beta/chats/session-2026-12-02T00-46-e8a915a0.jsonl"]
    old_header, _, old_rest = a.files()[chat].partition(b"\n")
    new_header, _, new_rest = moved.partition(b"\n")
    assert new_rest == old_rest
    assert json.loads(new_header) == {
        **json.loads(old_header),
        "projectHash": hashlib.sha256(B1.encode()).hexdigest(),
    }
    assert files[".gemini/tmp/ws-beta/.project_root"] == B1.encode()
    assert files[".gemini/history/ws-beta/.project_root"] == B1.encode()
    assert json.loads(files[".gemini/projects.json"]) == {"projects": {B1: "ws-beta"}}


def test_gemini_keeps_the_hosts_other_projects_and_avoids_their_ids(tmp_path: Path) -> None:
    a = _host_a(tmp_path, "gemini")
    blob = a.porter.export_blob(SESSIONS["gemini"], A1.format(provider="gemini"))
    assert blob is not None
    b = Host(tmp_path / "B", "gemini", VERSIONS["gemini"])
    (b.home / ".gemini").mkdir()
    (b.home / ".gemini" / "projects.json").write_text(
        json.dumps({"projects": {"/elsewhere/ws-beta": "ws-beta"}})
    )
    b.porter.import_blob(blob, B1)
    projects = json.loads((b.home / ".gemini" / "projects.json").read_text())["projects"]
    assert projects == {"/elsewhere/ws-beta": "ws-beta", B1: "ws-beta-1"}
    assert (b.home / ".gemini/tmp/ws-beta-1/.project_root").read_text() == B1


def test_copilot_rewrites_the_workspace_cwd_and_leaves_the_rest(tmp_path: Path) -> None:
    a, b, _ = _moved(tmp_path, "copilot")
    old, new = a.files(), b.files()
    assert set(new) == set(old)
    for path, data in new.items():
        if path.endswith("workspace.yaml"):
            assert f'cwd: "{B1}"\n'.encode() in data
            assert (
                data.replace(f'"{B1}"'.encode(), A1.format(provider="copilot").encode())
                == (old[path])
            )
        else:
            assert data == old[path]


def test_opencode_travels_through_its_own_export_and_import(tmp_path: Path) -> None:
    _, b, blob = _moved(tmp_path, "opencode")
    exported = (FIXTURES / "opencode" / "export.json").read_bytes()
    (file,) = unpack_state(blob, "opencode").files
    assert file.data.strip() == exported.strip()
    assert (b.home / "imported.json").read_bytes().strip() == exported.strip()
    assert (b.home / "imported.cwd").read_text().strip() == str(tmp_path / "other host" / "ws-beta")
    assert set(b.files()) == {"imported.json", "imported.cwd"}, "the staged export stayed"
    assert not (b.home / ".agentshim-import").exists()


@pytest.mark.parametrize("provider", sorted(SESSIONS))
def test_a_conversation_this_host_lacks_exports_as_none(tmp_path: Path, provider: str) -> None:
    host = Host(tmp_path / "A", provider, VERSIONS[provider])
    if provider == "opencode":
        (host.binary).write_text("#!/bin/sh\necho 'Error: Session not found' >&2; exit 1\n")
    assert host.porter.export_blob("no-such-session", str(tmp_path)) is None


@pytest.mark.parametrize("provider", sorted(SESSIONS))
def test_a_blob_from_an_incompatible_cli_writes_nothing(tmp_path: Path, provider: str) -> None:
    a_cwd, b_cwd = _workspaces(tmp_path, provider)
    a = _host_a(tmp_path, provider)
    blob = a.porter.export_blob(SESSIONS[provider], a_cwd)
    assert blob is not None
    b = Host(tmp_path / "B", provider, "0.0.1")
    with pytest.raises(ConversationImportError, match="cannot read it"):
        b.porter.import_blob(blob, b_cwd)
    assert b.files() == {}
    damaged = blob[:-3] + bytes([blob[-3] ^ 1]) + blob[-2:]
    newer = Host(tmp_path / "C", provider, VERSIONS[provider])
    with pytest.raises(ConversationImportError):
        newer.porter.import_blob(damaged, b_cwd)
    assert newer.files() == {}


@pytest.mark.parametrize("provider", sorted(set(SESSIONS) - {"opencode"}))
def test_credentials_never_travel(tmp_path: Path, provider: str) -> None:
    a = _host_a(tmp_path, provider)
    profile = get_plugin(provider).profile
    for credential in profile.credential_files:
        (a.home / credential).parent.mkdir(parents=True, exist_ok=True)
        (a.home / credential).write_text('{"token": "tok-7f3a9c-credential"}')
    blob = a.porter.export_blob(SESSIONS[provider], A1.format(provider=provider))
    assert blob is not None
    assert all(b"tok-7f3a9c" not in f.data for f in unpack_state(blob, provider).files)
    assert not {f.path for f in unpack_state(blob, provider).files} & set(profile.credential_files)


def test_a_confined_cli_is_exported_and_imported_inside_its_confinement(tmp_path: Path) -> None:
    """Every read and write is a command wrapped by the confinement, with its env's HOME."""
    from agentshim.execution.confinement import confine
    from agentshim.testing import FakeConfinement

    a = _host_a(tmp_path, "pi")  # the files, where the "container" has its HOME
    inside = {"HOME": str(a.home), "PATH": os.environ["PATH"], "VERSION": VERSIONS["pi"]}
    confinement = FakeConfinement(prefix=("env",), env=inside)
    executor = confine(HostCommandExecutor(), confinement, host_env={"PATH": os.environ["PATH"]})
    porter = porter_for(
        get_plugin("pi").profile, StateFiles(executor, confinement.env), str(a.binary)
    )
    assert porter is not None
    blob = porter.export_blob(SESSIONS["pi"], A1.format(provider="pi"))
    assert blob is not None
    porter.import_blob(blob, "/work/other")
    assert [call.argv[0] for call in confinement.wraps].count("sh") >= 2
    assert any(path.startswith(".pi/agent/sessions/--work-other--/") for path in a.files())
