"""The first read of a long TensorBoard event file, and the fill-in that later makes its stored history exact.

The plan of ``log_tail``, on TFRecords instead of lines, and with its limits (`log_tail.DEFAULT_LIMITS`, or the
SSH ones): an event file decodes at ~25 MB/s, about the rate a text log parses, so the same byte sizes cost
about the same time. A file over ``small_bytes`` is read on its first check as

1. its head (``head_bytes``): the first steps, and the tags TF2 marks as another plugin's with their first value;
2. its tail, from a record start found after a cut, grown backwards (doubling) until every tag seen has
   ``tail_points`` values in it or it spans ``tail_max_bytes``. Steps are explicit (``Event.step``), so unlike a
   log without step numbers the tail is exact from its first step on;
3. ``overview_reads`` windows of ``overview_read_bytes`` spread between them, each one read (over SSH one round
   trip): an overview. A short middle is read whole, and then nothing is an overview.

Each later read re-reads the file from its start, ``fill_bytes_per_check`` at a time, up to where the live
reading stands (`advance_fill`); when it arrives its points replace the stored series (``base.FillBatch``). A
TensorBoard directory has one fill-in for all its files, in their reading order (a resumed run's files carry
the same tags: a tag's exact history is every file's points in order, so the fill-in cannot replace one file's
part of it alone); each file's first read is tail-first or whole by its own size.

Finding a record start after an arbitrary offset (`find_record_start`): a TFRecord header is ``uint64 length |
uint32 masked crc32c(length)``; a start is a position whose 12 bytes hold a length (its high 4 bytes zero: no
record is near 4 GiB) and its masked crc, and whose next record's header holds as well (up to
`CONFIRM_RECORDS` of them, as far as the bytes scanned reach). A false start needs the 32-bit crc to match by
chance twice (1 in 2^64 per position holding 4 zero bytes; below 2^-44 over a whole `BOUNDARY_SCAN_BYTES`
scan even if every byte were one): negligible. Only a record ending exactly at the end of the file is taken on
its own crc, once its length lands exactly there too. If one slipped through anyway, its records are garbage until
the chain meets a real header or fails one: garbage is counted as undecodable records (said in the notes, or
rarely a wrong value under a tag), a failed header ends that part's read with the damaged-file note; nothing
is raised, and the fill-in re-reads that part exactly from the start of the file.

The fill-in's own notes are dropped (the live reading reports damage where it reads; a damaged middle the
tail-first read skipped is resynced past, `_fill_file`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
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
from .tfevents import (
    FOOTER_BYTES,
    HEADER_BYTES,
    MAX_RECORD_BYTES,
    RECORD_HEADER,
    EventsRead,
    read_events,
    record_length,
)

__all__ = ["EventsFirstRead", "FillFile", "advance_fill", "find_record_start", "read_events_tail_first"]

MiB = 1024 * 1024

CONFIRM_RECORDS = 4
"""Headers after a candidate record start that must hold too (those within the bytes scanned)."""

SCAN_FIRST_BYTES = 64 * 1024
"""Bytes read past a cut to find a record start (scalar records are ~50 bytes, a histogram a few KiB)."""

BOUNDARY_SCAN_BYTES = 1 * MiB
"""Bytes read past a cut when the first scan found no start (an image); none found: the cut moves on."""

_HIGH_ZEROS = b"\0\0\0\0"


def _header_holds(data: bytes, at: int) -> int | None:
    """The record length at ``at`` when its header's crc holds and it is not over `MAX_RECORD_BYTES`, else None."""
    length = record_length(data, at)
    return length if length is not None and length <= MAX_RECORD_BYTES else None


def _chain_holds(data: bytes, at: int, *, ends_at_limit: bool) -> bool:
    """Whether the record at ``at`` and the next `CONFIRM_RECORDS` headers within ``data`` hold: at least one
    header after the candidate, or the candidate ending exactly where ``data`` ends when that is the limit."""
    held = 0
    while held <= CONFIRM_RECORDS and at + HEADER_BYTES <= len(data):
        length = _header_holds(data, at)
        if length is None:
            return False
        held += 1
        at += HEADER_BYTES + length + FOOTER_BYTES
    return held >= 2 or (ends_at_limit and at == len(data))


def find_record_start(data: bytes, pos: int = 0, *, ends_at_limit: bool = False) -> int | None:
    """The first offset at or after ``pos`` in ``data`` where a record starts (see the module docstring), None
    when none is confirmed within ``data``; ``ends_at_limit``: ``data`` ends where the records end (a file's
    size), so a record ending exactly there needs no header after it."""
    while True:
        zeros = data.find(_HIGH_ZEROS, pos + 4)
        if zeros < 0 or zeros + 8 > len(data):
            return None
        at = zeros - 4
        if _chain_holds(data, at, ends_at_limit=ends_at_limit):
            return at
        pos = at + 1


