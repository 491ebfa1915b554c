"""A remote log read through exec channels, for hosts whose sshd has no SFTP subsystem (``ssh host tail``
works there, SFTP says "Channel closed").

One command asks what the file is (size, inode, device and mtime from ``stat``, then its first bytes from
``head``; `stat_file`, also how ``stop.ssh`` reads a pid file there); each window of bytes is
``tail -c +OFFSET -- PATH | head -c LENGTH``. Only a regular file is ever read: a FIFO would block ``head``
on the host (and the reader here) until a writer came. The path is always
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

__all__ = [
    "EXEC_TRANSPORT_NOTE", "RemoteFile", "RemoteFileError", "WindowFetch", "exec_window", "open_sftp_or_none",
    "stat_file", "stat_remote",
]  # fmt: skip

EXEC_TRANSPORT_NOTE = (
    "read through an exec channel (stat, tail -c, head -c): {host} has no SFTP subsystem "
    "(no `Subsystem sftp` in its sshd_config)"
)
STATUS_LINE_MAX_BYTES = 200  # "ok SIZE INODE DEV MTIME\n"

WindowFetch: TypeAlias = Callable[[int, int], Iterator[bytes]]
"""``fetch(start, stop)``: the file's bytes [start, stop) in pieces (fewer when it shrank meanwhile)."""


@dataclass(frozen=True)
class RemoteFile:
    size: int
    inode: int
    dev: int
    mtime: int  # seconds, as SFTP's st_mtime
    head: bytes


class RemoteFileError(Exception):
    """What the host said instead of "ok": ``kind`` is missing, directory, fifo, special (another file that
    is not regular), denied or nostat; ``answer`` is the status line it printed (never the file's content)."""

    def __init__(self, kind: str, answer: bytes) -> None:
        super().__init__(kind)
        self.kind = kind
        self.answer = answer


_STAT_KINDS = ("missing", "directory", "fifo", "special", "denied")


def _stat_script(path: str, head_bytes: int) -> str:
    """Prints one status line (ok SIZE INODE DEV MTIME | missing | directory | fifo | special | denied |
    nostat), then on ok the file's first ``head_bytes``: ``head`` runs only on a regular file (a file swapped
    for a FIFO between the test and ``head`` is the window SFTP's stat-then-open has too; the channel timeout
    still bounds our wait). GNU stat, then BSD stat. Run by ``sh`` whatever the login shell is (fish and csh
    parse ``if [ ... ]; then`` differently); the path reaches it as its one argument ``$1``."""
    script = (
        'if [ -d "$1" ]; then echo directory; elif [ -p "$1" ]; then echo fifo; '
        'elif [ ! -e "$1" ]; then echo missing; elif [ ! -f "$1" ]; then echo special; '
        'elif [ ! -r "$1" ]; then echo denied; '
        "elif s=$(stat -L -c '%s %i %d %Y' -- \"$1\" 2>/dev/null || stat -L -f '%z %i %d %m' -- \"$1\" 2>/dev/null); "
        f'then echo "ok $s" && head -c {int(head_bytes)} -- "$1"; '
        "else echo nostat; fi"
    )
    return f"sh -c {shlex.quote(script)} sh {shlex.quote(path)}"


def stat_file(client: paramiko.SSHClient, path: str, *, head_bytes: int, timeout_seconds: float) -> RemoteFile:
    """Size, inode, device, mtime and at most ``head_bytes`` first bytes of the regular file ``path``, in
    one exec'd command; `RemoteFileError` when it is anything else or cannot be read."""
    out = b"".join(_exec(client, _stat_script(path, head_bytes), STATUS_LINE_MAX_BYTES + head_bytes, timeout_seconds))
    status, _, head = out.partition(b"\n")
    words = status.decode("utf-8", "replace").split()
    if words[:1] == ["ok"] and len(words) == 5 and all(w.isdigit() for w in words[1:]):
        size, inode, dev, mtime = (int(w) for w in words[1:])
        return RemoteFile(size=size, inode=inode, dev=dev, mtime=mtime, head=head[:head_bytes])
    kind = words[0] if len(words) == 1 and words[0] in _STAT_KINDS else "nostat"
    raise RemoteFileError(kind, status[:80])


def stat_remote(client: paramiko.SSHClient, path: str, target: SshTarget, *, timeout_seconds: float) -> RemoteFile:
    """Size, inode, device and head of the log ``path``, or the error naming what is wrong with it."""
    try:
        return stat_file(client, path, head_bytes=HEAD_BYTES, timeout_seconds=timeout_seconds)
    except RemoteFileError as exc:
        raise _log_error(exc, path, target) from exc


REMOTE_DIRECTORY_FIX = (
    "name the log file inside it, e.g. train.log (for a TensorBoard log directory, one of its "
    "events.out.tfevents.* files: over SSH a run is one file)"
)


def _log_error(exc: RemoteFileError, path: str, target: SshTarget) -> RunNotFound | SourceUnavailable:
    where = f"{path} on {target.where}"
    if exc.kind == "missing":
        return RunNotFound(
            f"no log file {where}: check the path (absolute, as in ssh://host/abs/path/train.log), e.g. with "
            f"`{target.ssh_command.removesuffix(' true')} ls -l {shlex.quote(path)}`."
        )
    if exc.kind == "directory":
        return RunNotFound(f"{where} is a directory, not a log file: {REMOTE_DIRECTORY_FIX}.")
    if exc.kind in ("fifo", "special"):
        kind = "a FIFO" if exc.kind == "fifo" else "not a regular file"
        return RunNotFound(
            f"{where} is {kind} (reading it could block): point the run at the log file the training writes."
        )
    if exc.kind == "denied":
        return SourceUnavailable(
            f"cannot read {where}: permission denied for {target.user}; make the log readable by that user "
            "(chmod o+r, or log in as the training user)."
        )
    return SourceUnavailable(
        f"cannot read {where}: the host has no SFTP subsystem and its shell gave no usable `stat` "
        f"(it answered {exc.answer!r}); enable `Subsystem sftp` in its sshd_config, or set log_fallback."
    )


def open_sftp_or_none(client: paramiko.SSHClient) -> paramiko.SFTPClient | None:
    """An SFTP session, or None when the server has no SFTP subsystem (it refuses the channel request, and
    paramiko says "Channel closed" while the connection itself stays up). Ask once per connection."""
    try:
        return client.open_sftp()
    except (paramiko.SSHException, EOFError):
        transport = client.get_transport()
        if transport is None or not transport.is_active():
            raise  # the connection broke: not a missing subsystem (translated by ssh_errors)
        return None


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
