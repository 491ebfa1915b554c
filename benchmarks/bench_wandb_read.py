"""How fast WandbFileSource reads a big ``.wandb`` file, against the bare cost of decoding it.

    .venv/bin/python benchmarks/bench_wandb_read.py [--steps 1000000] [--metrics 10]

Writing a million steps through wandb itself would take hours, so `make_run_file` writes the bytes
wandb 0.31 writes (the writer in tests/wandb_writer.py is checked byte for byte against a real run
in tests/test_wandb_file.py): per step, like wandb, a runtime summary, a summary update and a history
record. The file is cached in benchmarks/out/.

Printed, in one run:
(a) first read vs the bare loop "frame + CRC + Record.ParseFromString + parse values" over the same
    bytes, for every record (what a naive reader does) and for history records only (the least any
    reader must do); target ratio ≤ 1.5;
(b) after appending 1,000 steps, the incremental read vs decoding just those new records; ≤ 2.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mcp_training_check.sources.wandb_file import (  # noqa: E402
    BLOCK_SIZE,
    DEFAULT_LIMITS,
    FILE_HEADER,
    WandbFileSource,
    pb,
)
from tests.wandb_writer import RunFileWriter, go_json_number, run_record  # noqa: E402

OUT_DIR = REPO / "benchmarks" / "out"
DEFAULT_STEPS = 1_000_000
DEFAULT_METRICS = 10
APPEND_STEPS = 1_000
FIRST_READ_TARGET = 1.5
INCREMENTAL_TARGET = 2.0
INCREMENTAL_REPEAT = 5  # cheap: best of 5 steadies it
START_TIMESTAMP = 1_796_000_000.0
SECONDS_PER_STEP = 0.137
HISTORY_TAG = (2 << 3) | 2  # Record.history, length-delimited
CHUNK = struct.Struct("<IHB")
WHOLE = replace(DEFAULT_LIMITS, small_bytes=1 << 62)
"""The reader alone, reading the whole file (a first check reads long files tail-first: bench_first_check.py)."""


# --------------------------------------------------------------------------- the file


class _StepRecords:
    """Three reusable messages per step, as wandb writes them; only the values change per step."""

    def __init__(self, metrics: int) -> None:
        self.names = [f"train/metric_{index}" for index in range(metrics)]
        keys = [*self.names, "_runtime", "_timestamp", "_step"]
        self.runtime = pb.Record()
        for path, text in ((("_wandb", "runtime"), "0"), (("_runtime",), "0")):
            item = self.runtime.summary.update.add()
            item.nested_key.extend(path)
            item.value_json = text
        self.summary, self.history = pb.Record(), pb.Record()
        self.summary_items = [self._add(self.summary.summary.update, key) for key in keys]
        self.history_items = [self._add(self.history.history.item, key) for key in keys]

    @staticmethod
    def _add(container: Any, key: str) -> Any:
        item = container.add()
        item.nested_key.append(key)
        return item

    def payloads(self, num: int, step: int) -> tuple[bytes, bytes, bytes]:
        runtime = step * SECONDS_PER_STEP
        values = [1.0 / (1.0 + step * (index + 1) * 1e-4) for index in range(len(self.names))]
        texts = [go_json_number(v) for v in values]
        texts += [go_json_number(runtime), go_json_number(START_TIMESTAMP + runtime), str(step)]
        for item, text in zip(self.summary_items, texts, strict=True):
            item.value_json = text
        for item, text in zip(self.history_items, texts, strict=True):
            item.value_json = text
        self.runtime.num, self.summary.num, self.history.num = num, num + 1, num + 2
        self.history.history.step.num = step
        return (
            self.runtime.SerializeToString(),
            self.summary.SerializeToString(),
            self.history.SerializeToString(),
        )


def append_steps(path: Path, first_step: int, steps: int, metrics: int) -> None:
    """Append ``steps`` steps (runtime summary, summary, history) to an existing run file."""
    records = _StepRecords(metrics)
    with open(path, "ab") as handle:
        writer = RunFileWriter(handle, path.stat().st_size)
        for step in range(first_step, first_step + steps):
            for payload in records.payloads(10 + 3 * step, step):
                writer.write(payload)


def make_run_file(path: Path, steps: int, metrics: int) -> None:
    """A run of ``steps`` steps × ``metrics`` metrics, byte-compatible with wandb 0.31 (no exit yet)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        writer = RunFileWriter.create(handle)
        writer.write(run_record(1, "bench0001", name="bench", config={"lr": 0.001, "metrics": metrics}))
    append_steps(path, 0, steps, metrics)


def cached_run_file(steps: int, metrics: int) -> Path:
    path = OUT_DIR / f"run-bench-{steps}x{metrics}.wandb"
    if not path.exists():
        started = time.perf_counter()
        partial = path.with_suffix(".partial")
        make_run_file(partial, steps, metrics)
        os.replace(partial, path)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - started:.1f} s")
    return path


# --------------------------------------------------------------------------- the baseline