def record_start(fh: Any, offset: int, limit: int) -> int:
    """The first record start at or after ``offset`` in the open file, before ``limit``; ``limit`` when none is
    found within `BOUNDARY_SCAN_BYTES`."""
    if offset <= 0:
        return 0
    for scan in (SCAN_FIRST_BYTES, BOUNDARY_SCAN_BYTES):
        want = min(scan, limit - offset)
        if want <= 0:
            return limit
        fh.seek(offset)
        data = fh.read(want)
        found = find_record_start(data, ends_at_limit=offset + len(data) >= limit)
        if found is not None:
            return offset + found
        if want < scan:
            break
    return limit


class _Window:
    """Bytes read once at ``base``, read like the file they came from (``read_events`` seeks and reads)."""

    def __init__(self, data: bytes, base: int) -> None:
        self.data, self.base, self.position = data, base, base

    def seek(self, position: int) -> None:
        self.position = position

    def read(self, size: int) -> bytes:
        start = self.position - self.base
        out = self.data[start : start + size]
        self.position += len(out)
        return out


# --------------------------------------------------------------------------- the first read


@dataclass
class EventsFirstRead:
    series: dict[str, SeriesChunk]
    offset: int  # where the next (incremental) read starts
    exact_from: int | None  # first step read exactly; None when every record was read
    other_plugin_tags: list[str]
    skipped: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class _Reader:
    """Reads ranges of one open file with the tags the head saw claimed by another plugin; keeps the notes."""

    fh: Any
    name: str
    prefix: str
    tags: list[str] = field(default_factory=list)
    skipped: int = 0
    notes: list[str] = field(default_factory=list)

    def read(self, start: int, stop: int, fh: Any = None) -> EventsRead:
        read = read_events(fh or self.fh, start, stop, name=self.name, prefix=self.prefix, other_plugin_tags=self.tags)
        self.skipped += read.skipped
        self.notes.extend(note for note in read.notes if note not in self.notes)
        return read


def read_events_tail_first(
    fh: Any, size: int, *, name: str, prefix: str, limits: TailLimits, progress: Progress = no_progress
) -> EventsFirstRead:
    """Head, tail and an overview of a long event file (see the module docstring)."""
    reader = _Reader(fh, name, prefix)
    head = reader.read(0, min(size, limits.head_bytes))
    reader.tags = head.other_plugin_tags
    tail, tail_start = _read_tail(reader, size, head.offset, set(head.series), limits, progress)
    middle, whole = _overview(reader, head.offset, tail_start, limits)
    series = concat_series([head.series, *middle, *(part.series for part in tail)])
    exact_from = None
    if not whole:
        exact_from = first_step(concat_series(part.series for part in tail))
        if exact_from is None:  # the tail holds no scalar: nothing stored counts as exact
            exact_from = max((int(chunk.steps.max()) for chunk in series.values() if len(chunk)), default=-1) + 1
    claimed = sorted({*reader.tags, *(tag for part in tail for tag in part.other_plugin_tags)})
    return EventsFirstRead(series, tail[-1].offset, exact_from, claimed, reader.skipped, reader.notes)


def _read_tail(
    reader: _Reader, size: int, head_end: int, names: set[str], limits: TailLimits, progress: Progress
) -> tuple[list[EventsRead], int]:
    """Tail parts in file order (the last one reaches the end of the file), and where the tail starts."""
    fh = reader.fh
    cut = size - limits.tail_max_bytes
    floor = head_end if cut <= head_end else max(head_end, record_start(fh, cut, size))
    span, stop = limits.tail_first_bytes, size
    parts: list[EventsRead] = []
    counts: Counter[str] = Counter()
    while True:
        start = floor if size - span <= floor else max(floor, record_start(fh, size - span, stop))
        part = reader.read(start, stop)
        parts.insert(0, part)
        counts.update({tag: len(chunk) for tag, chunk in part.series.items()})
        progress(size - start, None, f"read the newest {(size - start) / MiB:.0f} MiB of the event file exactly")
        if start <= floor or tail_holds_enough(counts, names, limits):
            return parts, start
        stop, span = start, span * 2


def _overview(reader: _Reader, lo: int, hi: int, limits: TailLimits) -> tuple[list[dict[str, SeriesChunk]], bool]:
    """Evenly spread windows of [lo, hi), each from its first record start, and whether all of it was read
    (a short middle is)."""
    if hi <= lo:
        return [], True
    window = limits.overview_read_bytes
    if hi - lo <= 2 * limits.overview_reads * window:
        return [reader.read(lo, hi).series], True
    out = []
    for at in np.linspace(lo, hi - window, limits.overview_reads).astype(np.int64).tolist():
        reader.fh.seek(at)
        data = reader.fh.read(window)  # one read per window (over SSH: one round trip)
        start = find_record_start(data)
        if start is not None:
            out.append(reader.read(at + start, at + len(data), _Window(data, at)).series)
    return out, False


