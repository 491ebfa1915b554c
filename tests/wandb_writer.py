"""Write (and, for test bookkeeping, split) wandb 0.31 ``.wandb`` files without running wandb.

Real runs take seconds per thousand steps; the benchmark needs a million. This writer produces the
bytes wandb itself writes: ``test_wandb_file.py`` re-frames a real run's payloads with it and gets
the identical file, and rebuilds real history records with `history_record` byte for byte.

`split_chunks` is a deliberately simple reader of well-formed files used only to know where each
record and chunk lies (to cut, corrupt and predict); the reader under test is elsewhere.
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from mcp_training_check.sources.wandb_file import BLOCK_SIZE, FILE_HEADER, pb

CHUNK_HEADER = struct.Struct("<IHB")
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
Key = str | tuple[str, ...]  # a tuple is a nested key: ("opt", "lr") for {"opt": {"lr": ...}}
GO_FIXED_MIN_EXP, GO_FIXED_MAX_EXP = -4, 6  # Go's shortest 'g' format is fixed-point in this range


class RunFileWriter:
    """Appends records to a ``.wandb`` file with LevelDB-log framing (32 KiB blocks, padded tails)."""

    def __init__(self, handle: BinaryIO, offset: int) -> None:
        self._handle = handle
        self.offset = offset

    @classmethod
    def create(cls, handle: BinaryIO) -> RunFileWriter:
        handle.write(FILE_HEADER)
        return cls(handle, len(FILE_HEADER))

    def write(self, payload: bytes) -> None:
        first, rest = True, payload
        while True:
            block_left = BLOCK_SIZE - self.offset % BLOCK_SIZE
            if block_left < CHUNK_HEADER.size:
                self._emit(b"\0" * block_left)
                block_left = BLOCK_SIZE
            piece, rest = rest[: block_left - CHUNK_HEADER.size], rest[block_left - CHUNK_HEADER.size :]
            kind = (FULL if not rest else FIRST) if first else (LAST if not rest else MIDDLE)
            crc = zlib.crc32(piece, zlib.crc32(bytes([kind])))
            self._emit(CHUNK_HEADER.pack(crc, len(piece), kind) + piece)
            first = False
            if not rest:
                return

    def _emit(self, data: bytes) -> None:
        self._handle.write(data)
        self.offset += len(data)


def write_run_file(path: Path, payloads: Iterable[bytes]) -> None:
    with open(path, "wb") as handle:
        writer = RunFileWriter.create(handle)
        for payload in payloads:
            writer.write(payload)


# --------------------------------------------------------------------------- records


def go_json_number(value: float | int) -> str:
    """A number as wandb 0.31's Go core writes ``value_json``: Go's shortest 'g' format.

    Shortest round-trip digits; fixed notation for decimal exponents in [-4, 6), else ``d.ddde±XX``
    (``1.796031018141706e+09``); integral floats lose their ``.0``; NaN/Inf as ``NaN``/``Infinity``.
    """
    if isinstance(value, int):  # bool is an int too: json gives true/false
        return json.dumps(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    sign = "-" if value < 0 else ""
    if value == 0:
        return sign + "0"
    digits, exp = _shortest_digits(abs(value))
    if GO_FIXED_MIN_EXP <= exp < GO_FIXED_MAX_EXP:
        if exp < 0:
            return f"{sign}0.{'0' * (-exp - 1)}{digits}"
        whole, frac = digits[: exp + 1].ljust(exp + 1, "0"), digits[exp + 1 :]
        return sign + whole + (f".{frac}" if frac else "")
    body = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
    return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """Significant digits of Python's shortest repr, and the decimal exponent of the first one."""
    mantissa, _, exponent = repr(value).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    exp = int(exponent or 0) + len(whole) - 1
    significant = digits.lstrip("0")
    exp -= len(digits) - len(significant)
    return significant.rstrip("0") or "0", exp


def _item(message: Any, key: Key, value_json: str) -> None:
    message.nested_key.extend([key] if isinstance(key, str) else list(key))
    message.value_json = value_json


def history_record(num: int, items: Sequence[tuple[Key, str]], step: int | None) -> bytes:
    """A history Record; ``items`` are (key, value_json) in write order, ``_step`` etc. included."""
    record = pb.Record(num=num)
    for key, text in items:
        _item(record.history.item.add(), key, text)
    if step is not None:
        record.history.step.num = step
    return bytes(record.SerializeToString())


def summary_record(num: int, items: Sequence[tuple[Key, str]]) -> bytes:
    record = pb.Record(num=num)
    for key, text in items:
        _item(record.summary.update.add(), key, text)
    return bytes(record.SerializeToString())


def run_record(num: int, run_id: str, *, name: str = "", config: dict[str, Any] | None = None, **extra: str) -> bytes:
    record = pb.Record(num=num)
    record.run.run_id = run_id
    record.run.display_name = name
    for key, value in {"_wandb": {}, **(config or {})}.items():
        update = record.run.config.update.add()
        update.key = key
        update.value_json = json.dumps(value, separators=(",", ":"))
    for field_name, value in extra.items():
        setattr(record.run, field_name, value)
    return bytes(record.SerializeToString())


def exit_record(num: int, exit_code: int) -> bytes:
    record = pb.Record(num=num)
    record.exit.exit_code = exit_code
    return bytes(record.SerializeToString())


# --------------------------------------------------------------------------- test bookkeeping


@dataclass(frozen=True)
class Chunk:
    offset: int  # file offset of the chunk header
    kind: int
    length: int
    record: int  # index of the record it belongs to

    @property
    def end(self) -> int:
        return self.offset + CHUNK_HEADER.size + self.length


@dataclass(frozen=True)
class RecordSpan:
    start: int  # offset of its first chunk
    end: int  # end of its last chunk
    payload: bytes


def split_chunks(data: bytes) -> tuple[list[Chunk], list[RecordSpan]]:
    """Chunks and records of a well-formed file (asserts it is well formed)."""
    assert data[: len(FILE_HEADER)] == FILE_HEADER
    chunks: list[Chunk] = []
    records: list[RecordSpan] = []
    pos, parts, start = len(FILE_HEADER), b"", 0
    while pos + CHUNK_HEADER.size <= len(data):
        if BLOCK_SIZE - pos % BLOCK_SIZE < CHUNK_HEADER.size:
            pos += BLOCK_SIZE - pos % BLOCK_SIZE
            continue
        crc, length, kind = CHUNK_HEADER.unpack_from(data, pos)
        piece = data[pos + CHUNK_HEADER.size : pos + CHUNK_HEADER.size + length]
        assert zlib.crc32(piece, zlib.crc32(bytes([kind]))) == crc, f"bad chunk at {pos}"
        chunks.append(Chunk(pos, kind, length, len(records)))
        if kind in (FULL, FIRST):
            parts, start = piece, pos
        else:
            parts += piece
        pos += CHUNK_HEADER.size + length
        if kind in (FULL, LAST):
            records.append(RecordSpan(start, pos, parts))
    return chunks, records
