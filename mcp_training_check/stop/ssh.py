"""Stop a training process on another machine over SSH, with the care `local.stop_local_process` takes.

`stop_remote_process` connects (``sources.ssh_connect``: ~/.ssh/config, known_hosts, bounded timeouts),
reads the pid (from the config, or a pid file on that host), sends one signal with ``kill``, polls until
the process is gone or ``grace_seconds`` pass, escalates to KILL when allowed, and reports whether the
process is verifiably gone. Every command is built from constants and the pid, which is an integer
validated here and still passed through `shlex.quote`.

- A pid file is read over SFTP, or, on a host whose sshd has no SFTP subsystem (found once per
  connection, as the log reader finds it), through one exec'd ``sh -c`` (``sources.ssh_exec.stat_file``:
  the path its one quoted argument). Either way it is stat'ed first and refused unless it is a regular
  file (a FIFO would block the read), read bounded (``PID_FILE_MAX_BYTES + 1``), and its content is never
  shown in an error.

- It never signals pid 0, 1 or a negative pid (process groups, init).
- A pid read from a pid file is refused when the process started after the file was written (PID reuse;
  read from ``/proc`` on that host; skipped where there is no ``/proc``).
- "Gone" is decided by one small POSIX ``sh`` probe per poll: ``kill -0`` fails and no ``/proc/<pid>``
  entry exists, or the process is a zombie (it has stopped running and only waits for its parent).
  ``kill -0`` also fails for a live process of another user; the probe tells that apart, so the error
  can say whose process it is.
"""

from __future__ import annotations

import shlex
import stat
import time

import paramiko

from ..errors import StopError
from ..sources import ssh_exec
from ..sources.ssh_connect import SshTarget, resolve_target, run_remote, run_remote_script, ssh_client
from .local import (
    GONE_STATES,
    PID_FILE_MAX_BYTES,
    START_TIME_SLACK_SECONDS,
    StopAttempt,
    checked_pid,
    escalate,
    not_a_regular_file,
    pid_from_bytes,
    refuse_unsafe,
    signal_key,
)

__all__ = ["REMOTE_POLL_SECONDS", "stop_remote_process"]

REMOTE_POLL_SECONDS = 0.5
"""Pause between liveness probes: each one is a command on the remote host (a round trip or two)."""

# Prints "alive <state>", "foreign <user>" or "gone" for the pid in $1 (POSIX sh, dash and busybox too).
_PROBE = r"""p=$1
if kill -0 "$p" 2>/dev/null; then
  s=$(cat /proc/"$p"/stat 2>/dev/null); s=${s##*) }; echo "alive ${s%% *}"
elif [ -e /proc/"$p" ] || ps -p "$p" >/dev/null 2>&1; then
  echo "foreign $(ps -o user= -p "$p" 2>/dev/null)"
else
  echo gone
fi"""
_PID_FILE_FIX = "the training script should write its pid there at start (Path(...).write_text(str(os.getpid())))"
_NOT_REGULAR_MODES = {"directory": stat.S_IFDIR, "fifo": stat.S_IFIFO, "special": 0}


def stop_remote_process(
    host: str,
    *,
    pid: int | None,
    pid_file: str | None,
    signal_name: str = "TERM",
    grace_seconds: float = 30,
    kill_after_grace: bool = True,
    timeout_seconds: float = 10,
    poll_seconds: float = REMOTE_POLL_SECONDS,
) -> StopAttempt:
    """Signal the process on ``host`` (``[user@]host[:port]``), wait, KILL if allowed, verify it is gone.

    Raises `StopError` when the host cannot be reached, the pid is missing, unsafe or reused, or the
    process may not be signalled.
    """
    first = signal_key(signal_name)
    target = resolve_target(host, StopError)
    with ssh_client(target, timeout_seconds=timeout_seconds, error=StopError) as client:
        remote = _Remote(client, target, timeout_seconds)
        return remote.stop(
            remote.target_pid(pid, pid_file),
            first,
            grace_seconds=grace_seconds,
            kill_after_grace=kill_after_grace,
            poll_seconds=poll_seconds,
            pid_file=pid_file,
        )


