"""opencode's conversations: rows in its one SQLite database, moved with its own commands.

Every opencode session lives in ``~/.local/share/opencode/opencode.db``, which holds every
other session too (and copying it raw hung the CLI), so a conversation travels as the JSON of
``opencode export <id>`` and arrives through ``opencode import <file>``, run in the new
workspace. The import keeps the session id; opencode tells the model the new workspace.
"""

from __future__ import annotations

import json
import secrets

from agentshim.core.errors import ConversationImportError, StoreError
from agentshim.core.portability import ConversationState, StateFile
from agentshim.providers.portability import FilePorter

__all__ = ["Porter"]

#: The one "file" of an opencode state: the export's JSON (never written as such).
EXPORT_PATH = "opencode-export.json"


class Porter(FilePorter):
    """Exports through ``opencode export``; imports through ``opencode import``."""

    def collect(self, session_id: str, cwd: str | None) -> tuple[StateFile, ...]:
        """The session's export, or nothing when opencode does not know it here."""
        status, lines, _ = self.files.run([self.binary, "export", session_id], cwd=cwd)
        text = "".join(lines)
        start = text.find("{")
        if status != 0 or start < 0:
            return ()
        try:
            json.loads(text[start:])
        except ValueError:
            return ()
        return (StateFile(EXPORT_PATH, text[start:].encode("utf-8")),)

    def write(self, state: ConversationState, cwd: str | None) -> None:
        """Run ``opencode import`` on the export, from a file written under HOME and removed after."""
        exported = [file for file in state.files if file.path == EXPORT_PATH]
        if len(exported) != 1:
            raise ConversationImportError("opencode", "the blob holds no opencode export")
        staged = f".agentshim-import/opencode-{secrets.token_hex(6)}.json"
        self.files.write([StateFile(staged, exported[0].data)])
        path = f"{self.files.home}/{staged}"
        try:
            status, _, stderr = self.files.run([self.binary, "import", path], cwd=cwd)
        finally:
            # The staged file and its directory (when nothing else is in it) go.
            self.files.run(
                ["sh", "-c", 'rm -f "$1"; rmdir "${1%/*}" 2>/dev/null; true', "sh", path]
            )
        if status != 0:
            raise StoreError(
                path,
                stderr.strip()[-300:],
                f"opencode import failed ({status}): {stderr.strip()[-300:]}",
            )
