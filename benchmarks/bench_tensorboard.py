"""The first check of a long TensorBoard run: tail-first against the full read it replaces.

    .venv/bin/python benchmarks/bench_tensorboard.py [--steps 1000000] [--metrics 10] [--fill]

A sibling of bench_first_check.py rather than a section of it: that one is about `.wandb` files, the W&B server
and the corpora (262 lines), this one writes its files with a different writer and needs none of its servers.

Event files of ``--steps`` × ``--metrics`` scalars are written once by the real ``tensorboardX.SummaryWriter``
(``add_scalar``, as torch.utils.tensorboard and Lightning's TensorBoardLogger do) into benchmarks/out/ (ignored
by git). Printed side by side in one run, for the run's directory: the first `Monitor.check` tail-first (wall
and CPU seconds, bytes read, values read, overview, verdict; target ≤ 5 s), the full first read it replaces,
whether both decide alike, and with ``--fill`` the checks until the stored history is exact.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for entry in (str(ROOT), str(ROOT / "benchmarks")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from bench_first_check import (  # noqa: E402
    _full_first_check,
    tail_first_check,
)

from mcp_training_check.sources import log_tail  # noqa: E402

OUT_DIR = ROOT / "benchmarks" / "out"


def metric_value(i: int, step: int) -> float:
    """Metric ``i`` at ``step``: a loss-like decay, each metric at its own rate (bench_first_check's columns)."""
    return 1.0 / (1.0 + step * (i + 1) * 1e-4)


def write_event_dir(directory: Path, steps: int, metrics: int) -> None:
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(directory), max_queue=4096, flush_secs=600)
    names = [f"train/metric_{i}" for i in range(metrics)]
    for step in range(steps):
        for i, name in enumerate(names):
            writer.add_scalar(name, metric_value(i, step), step)
    writer.close()


def cached_event_dir(steps: int, metrics: int) -> Path:
    """benchmarks/out/tb-bench-<steps>x<metrics>/ holding one event file, written once."""
    path = OUT_DIR / f"tb-bench-{steps}x{metrics}"
    if not path.exists():
        started = time.perf_counter()
        partial = path.with_name(path.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        write_event_dir(partial, steps, metrics)
        os.replace(partial, path)
        size = sum(f.stat().st_size for f in path.iterdir())
        print(f"wrote {path} ({size / 1e6:.0f} MB) in {time.perf_counter() - started:.1f} s")
    return path


def first_check(steps: int, metrics: int, fill: bool) -> None:
    run = cached_event_dir(steps, metrics)
    size = sum(f.stat().st_size for f in run.iterdir())
    print(f"\nTensorBoard directory, {steps:,} steps × {metrics} metrics (tensorboardX), {size / 1e6:,.0f} MB")
    report = tail_first_check(run, fill)
    _full_first_check(run, report, log_tail)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", default="1000000", help="comma-separated run lengths")
    parser.add_argument("--metrics", type=int, default=10)
    parser.add_argument("--fill", action="store_true", help="also check until the stored history is exact")
    parser.add_argument("--write-only", action="store_true", help="only write the cached event files")
    args = parser.parse_args(argv)
    for steps in (int(text) for text in args.steps.split(",") if text):
        if args.write_only:
            cached_event_dir(steps, args.metrics)
        else:
            first_check(steps, args.metrics, args.fill)


if __name__ == "__main__":
    main()
