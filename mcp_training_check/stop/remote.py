"""The run's SSH host as a `hosts.Host`: argv lists run over one SSH connection, every argument quoted.

Connecting is ``sources.ssh_connect``'s (~/.ssh/config, known_hosts, bounded timeouts); this module only
adds "run this argv there" for the stop targets (imported only when a target has ``remote = true``).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager

import paramiko

from ..errors import StopError
from ..sources.ssh_connect import SshTarget, resolve_target, run_remote, run_remote_script, ssh_client
from .hosts import PS_ARGV, TARGET_CHECK, CommandResult, parse_ps
from .local import refuse_unsafe

__all__ = ["RemoteHost", "remote_host"]

# Sends SIG$1 to each later argument and prints the pids that received it (POSIX sh, dash and busybox too).
_SIGNAL_EACH = r"""s=$1; shift
for p in "$@"; do kill -s "$s" "$p" 2>/dev/null && echo "$p"; done; exit 0"""


@contextmanager
def remote_host(host: str, *, timeout_seconds: float) -> Iterator[RemoteHost]:
    """One connection to ``host`` (``[user@]host[:port]``) for the length of a stop."""
    target = resolve_target(host, StopError)
    with ssh_client(target, timeout_seconds=timeout_seconds, error=StopError) as client:
        yield RemoteHost(client, target, timeout_seconds)


class RemoteHost:
    def __init__(self, client: paramiko.SSHClient, target: SshTarget, timeout_seconds: float) -> None:
        self.client = client
        self.target = target
        self.timeout_seconds = timeout_seconds
        self.where = f" on {target.where}"

    def run(self, argv: list[str]) -> CommandResult:
        result = run_remote(self.client, argv, timeout_seconds=self.timeout_seconds)
        return CommandResult(result.exit_status, result.stdout, result.stderr)

    def processes(self) -> dict[int, tuple[int, str]]:
        result = self.run(PS_ARGV)
        if result.exit_status != 0:
            raise StopError(f"`ps` failed{self.where} ({result.stderr or result.exit_status}); install procps there.")
        return parse_ps(result.stdout)

    def signal(self, pids: list[int], name: str) -> list[int]:
        for pid in pids:
            refuse_unsafe(pid, where=self.where, check=TARGET_CHECK)
        if not pids:
            return []
        args = " ".join(shlex.quote(str(arg)) for arg in (name, *pids))
        script = f"sh -c {shlex.quote(_SIGNAL_EACH)} signal {args}"
        result = run_remote_script(self.client, script, timeout_seconds=self.timeout_seconds)
        return [int(line) for line in result.stdout.split() if line.isdigit()]
