"""Readiness probes: run a fixed command on any executor and judge what it printed.

A :class:`ProbeSpec` says what to run and what a healthy answer looks like (an exit status,
a pattern on stdout); :func:`run_probe` runs it and reports a :class:`ProbeResult` instead of
raising, so a readiness check can list every problem it found. :func:`check_version` is the
binary health check every executor's ``check_binary`` and the transports' probes share: the
probe ``<path> --version``, raising when it is not healthy.

Probes go through ``run``, so they get a pipe for stdin (a probe can never inherit a
terminal and stop, deadlocking the caller) and a wrapping executor's transform applies to
them like to any other command.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agentshim.core._text import first_line, last_line
from agentshim.core.errors import AgentShimError, CliCheckError, CliTimeoutError

from ._validate import checked_argv, checked_timeout
from .executor import CommandExecutor, CommandRequest, NullSink

__all__ = ["ProbeResult", "ProbeSpec", "check_version", "run_probe"]


@dataclass(frozen=True, slots=True)
class ProbeSpec:
    """A static probe: a command and the answer that means "ready".

    A bad spec fails when it is defined, not when it is probed: an empty argv or a timeout
    that is not a finite number of seconds above zero raises
    :class:`~agentshim.core.errors.InvalidRequestError`, an invalid pattern ``re.error``.

    Attributes:
        argv: The command (for example ``("claude", "auth", "status")``).
        expect_returncode: The exit status that counts as healthy; ``None`` accepts any.
        expect_stdout: A regular expression that must be found in stdout; ``None``
            accepts anything. Its first group (or the whole match) is reported.
        stdin: Text for the probe's stdin; stdin is a pipe either way.
        timeout: Seconds the probe may take.
    """

    argv: Sequence[str]
    expect_returncode: int | None = 0
    expect_stdout: str | None = None
    stdin: str | None = None
    timeout: float = 15.0

    def __post_init__(self) -> None:
        argv = checked_argv(self.argv, "ProbeSpec")
        checked_timeout(self.timeout, "ProbeSpec")
        if self.expect_stdout is not None:
            re.compile(self.expect_stdout)  # fail at definition, not at probe time
        object.__setattr__(self, "argv", argv)


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What a probe found.

    Attributes:
        ready: The probe ran and its answer matched the spec.
        returncode: The exit status, or ``None`` when it did not finish.
        stdout: The (bounded) stdout tail.
        stderr: The (bounded) stderr tail.
        matched: The first group of ``expect_stdout`` (or the whole match), if it matched.
        problem: Why it is not ready, in words; ``""`` when ready.
    """

    ready: bool
    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    matched: str | None = None
    problem: str = ""


def run_probe(
    executor: CommandExecutor, spec: ProbeSpec, env: Mapping[str, str], *, cwd: str | None = None
) -> ProbeResult:
    """Run ``spec`` on ``executor`` and judge the answer; never raises an AgentShimError.

    A problem names the program, then what was wrong: it did not finish in time, could not
    start (the error's words), exited with another status (and the last thing it printed),
    or its stdout does not match.
    """
    request = CommandRequest(spec.argv, stdin=spec.stdin, cwd=cwd, env=env, timeout=spec.timeout)
    program = spec.argv[0]
    try:
        result = executor.run(request, NullSink())
    except CliTimeoutError:
        return ProbeResult(
            False, None, problem=f"{program}: did not finish within {spec.timeout} s"
        )
    except AgentShimError as exc:
        return ProbeResult(False, None, problem=exc.message)
    except OSError as exc:
        # A third-party executor may let the operating system's error through.
        return ProbeResult(False, None, problem=f"{program}: could not start: {exc}")
    matched: str | None = None
    problems: list[str] = []
    if spec.expect_returncode is not None and result.returncode != spec.expect_returncode:
        said = last_line(result.stderr) or last_line(result.stdout) or "no output"
        problems.append(f"exited {result.returncode}, expected {spec.expect_returncode}: {said}")
    if spec.expect_stdout is not None:
        found = re.search(spec.expect_stdout, result.stdout)
        if found is None:
            problems.append(f"stdout does not match {spec.expect_stdout!r}")
        else:
            matched = found.group(1) if found.groups() else found.group(0)
    problem = f"{program}: " + "; ".join(problems) if problems else ""
    return ProbeResult(
        not problems, result.returncode, result.stdout, result.stderr, matched, problem
    )


def check_version(
    executor: CommandExecutor, path: str, env: Mapping[str, str], *, timeout: float
) -> str:
    """Run ``path --version`` on ``executor``, require exit status 0, return what it said.

    Returns the first non-blank line of stdout (of stderr when stdout has none), ``""``
    when it printed nothing.

    Raises:
        CliCheckError: It could not start, did not finish within ``timeout``, or exited
            nonzero; ``detail`` says which, with the last line it printed.
        InvalidRequestError: ``timeout`` is not a finite number of seconds above zero.
    """
    # Checked here, so a bad timeout is named as the health check's, not ProbeSpec's.
    checked_timeout(timeout, "check_binary")
    result = run_probe(executor, ProbeSpec((path, "--version"), timeout=timeout), env)
    if not result.ready:
        raise CliCheckError(path, result.problem.removeprefix(f"{path}: "))
    return first_line(result.stdout) or first_line(result.stderr)
