"""A TensorBoard log directory as one run: what ``tensorboard --logdir`` takes, and what PyTorch Lightning, Keras
and the Hugging Face Trainer write.

Which files are the run is found again at every check (a few ``scandir`` calls), so files that appear later
are read:

- event files directly inside: one run; several (a resumed run writes a new file) are read in name order
  (their names start with the time they were created), each from its own offset;
- event files in subdirectories named as splits (`TENSORBOARD_SPLITS`: Keras writes ``logs/train/`` and
  ``logs/validation/`` with the same tags): the same run, each tag under its split (``validation/epoch_loss``);
- neither, but subdirectories that are runs of their own (Lightning's ``lightning_logs/version_0``, HF's
  ``runs/<date>_<host>``): exactly one is read; several are an error that lists them, newest first.

The cursor is ``{"dir": <the run directory read>, "files": {<name under it>: <that file's cursor>}, "fill":
<a fill-in under way>}`` (the file cursors of ``events_file.read_event_file``). A file that shrank or was replaced, or
grew more than a check catches up on, or another run directory than the one read before, reads every file again
from its start with ``restarted=True``: the stored series are dropped, so every file must be read again.

A long file read from its start is read tail-first (``events_tail``), each file by its own size (a Keras
``validation/`` file is short beside its ``train/``). The directory has one fill-in, not one per file: it
re-reads every file in reading order, because a resumed run's files carry the same tags and the fill-in
replaces a tag's stored series whole, with what a full read of every file in order stores; the first exact step
is the latest of the files read tail-first (older steps of any of them may be an overview).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import Any

from ..config.runref import TENSORBOARD_SPLITS, is_event_file_name
from ..errors import RunNotFound, RunRefError
from ..files import describe_os_error, open_regular
from ..models import RunInfo
from . import log_tail
from .base import Cursor, FillBatch, Progress, ReadBatch, SeriesChunk, TailLimits, concat_series, no_progress
from .events_file import read_event_file
from .events_tail import FillFile, advance_fill
from .identity import local_identity

__all__ = ["MAX_LISTED_RUNS", "TensorBoardDirSource", "event_files"]

MAX_LISTED_RUNS = 5
"""Run directories an ambiguity error names (the newest)."""

DIR_FIX = "point `run` at the TensorBoard log directory of one run (the directory holding events.out.tfevents.*)"


def _event_files_in(directory: Path) -> list[Path]:
    try:
        with os.scandir(directory) as entries:
            return sorted(Path(e.path) for e in entries if is_event_file_name(e.name) and e.is_file())
    except OSError:
        return []


def _subdirs(directory: Path) -> list[Path]:
    try:
        with os.scandir(directory) as entries:
            return sorted(Path(e.path) for e in entries if e.is_dir())
    except OSError as exc:
        raise describe_os_error(exc, directory, what="TensorBoard directory", fix=DIR_FIX) from exc


def event_files(run_dir: Path) -> list[tuple[str, Path]]:
    """(tag prefix, file) of one run's event files: its own (no prefix, name order), then each split
    subdirectory's (``train/``), in name order."""
    found = [("", f) for f in _event_files_in(run_dir)]
    for sub in _subdirs(run_dir):
        if sub.name in TENSORBOARD_SPLITS:
            found.extend((f"{sub.name}/", f) for f in _event_files_in(sub))
    return found


def _newest(files: list[tuple[str, Path]]) -> float:
    mtimes = []
    for _, f in files:
        try:
            mtimes.append(f.stat().st_mtime)
        except OSError:
            continue
    return max(mtimes, default=0.0)


def resolve_run(path: Path) -> tuple[Path, list[tuple[str, Path]]]:
    """The run directory ``path`` designates and its event files; an error that says what to pass otherwise."""
    files = event_files(path)
    if files:
        return path, files
    runs = [(sub, found) for sub in _subdirs(path) if (found := event_files(sub))]
    if len(runs) == 1:
        return runs[0]
    if not runs:
        raise RunNotFound(
            f"{path} holds no TensorBoard event files (events.out.tfevents.*) any more, neither directly nor in a "
            f"run subdirectory: {DIR_FIX}, or wait until the training writes its first one."
        )
    runs.sort(key=lambda run: _newest(run[1]), reverse=True)
    shown = ", ".join(repr(str(sub)) for sub, _ in runs[:MAX_LISTED_RUNS])
    more = f" and {len(runs) - MAX_LISTED_RUNS} more" if len(runs) > MAX_LISTED_RUNS else ""
    raise RunRefError(
        f"{path} holds {len(runs)} TensorBoard runs (newest first: {shown}{more}): point `run` at one of them, "
        f"e.g. {str(runs[0][0])!r} for the newest."
    )


