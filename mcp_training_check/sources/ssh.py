"""A training log on another machine, read over SSH as incrementally as a local one.

Each read connects (``ssh_connect``: ~/.ssh/config, known_hosts, agent and keys, bounded timeouts), asks
the file's inode and device with ``stat`` (SFTP does not carry them), opens the file over SFTP, reads its
first ``HEAD_BYTES`` and its size, and hands the open file to ``logs.read_open_log``: the same code that
reads local logs, so formats, partial last lines and restarts behave identically. Only the bytes after the
cursor's offset and before the size just seen are transferred, pipelined in windows of
``WINDOW_BYTES`` (paramiko's ``readv``), so memory stays bounded and latency is paid per window, not per
32 KiB request.

Without a shell on the remote side (an SFTP-only account) the inode is unknown; a replaced file is then
still caught when it is shorter than the offset or its first bytes differ.
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
from ..models import RunInfo, RunKind, RunRef
from . import log_tail
from .base import Cursor, Progress, ReadBatch
from .logs import CHUNK_BYTES, HEAD_BYTES, LogParser, file_identity, log_status, read_open_log
from .ssh_connect import DEFAULT_SSH_TIMEOUT_SECONDS, SshTarget, resolve_target, run_remote_script, ssh_client

__all__ = ["WINDOW_BYTES", "SshLogSource"]

WINDOW_BYTES = 16 * CHUNK_BYTES  # 4 MiB requested at once: a few round trips per window, bounded memory
SSH_FILL_BYTES_PER_CHECK = 16 * 1024 * 1024
"""Fill-in re-read per check over SSH (log_tail): ~2 s at 8 MB/s, where a local read takes 64 MiB."""


def ssh_limits() -> log_tail.LogTailLimits:
    """The log limits of a read over SSH: the local ones with a smaller fill-in per check."""
    local = log_tail.DEFAULT_LIMITS
    return dataclasses.replace(local, fill_bytes_per_check=min(local.fill_bytes_per_check, SSH_FILL_BYTES_PER_CHECK))


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
            inode, dev = self._inode(client)
            sftp = client.open_sftp()
            sftp.get_channel().settimeout(self.timeout_seconds)  # type: ignore[union-attr]
            with self._open(sftp, target) as fh:
                size = fh.stat().st_size or 0
                head = fh.read(HEAD_BYTES)
                identity = file_identity(inode=inode, dev=dev, size=size, head=head)
                windowed = _Windowed(fh, size)
                batch = read_open_log(
                    windowed, cursor, identity=identity, head=head, fmt=self.fmt, end=size,
                    limits=ssh_limits(), progress=self.progress,
                )  # fmt: skip
        batch.info = RunInfo(
            name=self.path.rsplit("/", 1)[-1], url=self.ref.key, host=target.hostname, status=log_status(batch.cursor)
        )
        return batch

    def _inode(self, client: paramiko.SSHClient) -> tuple[int | None, int | None]:
        """Inode and device of the log (GNU stat, then BSD stat); (None, None) without a usable shell."""
        quoted = shlex.quote(self.path)
        script = f"stat -L -c '%i %d' -- {quoted} 2>/dev/null || stat -L -f '%i %d' -- {quoted} 2>/dev/null"
        result = run_remote_script(client, script, timeout_seconds=self.timeout_seconds)
        fields = result.stdout.split()
        if result.exit_status != 0 or len(fields) != 2 or not all(f.isdigit() for f in fields):
            return None, None
        return int(fields[0]), int(fields[1])

    def _open(self, sftp: paramiko.SFTPClient, target: SshTarget) -> paramiko.SFTPFile:
        try:
            fh = sftp.open(self.path, "rb")
            mode = fh.stat().st_mode or 0
        except OSError as exc:
            raise _file_error(exc, self.path, target) from exc
        if stat.S_ISDIR(mode):
            fh.close()
            raise RunNotFound(
                f"{self.path} on {target.where} is a directory, not a log file: name the log file inside it, "
                "e.g. train.log."
            )
        return fh


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
    return SourceUnavailable(f"cannot read {where}: {exc.strerror or exc}; retry later.")


class _Windowed:
    """The part of the file after a seek, fetched as pipelined windows (``readv``) but read like a file.

    ``read_open_log`` seeks once and then reads forward in CHUNK_BYTES pieces up to ``end``.
    """

    def __init__(self, fh: paramiko.SFTPFile, end: int) -> None:
        self._fh = fh
        self._end = end
        self._position = 0
        self._pieces: Iterator[bytes] = iter(())
        self._buffer = b""

    def seek(self, position: int) -> None:
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

    def _fetch(self, start: int) -> Iterator[bytes]:
        """From ``start``: first one CHUNK_BYTES window (a tail-first read samples small windows), then
        WINDOW_BYTES windows."""
        window, size = start, CHUNK_BYTES
        while window < self._end:
            window_end = min(window + size, self._end)
            pieces: list[Any] = [
                (at, min(CHUNK_BYTES, window_end - at)) for at in range(window, window_end, CHUNK_BYTES)
            ]
            for data in self._fh.readv(pieces):
                if not data:  # truncated since the stat: the next read sees it as restarted
                    return
                yield data
            window, size = window_end, WINDOW_BYTES
