"""Stop what holds the training rather than one pid: a tmux session (or window), a screen session, a Slurm job
(``stop.slurm``) or a command written in the config, on this machine or the run's SSH host (``stop.hosts``).

Every target goes through the same sequence as a pid (`escalate_target`): send the configured signal to the
processes it holds, wait up to ``grace_seconds`` for the target to be gone, send KILL when allowed, and
report whether it is verifiably gone:

- tmux: the pane processes (``list-panes -F '#{pane_pid}'``) and every process under them; gone when
  the session (or window) no longer exists. A pane's *interactive* shell ignores TERM, so a training typed
  into a shell in the pane ends on TERM but the session ends only on the KILL after the grace period;
  ``tmux new -d -s NAME python train.py`` ends on TERM alone.
- screen: the processes under the session's SCREEN process (its pid from ``screen -ls``); gone when no
  live session of that name is listed.
- command: ``command`` (``{signal}`` replaced by TERM, INT or KILL) sends the signal; gone when ``check``
  exits non-zero (it exits 0 while the training still runs).

Names come only from the config, matched against strict patterns there, and reach programs as single argv
entries (quoted with `shlex.quote` over SSH); no shell ever parses them here.
"""

from __future__ import annotations

import re
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..config.schema import StopSettings
from ..errors import StopError
from ..models import StopOutcome
from .escalation import Ending, escalate_signals
from .hosts import Host, alive, descendants

__all__ = ["TargetAttempt", "escalate_target", "make_target"]

KILL_CONFIRM_SECONDS = 5.0
"""After SIGKILL a process ends at once unless stuck in the kernel; a session closes right after its panes."""


class TargetAttempt(BaseModel):
    """What happened to the target; ``verified`` is True only when it is known to be gone."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    outcome: StopOutcome
    verified: bool
    signals_sent: list[str] = Field(default_factory=list)
    target: str
    pids: list[int] = Field(default_factory=list, description="Processes that received a signal.")
    message: str


class Target(Protocol):
    host: Host
    what: str  # "tmux session 'exp1' on gpu-box", as shown in messages and the incident
    confirm_seconds: float  # how long after KILL the target may take to disappear
    pids: list[int]  # processes signalled so far

    def present(self) -> bool: ...

    def signal(self, name: str) -> bool:
        """Send SIG``name`` to what the target holds; False when nothing received it."""
        ...


def make_target(host: Host, stop: StopSettings) -> Target:
    """The target ``[runs.NAME.stop]`` names, on ``host``."""
    if stop.method == "tmux":
        assert stop.session is not None
        return TmuxTarget(host, stop.session, stop.window)
    if stop.method == "screen":
        assert stop.session is not None
        return ScreenTarget(host, stop.session)
    if stop.method == "command":
        assert stop.command is not None and stop.check is not None
        return CommandTarget(host, stop.command, stop.check)
    if stop.method == "slurm":
        from .slurm import SlurmTarget

        return SlurmTarget(host, job_id=stop.job_id, job_name=stop.job_name)
    raise StopError(f'method = "{stop.method}" is not a stop target')


def escalate_target(
    target: Target, first: str, *, grace_seconds: float, kill_after_grace: bool, poll_seconds: float
) -> TargetAttempt:
    """SIG``first`` to what the target holds, wait up to ``grace_seconds``, KILL if allowed, verify it is gone."""
    what = target.what
    if not target.present():
        return _attempt(target, StopOutcome.ALREADY_STOPPED, True, [], f"{what} is not running; nothing was sent")
    done = escalate_signals(
        lambda: not target.present(), target.signal, first, grace_seconds=grace_seconds,
        kill_after_grace=kill_after_grace, poll_seconds=poll_seconds, confirm_seconds=target.confirm_seconds,
    )  # fmt: skip
    sent = done.sent
    if done.ending is Ending.GONE:
        return _attempt(target, StopOutcome.STOPPED, True, sent, f"{what} stopped after SIG{first}; verified gone")
    if done.ending is Ending.NOT_KILLED:
        why = "" if first == "KILL" else " and kill_after_grace is false"
        return _attempt(
            target, StopOutcome.REQUESTED, False, sent,
            f"{what} is still there {grace_seconds:g} s after SIG{first}{why}; it may still be saving: check it, "
            "and stop it by hand if it does not end",
        )  # fmt: skip
    if done.ending is Ending.KILLED:
        return _attempt(target, StopOutcome.STOPPED, True, sent, f"{what} stopped after SIGKILL; verified gone")
    signalled = f" (pids signalled: {', '.join(map(str, target.pids))})" if target.pids else ""
    return _attempt(
        target, StopOutcome.FAILED, False, sent,
        f"{what} is still there {target.confirm_seconds:g} s after SIGKILL{signalled}: a process stuck in the "
        "kernel (usually on I/O) or one the target does not hold; look at it by hand",
    )  # fmt: skip


def _attempt(target: Target, outcome: StopOutcome, verified: bool, sent: list[str], message: str) -> TargetAttempt:
    return TargetAttempt(
        outcome=outcome, verified=verified, signals_sent=sent, target=target.what, pids=target.pids, message=message
    )


def _not_installed(program: str, host: Host) -> StopError:
    return StopError(f"`{program}` is not installed{host.where} (or not on the PATH), so the target cannot be reached.")


# --------------------------------------------------------------------------- tmux


_TMUX_ABSENT = ("can't find", "no server running", "error connecting", "no current", "server exited")
"""tmux's words for "no such session": also a server that exits as its last session closes."""


