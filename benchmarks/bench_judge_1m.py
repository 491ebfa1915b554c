"""Judging the stored history of a 1,000,000-step run: ≤ 50 ms per `judge()` call (issue 3's target).

The run is written through `StateStore.apply_batch` in 1,000 batches of 1,000 steps × 10 metrics (train
loss, grad norm, LR with warmup + cosine, 4 eval losses every 100 steps, 3 throughput metrics), so what is
judged is exactly what the store keeps: 2,048 recent points + ≤ 1,024 bucket means per metric. Then
`load_history` once and `judge` repeatedly with the run's config and 5 earlier verdicts. Run:

    .venv/bin/python benchmarks/bench_judge_1m.py [--repeat 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mcp_training_check.judge import judge  # noqa: E402
from mcp_training_check.roles import assign_roles  # noqa: E402
from mcp_training_check.sources.base import ReadBatch, SeriesChunk  # noqa: E402
from mcp_training_check.state import StateStore  # noqa: E402

TOTAL_STEPS = 1_000_000
STEPS_PER_BATCH = 1_000
EVAL_EVERY = 100
TARGET_MS = 50.0
WARMUP_STEPS = 2_000
PEAK_LR = 3e-4
RUN = "file:/bench/1m.jsonl"


def batch_arrays(first: int, rng: np.random.Generator) -> dict[str, SeriesChunk]:
    steps = np.arange(first, first + STEPS_PER_BATCH, dtype=np.int64)
    t = steps / TOTAL_STEPS
    loss = (0.5 + 2.5 * np.exp(-steps / 50_000)) * np.exp(rng.normal(0, 0.1, steps.size))
    lr = np.where(steps < WARMUP_STEPS, PEAK_LR * steps / WARMUP_STEPS, PEAK_LR * 0.5 * (1 + np.cos(np.pi * t)))
    out = {
        "train/loss": SeriesChunk(steps, loss),
        "train/grad_norm": SeriesChunk(steps, np.exp(rng.normal(0, 0.3, steps.size))),
        "train/lr": SeriesChunk(steps, lr),
        **{f"throughput_{i}": SeriesChunk(steps, rng.normal(100, 5, steps.size)) for i in range(3)},
    }
    eval_steps = steps[steps % EVAL_EVERY == 0]
    for i in range(4):
        level = 0.6 + 2.4 * np.exp(-eval_steps / 50_000) + rng.normal(0, 0.005, eval_steps.size)
        out[f"eval/loss_{i}"] = SeriesChunk(eval_steps, level)
    return out


def write_history(store: StateStore) -> float:
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    for first in range(0, TOTAL_STEPS, STEPS_PER_BATCH):
        store.apply_batch(RUN, ReadBatch(series=batch_arrays(first, rng), cursor={"offset": first}))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-judge-1m-") as tmp, StateStore(Path(tmp)) as store:
        write_seconds = write_history(store)
        history = store.load_history(RUN)
    roles = assign_roles(history.metrics)
    config = {"total_steps": TOTAL_STEPS, "warmup_steps": WARMUP_STEPS, "learning_rate": PEAK_LR,
              "lr_scheduler_type": "cosine", "max_grad_norm": 1.0}  # fmt: skip
    previous = [judge(history, roles, run_config=config)] * 5
    times = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        verdict = judge(history, roles, run_config=config, previous=previous)
        times.append((time.perf_counter() - started) * 1e3)
    points = sum(s.values.size for s in history.metrics.values())
    median = statistics.median(times)
    print(f"history: {TOTAL_STEPS:,} steps × {len(history.metrics)} metrics written in {write_seconds:.1f} s; "
          f"{points:,} stored points judged")  # fmt: skip
    print(f"judge(): median {median:.1f} ms, best {min(times):.1f} ms, worst {max(times):.1f} ms over {args.repeat} "
          f"calls -> {verdict.summary[:160]}")  # fmt: skip
    print(f"target {TARGET_MS:.0f} ms: median is {median / TARGET_MS:.2f}× the target "
          f"({'met' if median <= TARGET_MS else 'NOT met'})")


if __name__ == "__main__":
    main()
