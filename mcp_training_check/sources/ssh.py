"""A training log on another machine, read over SSH as incrementally as a local one.

Each read connects (``ssh_connect``: ~/.ssh/config, known_hosts, agent and keys, bounded timeouts), asks
the file's inode and device with ``stat`` (SFTP does not carry them), opens the file over SFTP, reads its
first ``HEAD_BYTES`` and its size, and hands the open file to ``logs.read_open_log``: the same code that
reads local logs, so formats, partial last lines and restarts behave identically. Only the bytes after the
cursor's offset and before the size just seen are transferred, pipelined in windows of
``WINDOW_BYTES`` (paramiko's ``readv``), so memory stays bounded and latency is paid per window, not per
32 KiB request.

Without a shell on the remote side (an SFTP-only account) the inode is unknown; a replaced file is then
still caught when it is shorter than the offset or its first bytes differ. Without SFTP on the remote side
(no ``Subsystem sftp``: the channel request is refused, found once per connection) the same windows come
from exec'd ``tail -c +N | head -c LEN`` (``ssh_exec``), and the snapshot says so.
"""

from __future__ import annotations

import dataclasses
import errno
import shlex
import stat
from collections.abc import Iterator
from typing import Any

import paramiko

from ..errors import RunNotFound, SourceUnavailable
from ..files import not_regular
from ..models import RunInfo, RunKind, RunRef
from . import log_tail, ssh_exec
from .base import Cursor, Progress, ReadBatch, TailLimits
from .logs import CHUNK_BYTES, HEAD_BYTES, LogParser, file_identity, log_config, log_status, read_open_log
from .ssh_connect import DEFAULT_SSH_TIMEOUT_SECONDS, SshTarget, resolve_target, ssh_client

__all__ = ["WINDOW_BYTES", "SshLogSource"]

WINDOW_BYTES = 16 * CHUNK_BYTES  # 4 MiB requested at once: a few round trips per window, bounded memory
SSH_FILL_BYTES_PER_CHECK = 16 * 1024 * 1024
"""Fill-in re-read per check over SSH (log_tail): ~2 s at 8 MB/s, where a local read takes 64 MiB."""


NAME_MAX_BYTES = 255  # the longest file name Linux and macOS file systems allow
SSH_CATCH_UP_BYTES = 64 * 1024 * 1024
"""Appended bytes one check transfers over SSH (~8 s at 8 MB/s); a log that grew more is read tail-first again."""


def ssh_limits() -> TailLimits:
    """The log limits of a read over SSH: the local ones with a smaller fill-in and catch-up per check."""
    local = log_tail.DEFAULT_LIMITS
    return dataclasses.replace(
        local,
        fill_bytes_per_check=min(local.fill_bytes_per_check, SSH_FILL_BYTES_PER_CHECK),
        catch_up_bytes=min(local.catch_up_bytes, SSH_CATCH_UP_BYTES),
    )


class SshLogSource:
    """The log at ``ssh://[user@]host[:port]/path``; the cursor is the local reader's (offset, identity, parser)."""

    def __init__(
        self,
        ref: RunRef,
        *,
        timeout_seconds: float = DEFAULT_SSH_TIMEOUT_SECONDS,
        fmt: str | None = None,
        progress: Progress | None = None,
    ) -> None:
        if ref.kind is not RunKind.SSH or not ref.host or not ref.path:
            raise ValueError(f"SshLogSource reads an ssh://host/path run, not {ref.raw!r}")
        self.ref = ref
        self.path = ref.path
        self.timeout_seconds = timeout_seconds
        if fmt is None and self.path.lower().endswith((".csv", ".tsv")):
            fmt = self.path[-3:].lower()
        LogParser(fmt)  # validates fmt now rather than at the first read
        self.fmt = fmt
        self.progress = progress

    def read(self, cursor: Cursor | None) -> ReadBatch:
        target = resolve_target(self.ref.host or "", SourceUnavailable)
        with ssh_client(target, timeout_seconds=self.timeout_seconds, error=SourceUnavailable) as client:
            sftp = ssh_exec.open_sftp_or_none(client)
            if sftp is None:  # no SFTP subsystem: the same reading through exec channels
                batch = self._read_exec(client, target, cursor)
                batch.notes.append(ssh_exec.EXEC_TRANSPORT_NOTE.format(host=target.host))
            else:
                batch = self._read_sftp(client, sftp, target, cursor)
        batch.info = RunInfo(
            name=self.path.rsplit("/", 1)[-1],
            url=self.ref.key,
            host=target.hostname,
            status=log_status(batch.cursor),
            config=log_config(batch.cursor),
        )
        return batch

    def _read_sftp(
        self, client: paramiko.SSHClient, sftp: paramiko.SFTPClient, target: SshTarget, cursor: Cursor | None
    ) -> ReadBatch:
        inode, dev = self._inode(client)
        sftp.get_channel().settimeout(self.timeout_seconds)  # type: ignore[union-attr]
        with self._open(sftp, target) as fh:
            size = fh.stat().st_size or 0
            head = fh.read(HEAD_BYTES)
            identity = file_identity(inode=inode, dev=dev, size=size, head=head)
            return self._read_windows(_sftp_window(fh), cursor, identity, head, size)

    def _read_exec(self, client: paramiko.SSHClient, target: SshTarget, cursor: Cursor | None) -> ReadBatch:
        remote = ssh_exec.stat_remote(client, self.path, target, timeout_seconds=self.timeout_seconds)
        identity = file_identity(inode=remote.inode, dev=remote.dev, size=remote.size, head=remote.head)
        fetch = ssh_exec.exec_window(client, self.path, timeout_seconds=self.timeout_seconds)
        return self._read_windows(fetch, cursor, identity, remote.head, remote.size)

    def _read_windows(
        self, fetch: ssh_exec.WindowFetch, cursor: Cursor | None, identity: dict[str, Any], head: bytes, size: int
    ) -> ReadBatch:
        windowed = _Windowed(fetch, size)
        try:
            return read_open_log(
                windowed, cursor, identity=identity, head=head, fmt=self.fmt, end=size,
                limits=ssh_limits(), progress=self.progress,
            )  # fmt: skip
        finally:
            windowed.close()

    def _inode(self, client: paramiko.SSHClient) -> tuple[int | None, int | None]:
        """Inode and device of the log (the exec'd ``stat`` a host without SFTP is read with); (None, None)
        when the host's shell cannot tell, or it is no readable regular file (the SFTP open then says why)."""
        try:
            remote = ssh_exec.stat_file(client, self.path, head_bytes=0, timeout_seconds=self.timeout_seconds)
        except ssh_exec.RemoteFileError:
            return None, None
        return remote.inode, remote.dev

    def _open(self, sftp: paramiko.SFTPClient, target: SshTarget) -> paramiko.SFTPFile:
        """The log opened over SFTP, after a stat says it is a regular file: the server's sftp process opens
        a FIFO with a blocking open(), so one would stay stuck there even after we give up."""
        try:
            mode = sftp.stat(self.path).st_mode or 0
            if not stat.S_ISREG(mode):
                where, kind = f"{self.path} on {target.where}", not_regular(mode, "log file")
                fix = "name the training's log file, e.g. train.log"
                fix = ssh_exec.REMOTE_DIRECTORY_FIX if stat.S_ISDIR(mode) else fix
                raise RunNotFound(f"{where} is {kind}: {fix}.")
            return sftp.open(self.path, "rb")
        except OSError as exc:
            raise _file_error(exc, self.path, target) from exc


