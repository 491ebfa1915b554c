"""``training-check.toml`` re-read when it changes, for whatever lives longer than one call (the MCP
server, `training-check watch`): an edit takes effect at the next tool call, and removing
``[runs.NAME.stop]`` takes away the right to stop at once.

Each `ReloadingConfig.current` finds the file again (``$TRAINING_CHECK_CONFIG``, the working directory
and its parents, as `load_config` does) and compares its path and a hash of its bytes with what was
loaded; the hash, not the modification time, so that two edits within one clock tick are both seen.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from ..errors import SourceError
from ..files import open_regular
from .project import ProjectConfig, find_config, load_config

__all__ = ["MAX_FINGERPRINT_BYTES", "ReloadingConfig"]

MAX_FINGERPRINT_BYTES = 1 << 20
"""Bytes hashed to tell whether the file changed; past this (no real config is that long) size and
modification time stand in for the rest."""

Fingerprint = tuple[Path | None, str]


class ReloadingConfig:
    """The project config as the file says now: ``given`` (a config already loaded) is kept until its
    file changes; without one the file is found and loaded at the first call."""

    def __init__(self, given: ProjectConfig | None = None) -> None:
        self._given_path = given.path if given is not None else None
        self._fixed = given is not None and given.path is None  # built in code: no file behind it
        self._cwd = given.cwd if given is not None else None
        self._config = given
        self._seen: Fingerprint | None = (
            (given.path, _fingerprint(given.path)) if given is not None and given.path else None
        )
        self._lock = threading.Lock()

    def current(self) -> ProjectConfig:
        if self._fixed and self._config is not None:
            return self._config
        with self._lock:
            cwd = self._cwd or Path(os.path.abspath(Path.cwd()))
            path = self._given_path or find_config(None, cwd)
            seen = (path, _fingerprint(path) if path is not None else "")
            if self._config is None or seen != self._seen:
                self._config = load_config(path, cwd=cwd)
                self._cwd, self._seen = cwd, seen
            return self._config


def _fingerprint(path: Path) -> str:
    """A hash of the file's bytes (bounded, regular files only: never blocks on a FIFO); a file that
    cannot be read gets a fingerprint of its own, so the load that follows reports why."""
    try:
        with open_regular(path, what="config file", fix="point it at training-check.toml") as handle:
            info = os.fstat(handle.fileno())
            digest = hashlib.sha256(handle.read(MAX_FINGERPRINT_BYTES)).hexdigest()
    except SourceError as exc:
        return f"unreadable:{exc}"
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    if info.st_size > MAX_FINGERPRINT_BYTES:
        digest += f":{info.st_size}:{info.st_mtime_ns}"
    return digest
