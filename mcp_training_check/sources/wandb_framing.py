"""The framing of a wandb ``.wandb`` file: LevelDB-log chunks in 32 KiB blocks → whole record payloads.

After the 7-byte file header, the file is cut into 32 KiB blocks counted from offset 0; each chunk is
crc32 (uint32 LE, over type byte + payload), length (uint16 LE), type (1 FULL, 2 FIRST, 3 MIDDLE,
4 LAST), payload; a block tail shorter than a chunk header is zero padding. ``Framer`` reassembles
records from block-aligned windows and skips damage (bad CRC, type or length) up to the next block;
``frame_records`` feeds it a file window by window. What a payload means is ``wandb_file``'s business.

Because every block starts a fresh chunk, reading may also begin at *any* block boundary: a
``Framer(resync=True)`` drops the chunks there that continue a record begun earlier (expected, not
damage), and ``stop_at`` ends a read at the first record that begins at or after an offset (a record
begun before it is finished first). ``frame_range`` reads such a slice: the tail of a file, a sampled
block, or the next piece of a fill-in.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

__all__ = ["BLOCK_SIZE", "FILE_HEADER", "Framer", "block_floor", "frame_range", "frame_records"]

FILE_HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
BLOCK_SIZE = 32 * 1024
CHUNK_HEADER = struct.Struct("<IHB")  # crc32, payload length, chunk type
CHUNK_HEADER_SIZE = CHUNK_HEADER.size
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
# crc32 of the type byte alone: the chunk CRC continues from it over the payload
_TYPE_SEED = {kind: zlib.crc32(bytes([kind])) for kind in (FULL, FIRST, MIDDLE, LAST)}
READ_WINDOW_BYTES = 256 * BLOCK_SIZE  # 8 MiB per read(): few syscalls, bounded memory


@dataclass
class Framer:
    """Reassembles records from block-aligned windows of the file, carrying a split record across them.

    ``resume`` is the file offset where the next read must start: the first chunk of an unfinished
    record, or the end of what was consumed.
    """

    resume: int
    skipped_chunks: int = 0
    resync: bool = False  # started at a block boundary mid-file: leading continuation chunks are expected
    stop_at: int | None = None  # stop at the first record beginning at or after this offset
    done: bool = False  # ``stop_at`` was reached
    _parts: list[bytes] = field(default_factory=list)
    _record_start: int | None = None

    def frames(self, buf: bytes, base: int, at_eof: bool) -> list[bytes]:
        """Whole record payloads in ``buf`` (which starts at file offset ``base``)."""
        out: list[bytes] = []
        pos, size = 0, len(buf)
        unpack, crc32, seeds = CHUNK_HEADER.unpack_from, zlib.crc32, _TYPE_SEED
        while pos < size:
            block_left = BLOCK_SIZE - (base + pos) % BLOCK_SIZE
            if block_left < CHUNK_HEADER_SIZE:
                pos += block_left  # padding
                continue
            if pos + CHUNK_HEADER_SIZE > size:
                break  # header not written yet
            crc, length, kind = unpack(buf, pos)
            if self.stop_at is not None and base + pos >= self.stop_at and self._record_start is None:
                self.done = True
                break
            end = pos + CHUNK_HEADER_SIZE + length
            seed = seeds.get(kind)
            if seed is None or length > block_left - CHUNK_HEADER_SIZE:
                if at_eof and buf.count(0, pos) == size - pos:
                    break  # zeros up to the end: space reserved but not yet written
                pos = self._corrupt(pos, block_left)
                continue
            if end > size:
                break  # payload not written yet
            payload = buf[pos + CHUNK_HEADER_SIZE : end]
            if crc32(payload, seed) != crc:
                pos = self._corrupt(pos, block_left)
                continue
            if self.resync and kind <= FIRST:  # a record begins: what follows is no longer expected loss
                self.resync = False
            if kind == FULL:
                self._drop_partial()
                out.append(payload)
            elif kind == FIRST:
                self._drop_partial()
                self._parts, self._record_start = [payload], base + pos
            elif self._record_start is None:
                self.skipped_chunks += not self.resync  # MIDDLE/LAST whose start was lost (or lies before a resync)
            elif kind == MIDDLE:
                self._parts.append(payload)
            else:
                self._parts.append(payload)
                out.append(b"".join(self._parts))
                self._parts, self._record_start = [], None
            pos = end
        stop = base + min(pos, size)
        if self.done:
            self.resume = stop
            return out
        if BLOCK_SIZE - stop % BLOCK_SIZE < CHUNK_HEADER_SIZE:
            stop += BLOCK_SIZE - stop % BLOCK_SIZE  # in padding: the next record starts at the next block
        self.resume = stop if self._record_start is None else self._record_start
        return out

    def _corrupt(self, pos: int, block_left: int) -> int:
        """Count the bad chunk, forget the record it belonged to, resync at the next block."""
        self.skipped_chunks += 1
        self._parts, self._record_start = [], None
        return pos + block_left

    def _drop_partial(self) -> None:
        if self._record_start is not None:
            self.skipped_chunks += 1  # a record started but never finished
            self._parts, self._record_start = [], None


def frame_records(
    handle: BinaryIO, start: int, framer: Framer, window_bytes: int = READ_WINDOW_BYTES
) -> Iterator[list[bytes]]:
    """Yield lists of whole record payloads from ``start`` to the end of ``handle``, window by window.

    Windows (``window_bytes``, a multiple of the block size) end on block boundaries, so no chunk is
    cut by a window edge except at end of file.
    """
    handle.seek(start)
    offset = start
    while True:
        want = window_bytes - offset % BLOCK_SIZE
        buf = handle.read(want)
        at_eof = len(buf) < want
        yield framer.frames(buf, offset, at_eof)
        offset += len(buf)
        if at_eof:
            return


def block_floor(offset: int) -> int:
    """The start of the block holding ``offset``."""
    return offset - offset % BLOCK_SIZE


def frame_range(handle: BinaryIO, start: int, stop: int, framer: Framer) -> Iterator[list[bytes]]:
    """Whole records that begin in [``start``, ``stop``): from ``start`` (a record start or a block boundary;
    pass a ``resync`` framer for the latter), read on past ``stop`` only to finish a record begun before it.

    Afterwards ``framer.resume`` is the offset of the first record not returned (``stop`` or just past it),
    or the end of the file when it ended first.
    """
    framer.stop_at = stop
    span = block_floor(max(stop - start, 0) + BLOCK_SIZE - 1)  # whole blocks; more follow only to finish a record
    for payloads in frame_records(handle, start, framer, min(max(span, BLOCK_SIZE), READ_WINDOW_BYTES)):
        yield payloads
        if framer.done:
            return
