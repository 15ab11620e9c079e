"""StateFiles: read and write a CLI's files under its HOME through the execution seam.

Every read and write is one ``sh`` command run by the agent's CommandExecutor, with the
agent's env: on the host that is the host's files, in a container (a confined executor) the
container's. Files travel as a base64 tar stream (``tar`` and ``base64`` are in every image
the CLIs run in), so binary content and any size up to the state limit pass through the
executor's text lines. A write unpacks into a staging directory under HOME first and then
moves each file into place, so a write that fails part way leaves no half-written file.
"""

from __future__ import annotations

import base64
import io
import tarfile
from collections.abc import Mapping, Sequence

from agentshim.core.errors import InvalidRequestError, StoreError
from agentshim.core.portability import MAX_STATE_BYTES, StateFile
from agentshim.execution.executor import CallbackSink, CommandExecutor, CommandRequest

__all__ = ["StateFiles"]

# Each argument is a glob relative to HOME; what matches (a file, or a directory with what
# it holds) is packed. Unquoted ``$pattern`` globs, and the matches are appended to "$@".
_READ = r"""
cd "$HOME" 2>/dev/null || exit 0
n=$#
for pattern in "$@"; do
    for found in $pattern; do
        [ -e "$found" ] && set -- "$@" "$found"
    done
done
shift "$n"
[ "$#" -gt 0 ] || exit 0
tar -cf - --exclude='*.lock' -- "$@" | base64
"""
_LIST = r"""
cd "$HOME" 2>/dev/null || exit 0
for pattern in "$@"; do
    for found in $pattern; do
        [ -e "$found" ] && printf '%s\n' "$found"
    done
done
exit 0
"""
_WRITE = r"""
set -e
mkdir -p "$HOME"
stage=$(mktemp -d "$HOME/.agentshim-import.XXXXXX")
trap 'rm -rf "$stage"' EXIT
base64 -d | tar -xf - -C "$stage"
cd "$stage"
find . -type f | while IFS= read -r file; do
    mkdir -p "$HOME/$(dirname "$file")"
    mv -f "$file" "$HOME/$file"
done
"""


class StateFiles:
    """A CLI's files under the HOME of ``env``, read and written by commands on ``executor``.

    ``timeout`` bounds each command (seconds).
    """

    def __init__(
        self, executor: CommandExecutor, env: Mapping[str, str], *, timeout: float = 120.0
    ) -> None:
        self.executor = executor
        self.env = dict(env)
        self.timeout = timeout

    @property
    def home(self) -> str:
        """The HOME the CLI sees (the agent's env's)."""
        return self.env.get("HOME", "")

    def run(
        self, argv: Sequence[str], *, stdin: str | None = None, cwd: str | None = None
    ) -> tuple[int, list[str], str]:
        """Run ``argv`` with the agent's env: (exit status, stdout lines, stderr tail)."""
        lines: list[str] = []
        request = CommandRequest(
            argv=list(argv), stdin=stdin, cwd=cwd, env=self.env, timeout=self.timeout
        )
        result = self.executor.run(request, CallbackSink(on_stdout=lines.append))
        return result.returncode, lines, result.stderr

    def _shell(self, action: str, script: str, args: Sequence[str], stdin: str | None) -> list[str]:
        status, lines, stderr = self.run(["sh", "-c", script, "sh", *args], stdin=stdin)
        if status != 0:
            raise StoreError(
                self.home,
                stderr.strip()[-300:] or f"exit status {status}",
                f"could not {action} under {self.home}: {stderr.strip()[-300:] or status}",
            )
        return lines

    def list(self, patterns: Sequence[str]) -> list[str]:
        """The paths (relative to HOME) that ``patterns`` (globs) match, in pattern order."""
        return [line.rstrip("\n") for line in self._shell("list files", _LIST, patterns, None)]

    def read(self, patterns: Sequence[str]) -> tuple[StateFile, ...]:
        """Every regular file the globs match (directories with all they hold), no lock files.

        Raises:
            StoreError: the command failed.
            InvalidRequestError: the files hold more than MAX_STATE_BYTES.
        """
        lines = self._shell("read the conversation's files", _READ, patterns, None)
        if not lines:
            return ()
        packed = base64.b64decode("".join(line.strip() for line in lines))
        files: list[StateFile] = []
        total = 0
        with tarfile.open(fileobj=io.BytesIO(packed), mode="r:") as archive:
            for member in archive:
                if not member.isfile():
                    continue  # directories come with their files; links are never followed
                total += member.size
                if total > MAX_STATE_BYTES:
                    raise InvalidRequestError(
                        "files",
                        f"more than {MAX_STATE_BYTES} bytes",
                        f"the conversation's files under {self.home} hold more than "
                        f"{MAX_STATE_BYTES} bytes; they are not exported",
                    )
                extracted = archive.extractfile(member)
                if extracted is not None:
                    files.append(StateFile(member.name.removeprefix("./"), extracted.read()))
        return tuple(files)

    def write(self, files: Sequence[StateFile]) -> None:
        """Write ``files`` under HOME (creating directories), each replacing what was there.

        Raises:
            StoreError: the command failed; no file was half written.
        """
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:") as archive:
            for file in files:
                info = tarfile.TarInfo(file.path)
                info.size = len(file.data)
                info.mode = 0o600
                archive.addfile(info, io.BytesIO(file.data))
        encoded = base64.encodebytes(buffer.getvalue()).decode("ascii")
        self._shell("write the conversation's files", _WRITE, (), encoded)
