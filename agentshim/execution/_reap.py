"""Finding and ending every process a run started, wherever it went: the run marker.

Private to the execution package. Each host run puts ``AGENTSHIM_RUN_ID=<random>`` in the
environment of the process it starts; every descendant inherits it, including the ones that
leave the run's process group (a tool shell that calls ``setsid`` is reparented to init and
out of reach of ``killpg``). At the end of the run the processes of this user whose
environment holds exactly that entry are found in ``/proc/<pid>/environ`` and ended:
SIGTERM, a grace period, then SIGKILL, scanning again until a scan finds none, so a child
forked during a scan goes too.

A process in the middle of ``execve`` shows an empty environment for a moment (its new
image's is not in place yet), and so does one that is exiting. A scan that meets one of this
user's processes in that state looks again before it trusts that nothing is left.

The marker is an identifier, not a secret: it only ever travels in environments, never in
argv. Each signal goes through a pidfd opened *before* the environment is read, so a pid
that exits and is reused by an unrelated process between the scan and the signal is never
hit. Where there is no ``/proc`` (macOS), :func:`can_scan` is False and the run falls back
to its process group.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from collections.abc import Callable

from agentshim.core.clock import Monotonic

__all__ = [
    "RUN_MARKER",
    "boot_ticks",
    "can_scan",
    "command_line",
    "marked_processes",
    "new_run_id",
    "parent_and_start",
    "reap_marked",
]

RUN_MARKER = "AGENTSHIM_RUN_ID"
"""The variable that marks every process started for one host run."""

# Once SIGKILL is being sent, a process forking faster than it dies is chased this many
# scans (about a second); what is left then is reported instead of chased forever.
_MAX_PASSES = 50
# Read size for an environment; most fit in one read.
_READ = 1 << 16
# How often a scan is repeated while the signalled processes exit.
_RESCAN = 0.02
# The flag /proc/<pid>/stat sets for a kernel thread (no environment, no argv, never exits).
_PF_KTHREAD = 0x00200000


def new_run_id() -> str:
    """A fresh value for :data:`RUN_MARKER`: unique per run, meaningless to anyone else."""
    return secrets.token_hex(12)


def can_scan() -> bool:
    """Whether processes can be found by their marker here and signalled through a pidfd.

    It needs ``/proc`` with other processes' environments, and ``pidfd_open``, which is
    tried on this process: a kernel older than 5.3 (ENOSYS) or a seccomp profile that denies
    it (EPERM) would otherwise make every marked process look gone, and the scan would end
    nothing without a word.
    """
    if not os.path.isfile("/proc/self/environ") or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


def boot_ticks() -> int:
    """Now, in the clock ticks since boot that ``/proc/<pid>/stat`` gives start times in."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK"))


def parent_and_start(pid: int) -> tuple[int, int] | None:
    """A process's parent pid and start time (ticks since boot); None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields follow the last ")".
    fields = stat.rsplit(b")", 1)[-1].split()
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def command_line(pid: int) -> tuple[str, ...]:
    """A process's argv (empty once it is gone, or for a kernel thread)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            data = handle.read()
    except OSError:
        return ()
    return tuple(part.decode("utf-8", "replace") for part in data.split(b"\0")[:-1])


def marked_processes(value: str, name: str = RUN_MARKER) -> tuple[list[tuple[int, int]], bool]:
    """Every process of this user, other than this one, whose environment has the marker.

    Returns ``(pid, pidfd)`` pairs (the caller closes the pidfds), and whether some process
    of this user could not be read just then (in the middle of ``execve``, or exiting), so
    a scan that found nothing may have missed it. A process found here was still carrying
    ``name=value`` (``AGENTSHIM_RUN_ID=value`` by default) after its pidfd was opened, so
    the pidfd is that process and not one that reused its pid.
    """
    entry = f"\0{name}={value}\0".encode()
    bare = entry[1:-1]
    me = os.getpid()
    uid = os.getuid()
    found: list[tuple[int, int]] = []
    unsure = False
    try:
        names = os.listdir("/proc")
    except OSError:
        return found, unsure
    for name in names:
        if not name.isdigit():
            continue
        carries = _carries(name, bare, entry)
        if carries is False:
            continue
        pid = int(name)
        if pid == me:
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != uid:
                continue
            if carries is None:
                unsure = True
                continue
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue  # gone already
        # Read again through the open pidfd's lifetime: if the pid was reused between the
        # first read and pidfd_open, the newcomer does not carry this run's marker.
        again = _carries(name, bare, entry)
        if again:
            found.append((pid, pidfd))
        else:
            unsure = unsure or again is None
            os.close(pidfd)
    return found, unsure