def bare_decode(path: Path, start: int, history_only: bool) -> int:
    """Frame + CRC + ParseFromString + parse values, nothing else; returns the number of values."""
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read()
    record, values, parts = pb.Record(), 0, b""
    pos = 0
    while pos + CHUNK.size <= len(data):
        block_left = BLOCK_SIZE - (start + pos) % BLOCK_SIZE
        if block_left < CHUNK.size:
            pos += block_left
            continue
        crc, length, kind = CHUNK.unpack_from(data, pos)
        piece = data[pos + CHUNK.size : pos + CHUNK.size + length]
        if zlib.crc32(piece, zlib.crc32(bytes([kind]))) != crc:
            raise ValueError(f"bad chunk at {start + pos}")
        pos += CHUNK.size + length
        parts = piece if kind in (1, 2) else parts + piece
        if kind in (2, 3):
            continue
        if history_only and _first_tag(parts) != HISTORY_TAG:
            continue
        record.ParseFromString(parts)
        if record.WhichOneof("record_type") == "history":
            values += _parse_items(record.history.item)
    return values


def _first_tag(payload: bytes) -> int:
    """The tag after Record.num (a varint that comes first)."""
    i = 1
    while payload[i] & 0x80:
        i += 1
    return payload[i + 1]


def _parse_items(items: Any) -> int:
    parsed = []
    for item in items:
        key = item.key
        if not key:
            nested = item.nested_key
            key = nested[0] if len(nested) == 1 else "/".join(nested)
        try:
            parsed.append((key, float(item.value_json)))
        except ValueError:
            parsed.append((key, json.loads(item.value_json)))
    return len(parsed)


# --------------------------------------------------------------------------- measuring


@dataclass
class Timing:
    wall_s: float
    cpu_s: float  # this process only: other jobs on the machine barely move it, so ratios use it


def timed(action: Callable[[], Any], repeat: int = 1) -> tuple[Timing, Any]:
    """Best of ``repeat`` runs (CPU time) of ``action``, and its last result."""
    best: Timing | None = None
    result: Any = None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = action()
        run = Timing(time.perf_counter() - wall, time.process_time() - cpu)
        best = run if best is None or run.cpu_s < best.cpu_s else best
    assert best is not None
    return best, result


def first_read(path: Path, repeat: int) -> tuple[dict[str, Timing], Any]:
    reader, batch = timed(lambda: WandbFileSource(path, limits=WHOLE).read(None), repeat)
    every, _ = timed(lambda: bare_decode(path, len(FILE_HEADER), history_only=False), repeat)
    history, _ = timed(lambda: bare_decode(path, len(FILE_HEADER), history_only=True), repeat)
    return {"reader": reader, "every": every, "history": history}, batch


def incremental_read(path: Path, steps: int, metrics: int, cursor: dict[str, Any]) -> dict[str, Timing]:
    """Append APPEND_STEPS steps, time the re-check from ``cursor``, then cut the file back."""
    size = path.stat().st_size
    try:
        append_steps(path, steps, APPEND_STEPS, metrics)
        reader, batch = timed(lambda: WandbFileSource(path, limits=WHOLE).read(cursor), INCREMENTAL_REPEAT)
        bare, _ = timed(lambda: bare_decode(path, size, history_only=False), INCREMENTAL_REPEAT)
    finally:
        os.truncate(path, size)  # keep the cached file as generated
    assert batch.new_points == APPEND_STEPS * metrics and not batch.restarted, "incremental read is wrong"
    return {"reader": reader, "bare": bare}


def report(steps: int, metrics: int, size: int, first: dict[str, Timing], inc: dict[str, Timing]) -> None:
    print(f"\n{steps:,} steps × {metrics} metrics, {size / 1e6:.0f} MB ({steps * 3:,} records)")
    print(f"{'CPU seconds (wall)':44}{'reader':>16}{'bare decode':>16}{'ratio':>7}{'target':>8}")
    rows = [
        ("first read vs bare decode of every record", first["reader"], first["every"], FIRST_READ_TARGET),
        ("first read vs bare decode of history only", first["reader"], first["history"], FIRST_READ_TARGET),
        (f"+{APPEND_STEPS:,} steps: re-check vs their decode", inc["reader"], inc["bare"], INCREMENTAL_TARGET),
    ]
    for label, reader, bare, target in rows:
        ratio = reader.cpu_s / bare.cpu_s
        cells = [f"{t.cpu_s:7.3f} ({t.wall_s:6.3f})" for t in (reader, bare)]
        print(f"{label:44}{cells[0]:>16}{cells[1]:>16}{ratio:7.2f}{target:6.1f} {'ok' if ratio <= target else 'SLOW'}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    parser.add_argument("--metrics", type=int, default=DEFAULT_METRICS)
    parser.add_argument("--repeat", type=int, default=1, help="best of N first reads (each is slow)")
    args = parser.parse_args(argv)
    path = cached_run_file(args.steps, args.metrics)
    first, batch = first_read(path, args.repeat)
    assert batch.new_points == args.steps * args.metrics and batch.skipped_chunks == 0, "first read is wrong"
    inc = incremental_read(path, args.steps, args.metrics, batch.cursor)
    report(args.steps, args.metrics, path.stat().st_size, first, inc)


if __name__ == "__main__":
    main()