class TmuxTarget:
    """A tmux session, or one window of it (names matched exactly: tmux's ``=`` prefix)."""

    confirm_seconds = KILL_CONFIRM_SECONDS

    def __init__(self, host: Host, session: str, window: str | None) -> None:
        self.host = host
        self.pids: list[int] = []
        if window is None:
            self._list = ["tmux", "list-panes", "-s", "-t", f"={session}", "-F", "#{pane_pid}"]
            self.what = f"tmux session {session!r}{host.where}"
        else:
            self._list = ["tmux", "list-panes", "-t", f"={session}:={window}", "-F", "#{pane_pid}"]
            self.what = f"tmux window {window!r} of session {session!r}{host.where}"

    def pane_pids(self) -> list[int]:
        """The pane processes; empty when the session (or window) does not exist."""
        result = self.host.run(self._list)
        if result.exit_status == 127:
            raise _not_installed("tmux", self.host)
        if result.exit_status != 0:
            if any(text in result.stderr for text in _TMUX_ABSENT):
                return []
            raise StopError(f"`{' '.join(self._list)}` failed{self.host.where}: {result.stderr or 'no output'}")
        return [int(line) for line in result.stdout.split() if line.isdigit()]

    def present(self) -> bool:
        return bool(self.pane_pids())

    def signal(self, name: str) -> bool:
        panes = self.pane_pids()
        table = self.host.processes()
        tree = [pid for pid in panes if alive(table, pid)] + descendants(table, panes)
        return _send(self, tree, name)


def _send(target: Target, pids: list[int], name: str) -> bool:
    reached = target.host.signal(pids, name)
    target.pids.extend(pid for pid in reached if pid not in target.pids)
    return bool(reached)


# --------------------------------------------------------------------------- screen


class ScreenTarget:
    """Every live screen session named exactly ``session`` (screen allows several of one name)."""

    confirm_seconds = KILL_CONFIRM_SECONDS

    def __init__(self, host: Host, session: str) -> None:
        self.host = host
        self.session = session
        self.pids: list[int] = []
        self.what = f"screen session {session!r}{host.where}"
        self._line = re.compile(rf"^\s*(\d+)\.{re.escape(session)}\s", re.MULTILINE)

    def session_pids(self, table: dict[int, tuple[int, str]]) -> list[int]:
        """The SCREEN processes of the live sessions with that name (a "Dead" socket is not one)."""
        result = self.host.run(["screen", "-ls"])
        if result.exit_status == 127:
            raise _not_installed("screen", self.host)
        return [int(pid) for pid in self._line.findall(result.stdout) if alive(table, int(pid))]

    def present(self) -> bool:
        return bool(self.session_pids(self.host.processes()))

    def signal(self, name: str) -> bool:
        table = self.host.processes()
        sessions = self.session_pids(table)
        windows = descendants(table, sessions)
        # SCREEN closes the session when its windows' processes exit; killing SCREEN itself would leave a
        # dead socket behind, so it is signalled only when it holds no process any more
        return _send(self, windows or sessions, name)


# --------------------------------------------------------------------------- command


class CommandTarget:
    """``command`` signals the training (``{signal}`` → TERM/INT/KILL); ``check`` exits 0 while it runs."""

    confirm_seconds = KILL_CONFIRM_SECONDS

    def __init__(self, host: Host, command: list[str], check: list[str]) -> None:
        self.host = host
        self.command = command
        self.check = check
        self.pids: list[int] = []
        self.what = f"the training behind `{' '.join(check)}`{host.where}"

    def present(self) -> bool:
        result = self.host.run(self.check)
        if result.exit_status == 127:
            raise _not_installed(self.check[0], self.host)
        return result.exit_status == 0

    def signal(self, name: str) -> bool:
        argv = [arg.replace("{signal}", name) for arg in self.command]
        result = self.host.run(argv)
        if result.exit_status == 127:
            raise _not_installed(argv[0], self.host)
        if result.exit_status == 0:
            return True
        if not self.present():
            return False
        raise StopError(
            f"the stop command `{' '.join(argv)}` exited {result.exit_status}{self.host.where}: "
            f"{result.stderr or result.stdout.strip() or 'no output'}; fix command in [runs.NAME.stop]."
        )
