"""The first check of a long run costs what the judge needs, not what the run logged.

    .venv/bin/python benchmarks/bench_first_check.py [--steps 1000000,5000000] [--metrics 10]
        [--full-read-steps 1000000] [--fill] [--group-runs 200] [--no-corpus | --corpus-only]
        [--corpus corpus/runs.jsonl.gz --corpus corpus_real/runs.jsonl.gz]

Printed, side by side in one run:
(a) local ``.wandb`` files of each ``--steps`` × ``--metrics`` (written once into benchmarks/out/ with the
    bytes wandb 0.31 writes, by bench_wandb_read.make_run_file → tests/wandb_writer.py): the first
    `Monitor.check` (tail-first) — wall and CPU seconds, bytes read, values read, overview, verdict; target
    ≤ 5 s. For runs up to ``--full-read-steps`` also the full first read it replaces (read + store).
    ``--fill`` then checks again until the stored history is exact: checks needed, CPU per check, the
    verdict once exact.
(b) a loopback W&B server (tests/fake_wandb.py, the real wandb client; runs of each ``--steps`` × ``--metrics``
    held as columns, tests/fake_wandb_columns.py): the first check's GraphQL requests, rows and wall time;
    target ≤ 5 requests and ≤ 5 s. For comparison the exact first read of a 200,000-step × 5-metric run
    (the issue's 20 requests and 1,000,000 rows).
(c) `check_many` over ``--group-runs`` running runs of one project on the loopback server: wall time,
    requests; target ≤ 60 s.
(d) each corpus (``--corpus``, repeatable; default both corpus/ and corpus_real/): first checks tail-first vs
    full read must decide alike (benchmarks/tail_first.py), with the default sizes scaled to its runs, and a
    stress setting whose tail holds fewer values than state's 2,048-point recent window (reported, no
    target); for a corpus of runs too short for the stress sizes to sample (corpus_real/), the smallest sizes;
(e) replay.py's tables for monitoring that starts half way / 80 % into each run, its first check a full read
    vs tail-first, each size. ``--corpus-only`` prints (d) and (e) alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for entry in (str(ROOT), str(ROOT / "benchmarks")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

import numpy as np  # noqa: E402
from bench_wandb_read import cached_run_file  # noqa: E402

from benchmarks.corpus_runs import CORPUS  # noqa: E402
from benchmarks.tail_first import CORPUS_REAL, corpus_report  # noqa: E402
from mcp_training_check.models import CheckReport  # noqa: E402
from mcp_training_check.service import Monitor  # noqa: E402
from mcp_training_check.sources import wandb_file  # noqa: E402
from tests.fake_wandb import FakeWandb  # noqa: E402
from tests.fake_wandb_columns import add_columnar_run  # noqa: E402

FIRST_CHECK_SECONDS = 5.0
FIRST_CHECK_REQUESTS = 5
GROUP_SECONDS = 60.0
FILL_CHECKS_LIMIT = 400  # a fill that needs more checks than this is reported as not arriving
GROUP_RUN_STEPS = 500
WHOLE_FILE = 1 << 62  # a small-file threshold no file reaches: read whole, as every first check did before


@dataclasses.dataclass
class Cost:
    wall_s: float
    cpu_s: float
    bytes_read: int


def _rchar() -> int:
    """Bytes this process has read through read() so far (Linux /proc/self/io), 0 elsewhere."""
    try:
        with open("/proc/self/io") as io:
            return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))
    except (OSError, StopIteration):
        return 0


def measured(action: Callable[[], Any]) -> tuple[Cost, Any]:
    wall, cpu, read = time.perf_counter(), time.process_time(), _rchar()
    result = action()
    return Cost(time.perf_counter() - wall, time.process_time() - cpu, _rchar() - read), result


def _ok(value: float, target: float) -> str:
    return "ok" if value <= target else "MISSED"


# --------------------------------------------------------------------------- (a) local .wandb


def local_first_check(steps: int, metrics: int, full_read_steps: int, fill: bool) -> None:
    path = cached_run_file(steps, metrics)
    size = path.stat().st_size
    print(f"\n(a) local .wandb, {steps:,} steps × {metrics} metrics, {size / 1e6:,.0f} MB")
    report = tail_first_check(path, fill)
    if steps <= full_read_steps:
        _full_first_check(path, report)


def tail_first_check(path: Path, fill: bool) -> CheckReport:
    """The first `Monitor.check` of ``path`` in a fresh state, timed and printed; with ``fill`` the checks after it
    until the stored history is exact."""
    with tempfile.TemporaryDirectory(prefix="bench-first-") as home:
        monitor = Monitor(home=Path(home))
        cost, report = measured(lambda: monitor.check(str(path), roles=ROLES))
        snap = report.snapshot
        print(
            f"  first check (tail-first)  {cost.wall_s:7.2f} s wall {cost.cpu_s:7.2f} s CPU  "
            f"{cost.bytes_read / 1e6:8.1f} MB read  {snap.new_points:>10,} values  target ≤ {FIRST_CHECK_SECONDS:g} s "
            f"{_ok(cost.wall_s, FIRST_CHECK_SECONDS)}"
        )
        before = snap.overview_before_step
        print(f"    overview before step {'none' if before is None else f'{before:,}'}; verdict: {_decision(report)}")
        if fill:
            _fill_until_exact(monitor, str(path))
        monitor.close()
    return report


ROLES = {"train/metric_0": "train_loss"}
"""The benchmark files name their metrics train/metric_N: the first one stands in for the loss."""


def _decision(report: CheckReport) -> str:
    return report.verdict.summary[:110] if report.verdict else "none"


def _fill_until_exact(monitor: Monitor, run: str) -> None:
    costs = []
    report = None
    for _ in range(FILL_CHECKS_LIMIT):
        cost, report = measured(lambda: monitor.check(run, roles=ROLES))
        costs.append(cost)
        if report.snapshot.overview_before_step is None:
            break
    assert report is not None
    cpu = [c.cpu_s for c in costs]
    arrived = report.snapshot.overview_before_step is None
    print(
        f"  fill-in: {'exact after' if arrived else 'NOT exact after'} {len(costs)} more check(s), "
        f"CPU per check max {max(cpu):.2f} s (total {sum(cpu):.1f} s); verdict once exact: {_decision(report)}"
    )


def _full_first_check(path: Path, tail_first: CheckReport, reader: Any = wandb_file) -> None:
    """What every first check did before: the whole file read, stored and judged (``reader``: the module whose
    ``DEFAULT_LIMITS`` say what is read tail-first: ``wandb_file``, or ``log_tail`` for logs and event files)."""
    saved = reader.DEFAULT_LIMITS
    reader.DEFAULT_LIMITS = dataclasses.replace(saved, small_bytes=WHOLE_FILE)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-full-") as home:
            monitor = Monitor(home=Path(home))
            cost, report = measured(lambda: monitor.check(str(path), roles=ROLES))
            monitor.close()
    finally:
        reader.DEFAULT_LIMITS = saved
    same = report.verdict and tail_first.verdict and report.verdict.decision is tail_first.verdict.decision
    print(
        f"  full first check (before) {cost.wall_s:7.2f} s wall {cost.cpu_s:7.2f} s CPU  "
        f"{cost.bytes_read / 1e6:8.1f} MB read  {report.snapshot.new_points:>10,} values  "
        f"same decision as tail-first: {'yes' if same else 'NO'} ({_decision(report)[:40]})"
    )


# --------------------------------------------------------------------------- (b) loopback W&B


def _columns(steps: int, metrics: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    all_steps = np.arange(steps, dtype=np.int64)
    return {
        f"train/metric_{i}": (all_steps, 1.0 / (1.0 + all_steps * (i + 1) * 1e-4)) for i in range(metrics)
    }  # every metric shares one steps array: 8 bytes a value


def _graphql_requests(server: FakeWandb, since: int) -> list[str]:
    with server.lock:
        return [r.operation or "?" for r in server.requests[since:] if r.path == "/graphql"]


def wandb_first_check(server: FakeWandb, steps: int, metrics: int, *, exact: bool = False) -> None:
    from mcp_training_check.sources import wandb_api

    run_id = f"run{steps}x{metrics}{'e' if exact else ''}"
    add_columnar_run(server, "bench", "long", run_id, _columns(steps, metrics))
    saved = wandb_api.FIRST_READ_EXACT_REQUESTS
    if exact:  # the first read as it was: every row, paged
        wandb_api.FIRST_READ_EXACT_REQUESTS = 10**9
    try:
        with tempfile.TemporaryDirectory(prefix="bench-wandb-") as home:
            monitor = Monitor(home=Path(home))
            before, rows_before = len(server.requests), server.rows_served["total"]
            cost, report = measured(lambda: monitor.check(f"bench/long/{run_id}", roles=ROLES))
            requests = _graphql_requests(server, before)
            rows = server.rows_served["total"] - rows_before
            monitor.close()
    finally:
        wandb_api.FIRST_READ_EXACT_REQUESTS = saved
    label = "exact first read (before)" if exact else "first check (overview)  "
    history = sum(1 for op in requests if "History" in op)
    print(
        f"  {steps:>9,} × {metrics:<2} {label} {cost.wall_s:6.2f} s wall  {len(requests):>3} requests "
        f"({history} history)  {rows:>10,} rows  {report.verdict.decision.value if report.verdict else '-'}  "
        + ("" if exact else f"target ≤ {FIRST_CHECK_REQUESTS} requests, ≤ {FIRST_CHECK_SECONDS:g} s "
           f"{_ok(len(requests), FIRST_CHECK_REQUESTS)}/{_ok(cost.wall_s, FIRST_CHECK_SECONDS)}; "
           f"overview before step {report.snapshot.overview_before_step}")
    )


# --------------------------------------------------------------------------- (c) check_many


def group_check(server: FakeWandb, runs: int) -> None:
    for index in range(runs):
        run = server.add_run("bench", "sweep", f"g{index:04d}")
        for step in range(GROUP_RUN_STEPS):
            run.log(step, loss=2.0 / (1.0 + step * 0.01) + 0.01 * math.sin(step + index), lr=1e-3)
    with tempfile.TemporaryDirectory(prefix="bench-group-") as home:
        monitor = Monitor(home=Path(home))
        before = len(server.requests)
        cost, report = measured(lambda: monitor.check_many("bench/sweep"))
        requests = _graphql_requests(server, before)
        monitor.close()
    checked = sum(report.counts.values())
    print(
        f"\n(c) check_many over {runs} running runs ({GROUP_RUN_STEPS} steps each): {checked} checked, "
        f"{cost.wall_s:.1f} s wall, {len(requests)} requests ({len(requests) / max(checked, 1):.1f} a run); "
        f"target ≤ {GROUP_SECONDS:g} s {_ok(cost.wall_s, GROUP_SECONDS)}; {report.summary[:100]}"
    )


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", default="1000000,5000000", help="comma-separated run lengths")
    parser.add_argument("--metrics", type=int, default=10)
    parser.add_argument("--full-read-steps", type=int, default=1_000_000, help="time the full first read up to this")
    parser.add_argument("--fill", action="store_true", help="also check until the local history is exact")
    parser.add_argument("--group-runs", type=int, default=200)
    parser.add_argument("--corpus", type=Path, action="append", help="a corpus for (d), (e); repeatable")
    parts = parser.add_mutually_exclusive_group()
    parts.add_argument("--no-corpus", action="store_true", help="skip the corpus parts (d), (e)")
    parts.add_argument("--corpus-only", action="store_true", help="only the corpus parts (d), (e)")
    args = parser.parse_args(argv)
    if not args.corpus_only:
        _long_runs(args)
    if not args.no_corpus:
        for path in args.corpus or [CORPUS, CORPUS_REAL]:
            corpus_report(path)


def _long_runs(args: argparse.Namespace) -> None:
    """Parts (a), (b) and (c)."""
    lengths = [int(text) for text in args.steps.split(",") if text]
    for steps in lengths:
        local_first_check(steps, args.metrics, args.full_read_steps, args.fill)
    with FakeWandb() as server:
        os.environ["WANDB_BASE_URL"], os.environ["WANDB_API_KEY"] = server.url, server.api_key
        print("\n(b) loopback W&B server (real wandb client)")
        wandb_first_check(server, 200_000, 5, exact=True)
        for steps in lengths:
            wandb_first_check(server, steps, args.metrics)
        group_check(server, args.group_runs)


if __name__ == "__main__":
    main()
