"""Checkpoint stores: the shared contract, and what only a FileCheckpointStore has to do."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentshim.core.errors import InvalidRequestError
from agentshim.core.usage import ProviderUsage, TokenUsage
from agentshim.session import Session
from agentshim.state.checkpoints import (
    Checkpoint,
    CheckpointStore,
    FileCheckpointStore,
    InMemoryCheckpointStore,
    validate_checkpoint_key,
)
from agentshim.state.leases import ConversationLeases, InMemoryLeases
from agentshim.state.sqlite_store import SqliteStore
from agentshim.testing.checkpoints import FakeCheckpointStore
from agentshim.testing.clock import FakeClock
from agentshim.testing.contracts import CheckpointStoreContract
from agentshim.testing.conversation import FakeOutcome, FakeTransport

from .helpers import spec

REPO = Path(__file__).resolve().parents[3]


class FencedByInMemoryLeases(CheckpointStoreContract):
    """The contract for a store built by ``store_with``, fenced against InMemoryLeases."""

    def store_with(self, leases: InMemoryLeases | None) -> CheckpointStore:
        raise NotImplementedError

    def make_store(self) -> CheckpointStore:
        return self.store_with(None)

    def make_fenced_store(self) -> tuple[CheckpointStore, ConversationLeases]:
        leases = InMemoryLeases()
        return self.store_with(leases), leases


class TestInMemoryCheckpointStore(FencedByInMemoryLeases):
    def store_with(self, leases: InMemoryLeases | None) -> CheckpointStore:
        return InMemoryCheckpointStore(leases=leases)


class TestFileCheckpointStore(FencedByInMemoryLeases):
    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path / "checkpoints"

    def store_with(self, leases: InMemoryLeases | None) -> CheckpointStore:
        return FileCheckpointStore(self.directory, log=self.log_line, leases=leases)

    def log_line(self, line: str) -> None:
        raise AssertionError(f"unexpected log line: {line}")


class TestFakeCheckpointStore(FencedByInMemoryLeases):
    def store_with(self, leases: InMemoryLeases | None) -> CheckpointStore:
        return FakeCheckpointStore(leases=leases)


WRITER = """
from agentshim.state.checkpoints import FileCheckpointStore
from agentshim.core.usage import TokenUsage
from agentshim.session import Session
from agentshim.testing.conversation import FakeOutcome, FakeTransport
from tests.unit.session.helpers import spec
import sys

transport = FakeTransport([FakeOutcome.success(
    "hi", session_id="conv-77", usage=TokenUsage(input_tokens=40, output_tokens=4))])
session = Session(transport, spec(), checkpoints=FileCheckpointStore(sys.argv[1]),
                  checkpoint_key="user-9")
session.turn("remember this")
session.close()
"""

READER = """
import json, sys
from agentshim.state.checkpoints import FileCheckpointStore
from agentshim.session import Session
from agentshim.testing.conversation import FakeOutcome, FakeTransport
from tests.unit.session.helpers import spec

transport = FakeTransport([FakeOutcome.success("welcome back")])
session = Session(transport, spec(), checkpoints=FileCheckpointStore(sys.argv[1]),
                  checkpoint_key="user-9")
