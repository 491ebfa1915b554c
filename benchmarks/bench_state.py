"""State size and batch cost for a long run: 1,000,000 steps × 10 metrics applied as 1,000 batches.

Prints the database size on disk (peak with the WAL, and after close), and per 1,000-step batch the
time to build its arrays the way a source does (`SeriesBuilder`) against the time `apply_batch`
takes once the history is full (steady state), plus `load_history`. Run:

    .venv/bin/python benchmarks/bench_state.py
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from mcp_training_check.sources.base import ReadBatch, SeriesBuilder
from mcp_training_check.state import DB_FILENAME, StateStore

STEPS_PER_BATCH = 1_000
BATCHES = 1_000
METRICS = 10
STEADY_BATCHES = 100  # the last ones, when raw points and buckets are full
RUN = "file:/bench/train.log"


def build_batch(batch: int, rng: np.random.Generator) -> tuple[ReadBatch, float]:
    """One batch built point by point, as a log or wandb source does; returns it and the seconds spent."""
    values = rng.normal(size=(METRICS, STEPS_PER_BATCH)).tolist()
    names = [f"metric_{m}" for m in range(METRICS)]
    started = time.perf_counter()
    builder = SeriesBuilder()
    first = batch * STEPS_PER_BATCH
    for i in range(STEPS_PER_BATCH):
        for m, name in enumerate(names):
            builder.add(name, first + i, values[m][i])
    read = ReadBatch(series=builder.build(), cursor={"batch": batch})
    return read, time.perf_counter() - started


def state_bytes(home: Path) -> int:
    return sum(path.stat().st_size for path in home.glob(f"{DB_FILENAME}*"))


def main() -> None:
    rng = np.random.default_rng(0)
    build_s, apply_s, peak = [], [], 0
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        started = time.perf_counter()
        with StateStore(home) as store:
            for b in range(BATCHES):
                batch, built = build_batch(b, rng)
                t0 = time.perf_counter()
                store.apply_batch(RUN, batch)
                apply_s.append(time.perf_counter() - t0)
                build_s.append(built)
                peak = max(peak, state_bytes(home))
            total = time.perf_counter() - started
            t0 = time.perf_counter()
            history = store.load_history(RUN)
            load_ms = (time.perf_counter() - t0) * 1e3
        closed = state_bytes(home)
    series = next(iter(history.metrics.values()))
    steady = slice(-STEADY_BATCHES, None)
    print(
        f"run: {BATCHES * STEPS_PER_BATCH:,} steps × {METRICS} metrics in {BATCHES:,} batches ({total:.1f} s)"
    )
    print(f"state on disk: {closed / 1e6:.2f} MB after close, {peak / 1e6:.2f} MB peak with WAL")
    print(
        f"per metric: {series.raw_steps.size} raw points + {series.raw_from} buckets, "
        f"total_points={series.total_points:,}"
    )
    print(f"per {STEPS_PER_BATCH:,}-step batch ({METRICS} metrics), median of the last {STEADY_BATCHES}:")
    print(f"  build arrays (SeriesBuilder): {statistics.median(build_s[steady]) * 1e3:7.2f} ms")
    print(f"  apply_batch:                  {statistics.median(apply_s[steady]) * 1e3:7.2f} ms")
    print(f"  apply_batch, first batch:     {apply_s[0] * 1e3:7.2f} ms")
    print(f"load_history: {load_ms:.2f} ms")


if __name__ == "__main__":
    main()
