"""A stand-in agent CLI: reads a prompt on stdin and prints a genuine turn in a provider's format.

``python -m agentshim.testing.stand_in claude [CLI flags...]`` behaves, as far as agentshim can
tell, like ``claude -p --output-format stream-json --verbose``: the whole real path (process,
parser, events, result) runs on a machine with no agent CLI installed. ``--version`` answers the
health check. The answer is made up locally; no model is called.

For ``claude`` with ``--input-format stream-json`` it is a long-lived process instead, like
Claude Code's stream transport: one turn per user message on stdin, answered by
:class:`~agentshim.testing.claude_stream.ClaudeStreamPeer` (interrupts, model switches and a
process-wide cost included), until stdin ends.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Sequence

from agentshim.core.jsonvalues import as_mapping
from agentshim.core.usage import TokenUsage
from agentshim.execution.process import ProcessExited, SpawnRequest, StderrLine
from agentshim.providers import provider_names
from agentshim.testing.claude_stream import ClaudePeerTurn, ClaudeStreamPeers
from agentshim.testing.scripted import scripted_turn

__all__ = ["main", "stand_in_answer"]

_RESUME_FLAGS = ("--resume", "--session")


def stand_in_answer(prompt: str) -> str:
    """Return the stand-in's reply to ``prompt`` (deterministic, says what it is)."""
    first_line = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    if len(first_line) > 200:
        first_line = first_line[:197] + "..."
    return (
        f"This is agentshim's stand-in CLI; no model was called. "
        f"Your prompt was {len(prompt)} characters long and began: {first_line!r}"
    )


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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the stand-in; ``argv[0]`` is the provider whose format to print."""
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
    if provider == "claude" and "stream-json" in _flag_values(flags, "--input-format"):
        return _stream(flags)
    prompt = sys.stdin.read()
    answer = stand_in_answer(prompt)
    run = scripted_turn(
        provider,
        text=answer,
        session_id=_resume_id(flags) or str(uuid.uuid4()),
        usage=TokenUsage(input_tokens=max(1, len(prompt) // 4), output_tokens=len(answer) // 4),
    )
    for line in run.stdout:
        sys.stdout.write(line if line.endswith("\n") else line + "\n")
    for line in run.stderr:
        sys.stderr.write(line if line.endswith("\n") else line + "\n")
    sys.stdout.flush()
    return run.returncode


def _flag_values(flags: Sequence[str], flag: str) -> list[str]:
    return [flags[i + 1] for i, arg in enumerate(flags[:-1]) if arg == flag]


def _prompt_of(line: str) -> str | None:
    try:
        frame = as_mapping(json.loads(line))
    except ValueError:
        return None
    if frame is None or frame.get("type") != "user":
        return None
    content = (as_mapping(frame.get("message")) or {}).get("content")
    return content if isinstance(content, str) else json.dumps(content)


def _stream(flags: Sequence[str]) -> int:
    """Answer stream-json stdin line by line until it ends, like a long-lived Claude Code."""
    family = ClaudeStreamPeers((), session_id=_resume_id(flags) or str(uuid.uuid4()))
    peer = family(SpawnRequest(["claude", *flags]))
    for line in sys.stdin:
        prompt = _prompt_of(line)
        if prompt is not None:
            answer = stand_in_answer(prompt)
            family.extend([ClaudePeerTurn(answer, input_tokens=max(1, len(prompt) // 4))])
        for output in peer.on_stdin(line):
            if isinstance(output, ProcessExited):
                sys.stdout.flush()
                return output.returncode
            stream = sys.stderr if isinstance(output, StderrLine) else sys.stdout
            text = getattr(output, "text", "")
            stream.write(text)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
