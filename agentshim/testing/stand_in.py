"""A stand-in agent CLI: answers a prompt in a provider's real format, with no model behind it.

``python -m agentshim.testing.stand_in <provider> [CLI flags...]`` behaves, as far as agentshim
can tell, like that provider's CLI started with those flags, so the whole real path (process,
parser, events, result) runs on a machine with no agent CLI installed. ``--version`` answers
the health check. The answer is made up locally (:func:`stand_in_answer`); no model is called,
so no cost is ever reported (the CLIs' cost fields are left out).

Every way agentshim runs a CLI is spoken, each by the fake that the library's own tests use:

- one-shot (the default): the prompt is read from stdin and a scripted turn is printed
  (:func:`~agentshim.testing.scripted.scripted_turn`);
- ``claude -p --input-format stream-json``: :class:`~agentshim.testing.claude_stream.ClaudeStreamPeer`;
- ``claude`` on a terminal (no ``-p``): the fake interactive CLI of
  :mod:`agentshim.testing.claude_tui` (its state and transcript in a private temporary
  directory, removed when it exits);
- ``codex app-server``: :class:`~agentshim.testing.codex_app_server.CodexAppServerPeer`;
- ``gemini --acp``, ``opencode acp``, ``copilot --acp``: :class:`~agentshim.testing.acp.AcpPeer`
  with that agent's quirks;
- ``pi --mode rpc``: :class:`~agentshim.testing.pi_rpc.PiRpcPeer`.

A long-lived one answers every prompt it is sent until stdin ends. A turn that asks for an
output schema (Claude's ``--json-schema``, Codex's ``--output-schema`` or the app-server's
per-turn ``outputSchema``) is answered with a small JSON value that satisfies the schema.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentshim.core.jsonvalues import as_mapping, as_str, list_or_empty
from agentshim.core.usage import TokenUsage
from agentshim.doctor.model_server.schema_example import example_for
from agentshim.execution.executor import (
    CommandExecutor,
    CommandRequest,
    CommandResult,
    CommandStreamSink,
)
from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.process import (
    Process,
    ProcessExited,
    SpawnRequest,
    StderrLine,
    StdoutLine,
)
from agentshim.execution.pty_process import PtyProcess, PtySize
from agentshim.execution.transform import TransformingExecutor
from agentshim.providers import provider_names
from agentshim.testing.acp import (
    COPILOT_QUIRKS,
    GEMINI_QUIRKS,
    OPENCODE_QUIRKS,
    AcpPeers,
    AcpPeerTurn,
    AcpQuirks,
)
from agentshim.testing.claude_stream import ClaudePeerTurn, ClaudeStreamPeers
from agentshim.testing.codex_app_server import CodexAppServerPeers, CodexPeerTurn
from agentshim.testing.pi_rpc import PiPeerTurn, PiRpcPeers
from agentshim.testing.process import FakePeer, PeerOutput
from agentshim.testing.scripted import scripted_turn

__all__ = ["STAND_IN_MODEL", "StandInExecutor", "main", "stand_in_answer", "stand_in_executor"]

_MODULE = "agentshim.testing.stand_in"
_RESUME_FLAGS = ("--resume", "--session")

#: Where the CLIs put a cost; the stand-in calls no model, so it reports none.
_COST_KEYS = frozenset({"total_cost_usd", "costUSD", "cost"})

#: The model the stand-in says answered: no price is known for it, so none is made up.
STAND_IN_MODEL = "agentshim-stand-in"

_ACP_QUIRKS: Mapping[str, AcpQuirks] = {
    "gemini": GEMINI_QUIRKS,
    "opencode": OPENCODE_QUIRKS,
    "copilot": COPILOT_QUIRKS,
}


def stand_in_answer(prompt: str) -> str:
    """Return the stand-in's reply to ``prompt`` (deterministic, says what it is)."""
    first_line = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    if len(first_line) > 200:
        first_line = first_line[:197] + "..."
    return (
        f"This is agentshim's stand-in CLI; no model was called. "
        f"Your prompt was {len(prompt)} characters long and began: {first_line!r}"
    )


