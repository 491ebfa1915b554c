"""Stop a local training process (the incident it leaves in the notes is written by ``stop.incidents``).

`stop_local_process` sends one signal (TERM by default), waits up to ``grace_seconds`` for the process
to exit, escalates to KILL when allowed, and reports whether the process is verifiably gone. It is
careful because it kills things:

- it never signals pid 0, 1 or a negative pid (those address process groups or init), nor this process,
  its parent (the agent or shell that started it) or the leader of its own process group;
- a pid read from a pid file is refused when that process started after the file was written: the run
  that wrote the file has ended and an unrelated program now has the number (PID reuse);
- a process that is already gone is reported as ``ALREADY_STOPPED`` ("nothing to stop", not verified: the
  pid may be stale while the run goes on), so stopping twice is harmless;
- "gone" means reaped (our own child is reaped with ``waitpid(WNOHANG)``), absent, or a zombie
  (``/proc/<pid>/stat`` state ``Z``): a zombie has stopped running and only waits for its parent.
"""

from __future__ import annotations

import os
import pwd
import signal
import time
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..errors import SourceError, StopError
from ..files import describe_os_error, file_kind, open_regular
from ..models import StopOutcome
from .escalation import Ending, escalate_signals

__all__ = ["GONE_STATES", "MAX_PID", "StopAttempt", "refuse_unsafe", "stop_local_process"]

PROC = Path("/proc")
SIGNALS = {"TERM": signal.SIGTERM, "INT": signal.SIGINT, "KILL": signal.SIGKILL}
KILL_CONFIRM_SECONDS = 5.0  # SIGKILL cannot be caught; longer means the process is stuck in the kernel
# /proc/stat's boot time is whole seconds, so a computed start time can be up to 1 s early
START_TIME_SLACK_SECONDS = 1.0
PID_FILE_MAX_BYTES = 64  # a pid file holds a number; more than this is not one
MAX_PID = 2**31 - 1
"""The largest value of the kernel's pid_t; Linux's pid_max is at most 2^22, so any larger pid is not running."""
GONE_STATES = ("Z", "X")
"""Process states of a process that no longer runs: zombie (waits only for its parent) and dead."""


