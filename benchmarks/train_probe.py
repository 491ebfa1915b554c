"""Tuning probe on corpus_real/'s **train** split: what a judge change moved, by fold, and why a run is late.

Run:  .venv/bin/python benchmarks/train_probe.py --save before.json            # per-run codes + fold figures
      .venv/bin/python benchmarks/train_probe.py --save after.json --diff before.json   # the runs a change moved
      .venv/bin/python benchmarks/train_probe.py --signals issue-timm-58             # per-check signals of a run

Only train runs are replayed (issue 9's blindness: no holdout run is read past its split, and asking for one
by id is an error). Figures are `replay.score`'s, for the whole train split and for two folds of it split by
a hash of each run's source repository (an issue URL's repository for excerpts): a change designed from one
fold's runs should help, or at least not hurt, the other, which shows whether it generalises before the
holdout is looked at. ``--signals`` prints, from the check before the fault became visible to the first
stop, each check's decision and its non-info signals: whether a late stop waited on detection (nothing seen
yet) or on confirmation (a warning seen for several checks).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.corpus_runs import CORPUS_REAL, Run, load_corpus  # noqa: E402
from benchmarks.replay import RunResult, _pct, checkpoints, replay_fast, score, visible_check  # noqa: E402
from mcp_training_check.models import Decision, Severity, Verdict  # noqa: E402

CHECKS = 20


def source_repo(run: Run) -> str:
    """The repository a run comes from: its ``source.repo``, else the owner/name in its issue URL."""
    source = run.provenance.get("source") or {}
    if "repo" in source:
        return str(source["repo"])
    url = str(source.get("url", ""))
    found = re.search(r"github\.com/([^/]+/[^/]+)", url)
    return found.group(1) if found else url or run.id


def fold(run: Run) -> str:
    """Fold "A" or "B", by the first byte of the SHA-256 of the lower-cased source repository: runs of one repository
    share a fold, so a rule fitted to one project's logs is tested on other projects."""
    return "A" if hashlib.sha256(source_repo(run).lower().encode()).digest()[0] % 2 == 0 else "B"


def train_runs(path: Path = CORPUS_REAL) -> list[Run]:
    return [run for run in load_corpus(path) if run.split == "train"]


def replay(run: Run) -> tuple[RunResult, list[Verdict]]:
    cuts = checkpoints(run, CHECKS)
    verdicts = replay_fast(run, cuts)
    return RunResult(run, [v.decision for v in verdicts], visible_check(run, cuts)), verdicts


def figures(results: Sequence[RunResult]) -> str:
    s = score(results)
    delay = "n/a" if s["mean_delay_checks"] is None else f"{s['mean_delay_checks']:.2f}"
    return (
        f"false STOP {_pct(s['false_stop_rate'])}, healthy stopped {_pct(s['healthy_runs_stopped'])}, escalated "
        f"{_pct(s['escalation_rate'])}, recall {_pct(s['stop_recall'])}, ≤ 1 check {_pct(s['within_one_check'])}, "
        f"max / mean delay {s['max_delay_checks']} / {delay}, early {s['early_stops']}, flagged "
        f"{_pct(s['ambiguous_flagged'])} ({s['runs']['healthy']} healthy, {s['runs']['bad']} bad, "
        f"{s['runs']['ambiguous']} ambiguous)"
    )


def codes(results: Sequence[RunResult]) -> dict[str, dict[str, Any]]:
    return {
        r.run.id: {"code": r.code(), "label": r.run.label, "fault": r.run.fault, "fold": fold(r.run)} for r in results
    }


def latency(result: RunResult) -> tuple[int, int] | None:
    """For a bad run stopped later than one check after its fault became visible (or never): the checks from
    the visible one to its first non-continue check (detection), and from there to its stop or the end of the
    replay (confirmation). None for any other run."""
    first = result.first_stop
    if result.run.label != "bad" or (first is not None and (first < result.visible or first - result.visible <= 1)):
        return None
    end = first if first is not None else len(result.decisions)
    seen = next((i for i in range(result.visible, end) if result.decisions[i] is not Decision.CONTINUE), end)
    return seen - result.visible, end - seen


def moved(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> list[str]:
    """One line per run whose decisions changed: id, label, fault, fold, codes before → after."""
    return [
        f"{rid} {a['label']} {a['fault']} fold {a['fold']}: {a['code']} -> {after[rid]['code']}"
        for rid, a in before.items()
        if rid in after and after[rid]["code"] != a["code"]
    ]


def print_signals(result: RunResult, verdicts: Sequence[Verdict]) -> None:
    run = result.run
    print(f"== {run.id} {run.label} {run.fault} fault_step {run.fault_step} fold {fold(run)}: {result.code()}")
    last = result.first_stop if result.first_stop is not None else len(verdicts) - 1
    for i, verdict in enumerate(verdicts):
        if i < result.visible - 1 or i > last:
            continue
        print(f"{'|' if i == result.visible else ' '}{i:2d} {verdict.decision.value}")
        for s in verdict.signals:
            if s.severity is not Severity.INFO:
                print(f"     [{s.severity.value}] {s.kind.value} {s.metric} @{s.step}: {s.message}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS_REAL)
    parser.add_argument("--signals", nargs="+", metavar="RUN_ID", help="per-check signals of these train runs")
    parser.add_argument("--save", type=Path, help="write every train run's decision code here (JSON)")
    parser.add_argument("--diff", type=Path, help="a file --save wrote before a change: list the runs it moved")
    args = parser.parse_args(argv)
    runs = train_runs(args.corpus)
    if args.signals:
        by_id = {run.id: run for run in runs}
        unknown = [rid for rid in args.signals if rid not in by_id]
        if unknown:
            parser.error(f"not train runs of {args.corpus}: {', '.join(unknown)} (holdout runs are never shown)")
        for rid in args.signals:
            print_signals(*replay(by_id[rid]))
        return
    results = [replay(run)[0] for run in runs]
    print(f"train   {figures(results)}")
    for name in ("A", "B"):
        print(f"fold {name}  {figures([r for r in results if fold(r.run) == name])}")
    for r in results:
        split = latency(r)
        if split is not None:
            print(f"late {r.run.id} fold {fold(r.run)} {r.code()}: detection {split[0]}, confirmation {split[1]}")
    if args.save:
        args.save.write_text(json.dumps(codes(results), indent=1))
    if args.diff:
        print("\n".join(moved(json.loads(args.diff.read_text()), codes(results))) or "no run moved")


if __name__ == "__main__":
    main()
