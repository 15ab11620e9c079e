"""Codex's conversation files: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

The rollout file is the whole conversation; Codex rebuilds its SQLite indexes
(``state_*.sqlite``, ``thread_history_*.sqlite``) from the rollouts it finds, so they do not
travel, and nothing is rewritten: Codex tells the model the new working directory itself.
"""

from __future__ import annotations

from agentshim.core.portability import StateFile
from agentshim.providers.portability import FilePorter

__all__ = ["Porter"]


class Porter(FilePorter):
    """Exports and imports a Codex rollout file, at the same place under HOME."""

    def collect(self, session_id: str, cwd: str | None) -> tuple[StateFile, ...]:
        """The rollout file(s) of ``session_id``."""
        return self.files.read([f".codex/sessions/*/*/*/rollout-*-{session_id}.jsonl"])
