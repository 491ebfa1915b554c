"""A remote log read through exec channels, for hosts whose sshd has no SFTP subsystem (``ssh host tail``
works there, SFTP says "Channel closed").

One command asks what the file is (size, inode and device from ``stat``, then its first ``HEAD_BYTES``
from ``head``); each window of bytes is ``tail -c +OFFSET -- PATH | head -c LENGTH``. The path is always
``shlex.quote``-d and every other word is a constant or an integer, so no part of a path reaches the shell
as anything but one argument. The windows come out as a file-like object for ``logs.read_open_log``, so
cursor, rotation and truncation checks, the partial last line and a long log's tail-first first read are
those of the SFTP and local readers.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeAlias

import paramiko

from ..errors import RunNotFound, SourceUnavailable
from .logs import CHUNK_BYTES, HEAD_BYTES
from .ssh_connect import SshTarget

__all__ = ["EXEC_TRANSPORT_NOTE", "RemoteFile", "WindowFetch", "exec_window", "stat_remote"]

EXEC_TRANSPORT_NOTE = (
    "read through an exec channel (stat, tail -c, head -c): {host} has no SFTP subsystem "
    "(no `Subsystem sftp` in its sshd_config)"
)
STATUS_LINE_MAX_BYTES = 200  # "ok SIZE INODE DEV\n"

WindowFetch: TypeAlias = Callable[[int, int], Iterator[bytes]]
"""``fetch(start, stop)``: the file's bytes [start, stop) in pieces (fewer when it shrank meanwhile)."""


@dataclass(frozen=True)
class RemoteFile:
    size: int
    inode: int
    dev: int
    head: bytes


def _stat_script(path: str) -> str:
    """Prints one status line (ok SIZE INODE DEV | missing | directory | denied | nostat), then on ok the
    file's first HEAD_BYTES. GNU stat, then BSD stat. Run by ``sh`` whatever the login shell is (fish and
    csh parse ``if [ ... ]; then`` differently); the path reaches it as its one argument ``$1``."""
    script = (
        'if [ -d "$1" ]; then echo directory; elif [ ! -e "$1" ]; then echo missing; '
        'elif [ ! -r "$1" ]; then echo denied; '
        "elif s=$(stat -L -c '%s %i %d' -- \"$1\" 2>/dev/null || stat -L -f '%z %i %d' -- \"$1\" 2>/dev/null); "
        f'then echo "ok $s" && head -c {HEAD_BYTES} -- "$1"; '
        "else echo nostat; fi"
    )
    return f"sh -c {shlex.quote(script)} sh {shlex.quote(path)}"


def stat_remote(client: paramiko.SSHClient, path: str, target: SshTarget, *, timeout_seconds: float) -> RemoteFile:
    """Size, inode, device and head of ``path``, or the error naming what is wrong with it."""
    out = b"".join(_exec(client, _stat_script(path), STATUS_LINE_MAX_BYTES + HEAD_BYTES, timeout_seconds))
    status, _, head = out.partition(b"\n")
    words = status.decode("utf-8", "replace").split()
    where = f"{path} on {target.where}"
    if words[:1] == ["ok"] and len(words) == 4 and all(w.isdigit() for w in words[1:]):
        size, inode, dev = (int(w) for w in words[1:])
        return RemoteFile(size=size, inode=inode, dev=dev, head=head[:HEAD_BYTES])
    if words == ["missing"]:
        raise RunNotFound(
            f"no log file {where}: check the path (absolute, as in ssh://host/abs/path/train.log), e.g. with "
            f"`{target.ssh_command.removesuffix(' true')} ls -l {shlex.quote(path)}`."
        )
    if words == ["directory"]:
        raise RunNotFound(f"{where} is a directory, not a log file: name the log file inside it, e.g. train.log.")
    if words == ["denied"]:
        raise SourceUnavailable(
            f"cannot read {where}: permission denied for {target.user}; make the log readable by that user "
            "(chmod o+r, or log in as the training user)."
        )
    raise SourceUnavailable(
        f"cannot read {where}: the host has no SFTP subsystem and its shell gave no usable `stat` "
        f"(it answered {status[:80]!r}); enable `Subsystem sftp` in its sshd_config, or set log_fallback."
    )


def exec_window(client: paramiko.SSHClient, path: str, *, timeout_seconds: float) -> WindowFetch:
    """Bytes [start, stop) of ``path``, streamed in pieces: ``tail -c +N | head -c LENGTH``."""

    def fetch(start: int, stop: int) -> Iterator[bytes]:
        script = f"tail -c +{start + 1} -- {shlex.quote(path)} | head -c {stop - start}"
        return _exec(client, script, stop - start, timeout_seconds)

    return fetch


def _exec(client: paramiko.SSHClient, script: str, limit: int, timeout_seconds: float) -> Iterator[bytes]:
    """stdout of ``script`` up to ``limit`` bytes, in pieces; the channel is closed when done or abandoned.
    Raises ``TimeoutError`` (translated by ``ssh_errors``) when the host stops answering."""
    transport = client.get_transport()
    assert transport is not None  # connected by ssh_client
    channel = transport.open_session(timeout=timeout_seconds)
    try:
        channel.settimeout(timeout_seconds)
        channel.exec_command(script)
        channel.shutdown_write()
        received = 0
        while received < limit:
            data = channel.recv(min(CHUNK_BYTES, limit - received))
            if not data:
                return
            received += len(data)
            yield data
    finally:
        channel.close()
