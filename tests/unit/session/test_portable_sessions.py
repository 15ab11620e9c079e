"""Sessions that move a conversation between hosts through a store that keeps blobs."""

from __future__ import annotations

from agentshim.core.clock import SystemClock
from agentshim.core.portability import unpack_state
from agentshim.core.session_policy import Continuity
from agentshim.session import Session
from agentshim.state.checkpoints import InMemoryCheckpointStore
from agentshim.state.leases import InMemoryLeases
from agentshim.testing.checkpoints import FakeCheckpointStore
from agentshim.testing.conversation import FakeOutcome, FakeTransport
from agentshim.testing.portability import FakePorter

from .helpers import spec

KEY = "user-1"


def _session(
    transport: FakeTransport, store: object, porter: FakePorter, **kwargs: object
) -> Session:
    return Session(
        transport,
        spec(),
        clock=SystemClock(),
        checkpoints=store,  # type: ignore[arg-type]
        checkpoint_key=KEY,
        porter=porter,
        **kwargs,  # type: ignore[arg-type]
    )


class OneHost:
    """A session playing ``script``, its porter, and its store fenced by leases of its own."""

    def __init__(self, *script: FakeOutcome) -> None:
        self.leases = InMemoryLeases()
        self.store = FakeCheckpointStore(leases=self.leases)
        self.porter = FakePorter()
        self.session = _session(FakeTransport(script), self.store, self.porter, leases=self.leases)


class Hosts:
    """Two hosts (each a FakeTransport and a FakePorter) sharing one store and its leases."""

    def __init__(self) -> None:
        self.leases = InMemoryLeases()
        self.store = InMemoryCheckpointStore(leases=self.leases)
        self.a_transport, self.b_transport = FakeTransport(), FakeTransport()
        self.a, self.b = FakePorter(), FakePorter()
        self.on_a = _session(self.a_transport, self.store, self.a, leases=self.leases)
        self.on_b = _session(self.b_transport, self.store, self.b, leases=self.leases)


def test_a_turn_saves_its_conversation_and_the_other_host_imports_it_and_resumes() -> None:
    hosts = Hosts()
    hosts.a_transport.extend([FakeOutcome.success("one", session_id="conv-1")])
    hosts.a.conversations["conv-1"] = b"turn 1 transcript"
    first = hosts.on_a.turn("remember PAPAYA")
    assert first.continuity is Continuity.CONTINUED
    blob = hosts.store.load_blob(KEY)
    assert blob is not None
    assert unpack_state(blob, "claude").files[0].data == b"turn 1 transcript"

    hosts.b_transport.extend([FakeOutcome.success("two")])
    second = hosts.on_b.turn("what word?")
    assert second.continuity is Continuity.IMPORTED
    assert hosts.b.conversations == {"conv-1": b"turn 1 transcript"}
    assert hosts.b_transport.calls[0].session_id == "conv-1", "host B did not resume"
    saved = hosts.store.load(KEY)
    assert saved is not None
    assert (saved.session_id, saved.turns) == ("conv-1", 2)


def test_the_host_that_saved_the_files_does_not_import_them_again() -> None:
    hosts = Hosts()
    hosts.a_transport.extend(
        [FakeOutcome.success("one", session_id="conv-1"), FakeOutcome.success("two")]
    )
    hosts.a.conversations["conv-1"] = b"transcript"
    hosts.on_a.turn("one")
    again = hosts.on_a.turn("two")
    assert again.continuity is Continuity.CONTINUED
    assert hosts.a.imports == 0


def test_a_host_coming_back_closes_its_stale_conversation_and_imports_the_newer_files() -> None:
    hosts = Hosts()
    hosts.a_transport.extend(
        [FakeOutcome.success("one", session_id="conv-1"), FakeOutcome.success("three")]
    )
    hosts.b_transport.extend([FakeOutcome.success("two")])
    hosts.a.conversations["conv-1"] = b"after turn 1"
    hosts.on_a.turn("one")
    hosts.on_b.turn("two")
    hosts.b.conversations["conv-1"] = b"after turn 2"  # what B's CLI wrote; saved at B's end
    hosts.b_transport.extend([FakeOutcome.success("two again")])
    hosts.on_b.turn("two again")
    assert len(hosts.a_transport.opened) == 1
    back = hosts.on_a.turn("three")
    assert back.continuity is Continuity.IMPORTED
    assert hosts.a.conversations["conv-1"] == b"after turn 2"
    # The conversation A kept open knew only turn 1: it was closed and reopened by id.
    assert len(hosts.a_transport.opened) == 2
    assert hosts.a_transport.opened[1].resume_session_id == "conv-1"


