"""The shared part of every provider's conversation porter, and finding a provider's porter.

Each provider keeps the facts of its CLI's files in ``agentshim/providers/<name>/portability.py``
(next to its argv and parser): which files hold a conversation, and what to rewrite so the
CLI's resume finds them under another HOME and workspace path. :class:`FilePorter` does the
rest: packing, the version check, and reading and writing through :class:`StateFiles`.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence

from agentshim.core.errors import ConversationImportError
from agentshim.core.ids import validate_session_id
from agentshim.core.portability import (
    ConversationPorter,
    ConversationState,
    StateFile,
    pack_state,
    unpack_state,
    versions_compatible,
)
from agentshim.core.profile import ProviderProfile
from agentshim.execution.state_files import StateFiles

__all__ = ["FilePorter", "LazyPorter", "porter_for"]

_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.]+)?")


class FilePorter:
    """A porter for a CLI whose conversation is a set of files under its HOME.

    A subclass names the files (:meth:`collect`) and rewrites them for the new host: each
    file on its own (:meth:`place_file`), or all of them at once (:meth:`place`). ``binary``
    is the CLI (as the executor finds it), asked for its version once, on first use.
    """

    def __init__(self, profile: ProviderProfile, files: StateFiles, binary: str) -> None:
        self.profile = profile
        self.files = files
        self.binary = binary
        self._version: str | None = None
        self._asked = False

    @property
    def cli_version(self) -> str | None:
        """The installed CLI's version (``<binary> --version``), None when it says none."""
        if not self._asked:
            status, lines, _ = self.files.run([self.binary, "--version"])
            found = _VERSION.search("".join(lines)) if status == 0 else None
            self._version = found.group(0) if found is not None else None
            self._asked = True
        return self._version

    def collect(self, session_id: str, cwd: str | None) -> tuple[StateFile, ...]:
        """The files that hold ``session_id`` on this host (empty: none)."""
        raise NotImplementedError

    def place(self, state: ConversationState, cwd: str | None) -> Sequence[StateFile]:
        """The files to write so the CLI resumes ``state`` in ``cwd`` (rewritten as needed).

        With no ``cwd`` the files are written as they were exported; otherwise each goes
        through :meth:`place_file`.
        """
        if cwd is None:
            return state.files
        return tuple(self.place_file(file, cwd) for file in state.files)

    def place_file(self, file: StateFile, cwd: str) -> StateFile:
        """``file`` as the CLI's resume in ``cwd`` finds it (unchanged unless a subclass says)."""
        del cwd
        return file

    def export_blob(self, session_id: str, cwd: str | None) -> bytes | None:
        """The conversation's files as a blob, or None when this host has none."""
        validate_session_id(session_id)
        files = self.collect(session_id, cwd)
        if not files:
            return None
        state = ConversationState(self.profile.name, self.cli_version, session_id, cwd, files)
        return pack_state(state, credentials=self.profile.credential_files)

    def import_blob(self, blob: bytes, cwd: str | None) -> str:
        """Check ``blob`` whole, then write its files where the CLI's resume in ``cwd`` finds them."""
        name = self.profile.name
        state = unpack_state(blob, name)
        try:
            validate_session_id(state.session_id)
        except ValueError as error:
            raise ConversationImportError(
                name, f"the blob's session id is unsafe ({error})"
            ) from error
        local = self.cli_version
        if not versions_compatible(state.cli_version, local):
            raise ConversationImportError(
                name,
                f"it was saved by {self.profile.display_name} {state.cli_version or '(unknown)'}"
                f" and this host runs {local or '(unknown)'}, which cannot read it",
            )
        leaked = {file.path for file in state.files} & set(self.profile.credential_files)
        if leaked:
            raise ConversationImportError(name, f"the blob holds credentials {sorted(leaked)}")
        self.write(state, cwd)
        return state.session_id

    def write(self, state: ConversationState, cwd: str | None) -> None:
        """Write the placed files (a porter that imports through the CLI overrides this)."""
        self.files.write(self.place(state, cwd))


def porter_for(
    profile: ProviderProfile, files: StateFiles, binary: str
) -> ConversationPorter | None:
    """The porter of ``profile``'s built-in provider, or None when it has none."""
    try:
        module = importlib.import_module(f"agentshim.providers.{profile.name}.portability")
    except ModuleNotFoundError:
        return None
    porter: ConversationPorter = module.Porter(profile, files, binary)
    return porter


class LazyPorter:
    """A ConversationPorter built on first use (the CLI is found and checked only then).

    ``build`` returns the real porter, or None when the provider has none: then nothing is
    exported and an import is refused.
    """

    def __init__(self, provider: str, build: Callable[[], ConversationPorter | None]) -> None:
        self._provider = provider
        self._build = build
        self._porter: ConversationPorter | None = None
        self._built = False

    def _get(self) -> ConversationPorter | None:
        if not self._built:
            self._porter = self._build()
            self._built = True
        return self._porter

    def export_blob(self, session_id: str, cwd: str | None) -> bytes | None:
        """Export through the real porter (None without one)."""
        porter = self._get()
        return porter.export_blob(session_id, cwd) if porter is not None else None

    def import_blob(self, blob: bytes, cwd: str | None) -> str:
        """Import through the real porter (ConversationImportError without one)."""
        porter = self._get()
        if porter is None:
            raise ConversationImportError(self._provider, "this provider has no porter")
        return porter.import_blob(blob, cwd)
