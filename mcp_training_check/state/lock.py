"""The per-run lock: two checks of one run, in any processes, take turns.

An exclusive ``flock`` on ``locks/<sha1 of the run key>.lock`` under the state home. The holder writes
who it is into the file, so a waiter that gives up can say which process holds the run.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import socket
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path

from ..errors import StateError

LOCKS_DIRNAME = "locks"
LOCK_POLL_SECONDS = 0.05
DEFAULT_LOCK_TIMEOUT_SECONDS = 120.0

RunLock = AbstractContextManager[None]


@contextmanager
def run_lock(locks_dir: Path, run_key: str, timeout_seconds: float = DEFAULT_LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
    """Hold ``run_key``'s lock (not reentrant); StateError naming the holder after ``timeout_seconds``."""
    path = locks_dir / f"{hashlib.sha1(run_key.encode()).hexdigest()}.lock"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise StateError(
            f"cannot create the lock file {path} ({exc.strerror or exc}): make {locks_dir} a directory this user "
            "may write to, or set TRAINING_CHECK_HOME to a writable directory"
        ) from exc
    try:
        _acquire(fd, path, run_key, timeout_seconds)
        try:
            since = datetime.now(UTC).isoformat(timespec="seconds")
            holder = f"pid {os.getpid()} on {socket.gethostname()} since {since}\n"
            os.ftruncate(fd, 0)
            os.pwrite(fd, holder.encode(), 0)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(fd: int, path: Path, run_key: str, timeout_seconds: float) -> None:
    deadline = time.monotonic() + timeout_seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = os.pread(fd, 256, 0).decode(errors="replace").strip() or "an unknown process"
                raise StateError(
                    f"run {run_key} is locked by {holder} (lock file {path}) for more than "
                    f"{timeout_seconds:g}s: another check of this run is still going; retry later "
                    "or stop that process"
                ) from None
            time.sleep(LOCK_POLL_SECONDS)
