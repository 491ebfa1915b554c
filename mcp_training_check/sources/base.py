"""The one small interface every metrics source implements.

A source reads *incrementally*: ``read(cursor)`` returns only what was appended after ``cursor`` and a
new cursor to store. A cursor is a small JSON-able dict, opaque to everyone but its source (a byte
offset and file identity for files, a last step for W&B). ``None`` means "from the start".

A long run's *first* read does not read everything: it reads the recent history exactly and an
overview (a sample) of the older one, and says so with a `FillBatch` whose ``exact_from`` is the
first step read exactly. Each later read then re-reads a bounded piece of the history exactly from
the start (the fill-in) until it reaches the live end; the store keeps those points apart and, on
``done``, they replace the stored series, which are then what a full read would have stored.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..models import RunInfo

Cursor = dict[str, Any]

Progress = Callable[[float, float | None, str], None]
"""``progress(done, total, message)``: how far a long read has come (units are the source's: bytes, rows)."""


def no_progress(done: float, total: float | None, message: str) -> None:
    """The progress callback of a caller that does not show progress."""


PROGRESS_AFTER_SECONDS = 1.0
"""Progress is shown only for work that has run this long: a quick check stays silent."""

PROGRESS_EVERY_SECONDS = 0.5
"""At most two progress reports a second."""


class ThrottledProgress:
    """A `Progress` that passes reports on to ``show(count, text)``: none during the first
    ``after_seconds``, then at most one per ``every_seconds``. ``count`` numbers the reports shown (so
    it always grows, as MCP progress must); ``text`` is the message with its "done of total". Any thread
    may report."""

    def __init__(
        self,
        show: Callable[[int, str], None],
        *,
        after_seconds: float = PROGRESS_AFTER_SECONDS,
        every_seconds: float = PROGRESS_EVERY_SECONDS,
    ) -> None:
        self._show = show
        self._after, self._every = after_seconds, every_seconds
        self._started = time.monotonic()
        self._last: float | None = None
        self._lock = threading.Lock()
        self.shown = 0

    def __call__(self, done: float, total: float | None, message: str) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._started < self._after or (self._last is not None and now - self._last < self._every):
                return
            self._last = now
            self.shown += 1
            count = self.shown
        self._show(count, message if total is None else f"{message}: {done:,.0f} of {total:,.0f}")


@dataclass
class SeriesChunk:
    """New points of one metric, in the order they were logged (steps may repeat or go back)."""

    steps: np.ndarray  # int64
    values: np.ndarray  # float64, NaN/Inf kept

    def __len__(self) -> int:
        return int(self.steps.shape[0])


@dataclass
class FillBatch:
    """Exact history re-read from the start of the run, while the stored older history is an overview.

    ``first``: the overview was just read; drop any earlier fill. ``series``: the next exact points in
    log order. ``done``: the fill reached the live end: its points replace the stored series.
    ``exact_from``: the first step stored exactly (older steps are an overview) until then.
    """

    series: dict[str, SeriesChunk]
    exact_from: int | None
    first: bool = False
    done: bool = False


@dataclass
class ReadBatch:
    """What one incremental read produced."""

    series: dict[str, SeriesChunk]
    cursor: Cursor
    info: RunInfo = field(default_factory=RunInfo)
    skipped_chunks: int = 0
    restarted: bool = False  # the source shrank or was replaced: the caller must drop stored series
    # a restarted log fallback replaces only the metrics it read: the primary's own (an eval only W&B
    # has) stay, since the primary's cursor will not read them again
    restart_drops_read_metrics_only: bool = False
    warnings: list[str] = field(default_factory=list)
    fill: FillBatch | None = None  # set while the older history is an overview (see the module docstring)
    # said in the snapshot's warnings as they are (`warnings` pass through `sources.shown_warnings`): how the
    # source was reached when that matters (SSH through exec instead of SFTP), a catch-up read
    notes: list[str] = field(default_factory=list)
    # True: one process writes this source (a `.wandb` file), so points appended to it are that process's,
    # even after it was stopped (wandb-core flushes its blocks up to ~15 s late); only a restart (another
    # file) is a relaunch. False for a log a relaunch may reopen and append to, or a resumed W&B run.
    one_writer: bool = False

    @property
    def new_points(self) -> int:
        return sum(len(chunk) for chunk in self.series.values())


def concat_series(parts: Iterable[Mapping[str, SeriesChunk]]) -> dict[str, SeriesChunk]:
    """The parts of a read (head, overview, tail; a log's chunks), each metric's chunks joined in the order given:
    per-chunk numpy arrays joined once, 16 bytes a point instead of Python lists of objects."""
    pieces: dict[str, list[SeriesChunk]] = {}
    for series in parts:
        for name, chunk in series.items():
            pieces.setdefault(name, []).append(chunk)
    return {
        name: chunks[0]
        if len(chunks) == 1
        else SeriesChunk(np.concatenate([c.steps for c in chunks]), np.concatenate([c.values for c in chunks]))
        for name, chunks in pieces.items()
    }


def tail_holds_enough(counts: Mapping[str, int], names: Iterable[str], limits: TailLimits) -> bool:
    """Whether a tail grown backwards may stop: every metric the head or the tail saw (``names``, ``counts``) has
    ``limits.tail_points`` values in it (the recent window state keeps at full resolution)."""
    wanted = {*names, *counts}
    return bool(wanted) and all(counts.get(name, 0) >= limits.tail_points for name in wanted)


def first_step(series: dict[str, SeriesChunk]) -> int | None:
    """The smallest first step of any metric (None when all are empty): where a tail's exact history starts."""
    firsts = [int(chunk.steps[0]) for chunk in series.values() if len(chunk)]
    return min(firsts) if firsts else None


@dataclass(frozen=True, kw_only=True)
class TailLimits:
    """How much a long file's first read and each later read may take: ``wandb_tail`` reads ``.wandb`` files
    by 32 KiB blocks, ``log_tail`` logs by lines; each has its own `DEFAULT_LIMITS` with the sizes it
    measured, which tests and benchmarks shrink (``dataclasses.replace``)."""

    small_bytes: int  # files up to this size are read whole on the first check
    head_bytes: int  # read from the start on a first check
    tail_first_bytes: int  # the first tail read; it doubles while a metric has fewer than tail_points values
    tail_max_bytes: int  # the largest tail
    tail_points: int  # values per metric the tail should hold
    overview_reads: int  # reads sampled between head and tail: an overview of the older history
    overview_read_bytes: int  # what one overview read takes (a .wandb file: whole blocks)
    fill_bytes_per_check: int  # exact history re-read per later check
    catch_up_bytes: int  # most a later check reads of what was appended; more is read tail-first again

    def __post_init__(self) -> None:
        # no overview read would leave the middle of the file unread while the history looked exact
        if self.overview_reads < 1:
            raise ValueError(f"overview_reads must be at least 1, got {self.overview_reads}")

    @property
    def read_whole_up_to(self) -> int:
        """Files up to this size are read whole: the small ones, and any a head and a first tail would cover."""
        return max(self.small_bytes, self.head_bytes + self.tail_first_bytes)


STEP_RANGE = (-(2**63), 2**63 - 1)
"""Steps are stored as int64: a step outside is not one (a log line is skipped, a `.wandb` record keeps its own)."""


def catch_up_note(appended: int, limit: int) -> str:
    """Why a source read tail-first again instead of everything appended since the last check."""
    return (
        f"{appended / 2**20:,.0f} MiB were appended since the last check, more than one check reads "
        f"({limit / 2**20:,.0f} MiB): read tail-first again (the newest history exact, the older an overview "
        "until the next checks re-read it)"
    )


class Source(Protocol):
    """A place metrics come from."""

    def read(self, cursor: Cursor | None) -> ReadBatch:
        """Return what was appended after ``cursor`` (everything when ``cursor`` is None)."""
        ...


class SeriesBuilder:
    """Collects (metric, step, value) triples cheaply and turns them into numpy chunks once."""

    def __init__(self) -> None:
        self._steps: dict[str, list[int]] = {}
        self._values: dict[str, list[float]] = {}

    def add(self, name: str, step: int, value: float) -> None:
        steps = self._steps.get(name)
        if steps is None:
            steps = self._steps[name] = []
            self._values[name] = []
        steps.append(step)
        self._values[name].append(value)

    def build(self) -> dict[str, SeriesChunk]:
        return {
            name: SeriesChunk(np.asarray(steps, dtype=np.int64), np.asarray(self._values[name], dtype=np.float64))
            for name, steps in self._steps.items()
        }
