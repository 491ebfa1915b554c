"""The first read of a long training log, and the fill-in that later makes its stored history exact.

The plan of ``wandb_tail``, on lines instead of blocks: a log over `LOG_SMALL_BYTES` is read on its first
check as

1. its head (`LOG_HEAD_BYTES`): the format, a CSV header, the first steps;
2. its tail, from the first line start after a cut, grown backwards (doubling) until every metric seen has
   `TAIL_POINTS` values in it or it spans `LOG_TAIL_MAX_BYTES`; from its first step on it is exact;
3. `LOG_OVERVIEW_WINDOWS` windows of `LOG_OVERVIEW_WINDOW_BYTES` spread between them: an overview.

Each later read re-reads the log from its start, `LOG_FILL_BYTES_PER_CHECK` at a time, with a parser of its
own, up to where the live reading stands; when it arrives its points replace the stored series and its
parser replaces the live one (so step counters of logs without explicit steps come out right).

A log without step numbers (steps are line counters, the counts of a progress bar that restarts every
epoch, or batch counts within epochs whose length no line states) cannot be read from its middle with the
right steps: there each part's counter starts from an estimate (the head's steps per byte), and nothing counts
as exact (``exact_from`` is past the last step) until the fill-in has counted every line.

Line parsing is ``logs``' (its ``consume`` is passed in, so this module needs nothing from it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .base import (
    FillBatch,
    Progress,
    SeriesChunk,
    TailLimits,
    concat_series,
    first_step,
    no_progress,
    tail_holds_enough,
)
from .logparse import LogParser, ParseNotes

__all__ = ["DEFAULT_LIMITS", "continue_fill", "read_log_tail_first"]

MiB = 1024 * 1024

TAIL_POINTS = 2048
"""Values per metric the tail should hold: state keeps this many recent points at full resolution."""

LOG_SMALL_BYTES = 32 * MiB
"""Logs up to this size are read whole on the first check (about a second of parsing)."""

LOG_HEAD_BYTES = 1 * MiB
"""Read from the start: the format, a CSV header and the first steps come first."""

LOG_TAIL_FIRST_BYTES = 1 * MiB
"""First tail read (a few thousand lines of ~200 bytes); it doubles while a metric has too few values."""

LOG_TAIL_MAX_BYTES = 32 * MiB
"""Largest tail: about a second of parsing; rarely logged metrics get fewer exact values."""

LOG_OVERVIEW_WINDOWS = 64
"""Windows sampled between head and tail, each `LOG_OVERVIEW_WINDOW_BYTES`: a few hundred lines apiece."""

LOG_OVERVIEW_WINDOW_BYTES = 64 * 1024

LOG_FILL_BYTES_PER_CHECK = 64 * MiB
"""Bytes of exact history re-read per later check (~2 s): a 1 GB log is exact after ~16 checks."""

LOG_CATCH_UP_BYTES = 512 * MiB
"""Most bytes a later check reads of what was appended (~15 s of parsing): a log that grew more since the last
check is read tail-first again, so no check's time grows with the log's write rate."""

LINE_START_SCAN_BYTES = 1 * MiB
"""How far past a cut the next line start is looked for; a cut inside a longer line moves on."""

READ_BYTES = 1 << 18
SCAN_PIECE_BYTES = 4096


DEFAULT_LIMITS = TailLimits(
    small_bytes=LOG_SMALL_BYTES,
    head_bytes=LOG_HEAD_BYTES,
    tail_first_bytes=LOG_TAIL_FIRST_BYTES,
    tail_max_bytes=LOG_TAIL_MAX_BYTES,
    tail_points=TAIL_POINTS,
    overview_reads=LOG_OVERVIEW_WINDOWS,
    overview_read_bytes=LOG_OVERVIEW_WINDOW_BYTES,
    fill_bytes_per_check=LOG_FILL_BYTES_PER_CHECK,
    catch_up_bytes=LOG_CATCH_UP_BYTES,
)  # what `logs.read_open_log` uses unless told otherwise

Consume = Callable[[Iterable[bytes], LogParser, ParseNotes], tuple[dict[str, SeriesChunk], int]]
"""``logs``' line parser: chunks → (series, bytes of whole lines consumed)."""


