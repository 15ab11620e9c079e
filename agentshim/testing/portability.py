"""FakePorter: a ConversationPorter over an in-memory "host", for tests of moving conversations."""

from __future__ import annotations

import threading

from agentshim.core.errors import ConversationImportError
from agentshim.core.portability import ConversationState, StateFile, pack_state, unpack_state

__all__ = ["FakePorter"]


class FakePorter:
    """One host's CLI files, as a map of session id to transcript bytes.

    ``export_blob`` packs a known conversation (None for an unknown one); ``import_blob``
    unpacks one into ``conversations`` (ConversationImportError for a damaged blob, or every
    import while ``refuse`` is set). ``exports`` and ``imports`` count the calls.
    """

    def __init__(self, provider: str = "claude", *, cli_version: str = "1.0.0") -> None:
        self.provider = provider
        self.cli_version = cli_version
        self.conversations: dict[str, bytes] = {}
        self.refuse = False
        self.exports = 0
        self.imports = 0
        self._lock = threading.Lock()

    def export_blob(self, session_id: str, cwd: str | None) -> bytes | None:
        """The conversation's transcript as a blob, or None when this host has none."""
        with self._lock:
            self.exports += 1
            data = self.conversations.get(session_id)
        if data is None:
            return None
        files = (StateFile(f"sessions/{session_id}.jsonl", data),)
        return pack_state(
            ConversationState(self.provider, self.cli_version, session_id, cwd, files)
        )

    def import_blob(self, blob: bytes, cwd: str | None) -> str:
        """Unpack ``blob`` into this host's conversations; return its session id."""
        with self._lock:
            self.imports += 1
            if self.refuse:
                raise ConversationImportError(self.provider, "refused by the test")
        state = unpack_state(blob, self.provider)
        with self._lock:
            self.conversations[state.session_id] = state.files[0].data
        return state.session_id
