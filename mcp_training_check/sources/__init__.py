"""Where metrics come from, and the fallback chain between those places.

One module per place (`wandb_file`, `logs`, `tensorboard`, `wandb_api`, `ssh`), all behind the `Source`
protocol in `base`. `read_with_fallback` picks the run's primary source from its `RunRef`, and when
that place cannot be reached reads the configured log fallback instead, saying so in `data_source`.

The stored cursor is one dict per run holding a sub-cursor per source, so switching to the fallback
and back never loses either position. A log fallback is a local path or an ``ssh://host/path`` URL. A
sub-cursor its source cannot use (a hand edit, a bit flip the state's JSON decoding let through) is read
again from the start, with a note in ``warnings``.

A long run's first read is tail-first: the recent history exactly, an overview of the older one, then a
bounded fill-in per read (`base.FillBatch`; ``wandb_tail``, ``log_tail``, ``events_tail``, ``wandb_api_overview``). Long
reads report to a `Progress` callback (`ThrottledProgress` passes on only those lasting over a second).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import parse_run
from ..config.runref import holds_event_files
from ..config.schema import DEFAULT_SSH_TIMEOUT_SECONDS
from ..errors import RunRefError, SourceError, SourceUnavailable
from ..models import DataSource, RunKind, RunRef
from .base import (
    PROGRESS_AFTER_SECONDS,
    Cursor,
    FillBatch,
    Progress,
    ReadBatch,
    SeriesBuilder,
    SeriesChunk,
    Source,
    ThrottledProgress,
    no_progress,
)
from .logparse import ERROR_PREFIX, FATAL_PREFIX, HIDDEN_LINES_NOTE
from .logs import LogFileSource

if TYPE_CHECKING:
    from ..config import ResolvedRunConfig
    from .ssh import SshLogSource
    from .wandb_api import WandbApiSource
    from .wandb_file import WandbFileSource

__all__ = [
    "PROGRESS_AFTER_SECONDS",
    "Cursor",
    "FillBatch",
    "LogFileSource",
    "Progress",
    "ReadBatch",
    "ReadOutcome",
    "SeriesBuilder",
    "SeriesChunk",
    "Source",
    "SshLogSource",
    "ThrottledProgress",
    "WandbApiSource",
    "WandbFileSource",
    "no_progress",
    "open_primary",
    "read_with_fallback",
]


@dataclass
class ReadOutcome:
    batch: ReadBatch | None  # None when nothing could be read
    data_source: DataSource
    warnings: list[str] = field(default_factory=list)


def open_primary(
    ref: RunRef, settings: ResolvedRunConfig | None = None, progress: Progress | None = None
) -> tuple[str, DataSource, Source]:
    """The run's own source: (cursor key, data_source label, source); ``progress`` hears of long reads."""
    if ref.kind in (RunKind.WANDB_DIR, RunKind.WANDB_FILE):
        return "wandb_file", DataSource.WANDB_FILE, _wandb_file_source(ref, progress)
    if ref.kind is RunKind.LOG_FILE:
        return "log", DataSource.LOG, LogFileSource(ref.path or "", progress=progress)
    if ref.kind is RunKind.TENSORBOARD_DIR:
        from .tensorboard import TensorBoardDirSource

        return "tensorboard", DataSource.TENSORBOARD, TensorBoardDirSource(ref.path or "", progress=progress)
    if ref.kind is RunKind.WANDB_API:
        return "wandb", DataSource.WANDB, _wandb_api_source(ref, settings, progress)
    if ref.kind in (RunKind.WANDB_SWEEP, RunKind.WANDB_PROJECT):
        raise RunRefError(
            f"`run` {ref.raw!r} names a whole W&B {ref.kind.value.removeprefix('wandb_')}: call check_many "
            "(CLI: training-check check) for all its running runs, or pass one run as entity/project/run_id."
        )
    if ref.kind is RunKind.SSH:
        return "ssh", DataSource.SSH, _ssh_source(ref, _ssh_timeout(settings), progress)
    raise SourceUnavailable(f"`run` {ref.raw!r}: no source reads runs of kind {ref.kind.value}.")


def _wandb_file_source(ref: RunRef, progress: Progress | None) -> WandbFileSource:
    """The .wandb readers (framing, records, tail) are imported only when a run is a W&B file."""
    from .wandb_file import WandbFileSource

    return WandbFileSource(ref.path or "", progress=progress)


def _wandb_api_source(ref: RunRef, settings: ResolvedRunConfig | None, progress: Progress | None) -> WandbApiSource:
    """The W&B API reader is imported only when a run is on W&B."""
    from .wandb_api import DEFAULT_TIMEOUT_SECONDS, WandbApiSource

    timeout = settings.wandb_timeout_seconds if settings is not None else DEFAULT_TIMEOUT_SECONDS
    return WandbApiSource(ref, timeout_seconds=timeout, progress=progress)


def _ssh_source(ref: RunRef, timeout_seconds: float, progress: Progress | None = None) -> SshLogSource:
    """paramiko is imported only when a run (or its fallback) is on another machine."""
    from .ssh import SshLogSource

    return SshLogSource(ref, timeout_seconds=timeout_seconds, progress=progress)


def __getattr__(name: str) -> object:
    """``sources.SshLogSource`` and the W&B sources without importing paramiko or the W&B readers for every
    local run."""
    if name == "SshLogSource":
        from .ssh import SshLogSource

        return SshLogSource
    if name == "WandbFileSource":
        from .wandb_file import WandbFileSource

        return WandbFileSource
    if name == "WandbApiSource":
        from .wandb_api import WandbApiSource

        return WandbApiSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _ssh_timeout(settings: ResolvedRunConfig | None) -> float:
    return settings.ssh_timeout_seconds if settings is not None else DEFAULT_SSH_TIMEOUT_SECONDS