class _Remote:
    """One connection to the training host, and the steps of a stop over it."""

    def __init__(self, client: paramiko.SSHClient, target: SshTarget, timeout_seconds: float) -> None:
        self.client = client
        self.target = target
        self.timeout_seconds = timeout_seconds
        self.where = f" on {target.where}"  # as `ProcessControl.where`: appended to "pid N"
        self._sftp_client: paramiko.SFTPClient | None = None
        self._sftp_asked = False

    def stop(
        self,
        pid: int,
        first: str,
        *,
        grace_seconds: float,
        kill_after_grace: bool,
        poll_seconds: float,
        pid_file: str | None,
    ) -> StopAttempt:
        refuse_unsafe(pid, where=self.where)
        checked_pid(pid, f"[runs.NAME.stop] pid{self.where}")
        return escalate(
            self,
            pid,
            first,
            grace_seconds=grace_seconds,
            kill_after_grace=kill_after_grace,
            poll_seconds=poll_seconds,
            pid_file=pid_file,
        )

    def stuck_state(self, pid: int) -> str:
        return ""  # the probe tells alive from gone, not the kernel state

    # ----------------------------------------------------------------------- which pid

    def target_pid(self, pid: int | None, pid_file: str | None) -> int:
        if pid_file is None:
            if pid is None:
                raise StopError(
                    'no process to stop: set pid_file = "/path/on/that/host/train.pid" (or pid = N) under '
                    "[runs.NAME.stop] in training-check.toml, and have the training script write its pid there."
                )
            return pid
        from_file = self.read_pid_file(pid_file)
        if pid is not None and pid != from_file:
            raise StopError(f"pid {pid} disagrees with pid file {pid_file}{self.where} (holds {from_file}).")
        return from_file

    def read_pid_file(self, path: str) -> int:
        sftp = self._sftp()
        raw = self._read_sftp(sftp, path) if sftp is not None else self._stat_exec(path, PID_FILE_MAX_BYTES + 1).head
        return pid_from_bytes(raw, f"pid file {path}{self.where}", _PID_FILE_FIX)

    def _read_sftp(self, sftp: paramiko.SFTPClient, path: str) -> bytes:
        try:
            mode = sftp.stat(path).st_mode or 0
            if not stat.S_ISREG(mode):  # a FIFO would hang the remote sftp server's read
                raise StopError(not_a_regular_file(f"pid file {path}{self.where}", mode, _PID_FILE_FIX))
            with sftp.open(path, "rb") as handle:
                return handle.read(PID_FILE_MAX_BYTES + 1)
        except FileNotFoundError as exc:
            raise StopError(f"pid file {path} does not exist{self.where}; {_PID_FILE_FIX}.") from exc
        except OSError as exc:
            raise StopError(f"pid file {path} cannot be read{self.where} ({exc.strerror or exc}).") from exc

    def _stat_exec(self, path: str, head_bytes: int) -> ssh_exec.RemoteFile:
        """The pid file through exec (no SFTP on the host): stat, and ``head`` only on a regular file."""
        try:
            return ssh_exec.stat_file(self.client, path, head_bytes=head_bytes, timeout_seconds=self.timeout_seconds)
        except ssh_exec.RemoteFileError as exc:
            raise StopError(self._pid_file_problem(path, exc)) from exc

    def _pid_file_problem(self, path: str, exc: ssh_exec.RemoteFileError) -> str:
        what = f"pid file {path}{self.where}"
        if exc.kind == "missing":
            return f"pid file {path} does not exist{self.where}; {_PID_FILE_FIX}."
        if exc.kind in _NOT_REGULAR_MODES:
            return not_a_regular_file(what, _NOT_REGULAR_MODES[exc.kind], _PID_FILE_FIX)
        if exc.kind == "denied":
            return f"{what} cannot be read (permission denied for {self.target.user}); check its permissions."
        return (
            f"{what} cannot be read: the host has no SFTP subsystem and its shell gave no usable `stat`; enable "
            "`Subsystem sftp` in its sshd_config, or give pid = N under [runs.NAME.stop] instead of pid_file."
        )

    def refuse_reused(self, pid: int, pid_file: str) -> None:
        """A process younger than its pid file is not the one that wrote it: the pid was reused."""
        started = self._start_time(pid)
        if started is None:
            return  # no /proc there, or the process just exited: nothing to compare
        sftp = self._sftp()
        written = (sftp.stat(pid_file).st_mtime or 0) if sftp is not None else self._stat_exec(pid_file, 0).mtime
        if started > written + START_TIME_SLACK_SECONDS:
            raise StopError(
                f"refusing to signal pid {pid}{self.where}: it started at {time.ctime(started)}, after {pid_file} "
                f"was written at {time.ctime(written)}, so it is not the training run that wrote the file (the pid "
                "was reused by another program). That run has already ended; delete the stale pid file."
            )

    def _start_time(self, pid: int) -> float | None:
        """Process start as a Unix time: boot time + starttime (field 22 of /proc/<pid>/stat, in ticks)."""
        script = f"cat /proc/{shlex.quote(str(pid))}/stat && grep '^btime ' /proc/stat && getconf CLK_TCK"
        result = run_remote_script(self.client, script, timeout_seconds=self.timeout_seconds)
        lines = result.stdout.splitlines()
        if result.exit_status != 0 or len(lines) != 3:
            return None
        fields = lines[0][lines[0].rindex(")") + 2 :].split()
        return int(lines[1].split()[1]) + int(fields[19]) / int(lines[2])

    # ----------------------------------------------------------------------- signals

    def send(self, pid: int, name: str) -> bool:
        """Send SIG``name``; False when the process was already gone."""
        result = run_remote(self.client, ["kill", f"-{name}", str(pid)], timeout_seconds=self.timeout_seconds)
        if result.exit_status == 0:
            return True
        state = self._probe(pid)
        if state.startswith("foreign"):
            owner = state.removeprefix("foreign").strip() or "another user"
            raise StopError(
                f"not allowed to send SIG{name} to pid {pid}{self.where}: it belongs to {owner} and we log in "
                f"as {self.target.user}. Log in as the user who started the training (User in ~/.ssh/config or "
                f"ssh://user@host/...), or run `kill -{name} {pid}` there as that user."
            )
        if self.is_gone(pid):
            return False
        raise StopError(f"`kill -{name} {pid}` failed{self.where}: {result.stderr or result.stdout or 'no output'}.")

    def is_gone(self, pid: int) -> bool:
        """Gone, or a zombie (``alive Z``: it has stopped running and only waits for its parent)."""
        word, _, state = self._probe(pid).partition(" ")
        return word == "gone" or (word == "alive" and state.strip() in GONE_STATES)

    def _probe(self, pid: int) -> str:
        script = f"sh -c {shlex.quote(_PROBE)} probe {shlex.quote(str(pid))}"
        result = run_remote_script(self.client, script, timeout_seconds=self.timeout_seconds)
        if not result.stdout:
            raise StopError(
                f"cannot tell whether pid {pid} runs{self.where}: the probe printed nothing "
                f"({result.stderr or 'no error output'}); the account needs a POSIX shell."
            )
        return result.stdout

    def _sftp(self) -> paramiko.SFTPClient | None:
        """The connection's SFTP session; None when the host has none (asked once per connection)."""
        if not self._sftp_asked:
            self._sftp_asked = True
            self._sftp_client = ssh_exec.open_sftp_or_none(self.client)
            if self._sftp_client is not None:
                self._sftp_client.get_channel().settimeout(self.timeout_seconds)  # type: ignore[union-attr]
        return self._sftp_client