def test_an_import_that_fails_is_logged_and_the_turn_runs() -> None:
    hosts = Hosts()
    lines: list[str] = []
    hosts.on_b = _session(
        hosts.b_transport, hosts.store, hosts.b, leases=hosts.leases, log=lines.append
    )
    hosts.a_transport.extend([FakeOutcome.success("one", session_id="conv-1")])
    hosts.a.conversations["conv-1"] = b"transcript"
    hosts.on_a.turn("one")
    hosts.b.refuse = True
    hosts.b_transport.extend([FakeOutcome.success("two")])
    turn = hosts.on_b.turn("two")
    assert turn.continuity is Continuity.CONTINUED
    assert any("could not import the saved conversation" in line for line in lines)


def test_closing_saves_the_conversation_under_a_lease() -> None:
    host = OneHost(FakeOutcome.success("one", session_id="conv-1"))
    host.porter.conversations["conv-1"] = b"turn 1"
    host.session.turn("one")
    host.porter.conversations["conv-1"] = b"written as the CLI exited"
    host.session.close()
    assert (
        unpack_state(host.store.blobs[KEY], "claude").files[0].data == b"written as the CLI exited"
    )
    assert len(host.leases) == 0


def test_closing_on_a_host_another_host_has_moved_on_from_saves_nothing() -> None:
    hosts = Hosts()
    hosts.a_transport.extend([FakeOutcome.success("one", session_id="conv-1")])
    hosts.b_transport.extend([FakeOutcome.success("two")])
    hosts.a.conversations["conv-1"] = b"turn 1"
    hosts.on_a.turn("one")
    hosts.on_b.turn("two")
    hosts.b.conversations["conv-1"] = b"turn 1 and 2"
    hosts.on_b.close()
    hosts.on_a.close()  # A's files still hold turn 1 only
    blob = hosts.store.load_blob(KEY)
    assert blob is not None
    assert unpack_state(blob, "claude").files[0].data == b"turn 1 and 2"


def test_without_a_store_that_keeps_blobs_nothing_moves() -> None:
    class CheckpointsOnly:
        def __init__(self) -> None:
            self.inner = InMemoryCheckpointStore()

        def load(self, key: str):  # type: ignore[no-untyped-def]
            return self.inner.load(key)

        def save(self, key: str, checkpoint) -> None:  # type: ignore[no-untyped-def]
            self.inner.save(key, checkpoint)

        def clear(self, key: str) -> None:
            self.inner.clear(key)

    porter = FakePorter()
    porter.conversations["conv-1"] = b"x"
    transport = FakeTransport([FakeOutcome.success("one", session_id="conv-1")])
    _session(transport, CheckpointsOnly(), porter).turn("one")
    assert porter.exports == 0


def test_a_session_without_leases_still_moves_its_conversation() -> None:
    store = InMemoryCheckpointStore()
    a, b = FakePorter(), FakePorter()
    a.conversations["conv-1"] = b"t1"
    _session(FakeTransport([FakeOutcome.success("1", session_id="conv-1")]), store, a).turn("1")
    moved = _session(FakeTransport([FakeOutcome.success("2")]), store, b).turn("2")
    assert moved.continuity is Continuity.IMPORTED
    assert b.conversations == {"conv-1": b"t1"}


def test_files_a_cli_writes_only_as_it_exits_are_saved_at_close() -> None:
    host = OneHost(FakeOutcome.success("one", session_id="conv-1"))
    host.session.turn("one")
    assert KEY not in host.store.blobs  # nothing on disk yet when the turn ended
    host.porter.conversations["conv-1"] = b"flushed on exit"
    host.session.close()
    assert unpack_state(host.store.blobs[KEY], "claude").files[0].data == b"flushed on exit"