def read_with_fallback(
    ref: RunRef, settings: ResolvedRunConfig, stored: Cursor | None, progress: Progress | None = None
) -> ReadOutcome:
    """Read the primary source; on an unreachable primary read the log fallback; never lose a cursor."""
    cursors: Cursor = dict(stored or {})
    try:
        name, label, source = open_primary(ref, settings, progress)
        batch, notes = _read(source, name, cursors)
        return ReadOutcome(batch, _read_as(label, batch.cursor[name]), notes)
    except SourceError as primary_error:
        if not settings.log_fallback:
            if isinstance(primary_error, SourceUnavailable):
                return ReadOutcome(None, DataSource.UNREACHABLE, [str(primary_error)])
            raise
        return _read_fallback(settings, cursors, primary_error)


def _read_as(label: DataSource, cursor: Cursor) -> DataSource:
    """A local file the log reader found to be a TensorBoard event file says so (over SSH the label stays
    ``ssh``: it names how the file was reached)."""
    return DataSource.TENSORBOARD if label is DataSource.LOG and "events" in cursor else label


def _fallback_source(settings: ResolvedRunConfig) -> Source:
    """The configured log fallback: a local log or TensorBoard log directory (a Lightning run logging to both W&B
    and TensorBoard), or a log on another machine (``ssh://host/path``)."""
    where = settings.log_fallback
    if isinstance(where, str) and where.startswith("ssh://"):
        return _ssh_source(parse_run(where), settings.ssh_timeout_seconds)
    path = Path(str(where))
    if path.is_dir() and holds_event_files(path):
        from .tensorboard import TensorBoardDirSource

        return TensorBoardDirSource(path)
    return LogFileSource(path)


def _read_fallback(settings: ResolvedRunConfig, cursors: Cursor, primary_error: SourceError) -> ReadOutcome:
    reason = f"primary source failed ({primary_error}); read the log fallback {settings.log_fallback}"
    try:
        batch, notes = _read(_fallback_source(settings), "log_fallback", cursors)
    except SourceError as fallback_error:
        return ReadOutcome(None, DataSource.UNREACHABLE, _both_failed(primary_error, fallback_error))
    batch.restart_drops_read_metrics_only = True
    return ReadOutcome(batch, DataSource.LOG_FALLBACK, [reason, *notes])


_SET_A_FALLBACK = re.compile(r",? or set log_fallback for this run(?: in training-check\.toml)?")


def _both_failed(primary_error: SourceError, fallback_error: SourceError) -> list[str]:
    """Both warnings, worded for a run that has a fallback: the primary's advice to set one is dropped (it is
    set), and the fallback's "point `run` at the log" names `log_fallback`, the key that holds that path."""
    primary = _SET_A_FALLBACK.sub("", str(primary_error))
    fallback = str(fallback_error).replace("point `run` at", "point `log_fallback` at")
    return [f"primary source failed: {primary}", f"log fallback failed: {fallback}"]


UNUSABLE_CURSOR = (ValueError, TypeError, KeyError, AttributeError, OverflowError)
"""What a source raises on a stored position it did not write (a hand edit, a bit flip in the state)."""


def _read(source: Source, name: str, cursors: Cursor) -> tuple[ReadBatch, list[str]]:
    """The source's read from its own stored position; a position it cannot use (the state database decodes
    the cursor's JSON, only the source knows its fields) is read again from the start, and said so."""
    own = cursors.get(name)
    notes: list[str] = []
    try:
        batch = source.read(own)
    except UNUSABLE_CURSOR as exc:
        if own is None:
            raise
        batch = source.read(None)
        batch.restarted = True
        notes.append(f"the stored read position was unusable ({type(exc).__name__}: {exc}); read again from the start")
    batch.cursor = {**cursors, name: batch.cursor}
    return batch, [*notes, *batch.notes, *shown_warnings(batch.warnings)]


MAX_LOG_LINES_SHOWN = 2
"""Of the error and of the fatal lines a read found in a log (a traceback, CUDA out of memory, DeepSpeed's loss
scale at its minimum), the latest this many are shown: what a person looking at the log's end would read
first, in a tool result that stays small."""


def shown_warnings(warnings: list[str]) -> list[str]:
    """A read's own warnings as the snapshot shows them: the latest `MAX_LOG_LINES_SHOWN` fatal and error lines
    of the log, a count of the others, and every other note (a record that could not be decoded, a resumed run,
    a file that is not a log)."""
    fatal = [w for w in warnings if w.startswith(FATAL_PREFIX)]
    errors = [w for w in warnings if w.startswith(ERROR_PREFIX)]
    shown = fatal[-MAX_LOG_LINES_SHOWN:] + errors[-MAX_LOG_LINES_SHOWN:]
    hidden = len(fatal) + len(errors) - len(shown)
    rest = []
    for w in warnings:
        if w.startswith(HIDDEN_LINES_NOTE):
            hidden += int(w.removeprefix(HIDDEN_LINES_NOTE))  # the parser's own count of lines it did not keep
        elif not w.startswith((FATAL_PREFIX, ERROR_PREFIX)):
            rest.append(w)
    more = [f"{HIDDEN_LINES_NOTE} {hidden}"] if hidden else []
    return [*shown, *more, *rest]
