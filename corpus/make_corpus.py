"""Build corpus/runs.jsonl.gz: real small trainings on CPU with their logged metrics and labels.

    python corpus/make_corpus.py --jobs 2            # all runs (a few minutes)
    python corpus/make_corpus.py --only h08,a07 --out /tmp/x.jsonl.gz

Deterministic: every run is seeded, BLAS runs on one thread, and the gzip header carries no time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
import time
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpus import specs
from corpus.train import RunSpec, train

OUT = Path(__file__).resolve().parent / "runs.jsonl.gz"


def round6(value: float) -> float:
    return value if not math.isfinite(value) else float(f"{value:.6g}")


def config(spec: RunSpec) -> dict:
    arch = spec.arch
    return {
        "learning_rate": spec.lr, "warmup_steps": spec.warmup, "total_steps": spec.total_steps,
        "lr_scheduler_type": spec.schedule, "max_grad_norm": spec.max_grad_norm,
        "batch_size": spec.batch_size, "grad_accum": spec.grad_accum, "eval_steps": spec.eval_every,
        "optimizer": spec.optimizer, "seed": spec.seed, "fp16": arch.get("precision") == "fp16",
        "logging_nan_inf_filter": spec.hf_logging, "hidden": list(arch.get("hidden", ())) or None,
        "activation": arch.get("act"), "train_subset": spec.train_subset,
    }  # fmt: skip


def overfit_step(series: dict) -> int:
    """Overfitting "begins" where the eval loss is lowest."""
    return min(series["eval/loss"], key=lambda p: p[1])[0]


def baseline(series: dict, mode: str) -> float:
    """An eval/acc baseline the run reaches only late (at 85 % of its evals) or never (best + 0.02)."""
    accs = [v for _, v in series["eval/acc"]]
    value = accs[int(0.85 * len(accs))] if mode == "late" else max(accs) + 0.02
    return round(value, 4)


def record(spec: RunSpec) -> dict:
    series = train(spec)
    fault_step = overfit_step(series) if spec.fault == "overfitting" else spec.fault_step
    return {
        "id": spec.id, "label": spec.label, "fault": spec.fault, "fault_step": fault_step,
        "event_step": spec.event_step, "family": spec.family, "optimizer": spec.optimizer,
        "schedule": spec.schedule, "config": config(spec),
        "baselines": {"eval/acc": baseline(series, spec.baseline)} if spec.baseline else None,
        "metrics": {k: [[s, round6(v)] for s, v in pts] for k, pts in series.items()},
    }  # fmt: skip


def to_line(rec: dict) -> str:
    return json.dumps(rec, separators=(",", ":"))


def write(records: list[dict], out: Path) -> None:
    with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        for rec in records:
            gz.write((to_line(rec) + "\n").encode())


def load(path: Path = OUT) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--only", help="comma-separated run ids")
    args = ap.parse_args(argv)
    todo = [specs.BY_ID[i] for i in args.only.split(",")] if args.only else specs.SPECS
    start = time.time()
    with Pool(args.jobs) as pool:
        records = pool.map(record, todo, chunksize=1)
    write(records, args.out)
    size, secs = args.out.stat().st_size, time.time() - start
    print(f"{len(records)} runs -> {args.out} ({size} bytes) in {secs:.0f}s")


if __name__ == "__main__":
    main()
