"""Time to judge one run at the state's bounded size: 10 metrics × (2,048 raw points + 1,024 buckets).

Run: .venv/bin/python benchmarks/bench_judge.py [--repeat 50]
Prints the median and best time per judge() call, for a healthy run and for one that diverges.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp_training_check.judge import judge
from tests.test_judge_helpers import (
    ar1,
    decay_loss,
    make_history,
    make_series,
    roles_of,
    warmup_cosine_lr,
)

RAW_POINTS, BUCKETS, BUCKET_WIDTH = 2048, 1024, 8  # state.DEFAULT_RECENT_POINTS / DEFAULT_MAX_BUCKETS
N = RAW_POINTS + BUCKETS * BUCKET_WIDTH


def build(diverging: bool):
    rng = np.random.default_rng(0)
    loss = decay_loss(N, tau_points=N / 3)
    if diverging:
        loss[-40:] *= np.linspace(1, 5, 40)
    metrics = {
        "loss": loss,
        "grad_norm": np.exp(ar1(N, 0.2, 0.5, rng)),
        "learning_rate": warmup_cosine_lr(N),
        **{f"eval/loss_{i}": decay_loss(N, seed=i, tau_points=N / 3, noise=0.005) for i in range(4)},
        **{f"throughput_{i}": rng.normal(100, 5, N) for i in range(3)},
    }
    series = [
        make_series(k, v, raw_points=RAW_POINTS, bucket=BUCKET_WIDTH, new_points=50)
        for k, v in metrics.items()
    ]
    history = make_history(*series)
    return history, roles_of(history)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    for label, diverging in (("healthy", False), ("diverging", True)):
        history, roles = build(diverging)
        points = sum(s.values.size for s in history.metrics.values())
        verdict = judge(history, roles)
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            judge(history, roles, run_config={"max_steps": N * 20})
            times.append(time.perf_counter() - start)
        print(
            f"{label:9s} {len(history.metrics)} metrics, {points:,} stored points: "
            f"median {statistics.median(times) * 1e3:.2f} ms, best {min(times) * 1e3:.2f} ms "
            f"-> {verdict.decision.value}"
        )


if __name__ == "__main__":
    main()