def _chunks(fh: Any, start: int, stop: int) -> Iterator[bytes]:
    fh.seek(start)
    position = start
    while position < stop:
        chunk = fh.read(min(READ_BYTES, stop - position))
        if not chunk:
            return
        position += len(chunk)
        yield chunk


def _line_start(fh: Any, offset: int, limit: int) -> int:
    """The first line start at or after ``offset`` (``offset`` itself when a line ends just before it)."""
    if offset <= 0:
        return 0
    fh.seek(offset - 1)
    scanned = 0
    while scanned < LINE_START_SCAN_BYTES and offset - 1 + scanned < limit:
        data = fh.read(min(SCAN_PIECE_BYTES, limit - offset + 1 - scanned))
        if not data:
            break
        ends = [i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0]
        if ends:
            return offset + scanned + min(ends)
        scanned += len(data)
    return limit


@dataclass
class _Part:
    series: dict[str, SeriesChunk]
    end: int  # the first byte not consumed
    parser: LogParser


def _parse(fh: Any, start: int, stop: int, parser: LogParser, notes: ParseNotes, consume: Consume) -> _Part:
    series, consumed = consume(_chunks(fh, start, stop), parser, notes)
    return _Part(series, start + consumed, parser)


@dataclass
class LogFirstRead:
    series: dict[str, SeriesChunk]
    offset: int  # where the next (incremental) read starts
    parser: LogParser  # the live parser, as it stands at ``offset``
    fill: FillBatch | None
    fill_cursor: dict[str, Any] | None
    notes: ParseNotes = field(default_factory=ParseNotes)


def read_log_tail_first(
    fh: Any, size: int, fmt: str | None, consume: Consume, limits: TailLimits, progress: Progress = no_progress
) -> LogFirstRead:
    """Head, tail and an overview of a long log (see the module docstring)."""
    notes = ParseNotes()
    head = _parse(fh, 0, min(size, limits.head_bytes), LogParser(fmt), notes, consume)
    starts = _StartState(head)
    tail, tail_start = _read_tail(fh, size, head.end, starts, fmt, set(head.series), notes, consume, limits, progress)
    middle = _overview(fh, head.end, tail_start, starts, fmt, notes, consume, limits)
    series = concat_series([head.series, *middle, *(part.series for part in tail)])
    exact_from = first_step(tail[0].series)
    if tail_start > head.end and (starts.counted or exact_from is None):  # none of it can count as exact
        exact_from = max((int(chunk.steps.max()) for chunk in series.values() if len(chunk)), default=-1) + 1
        if starts.counted:
            notes.extra.append(NO_STEPS_NOTE)
    fill = None if tail_start <= head.end or exact_from is None else {"offset": 0, "parser": None}
    return LogFirstRead(
        series=series,
        offset=tail[-1].end,
        parser=tail[-1].parser,
        fill=None if fill is None else FillBatch({}, exact_from, first=True),
        fill_cursor=None if fill is None else {**fill, "exact_from": exact_from},
        notes=notes,
    )


NO_STEPS_NOTE = (
    "note: this log has no step numbers and was read tail-first: its steps are estimates until the next "
    "checks have re-read it from the start"
)