class StopAttempt(BaseModel):
    """What happened to the process; ``verified`` is True only when it is known to be gone."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    outcome: StopOutcome
    verified: bool
    signals_sent: list[str] = Field(default_factory=list)
    pid: int
    message: str


def stop_local_process(
    *,
    pid: int | None,
    pid_file: Path | None,
    signal_name: str = "TERM",
    grace_seconds: float = 30,
    kill_after_grace: bool = True,
    poll_seconds: float = 0.1,
) -> StopAttempt:
    """Signal the training process, wait up to ``grace_seconds``, KILL if allowed, verify it is gone.

    ``pid`` or ``pid_file`` must say which process; when both are given they must agree.
    Raises `StopError` when the pid is missing, unsafe, reused, or may not be signalled.
    """
    first = signal_key(signal_name)
    if grace_seconds < 0 or poll_seconds <= 0:
        raise StopError(f"grace_seconds={grace_seconds} and poll_seconds={poll_seconds}: use grace ≥ 0, poll > 0.")
    target = _target_pid(pid, pid_file)
    refuse_unsafe(target)
    return escalate(
        _LocalProcess(),
        target,
        first,
        grace_seconds=grace_seconds,
        kill_after_grace=kill_after_grace,
        poll_seconds=poll_seconds,
        pid_file=pid_file,
    )


# --------------------------------------------------------------------------- signal, wait, KILL, verify


class ProcessControl(Protocol):
    """What `escalate` needs of the machine the process runs on."""

    where: str  # "" for this machine, " on HOST" for another

    def is_gone(self, pid: int) -> bool: ...

    def send(self, pid: int, name: str) -> bool:
        """Send SIG``name``; False when the process was already gone."""
        ...

    def refuse_reused(self, pid: int, pid_file: Any) -> None: ...

    def stuck_state(self, pid: int) -> str:
        """The kernel state of a process KILL did not end, as shown in the message (or "")."""
        ...


def escalate(
    process: ProcessControl,
    pid: int,
    first: str,
    *,
    grace_seconds: float,
    kill_after_grace: bool,
    poll_seconds: float,
    pid_file: Any,
) -> StopAttempt:
    """SIG``first``, wait up to ``grace_seconds``, KILL if allowed, and report whether ``pid`` is gone.

    ``pid`` must already be known safe to signal; ``pid_file``, when it named the pid, is checked for reuse.
    """
    where = process.where
    if process.is_gone(pid):
        return _already_stopped(pid, [], where)
    if pid_file is not None:
        process.refuse_reused(pid, pid_file)
    vanished = False  # a signal found no such process: gone, and its number is never signalled again

    def send(name: str) -> bool:
        nonlocal vanished
        vanished = vanished or not process.send(pid, name)
        return not vanished

    done = escalate_signals(
        lambda: vanished or process.is_gone(pid), send, first, grace_seconds=grace_seconds,
        kill_after_grace=kill_after_grace, poll_seconds=poll_seconds, confirm_seconds=KILL_CONFIRM_SECONDS,
    )  # fmt: skip
    if done.ending is Ending.NOT_KILLED:
        return _not_confirmed(pid, done.sent, grace_seconds, where)
    if done.ending is Ending.STUCK:
        return _stuck(pid, done.sent, where, process.stuck_state(pid))
    return _stopped(pid, done.sent, where) if done.sent else _already_stopped(pid, done.sent, where)


def _stuck(pid: int, sent: list[str], where: str, state: str) -> StopAttempt:
    message = (
        f"pid {pid} is still present{where} {KILL_CONFIRM_SECONDS:g} s after SIGKILL{state}; "
        f"it is stuck in the kernel, usually on I/O. Check `ps -o stat {pid}`{where}."
    )
    return StopAttempt(outcome=StopOutcome.FAILED, verified=False, signals_sent=sent, pid=pid, message=message)


def _already_stopped(pid: int, sent: list[str], where: str) -> StopAttempt:
    """Not a verified stop of the run: only of that pid. A stale pid file names a process that is gone
    while the training runs on under another pid, so this must neither end monitoring nor block the next
    stop (``verified`` False; the state store counts only a STOPPED incident as the run's stop)."""
    message = (
        f"pid {pid} was not running{where}; nothing to stop (no signal sent). If the training still runs, "
        "the configured pid or pid file is stale: have the training script write its pid file at start, "
        "then stop again."
    )
    return StopAttempt(outcome=StopOutcome.ALREADY_STOPPED, verified=False, signals_sent=sent, pid=pid, message=message)


def _stopped(pid: int, sent: list[str], where: str) -> StopAttempt:
    via = " then ".join(f"SIG{name}" for name in sent)
    message = f"pid {pid}{where} stopped after {via}; verified gone."
    return StopAttempt(outcome=StopOutcome.STOPPED, verified=True, signals_sent=sent, pid=pid, message=message)


def _not_confirmed(pid: int, sent: list[str], grace_seconds: float, where: str) -> StopAttempt:
    message = (
        f"pid {pid} is still running{where} {grace_seconds:g} s after SIG{sent[-1]}; no KILL was sent "
        "(kill_after_grace is false). It may still be saving a checkpoint: check again later, "
        f"set kill_after_grace = true in training-check.toml, or run `kill -KILL {pid}`{where}."
    )
    return StopAttempt(outcome=StopOutcome.REQUESTED, verified=False, signals_sent=sent, pid=pid, message=message)


class _LocalProcess:
    """`ProcessControl` for a process on this machine."""

    where = ""

    def is_gone(self, pid: int) -> bool:
        return _is_gone(pid)

    def send(self, pid: int, name: str) -> bool:
        return _send(pid, SIGNALS[name])

    def refuse_reused(self, pid: int, pid_file: Path) -> None:
        _refuse_reused(pid, pid_file)

    def stuck_state(self, pid: int) -> str:
        return f" (state {_proc_state(pid) or '?'})"


# --------------------------------------------------------------------------- which pid, and may we


def signal_key(name: str) -> str:
    """``TERM``, ``INT`` or ``KILL`` from any spelling (``SIGTERM``, ``term``); else StopError."""
    key = name.strip().upper().removeprefix("SIG")
    if key not in SIGNALS:
        raise StopError(f"signal {name!r} is not one of {', '.join(SIGNALS)}; fix [runs.NAME.stop] signal.")
    return key


def _target_pid(pid: int | None, pid_file: Path | None) -> int:
    if pid_file is None:
        if pid is None:
            raise StopError(
                'no process to stop: set pid_file = "train.pid" (or pid = N) under [runs.NAME.stop] in '
                "training-check.toml, and have the training script write its pid there at start."
            )
        return checked_pid(pid, "[runs.NAME.stop] pid")
    from_file = _read_pid_file(pid_file)
    if pid is not None and pid != from_file:
        raise StopError(f"pid {pid} disagrees with pid file {pid_file} (holds {from_file}); give only one.")
    return from_file


def _read_pid_file(path: Path) -> int:
    """The pid written by the training script; anything else is an error that names the file, never its
    content (a pid file can be a symlink to a secret, e.g. /proc/self/environ)."""
    fix = (
        "point pid_file at a plain file the training script writes its pid to at start, "
        f"e.g. Path({str(path)!r}).write_text(str(os.getpid()))"
    )
    try:
        with open_regular(path, what="pid file", fix=fix) as handle:
            raw = handle.read(PID_FILE_MAX_BYTES + 1)
    except SourceError as exc:
        raise StopError(str(exc)) from exc
    except OSError as exc:
        raise StopError(str(describe_os_error(exc, path, what="pid file", fix=fix))) from exc
    return pid_from_bytes(raw, f"pid file {path}", fix)


def not_a_regular_file(what: str, mode: int, fix: str) -> str:
    kind = file_kind(mode)
    return f"{what} is {kind}, not a regular file (reading it could block); point pid_file at a plain file: {fix}."


def pid_from_bytes(raw: bytes, what: str, fix: str) -> int:
    """The pid in the first ``PID_FILE_MAX_BYTES + 1`` bytes read from a pid file, or an error that says
    what is wrong with it without showing any of it."""
    text = raw[:PID_FILE_MAX_BYTES].decode("ascii", errors="replace").strip()
    if len(raw) > PID_FILE_MAX_BYTES:
        problem = f"more than {PID_FILE_MAX_BYTES} bytes"
    elif not text:
        problem = "nothing" if not raw else "only white space"
    elif not (text.isdigit() and text.isascii()):
        problem = f"{len(raw)} bytes that are not a decimal number"
    else:
        return checked_pid(int(text), what)
    raise StopError(f"{what} holds {problem}, not a process id (its content is not shown); {fix}.")


def checked_pid(pid: int, what: str) -> int:
    """``pid`` when it can name a process (2 ≤ pid < 2^31, the kernel's pid_t); else StopError."""
    if pid <= 1 or pid > MAX_PID:
        raise StopError(
            f"{what} names pid {pid}, which no training process can have: process ids run from 2 to "
            f"{MAX_PID} (pid 1 is init, pid ≤ 0 addresses process groups). Fix the pid or the pid file."
        )
    return pid


def refuse_unsafe(pid: int, *, where: str = "", check: str = "the pid or pid file of the training run") -> None:
    """Never signal init or a process group; on this machine (``where`` empty) not ourselves, the agent
    that runs us, or our own group either. ``where`` (" on HOST") names another machine; ``check`` what to fix."""
    if pid <= 1:
        reason = "pid 1 is init and pid ≤ 0 addresses whole process groups"
    elif where:
        return
    elif pid == os.getpid():
        reason = "it is this training-check process itself"
    elif pid == os.getppid():
        reason = "it is the parent of this training-check process (the agent or shell that started it)"
    elif pid == os.getpgrp():
        reason = "it leads this training-check process's own process group"
    else:
        return
    raise StopError(f"refusing to signal pid {pid}{where}: {reason}. Check {check}.")


def _refuse_reused(pid: int, pid_file: Path) -> None:
    """A process younger than its pid file is not the one that wrote it: the pid was reused."""
    started = _start_time(pid)
    if started is None:
        return  # no /proc (not Linux) or the process just exited: nothing to compare
    written = pid_file.stat().st_mtime
    if started > written + START_TIME_SLACK_SECONDS:
        raise StopError(
            f"refusing to signal pid {pid}: it started at {time.ctime(started)}, after {pid_file} was "
            f"written at {time.ctime(written)}, so it is not the training run that wrote the file (the pid "
            "was reused by another program). That run has already ended; delete the stale pid file."
        )


def _send(pid: int, signum: signal.Signals) -> bool:
    """Send ``signum``; False when the process was already gone."""
    name = signum.name.removeprefix("SIG")
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return False
    except PermissionError as exc:
        owner = _owner(pid)
        me = pwd.getpwuid(os.getuid()).pw_name
        raise StopError(
            f"not allowed to send SIG{name} to pid {pid}: it belongs to {owner} and training-check runs as "
            f"{me}. Run training-check as the user who started the training, or run `kill -{name} {pid}` "
            "as that user."
        ) from exc
    return True


def _owner(pid: int) -> str:
    try:
        uid = (PROC / str(pid)).stat().st_uid
    except OSError:
        return "another user"
    try:
        return f"user {pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"uid {uid}"


# --------------------------------------------------------------------------- is it gone


def _is_gone(pid: int) -> bool:
    """Exited: reaped if it is our child, absent, or a zombie waiting for some other parent."""
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
        return reaped == pid  # our child: 0 means still running
    except ChildProcessError:
        pass  # not our child
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # exists, owned by someone else
    return _proc_state(pid) in GONE_STATES


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses)."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _proc_state(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[0] if fields else None


def _start_time(pid: int) -> float | None:
    """Process start as a Unix time: boot time + starttime (field 22, clock ticks since boot)."""
    fields = _stat_fields(pid)
    if not fields:
        return None
    ticks = int(fields[19])  # field 22; fields[0] is field 3 (state)
    for line in (PROC / "stat").read_text().splitlines():
        if line.startswith("btime "):
            return int(line.split()[1]) + ticks / os.sysconf("SC_CLK_TCK")
    return None