class TensorBoardDirSource:
    """A TensorBoard log directory, read incrementally (see the module docstring for the layout and the cursor)."""

    def __init__(self, path: str | Path, *, limits: TailLimits | None = None, progress: Progress | None = None) -> None:
        self.path = Path(path).expanduser()
        self.limits = limits
        self.progress = progress

    def read(self, cursor: Cursor | None) -> ReadBatch:
        run_dir, files = resolve_run(self.path)
        limits = self.limits or log_tail.DEFAULT_LIMITS  # read now: tests and benchmarks shrink it
        stored = cursor.get("files") if cursor and cursor.get("dir") == str(run_dir) else None
        batch = self._read_files(run_dir, files, stored, limits) if isinstance(stored, Mapping) else None
        if batch is None or batch.restarted:  # the stored series are dropped: read every file from its start
            notes = batch.notes if batch is not None else []
            batch = self._read_files(run_dir, files, {}, limits)
            batch.restarted = cursor is not None
            batch.notes = [*notes, *(note for note in batch.notes if note not in notes)]
        self._advance_fill(batch, cursor, run_dir, files, limits)
        batch.info = RunInfo(name=run_dir.name)
        return batch

    def _read_files(
        self, run_dir: Path, files: list[tuple[str, Path]], stored: Mapping[str, Any], limits: TailLimits
    ) -> ReadBatch:
        """Each file from its cursor, in order; stops at the first that restarted (the caller reads them all
        again). The batch's ``fill`` is a first one when a file was read tail-first (the latest first exact
        step of those)."""
        parts: list[dict[str, SeriesChunk]] = []
        cursors: dict[str, Any] = {}
        notes: list[str] = []
        skipped, restarted, exact_froms = 0, False, []
        for prefix, path in files:
            name = str(path.relative_to(run_dir))
            batch = self._read_file(path, stored.get(name), name=name, prefix=prefix, limits=limits)
            parts.append(batch.series)
            cursors[name] = batch.cursor
            notes.extend(batch.notes)
            skipped += batch.skipped_chunks
            if batch.fill is not None and batch.fill.exact_from is not None:
                exact_froms.append(batch.fill.exact_from)
            if batch.restarted:
                restarted = True
                break
        return ReadBatch(
            series=concat_series(parts), cursor={"dir": str(run_dir), "files": cursors}, skipped_chunks=skipped,
            restarted=restarted, notes=notes,
            fill=FillBatch({}, max(exact_froms), first=True) if exact_froms else None,
        )  # fmt: skip

    def _read_file(self, path: Path, own: Any, *, name: str, prefix: str, limits: TailLimits) -> ReadBatch:
        with open_regular(path, what="event file", fix=DIR_FIX) as fh:
            try:
                identity, head = local_identity(fh)
                return read_event_file(
                    fh, own, identity=identity, head=head, end=identity["size"], name=name, prefix=prefix,
                    limits=limits, progress=self.progress,
                )  # fmt: skip
            except OSError as exc:
                raise describe_os_error(exc, path, what="event file", fix=DIR_FIX) from exc

    def _advance_fill(
        self, batch: ReadBatch, cursor: Cursor | None, run_dir: Path, files: list[tuple[str, Path]], limits: TailLimits
    ) -> None:
        """The directory's one fill-in (``events_tail``): over every file, in reading order."""
        cursors = batch.cursor["files"]
        fill_files = [
            FillFile(name, prefix, int(cursors[name]["offset"]), partial(_open_event_file, path))
            for prefix, path in files
            if (name := str(path.relative_to(run_dir))) in cursors
        ]
        try:
            batch.fill, fill = advance_fill(
                batch.fill, cursor.get("fill") if cursor else None, fill_files, limits, restarted=batch.restarted,
                cursors=cursors, progress=self.progress or no_progress,
            )  # fmt: skip
        except OSError as exc:
            raise describe_os_error(exc, run_dir, what="TensorBoard directory", fix=DIR_FIX) from exc
        if fill is not None:
            batch.cursor["fill"] = fill


def _open_event_file(path: Path) -> AbstractContextManager[Any]:
    return open_regular(path, what="event file", fix=DIR_FIX)
