"""One TensorBoard event file read from its cursor: what ``logs.read_open_log`` does with an event file (a file
passed as the run, locally or over SSH) and what ``tensorboard`` does with each file of a directory.

Decoding is ``tfevents``'; a long file's first read is tail-first and its fill-in later (``events_tail``).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

from . import events_tail, log_tail
from .base import Cursor, FillBatch, Progress, ReadBatch, TailLimits, catch_up_note, no_progress
from .identity import same_file
from .tfevents import read_events, tags_from

__all__ = ["read_event_file", "read_events_log"]


def read_events_log(
    fh: Any,
    cursor: Cursor | None,
    *,
    identity: Mapping[str, Any],
    head: bytes,
    size: int,
    limits: TailLimits,
    progress: Progress | None,
) -> ReadBatch:
    """An event file passed as a log: its cursor is ``{"events": <the file's cursor>, "fill": <a fill-in under
    way>}``; a text log's cursor (a file that was a text log before) reads it from the start."""
    own = cursor.get("events", {}) if cursor is not None else None
    name = "the event file"
    batch = read_event_file(
        fh, own, identity=identity, head=head, end=size, name=name, limits=limits, progress=progress
    )  # fmt: skip
    live = events_tail.FillFile(name, "", int(batch.cursor["offset"]), lambda: nullcontext(fh))
    batch.fill, fill = events_tail.advance_fill(
        batch.fill, cursor.get("fill") if cursor else None, [live], limits, restarted=batch.restarted,
        cursors={name: batch.cursor}, progress=progress or no_progress,
    )  # fmt: skip
    batch.cursor = {"events": batch.cursor, **({"fill": fill} if fill is not None else {})}
    return batch


def read_event_file(
    fh: Any,
    own: Any,
    *,
    identity: Mapping[str, Any],
    head: bytes,
    end: int,
    name: str,
    prefix: str = "",
    limits: TailLimits | None = None,
    progress: Progress | None = None,
) -> ReadBatch:
    """The scalars appended to an open TensorBoard event file since ``own`` (its cursor: ``offset``, the file's
    ``identity``, tags another plugin claimed; None: never read). A file that shrank or was replaced is read from
    its start with ``restarted=True``. The batch's cursor is the file's new one.

    A long file read from its start (over ``limits.read_whole_up_to``), or one that grew more than a check
    catches up on (``limits.catch_up_bytes``: then ``restarted``, with `catch_up_note`), is read tail-first
    (``events_tail``): the batch's ``fill`` is then a first `FillBatch` with its first exact step (None when the
    read was exact after all), and the caller carries the fill-in on (`events_tail.advance_fill`)."""
    own = own if isinstance(own, Mapping) else ({} if own is not None else None)
    offset = own.get("offset", 0) if own else 0
    same = own is not None and isinstance(offset, int) and same_file(own.get("identity"), identity, head, offset)
    limits = limits or log_tail.DEFAULT_LIMITS
    catching_up = same and end - offset > max(limits.catch_up_bytes, limits.read_whole_up_to)
    if catching_up or (not same and end > limits.read_whole_up_to):
        batch = _events_tail_first(fh, identity, end, name, prefix, limits, progress)
        batch.restarted = own is not None
        if catching_up:
            batch.notes.append(catch_up_note(end - offset, limits.catch_up_bytes))
        return batch
    read = read_events(
        fh, offset if same else 0, end, name=name, prefix=prefix, other_plugin_tags=tags_from(own) if same else (),
        progress=progress,
    )  # fmt: skip
    return ReadBatch(
        series=read.series, cursor=_events_cursor(read.offset, identity, read.other_plugin_tags),
        skipped_chunks=read.skipped, restarted=own is not None and not same, notes=read.notes,
    )  # fmt: skip


def _events_cursor(offset: int, identity: Mapping[str, Any], other_plugin_tags: list[str]) -> Cursor:
    cursor: Cursor = {"offset": offset, "identity": dict(identity)}
    if other_plugin_tags:
        cursor["other_plugin_tags"] = other_plugin_tags
    return cursor


def _events_tail_first(
    fh: Any,
    identity: Mapping[str, Any],
    size: int,
    name: str,
    prefix: str,
    limits: TailLimits,
    progress: Progress | None,
) -> ReadBatch:
    first = events_tail.read_events_tail_first(
        fh, size, name=name, prefix=prefix, limits=limits, progress=progress or no_progress
    )  # fmt: skip
    return ReadBatch(
        series=first.series, cursor=_events_cursor(first.offset, identity, first.other_plugin_tags),
        skipped_chunks=first.skipped, notes=first.notes,
        fill=None if first.exact_from is None else FillBatch({}, first.exact_from, first=True),
    )  # fmt: skip
