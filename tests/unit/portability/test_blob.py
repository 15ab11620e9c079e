"""The conversation blob: what goes in comes out, and any damage is refused whole."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.errors import ConversationImportError, InvalidRequestError
from agentshim.core.portability import (
    MAX_STATE_BYTES,
    ConversationState,
    StateFile,
    pack_state,
    unpack_state,
    versions_compatible,
)

_SEGMENT = st.text(
    alphabet=st.characters(whitelist_categories=("Ll", "Lu", "Nd"), whitelist_characters="-_."),
    min_size=1,
    max_size=12,
).filter(lambda part: part not in (".", ".."))
_PATHS = st.lists(_SEGMENT, min_size=1, max_size=4).map("/".join)
_FILES = st.dictionaries(_PATHS, st.binary(max_size=300), max_size=5)


def _state(files: dict[str, bytes], cwd: str | None = "/w/alpha") -> ConversationState:
    return ConversationState(
        "claude", "2.1.3", "sess-1", cwd, tuple(StateFile(p, d) for p, d in files.items())
    )


@given(_FILES, st.one_of(st.none(), st.text(max_size=40)))
def test_a_packed_state_unpacks_equal(files: dict[str, bytes], cwd: str | None) -> None:
    state = _state(files, cwd)
    assert unpack_state(pack_state(state), "claude") == state


@given(_FILES, st.data())
def test_any_changed_byte_is_refused(files: dict[str, bytes], data: st.DataObject) -> None:
    blob = bytearray(pack_state(_state(files)))
    index = data.draw(st.integers(0, len(blob) - 1))
    blob[index] ^= data.draw(st.integers(1, 255))
    with pytest.raises(ConversationImportError):
        unpack_state(bytes(blob), "claude")


@given(_FILES, st.data())
def test_a_truncated_blob_is_refused(files: dict[str, bytes], data: st.DataObject) -> None:
    blob = pack_state(_state(files))
    cut = data.draw(st.integers(0, len(blob) - 1))
    with pytest.raises(ConversationImportError):
        unpack_state(blob[:cut], "claude")


def test_another_providers_blob_is_refused_naming_it() -> None:
    blob = pack_state(_state({"a": b"x"}))
    with pytest.raises(ConversationImportError, match="'claude' conversation"):
        unpack_state(blob, "codex")


def test_credentials_and_oversized_states_are_never_packed() -> None:
    with pytest.raises(InvalidRequestError, match="credentials"):
        pack_state(
            _state({".claude/.credentials.json": b"{}"}), credentials=(".claude/.credentials.json",)
        )
    big = ConversationState(
        "claude", None, "s", None, (StateFile("big", b"\0" * (MAX_STATE_BYTES + 1)),)
    )
    with pytest.raises(InvalidRequestError, match="not exported"):
        pack_state(big)


@pytest.mark.parametrize("path", ["", "/abs", "a/../b", "a//b", "./a", "a\\b"])
def test_state_file_paths_stay_inside_home(path: str) -> None:
    with pytest.raises(InvalidRequestError):
        StateFile(path, b"")


@pytest.mark.parametrize(
    ("saved", "local", "compatible"),
    [
        ("2.1.3", "2.1.3", True),
        ("2.1.3", "2.4.0", True),
        ("2.4.0", "2.1.3", False),
        ("1.9.9", "2.0.0", False),
        ("0.73.1", "0.73.1", True),
        (None, None, True),
        (None, "1.0.0", False),
        ("weird", "weird", True),
    ],
)
def test_versions_compatible(saved: str | None, local: str | None, compatible: bool) -> None:
    assert versions_compatible(saved, local) is compatible