# --------------------------------------------------------------------------- the fill-in


def start_fill(exact_from: int) -> dict[str, Any]:
    """The cursor of a fill-in that has not begun: the files it re-read, the one it is in, where, and the tags
    another plugin claimed in it so far."""
    return {"exact_from": exact_from, "done": [], "file": None, "offset": 0, "tags": []}


@dataclass(frozen=True)
class FillFile:
    """One event file as the fill-in re-reads it: its name in the cursor, its tag prefix, the live reading's
    offset in it (this check's), and how to open it."""

    name: str
    prefix: str
    live_offset: int
    open: Callable[[], AbstractContextManager[Any]]


def advance_fill(
    batch_fill: FillBatch | None,
    stored: Any,
    files: Sequence[FillFile],
    limits: TailLimits,
    *,
    restarted: bool,
    cursors: Mapping[str, dict[str, Any]],
    progress: Progress = no_progress,
) -> tuple[FillBatch | None, dict[str, Any] | None]:
    """This check's fill piece and the fill cursor to store. ``batch_fill``: a tail-first read just now (its
    first exact step; the fill-in starts again from the first file, from the later of that step and the one a
    fill-in under way had); ``stored``: the fill cursor stored with the last check. A file the fill-in has
    re-read to its live offset gets the tags another plugin claimed in it into its cursor (``cursors``)."""
    under_way = isinstance(stored, Mapping) and not restarted
    if batch_fill is not None:
        if under_way and batch_fill.exact_from is not None:
            batch_fill.exact_from = max(batch_fill.exact_from, int(stored["exact_from"]))
        return batch_fill, start_fill(batch_fill.exact_from or 0)
    if not under_way:
        return None, None
    return _continue_fill(dict(stored), files, limits, cursors, progress)


def _continue_fill(
    fill: dict[str, Any],
    files: Sequence[FillFile],
    limits: TailLimits,
    cursors: Mapping[str, dict[str, Any]],
    progress: Progress,
) -> tuple[FillBatch, dict[str, Any] | None]:
    budget = limits.fill_bytes_per_check
    parts: list[dict[str, SeriesChunk]] = []
    done = [name for name in fill.get("done", []) if isinstance(name, str)]
    names = [file.name for file in files if file.name not in done]
    if fill.get("file") in names and names[0] != fill["file"]:  # a file appeared before the one under way
        exact_from = int(fill["exact_from"])  # its points go first: a tag's order is only kept from the start
        return FillBatch({}, exact_from, first=True), start_fill(exact_from)
    for file in files:
        if file.name in done:
            continue
        if budget <= 0:
            break
        ours = file.name == fill.get("file")
        start, tags = (int(fill["offset"]), list(fill.get("tags", []))) if ours else (0, [])
        with file.open() as fh:
            series, offset, tags = _fill_file(fh, file, start, min(start + budget, file.live_offset), tags)
        parts.append(series)
        budget -= offset - start
        progress(offset, file.live_offset, f"re-reading {file.name} exactly (fill-in), bytes")
        if offset < file.live_offset:
            fill.update(file=file.name, offset=offset, tags=tags, done=done)
            return FillBatch(concat_series(parts), int(fill["exact_from"])), fill
        done.append(file.name)
        _claim(cursors.get(file.name), tags)
    if len(done) < len({file.name for file in files}):
        fill.update(file=None, offset=0, tags=[], done=done)
        return FillBatch(concat_series(parts), int(fill["exact_from"])), fill
    return FillBatch(concat_series(parts), None, done=True), None


def _fill_file(
    fh: Any, file: FillFile, start: int, stop: int, tags: list[str]
) -> tuple[dict[str, SeriesChunk], int, list[str]]:
    """Records of [start, stop) exactly, at least one: (series, the next offset, tags claimed). A bad length
    checksum (a damaged middle the tail-first read skipped) is passed by the next record start after it."""
    read = read_events(fh, start, stop, name=file.name, prefix=file.prefix, other_plugin_tags=tags)
    if read.offset == start and read.corrupt_at is None and start < file.live_offset:  # a record over the budget
        fh.seek(start)
        length = RECORD_HEADER.unpack(fh.read(HEADER_BYTES))[0]
        stop = min(start + HEADER_BYTES + length + FOOTER_BYTES, file.live_offset)
        read = read_events(fh, start, stop, name=file.name, prefix=file.prefix, other_plugin_tags=tags)
    offset = read.offset
    if read.corrupt_at is not None and offset < file.live_offset:
        offset = record_start(fh, read.corrupt_at + 1, file.live_offset)
    return read.series, offset, read.other_plugin_tags


def _claim(cursor: dict[str, Any] | None, tags: Iterable[str]) -> None:
    if cursor is None:
        return
    claimed = sorted({*cursor.get("other_plugin_tags", []), *tags})
    if claimed:
        cursor["other_plugin_tags"] = claimed
