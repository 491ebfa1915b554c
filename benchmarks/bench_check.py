"""The whole product on a big run: `Monitor.read_metrics` / `Monitor.check` over a 1,000,000-step,
10-metric `.wandb` file, side by side with the bare cost of decoding the same bytes.

    .venv/bin/python benchmarks/bench_check.py [--steps 1000000] [--metrics 10]

Printed, in one run (CPU seconds of this process, so other jobs on the machine barely move the ratios):
(a) first read_metrics (tail-first: the newest history exactly, an overview of the rest; bench_first_check.py
    has its targets), then the read_metrics that fill the rest in until the stored history is exact: all of
    them together vs bare framing+decoding of the file's history records; ≤ 1.5
(b) after 1,000 new steps, read_metrics vs decoding those new records alone; ≤ 2
    (and the full check — read, judge, schedule, record — for information)
(c) the size of the stored state; ≤ 5 MB
(d) the size of the `check` result in tokens (≈ JSON bytes / 4); ≤ 1,500
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_wandb_read import (
    APPEND_STEPS,
    FILE_HEADER,
    Timing,
    append_steps,
    bare_decode,
    cached_run_file,
    timed,
)

from mcp_training_check.service import Monitor

FIRST_READ_TARGET = 1.5
RECHECK_TARGET = 2.0
STATE_TARGET_BYTES = 5_000_000
RESULT_TARGET_TOKENS = 1500
BYTES_PER_TOKEN = 4


def state_bytes(home: Path) -> int:
    return sum(path.stat().st_size for path in home.rglob("state.sqlite3*"))


FILL_CHECKS_LIMIT = 1000


def _read_until_exact(monitor: Monitor, run: str) -> int:
    """The first read_metrics and the fill-in ones after it, until nothing is an overview; returns how many."""
    for count in range(1, FILL_CHECKS_LIMIT + 1):
        if monitor.read_metrics(run).overview_before_step is None:
            return count
    raise AssertionError(f"the history of {run} is still an overview after {FILL_CHECKS_LIMIT} reads")


def measure(path: Path, steps: int, metrics: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="bench-check-") as home_dir:
        home = Path(home_dir)
        monitor = Monitor(home=home)
        first, _ = timed(lambda: _read_until_exact(monitor, str(path)))
        bare_first, _ = timed(lambda: bare_decode(path, len(FILE_HEADER), history_only=True))
        size = path.stat().st_size
        try:
            append_steps(path, steps, APPEND_STEPS, metrics)
            reread, snapshot = timed(lambda: monitor.read_metrics(str(path)))
            bare_new, _ = timed(lambda: bare_decode(path, size, history_only=True))
            append_steps(path, steps + APPEND_STEPS, APPEND_STEPS, metrics)
            full_check, report = timed(lambda: monitor.check(str(path)))
        finally:
            os.truncate(path, size)  # keep the cached file as generated
        monitor.close()
        assert snapshot.new_points == APPEND_STEPS * metrics, "the re-check read the wrong amount"
        return {
            "first": first,
            "bare_first": bare_first,
            "reread": reread,
            "bare_new": bare_new,
            "check": full_check,
            "state_bytes": state_bytes(home),
            "result_tokens": len(json.dumps(report.model_dump(mode="json"))) / BYTES_PER_TOKEN,
            "decision": report.verdict.decision.value if report.verdict else None,
        }


def print_report(steps: int, metrics: int, size: int, m: dict[str, object]) -> None:
    def t(name: str) -> Timing:
        value = m[name]
        assert isinstance(value, Timing)
        return value

    print(f"\n{steps:,} steps × {metrics} metrics, {size / 1e6:.0f} MB .wandb file")
    print(f"{'CPU s (wall s)':48}{'ours':>18}{'bare decode':>18}{'ratio':>8}{'target':>8}")
    rows = [
        ("first read_metrics + fill-in vs decoding the file", t("first"), t("bare_first"), FIRST_READ_TARGET),
        (f"+{APPEND_STEPS:,} steps: read_metrics vs their decode", t("reread"), t("bare_new"), RECHECK_TARGET),
        (f"+{APPEND_STEPS:,} steps: whole check vs their decode", t("check"), t("bare_new"), None),
    ]
    for label, ours, bare, target in rows:
        ratio = ours.cpu_s / bare.cpu_s
        cells = [f"{x.cpu_s:8.3f} ({x.wall_s:7.3f})" for x in (ours, bare)]
        verdict = "" if target is None else ("ok" if ratio <= target else "MISSED")
        target_text = "-" if target is None else f"{target:.1f}"
        print(f"{label:48}{cells[0]:>18}{cells[1]:>18}{ratio:8.2f}{target_text:>8} {verdict}")
    state, tokens = int(m["state_bytes"]), float(m["result_tokens"])  # type: ignore[call-overload, arg-type]
    print(
        f"{'stored state':48}{state / 1e6:>14.2f} MB{'':>18}{state / STATE_TARGET_BYTES:8.2f}{'5 MB':>8} "
        f"{'ok' if state <= STATE_TARGET_BYTES else 'MISSED'}"
    )
    print(
        f"{'check result (tokens ≈ bytes/4)':48}{tokens:>17.0f}{'':>18}{tokens / RESULT_TARGET_TOKENS:8.2f}"
        f"{'1500':>8} {'ok' if tokens <= RESULT_TARGET_TOKENS else 'MISSED'}"
    )
    print(f"verdict of the last check: {m['decision']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--metrics", type=int, default=10)
    args = parser.parse_args(argv)
    path = cached_run_file(args.steps, args.metrics)
    print_report(args.steps, args.metrics, path.stat().st_size, measure(path, args.steps, args.metrics))


if __name__ == "__main__":
    main()
