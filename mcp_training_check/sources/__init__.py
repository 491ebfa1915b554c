"""Where metrics come from, and the fallback chain between those places.

One module per place (`wandb_file`, `logs`, `wandb_api`, later SSH), all behind the `Source`
protocol in `base`. `read_with_fallback` picks the run's primary source from its `RunRef`, and when
that place cannot be reached reads the configured log fallback instead, saying so in `data_source`.

The stored cursor is one dict per run holding a sub-cursor per source, so switching to the fallback
and back never loses either position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import RunRefError, SourceError, SourceUnavailable
from ..models import DataSource, RunKind, RunRef
from .base import Cursor, ReadBatch, SeriesBuilder, SeriesChunk, Source
from .logs import LogFileSource
from .wandb_api import DEFAULT_TIMEOUT_SECONDS, WandbApiSource
from .wandb_file import WandbFileSource

if TYPE_CHECKING:
    from ..config import ResolvedRunConfig

__all__ = [
    "Cursor",
    "LogFileSource",
    "ReadBatch",
    "ReadOutcome",
    "SeriesBuilder",
    "SeriesChunk",
    "Source",
    "WandbApiSource",
    "WandbFileSource",
    "open_primary",
    "read_with_fallback",
]


@dataclass
class ReadOutcome:
    batch: ReadBatch | None  # None when nothing could be read
    data_source: DataSource
    warnings: list[str] = field(default_factory=list)


def open_primary(ref: RunRef, settings: ResolvedRunConfig | None = None) -> tuple[str, DataSource, Source]:
    """The run's own source: (cursor key, data_source label, source)."""
    if ref.kind in (RunKind.WANDB_DIR, RunKind.WANDB_FILE):
        return "wandb_file", DataSource.WANDB_FILE, WandbFileSource(ref.path or "")
    if ref.kind is RunKind.LOG_FILE:
        return "log", DataSource.LOG, LogFileSource(ref.path or "")
    if ref.kind is RunKind.WANDB_API:
        timeout = settings.wandb_timeout_seconds if settings is not None else DEFAULT_TIMEOUT_SECONDS
        return "wandb", DataSource.WANDB, WandbApiSource(ref, timeout_seconds=timeout)
    if ref.kind in (RunKind.WANDB_SWEEP, RunKind.WANDB_PROJECT):
        raise RunRefError(
            f"`run` {ref.raw!r} names a whole W&B {ref.kind.value.removeprefix('wandb_')}: call check_many "
            "(CLI: training-check check) for all its running runs, or pass one run as entity/project/run_id."
        )
    raise SourceUnavailable(
        f"reading logs over SSH ({ref.host}:{ref.path}) is not available in this version: copy or mount the "
        "log locally, or set log_fallback for this run in training-check.toml."
    )


def read_with_fallback(ref: RunRef, settings: ResolvedRunConfig, stored: Cursor | None) -> ReadOutcome:
    """Read the primary source; on an unreachable primary read the log fallback; never lose a cursor."""
    cursors: Cursor = dict(stored or {})
    try:
        name, label, source = open_primary(ref, settings)
        return ReadOutcome(_read(source, name, cursors), label)
    except SourceError as primary_error:
        if not settings.log_fallback:
            if isinstance(primary_error, SourceUnavailable):
                return ReadOutcome(None, DataSource.UNREACHABLE, [str(primary_error)])
            raise
        return _read_fallback(settings.log_fallback, cursors, primary_error)


def _read_fallback(path: Path, cursors: Cursor, primary_error: SourceError) -> ReadOutcome:
    reason = f"primary source failed ({primary_error}); read the log fallback {path}"
    try:
        batch = _read(LogFileSource(Path(path)), "log_fallback", cursors)
    except SourceError as fallback_error:
        return ReadOutcome(
            None,
            DataSource.UNREACHABLE,
            [f"primary source failed: {primary_error}", f"log fallback failed: {fallback_error}"],
        )
    return ReadOutcome(batch, DataSource.LOG_FALLBACK, [reason])


def _read(source: Source, name: str, cursors: Cursor) -> ReadBatch:
    batch = source.read(cursors.get(name))
    batch.cursor = {**cursors, name: batch.cursor}
    return batch
