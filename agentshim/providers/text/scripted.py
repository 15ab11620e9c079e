"""Made-up text-harness turns: the answer on stdout, nothing else."""

from __future__ import annotations

from agentshim.core.scripting import ScriptedRun, ScriptedTurn, refuse_structured_output

__all__ = ["resume_failure_lines", "scripted_lines"]


def scripted_lines(script: ScriptedTurn) -> ScriptedRun:
    """What a text harness prints for ``script``: its text, one stdout line per line.

    Session ids, usage and tool calls are not printed (a text harness reports none); a
    nonzero ``returncode`` prints the failure on stderr and exits with it.

    Raises:
        InvalidRequestError: ``script`` carries structured output (a harness has no schema).
    """
    refuse_structured_output(script, "A text harness", "text")
    lines = tuple(line + "\n" for line in script.text.split("\n")) if script.text else ()
    stderr = ("the harness failed\n",) if script.returncode != 0 else ()
    return ScriptedRun(stdout=lines, stderr=stderr, returncode=script.returncode)


def resume_failure_lines(*, session_id: str | None = None) -> ScriptedRun:
    """What a harness prints when asked to continue a conversation: it cannot."""
    del session_id
    return ScriptedRun(stderr=("this harness cannot resume a conversation\n",), returncode=1)