def _carries(name: str, bare: bytes, entry: bytes) -> bool | None:
    """Whether process ``name`` carries the entry; None when it cannot be told right now."""
    data = _read_proc(name, "environ")
    if not data and data is not None:
        # No environment, or none yet: between the switch to its new image and the setting
        # up of that image's stack, an exec'ing process shows neither environment nor argv.
        # A process with an empty environment still has its argv; a kernel thread and a
        # zombie have neither, and are told apart by their status.
        if _read_proc(name, "cmdline"):
            data = _read_proc(name, "environ")  # its exec may have finished meanwhile
        elif _in_flux(name):
            return None
    if not data:
        return False  # gone, another user's, or an empty environment
    # The cheap test first; then the whole entry, so AGENTSHIM_RUN_ID=ab never matches =abc.
    return bare in data and entry in b"\0" + data + b"\0"


def _read_proc(name: str, what: str) -> bytes | None:
    """The whole of ``/proc/<name>/<what>``; None when it cannot be read (gone, not ours)."""
    # os.open and os.read, not open(): this runs for every process on the machine, and a
    # file object costs more than the read itself.
    try:
        fd = os.open(f"/proc/{name}/{what}", os.O_RDONLY)
    except OSError:
        return None
    try:
        return b"".join(iter(lambda: os.read(fd, _READ), b""))
    except OSError:
        return None
    finally:
        os.close(fd)


def _in_flux(name: str) -> bool:
    """Whether a process showing no argv is a live user process (exec'ing or exiting)."""
    stat = _read_proc(name, "stat")
    if not stat:
        return False
    fields = stat.rsplit(b")", 1)[-1].split()
    try:
        state, flags = fields[0], int(fields[6])
    except (IndexError, ValueError):
        return False
    return state not in (b"Z", b"X", b"x") and not flags & _PF_KTHREAD


def reap_marked(
    value: str,
    grace: float,
    *,
    name: str = RUN_MARKER,
    keep: Callable[[int], bool] | None = None,
    monotonic: Monotonic = time.monotonic,
) -> tuple[int, int]:
    """End every process carrying the marker ``name=value``; return (ended, left running).

    Marked processes get SIGTERM (and SIGCONT, so a stopped one can act on it); those still
    there after ``grace`` seconds get SIGKILL. Scanning repeats until a scan finds none, so
    a child forked meanwhile is found and ended too; once SIGKILL is being sent it repeats
    a bounded number of times, and ``left running`` counts what the last scan still found
    (a process forking faster than it can be ended, or one this user may not signal).
    A process for which ``keep(pid)`` is True is left alone (and not counted).
    """
    signalled: set[int] = set()
    kept: set[int] = set()
    terminate_until = monotonic() + grace
    hard_passes = 0
    unsure_passes = 0
    while True:
        found: list[tuple[int, int]] = []
        scanned, unsure = marked_processes(value, name)
        for pid, pidfd in scanned:
            if pid in kept or (keep is not None and keep(pid)):
                kept.add(pid)
                os.close(pidfd)
            else:
                found.append((pid, pidfd))
        if not found:
            # One of this user's processes was mid-exec or exiting: it may be one of ours
            # that this scan could not see. Look again, a bounded number of times.
            if not unsure or unsure_passes >= _MAX_PASSES:
                return len(signalled), 0
            unsure_passes += 1
            time.sleep(_RESCAN)
            continue
        if hard_passes >= _MAX_PASSES:
            for _, pidfd in found:
                os.close(pidfd)
            return len(signalled), len(found)
        hard = monotonic() >= terminate_until
        hard_passes += hard
        for pid, pidfd in found:
            try:
                if hard:
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                elif pid not in signalled:
                    signal.pidfd_send_signal(pidfd, signal.SIGTERM)
                    signal.pidfd_send_signal(pidfd, signal.SIGCONT)
                signalled.add(pid)
            except OSError:
                pass  # exited meanwhile, or not ours to signal after all
            finally:
                os.close(pidfd)
        # Rescanning is how "gone" is seen: these are not our children, so there is
        # nothing to wait on, and one of them may have forked a new marked child.
        time.sleep(_RESCAN)