def _reply(prompt: str, structured: object | None = None) -> tuple[str, int, int]:
    """The answer to ``prompt`` (``structured`` as JSON when given) and made-up token counts.

    The counts grow with the text, about four characters a token, as a real CLI's would.
    """
    answer = stand_in_answer(prompt) if structured is None else json.dumps(structured)
    return answer, max(1, len(prompt) // 4), max(1, len(answer) // 4)


def _structured(schema: object) -> object | None:
    """A small value satisfying ``schema`` (None when no schema object was given)."""
    mapping = as_mapping(schema)
    return example_for(mapping) if mapping is not None else None


def _resume_id(argv: Sequence[str]) -> str | None:
    if "resume" in argv:  # a subcommand form: `exec resume <id> -`
        index = list(argv).index("resume")
        if index + 1 < len(argv) and not argv[index + 1].startswith("-"):
            return argv[index + 1]
    for index, arg in enumerate(argv):
        for flag in _RESUME_FLAGS:
            if arg == flag and index + 1 < len(argv):
                return argv[index + 1]
            if arg.startswith(flag + "="):
                return arg.split("=", 1)[1]
    return None


def _flag_values(flags: Sequence[str], flag: str) -> list[str]:
    return [flags[i + 1] for i, arg in enumerate(flags[:-1]) if arg == flag]


def _without_cost(value: Any) -> Any:
    """``value`` with no cost field at any depth, and the stand-in named as the model.

    A real model's name would have agentshim price the made-up token counts from its table.
    """
    if isinstance(value, dict):
        items: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        kept: dict[str, Any] = {}
        for key, item in items.items():
            if key in _COST_KEYS:
                continue
            if key == "model" and isinstance(item, str):
                kept[key] = STAND_IN_MODEL
            elif key == "modelUsage" and isinstance(item, dict):
                usages: dict[str, Any] = item  # pyright: ignore[reportUnknownVariableType]
                # One model answered: the stand-in (with the usage of the last entry).
                last = list(usages.values())[-1:]
                kept[key] = {STAND_IN_MODEL: _without_cost(last[0])} if last else {}
            else:
                kept[key] = _without_cost(item)
        return kept
    if isinstance(value, list):
        return [_without_cost(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _printed(line: str) -> str:
    """A stdout line as the stand-in prints it: a JSON object without its cost fields."""
    try:
        frame = json.loads(line)
    except ValueError:
        return line if line.endswith("\n") else line + "\n"
    if not isinstance(frame, dict):
        return line if line.endswith("\n") else line + "\n"
    return json.dumps(_without_cost(frame), separators=(",", ":"), ensure_ascii=False) + "\n"


def _exit_status(returncode: int) -> int:
    """A fake's exit status as this process's: a signal ``-N`` becomes ``128 + N``."""
    return 128 - returncode if returncode < 0 else returncode


def _emit(outputs: Iterable[PeerOutput]) -> int | None:
    """Print what a fake answered; its exit status once it exits, else None."""
    try:
        for output in outputs:
            if isinstance(output, ProcessExited):
                return _exit_status(output.returncode)
            if isinstance(output, StderrLine):
                sys.stderr.write(output.text)
            elif isinstance(output, StdoutLine):
                sys.stdout.write(_printed(output.text))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return None


def _serve(peer: FakePeer, on_line: Callable[[dict[str, Any]], None]) -> int:
    """Play ``peer`` on this process's stdin and stdout until it exits or stdin ends.

    ``on_line`` sees every JSON object read before the peer does (to script its answer).
    """
    code = _emit(peer.on_start())
    if code is not None:
        return code
    for line in sys.stdin:
        frame = _frame(line)
        if frame is not None:
            on_line(frame)
        code = _emit(peer.on_stdin(line))
        if code is not None:
            return code
    code = _emit(peer.on_stdin_closed())
    return 0 if code is None else code


def _frame(line: str) -> dict[str, Any] | None:
    try:
        frame = as_mapping(json.loads(line))
    except ValueError:
        return None
    return dict(frame) if frame is not None else None


def _texts(value: object) -> str:
    """The text of a ``[{"type": "text", "text": ...}, ...]`` list, or of a plain string."""
    if isinstance(value, str):
        return value
    parts: list[str] = []
    for entry in list_or_empty(value):
        part = as_mapping(entry)
        if part is not None and part.get("type") == "text":
            parts.append(as_str(part.get("text")) or "")
    return "".join(parts)


# -- the executor that runs it --------------------------------------------------------------------


class StandInExecutor:
    """Runs the stand-in in place of ``provider``'s CLI on the host, for every transport.

    Each command, process and terminal process is started as ``python -m
    agentshim.testing.stand_in <provider> <the CLI's arguments>``; the binary is never looked
    up, so no CLI needs to be installed.
    """

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self._host = HostCommandExecutor()
        self._through: CommandExecutor = TransformingExecutor(
            self._host, self._to_stand_in, find_binary=_trusted
        )

    def _to_stand_in(self, request: CommandRequest) -> CommandRequest:
        return dataclasses.replace(request, argv=self._argv(request.argv))

    def _argv(self, argv: Sequence[str]) -> tuple[str, ...]:
        return (sys.executable, "-m", _MODULE, self.provider, *argv[1:])

    def find_binary(self, name: str, env: Mapping[str, str]) -> str:
        """Return ``name`` itself: the stand-in needs no installed CLI."""
        return _trusted(name, env)

    def check_binary(self, path: str, env: Mapping[str, str], *, timeout: float) -> None:
        """Run the stand-in's ``--version``, as the health check of a real CLI would."""
        self._through.check_binary(path, env, timeout=timeout)

    def run(self, request: CommandRequest, sink: CommandStreamSink) -> CommandResult:
        """Run one turn of the stand-in."""
        return self._through.run(request, sink)

    def spawn(self, request: SpawnRequest) -> Process:
        """Start a long-lived stand-in process."""
        return self._through.spawn(request)

    def spawn_pty(self, request: SpawnRequest, size: PtySize | None = None) -> PtyProcess:
        """Start the stand-in on a pseudo-terminal (the interactive Claude Code)."""
        changed = SpawnRequest(self._argv(request.argv), cwd=request.cwd, env=request.env)
        return self._host.spawn_pty(changed, size)


def _trusted(name: str, env: Mapping[str, str]) -> str:
    return name


def stand_in_executor(provider: str) -> StandInExecutor:
    """Return a host executor that runs the bundled stand-in CLI in place of ``provider``'s."""
    return StandInExecutor(provider)


# -- one process per turn -----------------------------------------------------------------------


def _one_shot(provider: str, flags: Sequence[str]) -> int:
    prompt = sys.stdin.read()
    answer, input_tokens, output_tokens = _reply(prompt)
    run = scripted_turn(
        provider,
        text=answer,
        session_id=_resume_id(flags) or str(uuid.uuid4()),
        usage=TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens),
        structured_output=_one_shot_structured(flags),
    )
    for line in run.stdout:
        sys.stdout.write(_printed(line))
    for line in run.stderr:
        sys.stderr.write(line if line.endswith("\n") else line + "\n")
    sys.stdout.flush()
    return run.returncode


def _one_shot_structured(flags: Sequence[str]) -> object | None:
    """The structured answer a one-shot turn asks for: inline (Claude) or in a file (Codex)."""
    for inline in _flag_values(flags, "--json-schema"):
        try:
            return _structured(json.loads(inline))
        except ValueError:
            return None
    for path in _flag_values(flags, "--output-schema"):
        try:
            return _structured(json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return None
    return None


# -- long-lived processes -----------------------------------------------------------------------


def _claude_stream(flags: Sequence[str]) -> int:
    """Claude Code's stream-json: one turn per ``user`` message."""
    family = ClaudeStreamPeers((), session_id=_resume_id(flags) or str(uuid.uuid4()))

    def on_line(frame: dict[str, Any]) -> None:
        if frame.get("type") != "user":
            return
        content = (as_mapping(frame.get("message")) or {}).get("content")
        prompt = content if isinstance(content, str) else _texts(content)
        answer, tokens_in, tokens_out = _reply(prompt)
        turn = ClaudePeerTurn(
            answer, input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=0.0
        )
        family.extend([turn])

    return _serve(family(SpawnRequest(["claude", *flags])), on_line)


def _codex_app_server(flags: Sequence[str]) -> int:
    """``codex app-server``: one turn per ``turn/start``, structured when it sets a schema."""
    family = CodexAppServerPeers(())

    def on_line(frame: dict[str, Any]) -> None:
        if frame.get("method") != "turn/start":
            return
        params = as_mapping(frame.get("params")) or {}
        prompt = _texts(params.get("input"))
        answer, tokens_in, tokens_out = _reply(prompt, _structured(params.get("outputSchema")))
        family.extend([CodexPeerTurn(answer, input_tokens=tokens_in, output_tokens=tokens_out)])

    return _serve(family(SpawnRequest(["codex", *flags])), on_line)


def _acp(provider: str, flags: Sequence[str]) -> int:
    """An ACP agent: one turn per ``session/prompt``, with ``provider``'s quirks."""
    family = AcpPeers((), quirks=_ACP_QUIRKS[provider])

    def on_line(frame: dict[str, Any]) -> None:
        if frame.get("method") != "session/prompt":
            return
        params = as_mapping(frame.get("params")) or {}
        prompt = _texts(params.get("prompt"))
        answer, tokens_in, tokens_out = _reply(prompt)
        family.extend([AcpPeerTurn(answer, input_tokens=tokens_in, output_tokens=tokens_out)])

    return _serve(family(SpawnRequest([provider, *flags])), on_line)


def _pi_rpc(flags: Sequence[str]) -> int:
    """``pi --mode rpc``: one turn per ``prompt`` command."""
    family = PiRpcPeers((), session_id=str(uuid.uuid4()))

    def on_line(frame: dict[str, Any]) -> None:
        if frame.get("type") != "prompt":
            return
        prompt = as_str(frame.get("message")) or ""
        answer, tokens_in, tokens_out = _reply(prompt)
        turn = PiPeerTurn(answer, input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=0.0)
        family.extend([turn])

    return _serve(family(SpawnRequest(["pi", *flags])), on_line)


def _claude_tui() -> int:
    """Interactive Claude Code on the terminal on stdin, answering each prompt it is sent.

    Its state and the session transcript live in a private temporary directory (never the
    user's ``~/.claude``), removed when it exits, also on SIGTERM or SIGHUP.
    """
    from agentshim.testing.claude_tui import FakeTuiScript, install_fake_claude_tui
    from agentshim.testing.claude_tui import main as play_tui

    directory = Path(tempfile.mkdtemp(prefix="agentshim-stand-in-tui-"))

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        install_fake_claude_tui(directory, FakeTuiScript())
        os.environ["CLAUDE_CONFIG_DIR"] = str(directory / "config")
        return play_tui(str(directory / "fake-tui-script.json"), answer=stand_in_answer)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        shutil.rmtree(directory, ignore_errors=True)


def _long_lived(provider: str, flags: Sequence[str]) -> Callable[[], int] | None:
    """How to serve ``flags`` when they start a long-lived process; None for one turn."""
    if provider == "claude":
        if "stream-json" in _flag_values(flags, "--input-format"):
            return lambda: _claude_stream(flags)
        if "-p" not in flags and "--print" not in flags:
            return _claude_tui
    if provider == "codex" and flags[:1] == ["app-server"]:
        return lambda: _codex_app_server(flags)
    if provider in _ACP_QUIRKS and ("--acp" in flags or flags[:1] == ["acp"]):
        return lambda: _acp(provider, flags)
    if provider == "pi" and "rpc" in _flag_values(flags, "--mode"):
        return lambda: _pi_rpc(flags)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the stand-in; ``argv[0]`` is the provider whose CLI to stand in for."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in provider_names():
        sys.stderr.write(
            f"usage: python -m agentshim.testing.stand_in {{{','.join(provider_names())}}} ...\n"
        )
        return 2
    provider, flags = args[0], args[1:]
    if "--version" in flags:
        sys.stdout.write(f"0.0.0 (agentshim stand-in for {provider})\n")
        return 0
    serve = _long_lived(provider, flags)
    return serve() if serve is not None else _one_shot(provider, flags)


if __name__ == "__main__":
    raise SystemExit(main())
