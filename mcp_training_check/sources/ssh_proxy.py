"""ProxyJump and ProxyCommand of ``~/.ssh/config``, read as OpenSSH reads them (ssh_config(5)).

- ``ProxyJump a,b`` reaches the host through ``a`` and then ``b``: each hop is ``[user@]host[:port]`` (or
  ``ssh://[user@]host[:port]``), a host that is itself looked up in the config. As in OpenSSH (which runs
  ``ssh -J a -W %h:%p b``), only the first hop's own ProxyJump/ProxyCommand apply; later hops' are overridden.
- ``ProxyCommand`` runs through ``/bin/sh -c 'exec ...'`` as OpenSSH runs it, after its tokens ``%h`` (the
  HostName), ``%n`` (the host as given), ``%p``, ``%r`` and ``%%`` are expanded; any other token is refused,
  as OpenSSH refuses it.

A host name or user put into a ProxyCommand reaches a shell, and the host may come from a tool argument
(``ssh://HOST/path``), so each must look like a host name or a user name (OpenSSH 9.6 checks the same since
CVE-2023-51385); anything else is refused before a process starts.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import subprocess
import tempfile
import threading
from collections.abc import Mapping

import paramiko

__all__ = [
    "MAX_PROXY_DEPTH",
    "ProxyError",
    "ProxyProcess",
    "expand_proxy_command",
    "option",
    "split_jump_hops",
]

STDERR_SHOWN_BYTES = 1000  # of a failed ProxyCommand's stderr, in the error
PROXY_EXIT_SECONDS = 5.0  # a ProxyCommand asked to end gets this long before KILL
MAX_PROXY_DEPTH = 8
"""Jump hosts reached through jump hosts, at most: deeper is taken for a loop in the config (a chain of
8 bastions is already far past what clusters use)."""

_HOST_NAME = re.compile(r"[A-Za-z0-9_.:\[\]-]+")
_USER_NAME = re.compile(r"[A-Za-z0-9_.@-]+")
_TOKEN = re.compile(r"%(.?)")
_PROXY_COMMAND_TOKENS = "hnpr%"


class ProxyError(ValueError):
    """A ProxyJump or ProxyCommand that cannot be used; the message names the value and the fix."""


def split_jump_hops(value: str) -> list[str]:
    """``a,user@b:2222,ssh://c`` → the hops in order, each ``[user@]host[:port]``."""
    hops = [hop.strip().removeprefix("ssh://").rstrip("/") for hop in value.split(",")]
    if not all(hops):
        raise ProxyError(f"ProxyJump {value!r} has an empty hop; write hops as host1,user@host2:port")
    for hop in hops:
        if any(ch.isspace() for ch in hop) or hop.startswith("-"):
            raise ProxyError(f"ProxyJump hop {hop!r} is not [user@]host[:port]")
    return hops


def expand_proxy_command(command: str, *, hostname: str, host: str, port: int, user: str) -> str:
    """``command`` with %h %n %p %r %% replaced; the names are checked first (they reach a shell)."""
    values = {"h": hostname, "n": host, "p": str(port), "r": user, "%": "%"}
    for token, value in (("h", hostname), ("n", host)):
        if f"%{token}" in command and (not _HOST_NAME.fullmatch(value) or value.startswith("-")):
            raise ProxyError(f"host name {value!r} is not safe to put into ProxyCommand (%{token}); use a plain name")
    if "%r" in command and (not _USER_NAME.fullmatch(user) or user.startswith("-")):
        raise ProxyError(f"user name {user!r} is not safe to put into ProxyCommand (%r); use a plain name")

    def replace(match: re.Match[str]) -> str:
        token = match.group(1)
        if token not in _PROXY_COMMAND_TOKENS or not token:
            raise ProxyError(
                f"ProxyCommand {command!r} uses %{token}, which ssh does not expand there (only %h %n %p %r %%)"
            )
        return values[token]

    return _TOKEN.sub(replace, command)


def option(options: Mapping[str, object], key: str) -> str | None:
    """A ProxyJump/ProxyCommand value of a paramiko lookup; None when unset or ``none``."""
    value = options.get(key)
    if not isinstance(value, str) or value.strip().lower() == "none":
        return None
    return value.strip()


class ProxyProcess(paramiko.ProxyCommand):
    """`paramiko.ProxyCommand` run through ``/bin/sh``, with three fixes: its stderr goes to a file (a
    chatty command cannot block on a full pipe, and a failure can say what it printed); the end of its
    output is end of file at once (paramiko's own ``recv`` spins until the timeout); ``close`` reaps it."""

    def __init__(self, command: str) -> None:  # paramiko's __init__ is replaced, not extended
        self.command = command
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self.cmd = ["/bin/sh", "-c", f"exec {command}"]
        self.process = subprocess.Popen(
            self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, bufsize=0
        )
        self.timeout: float | None = None
        self._at_end = False
        self._ended: str | None = None
        self._closing = threading.Lock()

    def recv(self, size: int) -> bytes:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], self.timeout)
        if not ready:
            raise TimeoutError()  # what socket.timeout is now
        data = os.read(fd, size)
        self._at_end = not data  # paramiko raises EOFError
        return data

    def close(self) -> None:
        with self._closing:  # paramiko's transport thread and the caller may both close it
            if not self._stderr.closed:
                self._close()

    def _close(self) -> None:
        if self._at_end:  # it closed its output: it is ending by itself
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(PROXY_EXIT_SECONDS)
        if self.process.poll() is not None:
            self._ended = self._how_it_ended()
        else:
            self.process.terminate()
            try:
                self.process.wait(PROXY_EXIT_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self._stderr):
            if stream is not None:
                stream.close()

    def failure(self) -> str | None:
        """How the command ended by itself, with the end of its stderr; None when it did not."""
        with self._closing:
            if not self._stderr.closed and self.process.poll() is not None:
                return self._how_it_ended()
            return self._ended

    def _how_it_ended(self) -> str:
        self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, self._stderr.tell() - STDERR_SHOWN_BYTES))
        said = self._stderr.read().decode("utf-8", "replace").strip()
        return f"exit status {self.process.returncode}" + (f", it said: {said}" if said else ", nothing on stderr")