held = session.session_id
turn = session.turn("what did I say?")
opened = transport.opened[0]
print(json.dumps({
    "held": held,
    "resume_session_id": opened.resume_session_id,
    "baseline_input": opened.previous_usage.tokens.input_tokens,
    "resumed": turn.result.resumed,
    "conversation": turn.session_id,
}))
"""


def run_python(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_conversation_survives_a_process_restart(tmp_path: Path) -> None:
    run_python(WRITER, str(tmp_path))
    report = json.loads(run_python(READER, str(tmp_path)))
    assert report == {
        "held": "conv-77",
        "resume_session_id": "conv-77",
        "baseline_input": 40,
        "resumed": True,
        "conversation": "conv-77",
    }


def test_the_file_is_one_json_document_per_key(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    usage = ProviderUsage(tokens=TokenUsage(input_tokens=3), provider="fake")
    store.save("user-1", Checkpoint("conv-1", usage, turns=2))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["user-1.json"]
    data = json.loads((tmp_path / "user-1.json").read_text())
    assert data["session_id"] == "conv-1"
    assert data["turns"] == 2
    assert data["usage"]["tokens"]["input_tokens"] == 3


def test_a_file_written_before_the_rename_to_session_id_still_loads(tmp_path: Path) -> None:
    (tmp_path / "user-1.json").write_text(
        json.dumps({"version": 1, "conversation_id": "conv-old", "usage": None, "turns": 4})
    )
    store = FileCheckpointStore(tmp_path)
    assert store.load("user-1") == Checkpoint("conv-old", None, turns=4)
    store.save("user-1", Checkpoint("conv-old", None, turns=5))
    data = json.loads((tmp_path / "user-1.json").read_text())
    assert (data["version"], data["session_id"], "conversation_id" in data) == (
        2,
        "conv-old",
        False,
    )


def test_a_file_without_a_sequence_is_unordered_and_the_next_save_orders_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "user-1.json").write_text(
        json.dumps({"version": 2, "session_id": "conv-1", "usage": None, "turns": 4})
    )
    store = FileCheckpointStore(tmp_path)
    assert store.load("user-1") == Checkpoint("conv-1", turns=4, sequence=0)
    session = Session(
        FakeTransport([FakeOutcome.success()]),
        spec(),
        clock=FakeClock(),
        checkpoints=store,
        checkpoint_key="user-1",
    )
    session.turn("go")
    data = json.loads((tmp_path / "user-1.json").read_text())
    assert (data["session_id"], data["turns"], data["sequence"]) == ("conv-1", 5, 1)


def test_a_version_1_file_naming_its_id_session_id_is_corrupt(tmp_path: Path) -> None:
    (tmp_path / "k.json").write_text(json.dumps({"version": 1, "session_id": "conv-1"}))
    notes: list[str] = []
    assert FileCheckpointStore(tmp_path, log=notes.append).load("k") is None
    assert "conversation_id" in notes[0]


def test_save_replaces_the_file_atomically_and_leaves_no_temporary_files(
    tmp_path: Path,
) -> None:
    store = FileCheckpointStore(tmp_path)
    for n in range(20):
        store.save("user-1", Checkpoint(f"conv-{n}"))
    assert [p.name for p in tmp_path.iterdir()] == ["user-1.json"]
    assert store.load("user-1") == Checkpoint("conv-19")


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[]",
        '{"version": 2}',
        '{"version": 99, "session_id": "conv-1"}',
        '{"version": 2, "session_id": "../../etc"}',
        '{"version": 2, "session_id": "conv-1", "turns": -3}',
        '{"version": 2, "session_id": "conv-1", "usage": "lots"}',
        '{"version": 2, "session_id": "conv-1", "usage": {"tokens": {"input_tokens": "many"}}}',
        '{"version": 2, "session_id": "conv-1", "usage": {"cost_source": "free"}}',
        '{"version": 2, "session_id": "conv-1", "usage": {"tokens": {"input_tokens": 1e999}}}',
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=[
        "not-json",
        "not-object",
        "no-id",
        "unknown-version",
        "unsafe-id",
        "bad-turns",
        "bad-usage",
        "bad-tokens",
        "bad-cost-source",
        "infinite-count",
        "too-deep",
    ],
)
def test_a_corrupt_file_counts_as_no_checkpoint_and_is_logged(tmp_path: Path, content: str) -> None:
    (tmp_path / "user-1.json").write_text(content)
    log: list[str] = []
    store = FileCheckpointStore(tmp_path, log=log.append)
    assert store.load("user-1") is None
    assert len(log) == 1
    assert "user-1.json" in log[0]
    assert "corrupt" in log[0]


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        '{"version": 2}',
        '{"version": 2, "session_id": "conv-1", "usage": {"tokens": {"input_tokens": 1e999}}}',
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=["not-json", "no-id", "infinite-count", "too-deep"],
)
def test_a_corrupt_row_in_sqlite_counts_as_no_checkpoint_and_is_logged(
    tmp_path: Path, content: str
) -> None:
    path = tmp_path / "state.db"
    log: list[str] = []
    with SqliteStore(path, log=log.append) as store:
        store.save("user-1", Checkpoint("conv-1"))
    with sqlite3.connect(path) as database:  # damaged behind the store's back
        database.execute("UPDATE checkpoints SET data = ? WHERE key = ?", (content, "user-1"))
    database.close()
    with SqliteStore(path, log=log.append) as store:
        assert store.load("user-1") is None
    assert len(log) == 1
    assert "'user-1'" in log[0]
    assert "corrupt" in log[0]


def test_an_unreadable_file_counts_as_no_checkpoint_and_is_logged(tmp_path: Path) -> None:
    (tmp_path / "user-1.json").mkdir()
    log: list[str] = []
    assert FileCheckpointStore(tmp_path, log=log.append).load("user-1") is None
    assert "unreadable" in log[0]


def test_a_session_over_a_corrupt_checkpoint_starts_fresh(tmp_path: Path) -> None:
    (tmp_path / "user-1.json").write_bytes(b"\xff\xfe garbage")
    log: list[str] = []
    transport = FakeTransport([FakeOutcome.success()])
    session = Session(
        transport,
        spec(),
        clock=FakeClock(),
        checkpoints=FileCheckpointStore(tmp_path, log=log.append),
        checkpoint_key="user-1",
    )
    assert session.session_id is None
    session.turn("go")
    assert transport.opened[0].resume_session_id is None
    assert log
    saved = FileCheckpointStore(tmp_path).load("user-1")
    assert saved is not None
    assert (saved.session_id, saved.turns) == ("conv-1", 1)


def test_without_a_log_a_corrupt_file_raises_a_runtime_warning(tmp_path: Path) -> None:
    (tmp_path / "user-1.json").write_text("{")
    with pytest.warns(RuntimeWarning, match="corrupt"):
        assert FileCheckpointStore(tmp_path).load("user-1") is None


@pytest.mark.parametrize(
    "key", ["../outside", "..", ".", "a/b", "/etc/passwd", "a\\b", ".hidden", "", "é"]
)
def test_keys_cannot_leave_the_directory(tmp_path: Path, key: str) -> None:
    store = FileCheckpointStore(tmp_path / "inside")
    with pytest.raises(InvalidRequestError, match="checkpoint key"):
        store.save(key, Checkpoint("conv-1"))
    with pytest.raises(ValueError, match="checkpoint key"):
        store.path_for(key)
    assert not (tmp_path / "outside.json").exists()
    assert list(tmp_path.iterdir()) == []


def test_safe_keys_map_to_a_file_inside_the_directory(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    for key in ("user-1", "a.b_c-D", "x" * 200, "x..y"):
        assert validate_checkpoint_key(key) == key
        assert store.path_for(key).parent == tmp_path


def test_a_checkpoint_refuses_an_unsafe_session_id() -> None:
    with pytest.raises(InvalidRequestError, match="session id") as caught:
        Checkpoint("id with spaces")
    assert caught.value.field == "Checkpoint.session_id"


@pytest.mark.parametrize(
    "data",
    [
        {"version": 3, "session_id": "c"},
        {"version": 2},
        {"version": 2, "session_id": "c", "usage": []},
        {"version": 2, "session_id": "c", "usage": {"tokens": {"input_tokens": "many"}}},
        {"version": 2, "session_id": "c", "usage": {"cost_source": "guessed"}},
        {"version": 2, "session_id": "c", "turns": -1},
        {"version": 2, "session_id": "c", "sequence": -1},
        {"version": 2, "session_id": "c", "sequence": True},
        ["not", "a", "mapping"],
    ],
)
def test_data_that_is_not_a_checkpoint_is_refused(data: object) -> None:
    with pytest.raises(InvalidRequestError):
        Checkpoint.from_dict(data)  # type: ignore[arg-type]
