"""Read a wandb 0.31 ``run-<id>.wandb`` transaction log, incrementally.

wandb 0.31 ships no reader for its own local log, yet the file holds every logged value of the run
the moment the writer flushes (per full 32 KiB block, or about every 15 s). Layout (checked against
files written by wandb 0.31.0 itself, see tests/test_wandb_file.py):

* a 7-byte header ``:W&B`` + uint16 LE 0xBEE1 + uint8 version 0;
* LevelDB-log framing in 32 KiB blocks counted from file offset 0 (the header sits in block 0): each
  chunk is crc32 (uint32 LE, IEEE, over type byte + payload), length (uint16 LE), type (1 FULL,
  2 FIRST, 3 MIDDLE, 4 LAST), payload; a block tail shorter than a chunk header is zero padding
  (read by ``wandb_framing``);
* each record is a serialized ``wandb_internal_pb2.Record``.

A long run's first read is tail-first (``wandb_tail``): the newest history exactly, an overview of
the older one, then a bounded fill-in per later read until the stored history is exact.

Damage is never fatal: a chunk with a bad CRC, type or length is counted in ``skipped_chunks`` and
reading resumes at the next block boundary, as LevelDB does. A file that simply ends early (a live
writer mid-flush) is not damage: reading stops before the unfinished record and the cursor points
at its start, so the next read picks it up whole.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import RunNotFound, SourceError
from ..files import describe_os_error, open_regular
from .base import Cursor, FillBatch, Progress, ReadBatch, SeriesChunk, TailLimits, catch_up_note, no_progress
from .wandb_dir import is_wandb_path, resolve_wandb_path
from .wandb_framing import BLOCK_SIZE, FILE_HEADER, Framer, frame_records
from .wandb_records import Decoder, RunState, protobuf_module
from .wandb_tail import DEFAULT_LIMITS, check_limits, read_fill, read_tail_first, start_fill

__all__ = [
    "BLOCK_SIZE",
    "DEFAULT_LIMITS",
    "FILE_HEADER",
    "TailLimits",
    "WandbFileSource",
    "frame_records",
    "is_wandb_path",
    "resolve_wandb_path",
]


def __getattr__(name: str) -> Any:
    """``wandb_file.pb``: the Record protobuf module, imported on first use (see `wandb_records`)."""
    if name == "pb":
        return protobuf_module()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


RUN_FILE_FIX = "pass the run's wandb/run-* directory, or the run-<id>.wandb file wandb itself writes"
HEAD_CHECK_BYTES = 4096  # identity check: a replaced file differs in its first bytes

# --------------------------------------------------------------------------- the source


class WandbFileSource:
    """Incremental reader of one W&B run's local ``.wandb`` file (any accepted path form).

    The path is resolved again at every read, so ``wandb/latest-run`` follows a newly started run;
    a different file than the cursor's is read from the start with ``restarted=True``.
    """

    def __init__(self, path: str | Path, *, limits: TailLimits | None = None, progress: Progress | None = None) -> None:
        self.path = Path(path)
        self.limits = check_limits(limits or DEFAULT_LIMITS)
        self.progress = progress or no_progress

    def read(self, cursor: Cursor | None) -> ReadBatch:
        file_path = resolve_wandb_path(self.path)
        with open_regular(file_path, what="W&B run file", fix=RUN_FILE_FIX) as handle:
            try:
                return self._read_open(file_path, handle, cursor)
            except OSError as exc:  # a regular file that cannot be read (EIO: a disk error)
                raise describe_os_error(exc, file_path, what="W&B run file", fix=RUN_FILE_FIX) from exc

    def _read_open(self, file_path: Path, handle: BinaryIO, cursor: Cursor | None) -> ReadBatch:
        stat = os.fstat(handle.fileno())
        head = handle.read(HEAD_CHECK_BYTES)
        restarted = cursor is not None and not _same_file(cursor, str(file_path), stat, head)
        appended = stat.st_size - int(cursor["offset"]) if cursor and not restarted else 0
        catching_up = appended > max(self.limits.catch_up_bytes, self.limits.read_whole_up_to)
        if restarted or catching_up:
            cursor = None
        if catching_up:  # too much to decode in one check: the newest history first, as on a first read
            batch = self._first_read(file_path, handle, stat, head, RunState.from_cursor(None), restarted=True)
            batch.notes.append(catch_up_note(appended, self.limits.catch_up_bytes))
            return batch
        start = int(cursor["offset"]) if cursor else 0
        if start < len(FILE_HEADER):  # nothing read yet
            _check_header(file_path, head)
            start = len(FILE_HEADER) if len(head) >= len(FILE_HEADER) else 0
        state = RunState.from_cursor(cursor)
        if start == len(FILE_HEADER) and stat.st_size > self.limits.read_whole_up_to:
            return self._first_read(file_path, handle, stat, head, state, restarted)
        framer = Framer(resume=start)
        decoder = Decoder(state)
        if start > 0:
            for payloads in frame_records(handle, start, framer):
                decoder.feed(payloads)
                self.progress(framer.resume, stat.st_size, f"reading {file_path.name}, bytes")
        fill, fill_cursor, fill_undecodable = self._fill(handle, cursor, framer.resume)
        return self._batch(
            file_path, stat, head, state, series=decoder.builder.build(), offset=framer.resume,
            skipped=framer.skipped_chunks, undecodable=decoder.undecodable + fill_undecodable,
            restarted=restarted, fill=fill, fill_cursor=fill_cursor,
        )  # fmt: skip

    def _first_read(
        self, file_path: Path, handle: BinaryIO, stat: os.stat_result, head: bytes, state: RunState, restarted: bool
    ) -> ReadBatch:
        """Head, tail and an overview of a long file; the fill-in begins at the next read."""
        first = read_tail_first(handle, stat.st_size, state, self.limits, self.progress)
        exact_from = first.exact_from
        return self._batch(
            file_path, stat, head, state, series=first.series, offset=first.resume, skipped=first.skipped,
            undecodable=first.undecodable, restarted=restarted,
            fill=None if exact_from is None else FillBatch({}, exact_from, first=True),
            fill_cursor=None if exact_from is None else start_fill(exact_from),
        )  # fmt: skip

    def _fill(
        self, handle: BinaryIO, cursor: Cursor | None, live_offset: int
    ) -> tuple[FillBatch | None, dict[str, object] | None, int]:
        """The next piece of the fill-in, when one is under way: (batch, its next cursor, undecodable)."""
        fill_cursor = cursor.get("fill") if cursor else None
        if not isinstance(fill_cursor, dict):
            return None, None, 0
        piece = read_fill(handle, fill_cursor, live_offset, self.limits)
        exact_from = int(fill_cursor["exact_from"])
        self.progress(piece.cursor["offset"], live_offset, "re-reading older history exactly (fill-in), bytes")
        batch = FillBatch(piece.series, None if piece.done else exact_from, done=piece.done)
        return batch, None if piece.done else piece.cursor, piece.undecodable

    def _batch(
        self,
        file_path: Path,
        stat: os.stat_result,
        head: bytes,
        state: RunState,
        *,
        series: dict[str, SeriesChunk],
        offset: int,
        skipped: int,
        undecodable: int,
        restarted: bool,
        fill: FillBatch | None,
        fill_cursor: dict[str, object] | None,
    ) -> ReadBatch:
        state.finish_read(file_path.parent)
        warnings = state.warnings
        if undecodable:
            warnings.append(f"{undecodable} record(s) with a valid checksum could not be decoded")
        new_cursor = {
            "path": str(file_path),
            "offset": offset,
            "size": stat.st_size,
            "inode": stat.st_ino,
            "dev": stat.st_dev,
            "head_len": len(head),
            "head_crc": zlib.crc32(head),
            **state.to_cursor(),
        }
        if fill_cursor is not None:
            new_cursor["fill"] = fill_cursor
        return ReadBatch(
            series=series,
            cursor=new_cursor,
            info=state.run_info(),
            skipped_chunks=skipped + undecodable,
            restarted=restarted,
            warnings=warnings,
            fill=fill,
            one_writer=True,
        )


def _same_file(cursor: Cursor, path: str, stat: os.stat_result, head: bytes) -> bool:
    """Same path, same inode, not shrunk, and the first bytes seen last time are unchanged."""
    head_len = int(cursor.get("head_len", 0))
    return (
        cursor.get("path") == path
        and cursor.get("inode") == stat.st_ino
        and cursor.get("dev") == stat.st_dev
        and stat.st_size >= int(cursor.get("size", 0))
        and len(head) >= head_len
        and zlib.crc32(head[:head_len]) == cursor.get("head_crc")
    )


def _check_header(file_path: Path, head: bytes) -> None:
    seen = head[: len(FILE_HEADER)]
    if FILE_HEADER.startswith(seen):
        return
    if seen[:4] == FILE_HEADER[:4] and len(seen) == len(FILE_HEADER):
        raise SourceError(
            f"{file_path} is a W&B run file of an unsupported format version {seen[-1]} (this reader knows "
            "version 0, wandb 0.31): read the run through the W&B API or its training log instead."
        )
    raise RunNotFound(
        f"{file_path} is not a W&B run file (it starts with {seen!r}, expected {FILE_HEADER!r}): pass the "
        "run-<id>.wandb file from the run's wandb/run-* directory."
    )