def _file_error(exc: OSError, path: str, target: SshTarget) -> RunNotFound | SourceUnavailable:
    where = f"{path} on {target.where}"
    if exc.errno == errno.ENOENT:
        return RunNotFound(
            f"no log file {where}: check the path (absolute, as in ssh://host/abs/path/train.log), e.g. with "
            f"`ssh -p {target.port} {target.user}@{target.hostname} ls -l {shlex.quote(path)}`."
        )
    if exc.errno == errno.EACCES:
        return SourceUnavailable(
            f"cannot read {where}: permission denied for {target.user}; make the log readable by that user "
            "(chmod o+r, or log in as the training user)."
        )
    longest = max((len(part.encode()) for part in path.split("/")), default=0)
    if longest > NAME_MAX_BYTES:  # the SFTP server says only "Failure" or "Bad message"
        return RunNotFound(f"file name too long: a name in {path[:60]}… has {longest} bytes, a file system allows 255.")
    return SourceUnavailable(
        f"cannot read {where}: {exc.strerror or exc}; check it with "
        f"`ssh -p {target.port} {target.user}@{target.hostname} ls -l {shlex.quote(path)}`, or retry later."
    )


def _sftp_window(fh: paramiko.SFTPFile) -> ssh_exec.WindowFetch:
    """Bytes [start, stop) as pipelined CHUNK_BYTES requests (paramiko's ``readv``)."""

    def fetch(start: int, stop: int) -> Iterator[bytes]:
        pieces: list[Any] = [(at, min(CHUNK_BYTES, stop - at)) for at in range(start, stop, CHUNK_BYTES)]
        for data in fh.readv(pieces):
            if not data:  # truncated since the stat: the next read sees it as restarted
                return
            yield data

    return fetch


class _Windowed:
    """The part of the file after a seek, fetched in windows (SFTP ``readv`` or one exec'd ``tail | head``
    each) but read like a file. ``read_open_log`` seeks once and then reads forward in CHUNK_BYTES pieces
    up to ``end``; a tail-first read seeks more often and reads little after each seek."""

    def __init__(self, fetch: ssh_exec.WindowFetch, end: int) -> None:
        self._fetch_window = fetch
        self._end = end
        self._position = 0
        self._pieces: Iterator[bytes] = iter(())
        self._buffer = b""

    def seek(self, position: int) -> None:
        self.close()
        self._position = position
        self._pieces = self._fetch(position)
        self._buffer = b""

    def tell(self) -> int:
        return self._position

    def read(self, size: int) -> bytes:
        while len(self._buffer) < size:
            piece = next(self._pieces, b"")
            if not piece:
                break
            self._buffer += piece
        out, self._buffer = self._buffer[:size], self._buffer[size:]
        self._position += len(out)
        return out

    def close(self) -> None:
        """Stop the window being fetched (an exec channel is closed, not read to its end)."""
        close = getattr(self._pieces, "close", None)
        if close is not None:
            close()

    def _fetch(self, start: int) -> Iterator[bytes]:
        """From ``start``: first one CHUNK_BYTES window (a tail-first read samples small windows), then
        WINDOW_BYTES windows."""
        window, size = start, CHUNK_BYTES
        while window < self._end:
            window_end = min(window + size, self._end)
            received = 0
            for data in self._fetch_window(window, window_end):
                received += len(data)
                yield data
            if received < window_end - window:  # shorter than at the stat: the next read sees the change
                return
            window, size = window_end, WINDOW_BYTES