@dataclass
class _StartState:
    """The parser state a part of the log starting at some offset begins with: the head's, and for a log whose
    steps are counted (``counted``: line counters, a progress bar's counts, or batch counts within epochs of
    unstated length), with the step estimated from the head's steps per byte."""

    head: _Part

    @property
    def counted(self) -> bool:
        parser = self.head.parser
        if self.head.end <= 0:
            return False
        if parser.epochs.length_unknown:
            return True
        return (not parser.explicit_steps and parser.counter > 0) or (parser.bar_steps and bool(parser.last_step))

    def parser(self, offset: int, fmt: str | None) -> LogParser:
        head = self.head.parser
        parser = LogParser.from_state(head.to_state(), fmt)
        if self.counted and head.epochs.length_unknown:  # the part's first epoch starts at the estimate
            estimate = round((head.last_step or 0) * offset / self.head.end)
            parser.last_step = estimate
            parser.epochs = parser.epochs._replace(epoch=None, offset=estimate)
        elif self.counted and head.bar_steps:
            estimate = round((head.last_step or 0) * offset / self.head.end)
            parser.last_step, parser.bar_n, parser.bar_offset = estimate, 0, estimate
        elif self.counted:
            estimate = round(head.counter * offset / self.head.end)
            parser.counter = parser.last_step = estimate
        return parser


def _read_tail(
    fh: Any,
    size: int,
    head_end: int,
    starts: _StartState,
    fmt: str | None,
    names: set[str],
    notes: ParseNotes,
    consume: Consume,
    limits: TailLimits,
    progress: Progress,
) -> tuple[list[_Part], int]:
    floor = max(head_end, _line_start(fh, size - limits.tail_max_bytes, size))
    start = max(floor, _line_start(fh, size - limits.tail_first_bytes, size))
    stop = size
    parts: list[_Part] = []
    counts: Counter[str] = Counter()
    while True:
        part = _parse(fh, start, stop, starts.parser(start, fmt), notes, consume)
        parts.insert(0, part)
        counts.update({name: len(chunk) for name, chunk in part.series.items()})
        progress(size - start, None, f"read the newest {(size - start) / MiB:.0f} MiB of the log exactly")
        if start <= floor or tail_holds_enough(counts, names, limits):
            return parts, start
        stop, start = start, max(floor, _line_start(fh, start - (size - start), start))


def _overview(
    fh: Any,
    lo: int,
    hi: int,
    starts: _StartState,
    fmt: str | None,
    notes: ParseNotes,
    consume: Consume,
    limits: TailLimits,
) -> list[dict[str, SeriesChunk]]:
    """Evenly spread windows of [lo, hi), each from its first line start; all of it when it is short."""
    if hi <= lo:
        return []
    window = limits.overview_read_bytes
    if hi - lo <= 2 * limits.overview_reads * window:
        return [_parse(fh, lo, hi, starts.parser(lo, fmt), notes, consume).series]
    out = []
    for at in np.linspace(lo, hi - window, limits.overview_reads).astype(np.int64).tolist():
        fh.seek(max(at - 1, 0))
        data = fh.read(window + 1)  # one read per window (over SSH: one round trip)
        ends = [i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0]
        if ends:
            series, _ = consume([data[min(ends) + 1 :]], starts.parser(at, fmt), notes)
            out.append(series)
    return out


@dataclass
class LogFill:
    batch: FillBatch
    cursor: dict[str, Any] | None  # None once done
    parser: LogParser | None  # once done: the parser the live reading continues with


def continue_fill(
    fh: Any, fill: dict[str, Any], live_offset: int, fmt: str | None, consume: Consume, limits: TailLimits
) -> LogFill:
    """The next piece of exact history, from where the fill-in stands up to at most the live offset."""
    state = fill.get("parser")
    parser = LogParser.from_state(state, fmt) if isinstance(state, dict) else LogParser(fmt)
    offset = int(fill.get("offset", 0))
    stop = min(offset + limits.fill_bytes_per_check, live_offset)
    part = _parse(fh, offset, stop, parser, ParseNotes(), consume)  # its fatal/error lines were reported live
    exact_from = int(fill["exact_from"])
    if part.end >= live_offset:
        return LogFill(FillBatch(part.series, None, done=True), None, part.parser)
    cursor = {"offset": part.end, "parser": part.parser.to_state(), "exact_from": exact_from}
    return LogFill(FillBatch(part.series, exact_from), cursor, None)
