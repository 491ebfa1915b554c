"""Where a stop target's commands run: this machine (`LocalHost`) or the run's SSH host (``remote.RemoteHost``).

A target (``stop.targets``, ``stop.slurm``) only ever hands a host an argv list built from constants and
config values that passed the schema's strict patterns. `LocalHost` runs it without a shell; the remote
host quotes every argument with `shlex.quote`. Signals go to pids the host itself reported (a process
tree read with ``ps``), never to pid 0, 1 or a negative pid, nor (here) to this process or its parents.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from typing import Protocol

from ..errors import StopError
from .local import GONE_STATES, SIGNALS, refuse_unsafe

__all__ = ["CommandResult", "Host", "LocalHost", "descendants", "parse_ps"]

LOCAL_COMMAND_TIMEOUT_SECONDS = 30.0
"""A tmux/screen/squeue/scancel call answers in well under a second; this only bounds a hung one."""
OUTPUT_MAX_CHARS = 64_000
PS_ARGV = ["ps", "-A", "-o", "pid=", "-o", "ppid=", "-o", "stat="]
"""Every process with its parent and state, in the POSIX ``ps`` format procps and busybox both accept."""
TARGET_CHECK = "the target in [runs.NAME.stop]"
"""What to fix when a target holds a process that must never be signalled (`local.refuse_unsafe`)."""


@dataclass(frozen=True)
class CommandResult:
    exit_status: int
    stdout: str
    stderr: str


class Host(Protocol):
    """What a stop target needs of the machine it lives on."""

    where: str  # "" for this machine, " on HOST" for another

    def run(self, argv: list[str]) -> CommandResult:
        """Run ``argv`` (no shell); exit status 127 when the program is not installed."""
        ...

    def processes(self) -> dict[int, tuple[int, str]]:
        """pid → (parent pid, state) of every running process."""
        ...

    def signal(self, pids: list[int], name: str) -> list[int]:
        """Send SIG``name`` to each pid; the pids that were still there to receive it."""
        ...


class LocalHost:
    """This machine: programs run without a shell, signals sent with ``os.kill``."""

    where = ""

    def __init__(self, timeout_seconds: float = LOCAL_COMMAND_TIMEOUT_SECONDS) -> None:
        self.timeout_seconds = timeout_seconds

    def run(self, argv: list[str]) -> CommandResult:
        try:
            done = subprocess.run(  # an argv list, never a shell
                argv, capture_output=True, text=True, errors="replace", timeout=self.timeout_seconds, check=False
            )
        except FileNotFoundError:
            return CommandResult(127, "", f"{argv[0]}: not found")
        except subprocess.TimeoutExpired as exc:
            raise StopError(f"`{' '.join(argv)}` did not finish within {self.timeout_seconds:g} s.") from exc
        return CommandResult(done.returncode, done.stdout[:OUTPUT_MAX_CHARS], done.stderr[:OUTPUT_MAX_CHARS].strip())

    def processes(self) -> dict[int, tuple[int, str]]:
        return parse_ps(self._ps())

    def _ps(self) -> str:
        result = self.run(PS_ARGV)
        if result.exit_status != 0:
            raise StopError(f"`ps` failed ({result.stderr or result.exit_status}); install procps.")
        return result.stdout

    def signal(self, pids: list[int], name: str) -> list[int]:
        reached = []
        for pid in pids:
            refuse_unsafe(pid, check=TARGET_CHECK)
            try:
                os.kill(pid, SIGNALS[name])
            except ProcessLookupError:
                continue
            except PermissionError as exc:
                raise StopError(
                    f"not allowed to send SIG{name} to pid {pid}: run training-check as the user who started the "
                    "training."
                ) from exc
            reached.append(pid)
        return reached


def parse_ps(text: str) -> dict[int, tuple[int, str]]:
    """``ps -o pid= -o ppid= -o stat=`` lines → pid → (parent, state); lines that are not three fields are skipped."""
    table: dict[int, tuple[int, str]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[0].isdigit() and fields[1].isdigit():
            table[int(fields[0])] = (int(fields[1]), fields[2])
    return table


def alive(table: dict[int, tuple[int, str]], pid: int) -> bool:
    """Listed and not a zombie (a zombie has stopped running and only waits for its parent)."""
    entry = table.get(pid)
    return entry is not None and not entry[1].startswith(GONE_STATES)


def descendants(table: dict[int, tuple[int, str]], roots: list[int]) -> list[int]:
    """Every live process under ``roots`` (not the roots themselves), parents before children."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    queue = list(roots)
    while queue:
        for child in sorted(children.get(queue.pop(0), [])):
            if child not in found and child not in roots:
                found.append(child)
                queue.append(child)
    return [pid for pid in found if alive(table, pid)]
