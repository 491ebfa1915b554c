"""The one way a local file is opened for reading: regular files only, and never a blocking open.

A `run` is a string a model or a person passes, so it can name anything: a FIFO (whose ``open`` waits
for a writer forever), ``/dev/zero`` or ``/dev/urandom`` (endless bytes), a socket, a directory, a
symlink loop, a name longer than the file system allows; a config file or a pid file can be any of those
too. `open_regular` opens with ``O_NONBLOCK`` (a FIFO opens at once instead of waiting for a writer),
checks with ``fstat`` that what it opened is a regular file before a single byte is read, and turns every
refusal into a `SourceError` that names the problem and the fix. Readers then read a regular file only up
to the size ``fstat`` gave (logs), a few bytes (pid files), or to its end (``.wandb`` files, bounded per
check by their catch-up limit). Every stage opens local files through it (sources, config, stop), so it
sits at the top of the package, below them all.

`describe_os_error` is the message half on its own, for callers that stat or list rather than open.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import BinaryIO

from .errors import RunNotFound, SourceError, SourceUnavailable

__all__ = ["describe_os_error", "file_kind", "name_too_long", "not_regular", "open_regular", "permission_problem"]

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def file_kind(mode: int) -> str:
    """What a ``st_mode`` is, in words: "a FIFO (named pipe)", "a directory", ... ("a regular file")."""
    return next(
        (words for test, words in _KINDS if test(mode)), "a regular file" if stat.S_ISREG(mode) else "a special file"
    )


def open_regular(path: str | Path, *, what: str = "log file", fix: str = "point `run` at the training's log file",
                 follow_symlinks: bool = True) -> BinaryIO:  # fmt: skip
    """``path`` opened for binary reading, or a `SourceError` saying why not and what to do instead.

    Refuses at once, before reading, anything that is not a regular file (``what`` names what was
    expected, ``fix`` what to pass instead). ``follow_symlinks=False`` refuses a symlink too
    (``O_NOFOLLOW``), for a file whose link could point anywhere (a pid file linked to /proc/self/environ).
    """
    flags = _OPEN_FLAGS | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise describe_os_error(exc, Path(path), what=what, fix=fix) from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise RunNotFound(f"{path} is {not_regular(mode, what)}: {fix}.")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def describe_os_error(exc: OSError, path: Path, *, what: str = "log file",
                      fix: str = "point `run` at the training's log file") -> SourceError:  # fmt: skip
    """The `SourceError` for an ``OSError`` met while opening or looking at ``path``."""
    code = exc.errno
    if code in (errno.ENOENT, errno.ENOTDIR):
        return RunNotFound(f"no {what} at {path}: check the path (relative paths start at {Path.cwd()}), or {fix}.")
    if code == errno.ENAMETOOLONG:
        return RunNotFound(f"{name_too_long(path)}: {fix}.")
    if code == errno.ELOOP:
        return RunNotFound(f"symlink loop at {path} (or a symlink where none is allowed): fix or remove the link.")
    if code == errno.ENXIO:  # a socket, or a device with nothing behind it
        kind = "a socket or a device" if (mode := _mode(path)) is None else file_kind(mode)
        return RunNotFound(f"{path} is {kind}, not a regular file: {fix}.")
    if code == errno.EISDIR:
        return RunNotFound(f"{path} is {not_regular(stat.S_IFDIR, what)}: {fix}.")
    if code in (errno.EACCES, errno.EPERM):
        return SourceUnavailable(f"cannot read {path}: {permission_problem(path)}")
    return SourceUnavailable(f"cannot read {path}: {exc.strerror or exc}; check the path and its permissions.")


def permission_problem(path: Path) -> str:
    """Which directory or file denies this user, and how to fix it."""
    for directory in reversed(path.parents):
        if os.path.isdir(directory) and not os.access(directory, os.X_OK):
            return (
                f"permission denied: this user may not search the directory {directory} (no x permission); "
                "`chmod o+x` it, or run the checker as the training's user."
            )
    return "permission denied; make it readable by this user (chmod o+r), or run the checker as the training's user."


def not_regular(mode: int, what: str) -> str:
    """ "a FIFO (named pipe), not a regular file"; a directory is "a directory, not a log file"."""
    return f"a directory, not a {what}" if stat.S_ISDIR(mode) else f"{file_kind(mode)}, not a regular file"


def name_too_long(path: Path) -> str:
    """ "file name too long: PATH (N characters, the longest name M bytes; ...)", without the fix."""
    longest = max((len(part.encode()) for part in path.parts), default=0)
    return (
        f"file name too long: {_shortened(path)} ({len(str(path))} characters, the longest name {longest} bytes; a "
        "file system allows 255 bytes a name and 4,096 a path)"
    )


def _mode(path: Path) -> int | None:
    try:
        return os.stat(path).st_mode
    except OSError:
        return None


def _shortened(path: Path, keep: int = 80) -> str:
    text = str(path)
    return text if len(text) <= keep else f"{text[: keep // 2]}…{text[-keep // 2 :]}"
