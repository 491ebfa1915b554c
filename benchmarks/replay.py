"""Replay benchmark: every corpus run replayed as a growing log, checked like a cron would, judged.

Run:  .venv/bin/python benchmarks/replay.py [--corpus corpus/runs.jsonl.gz] [--checks 20] [--json]
      [--pipeline fast|monitor] [--config full|hints] [--details]

How a run is replayed
  The run's steps are cut at ``--checks`` evenly spaced steps (the last cut is the run's last step). At each
  cut everything logged up to that step has arrived and one check runs. The last check comes after the run
  has ended and knows it, as a real one does from W&B's run state or the log's final line (the HF Trainer's
  ``train_runtime`` line, MLPerf's ``run_stop``): a run that ended below its baseline is judged so there.
  State is carried across checks:
  - ``fast`` (default): the new points go into a real `StateStore` (``apply_batch``), the stored, bounded
    history is loaded back (``load_history``) and judged with the earlier verdicts as ``previous`` (the 5
    most recent, as `service.Monitor` hands them over). tests/test_replay.py shows it decides exactly like
  - ``monitor``: the run is written as a JSONL log that grows between checks, a `training-check.toml`
    entry carries its baselines and ``total_steps``, and `Monitor.check` does read → judge → schedule.
  ``--config full`` (default) gives the judge the run's training config as a W&B run records it
  (learning rate, warmup, schedule, max_grad_norm, total steps); ``hints`` only what a `training-check.toml`
  run entry can state (the same five facts under its own names), which is what a plain JSONL log gets
  through `Monitor`.

What the figures mean (per split: a run's own `split` when the corpus gives one (corpus_real/), else "train" =
  seeds not divisible by 3, "holdout" = seeds divisible by 3)
  The first ``stop`` of a run ends it, as ``stop_run`` would: what a rule says after that counts only in the
  per-check rates of healthy runs, which judge every check as if the stop had been ignored.
  - false STOP (healthy): checks of healthy runs decided ``stop`` / all checks of healthy runs.
  - healthy runs stopped: healthy runs with at least one ``stop`` (the runs a rule would have killed).
  - escalated (healthy): checks of healthy runs decided ``unsure`` / all checks of healthy runs.
  - … incl. before faults: the same two rates as issue 9's independent check counts them: a healthy check is
    any check of a healthy run, or a check of a bad or ambiguous run before the one where its fault or
    ambiguity becomes visible.
  - STOP recall (bad): bad runs whose first ``stop`` came at or after the check where the fault became
    *visible* — the first check whose data include at least one point at or after ``fault_step``.
  - delay: checks from that visible check to that first ``stop`` (0 = stopped at the visible check);
    max and mean are over the recalled runs. A second table compares each baseline's delays with ours on
    the bad runs both recalled, so a rule that caught one run is not judged on that run alone.
  - early STOP (bad): bad runs first stopped *before* their fault was visible: killed for noise in their
    healthy part, so the fault itself was never caught.
  - flagged (ambiguous): ambiguous runs, not stopped before their ambiguity began, with at least one
    ``unsure`` or ``stop`` check among the checks whose data include a point at or after ``fault_step``
    (every check when the corpus gives no fault step or step 0, i.e. the run is ambiguous from its start).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.baselines import BASELINES  # noqa: E402
from benchmarks.corpus_runs import (  # noqa: E402
    CORPUS,
    Run,
    load_corpus,
)
from mcp_training_check.config import ProjectConfig, RunEntry  # noqa: E402
from mcp_training_check.judge import JudgeSettings, judge  # noqa: E402
from mcp_training_check.models import Decision, RunInfo, RunStatus, Verdict  # noqa: E402
from mcp_training_check.roles import assign_roles  # noqa: E402
from mcp_training_check.service import PREVIOUS_VERDICTS, Monitor  # noqa: E402
from mcp_training_check.sources.base import ReadBatch, SeriesChunk  # noqa: E402
from mcp_training_check.state import StateStore  # noqa: E402

FINAL_LINE = json.dumps({"train_runtime": 1.0})  # the HF Trainer's closing line: the run has finished
DEFAULT_CHECKS = 20  # ≥ 15 checks per run, as the issue asks; 20 = one check per 5 % of the run
TRAIN_KEYS = ("train/loss", "train/grad_norm", "train/lr")
EVAL_KEYS = ("eval/loss", "eval/acc")


def checkpoints(run: Run, checks: int = DEFAULT_CHECKS) -> list[int]:
    """``checks`` cut steps evenly spaced over the run; the last one is the run's last step."""
    first, last = run.first_step, run.last_step
    cuts = [first + round((last - first) * (i + 1) / checks) for i in range(checks)]
    return sorted(set(cuts))


def visible_check(run: Run, cuts: Sequence[int]) -> int:
    """Index of the first check whose data include a point at or after ``fault_step`` (0 without one)."""
    if not run.fault_step:
        return 0
    series = list(run.metrics.values())  # a fault can show first in an eval (a NaN eval loss) or the grad norm
    after = [int(steps[steps >= run.fault_step][0]) for steps, _ in series if (steps >= run.fault_step).any()]
    if not after:
        return len(cuts)
    return int(np.searchsorted(np.asarray(cuts), min(after), side="left"))


# --------------------------------------------------------------------------- replays


def _new_points(run: Run, lo: int | None, hi: int) -> dict[str, SeriesChunk]:
    out = {}
    for name, (steps, values) in run.metrics.items():
        a = 0 if lo is None else int(np.searchsorted(steps, lo, side="right"))
        b = int(np.searchsorted(steps, hi, side="right"))
        if b > a:
            out[name] = SeriesChunk(steps[a:b].copy(), values[a:b].copy())
    return out


def replay_fast(
    run: Run,
    cuts: Sequence[int],
    *,
    settings: JudgeSettings | None = None,
    config_mode: str = "full",
    store: StateStore | None = None,
) -> list[Verdict]:
    """StateStore.apply_batch + load_history + judge with earlier verdicts: what Monitor.check does."""
    own: Path | None = None
    if store is None:
        own = Path(tempfile.mkdtemp(prefix="replay-"))
        store = StateStore(own)
    key = f"replay/{run.id}"
    previous: list[Verdict] = []
    verdicts = []
    try:
        prev_cut: int | None = None
        for cut in cuts:
            info = RunInfo(status=RunStatus.FINISHED if cut == cuts[-1] else RunStatus.UNKNOWN)
            batch = ReadBatch(series=_new_points(run, prev_cut, cut), cursor={"offset": cut}, info=info)
            store.apply_batch(key, batch)
            history = store.load_history(key)
            verdict = judge(
                history,
                assign_roles(history.metrics),
                baselines=run.baselines,
                previous=previous[:PREVIOUS_VERDICTS],
                run_config=run.run_config(config_mode),
                settings=settings,
            )
            verdict = Verdict.model_validate_json(verdict.model_dump_json())  # as stored between checks
            previous.insert(0, verdict)
            verdicts.append(verdict)
            prev_cut = cut
    finally:
        if own is not None:  # a store of its own: every replay made one, and 380,000 of them filled a disk
            store.close()
            shutil.rmtree(own, ignore_errors=True)
    return verdicts


def jsonl_lines(run: Run, lo: int | None, hi: int) -> list[str]:
    """The run's points with lo < step ≤ hi as JSONL: one train line per step, an eval line after it."""
    rows: dict[int, dict[str, dict[str, float]]] = {}
    for name, chunk in _new_points(run, lo, hi).items():
        kind = "eval" if name in EVAL_KEYS else "train"
        for step, value in zip(chunk.steps.tolist(), chunk.values.tolist(), strict=True):
            rows.setdefault(step, {}).setdefault(kind, {})[name] = value
    lines = []
    for step in sorted(rows):
        for kind in ("train", "eval"):
            if kind in rows[step]:
                lines.append(json.dumps({"step": step, **rows[step][kind]}))
    return lines


def toml_hints(config: dict[str, Any]) -> dict[str, Any]:
    """The run's schedule facts as a training-check.toml entry states them (typed as the file is)."""
    hints: dict[str, Any] = {
        "total_steps": _int_or_none(config.get("total_steps")),
        "learning_rate": _float_or_none(config.get("learning_rate")),
        "warmup_steps": _int_or_none(config.get("warmup_steps")),
        "lr_schedule": config.get("lr_scheduler_type") or None,
        "max_grad_norm": _float_or_none(config.get("max_grad_norm")),
    }
    return {key: value for key, value in hints.items() if value is not None}


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and value > 0 else None


def _float_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and value > 0 else None


def replay_monitor(run: Run, cuts: Sequence[int], workdir: Path) -> list[Verdict]:
    """The whole pipeline: a JSONL log growing between checks, read and judged by `Monitor.check`."""
    log = workdir / f"{run.id}.jsonl"
    log.write_text("")
    entry = RunEntry(run=str(log), baselines=run.baselines, **toml_hints(run.config))
    config = ProjectConfig(path=None, base_dir=workdir, cwd=workdir, runs={run.id: entry})
    monitor = Monitor(home=workdir / "home", config=config)
    verdicts = []
    try:
        prev_cut: int | None = None
        for cut in cuts:
            with log.open("a") as fh:
                fh.writelines(line + "\n" for line in jsonl_lines(run, prev_cut, cut))
                if cut == cuts[-1]:
                    fh.write(FINAL_LINE + "\n")
            report = monitor.check(run.id)
            assert report.verdict is not None, report
            verdicts.append(report.verdict)
            prev_cut = cut
    finally:
        monitor.close()
    return verdicts


# --------------------------------------------------------------------------- scoring


@dataclass
class RunResult:
    run: Run
    decisions: list[Decision]
    visible: int
    details: list[str] = field(default_factory=list)

    @property
    def first_stop(self) -> int | None:
        return next((i for i, d in enumerate(self.decisions) if d is Decision.STOP), None)

    @property
    def caught_at(self) -> int | None:
        """Index of the first ``stop`` when it came at or after the visible check, else None: the first
        stop kills the run (``stop_run``), so a run stopped before its fault was visible never reaches it."""
        first = self.first_stop
        return first if first is not None and first >= self.visible else None

    @property
    def flagged_after_visible(self) -> bool:
        """An unsure or stop once the ambiguity began, in a run not killed before it began."""
        first = self.first_stop
        if first is not None and first < self.visible:
            return False
        return any(d is not Decision.CONTINUE for d in self.decisions[self.visible :])

    def code(self) -> str:
        letters = {Decision.STOP: "S", Decision.UNSURE: "u", Decision.CONTINUE: "."}
        out = "".join(letters[d] for d in self.decisions)
        return out[: self.visible] + "|" + out[self.visible :] if self.run.fault_step else out


def score(results: Iterable[RunResult]) -> dict[str, Any]:
    results = list(results)
    healthy = [r for r in results if r.run.label == "healthy"]
    bad = [r for r in results if r.run.label == "bad"]
    ambiguous = [r for r in results if r.run.label == "ambiguous"]
    h_checks = [d for r in healthy for d in r.decisions]
    before = h_checks + [d for r in bad + ambiguous for d in r.decisions[: r.visible]]
    delays = [r.caught_at - r.visible for r in bad if r.caught_at is not None]
    return {
        "runs": {"healthy": len(healthy), "bad": len(bad), "ambiguous": len(ambiguous)},
        "healthy_checks": len(h_checks),
        "false_stop_rate": _share(sum(d is Decision.STOP for d in h_checks), len(h_checks)),
        "healthy_runs_stopped": _share(sum(r.first_stop is not None for r in healthy), len(healthy)),
        "escalation_rate": _share(sum(d is Decision.UNSURE for d in h_checks), len(h_checks)),
        "false_stop_rate_before_faults": _share(sum(d is Decision.STOP for d in before), len(before)),
        "escalation_rate_before_faults": _share(sum(d is Decision.UNSURE for d in before), len(before)),
        "stop_recall": _share(len(delays), len(bad)),
        "max_delay_checks": max(delays) if delays else None,
        "mean_delay_checks": float(np.mean(delays)) if delays else None,
        "within_one_check": _share(sum(d <= 1 for d in delays), len(bad)),
        "early_stops": sum(1 for r in bad if r.first_stop is not None and r.first_stop < r.visible),
        "ambiguous_flagged": _share(sum(r.flagged_after_visible for r in ambiguous), len(ambiguous)),
    }


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


# --------------------------------------------------------------------------- running everything


Judge = Callable[[Run, list[int]], list[Decision]]


def judge_decisions(settings: JudgeSettings | None, config_mode: str, pipeline: str, workdir: Path) -> Judge:
    def decide(run: Run, cuts: list[int]) -> list[Decision]:
        if pipeline == "monitor":
            verdicts = replay_monitor(run, cuts, workdir)
        else:
            verdicts = replay_fast(run, cuts, settings=settings, config_mode=config_mode)
        return [v.decision for v in verdicts]

    return decide


def evaluate(runs: Sequence[Run], decide: Judge, checks: int) -> list[RunResult]:
    out = []
    for run in runs:
        cuts = checkpoints(run, checks)
        out.append(RunResult(run, decide(run, cuts), visible_check(run, cuts)))
    return out


def baseline_judge(rule: Callable[[Run, list[int]], list[Decision]]) -> Judge:
    return rule


def run_all(runs: Sequence[Run], *, checks: int, config_mode: str, pipeline: str) -> dict[str, list[RunResult]]:
    with tempfile.TemporaryDirectory(prefix="replay-") as tmp:
        ours = evaluate(runs, judge_decisions(None, config_mode, pipeline, Path(tmp)), checks)
    table = {"training-check (ours)": ours}
    for name, rule in BASELINES.items():
        table[name] = evaluate(runs, rule, checks)
    return table


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2g}" if isinstance(x, float) else str(x)


COLUMNS = (
    ("false STOP (healthy checks)", "false_stop_rate", _pct),
    ("healthy runs stopped", "healthy_runs_stopped", _pct),
    ("escalated (healthy checks)", "escalation_rate", _pct),
    ("false STOP / escalated, incl. before faults", "before_faults", None),
    ("STOP recall (bad runs)", "stop_recall", _pct),
    ("stopped ≤ 1 check after visible", "within_one_check", _pct),
    ("max / mean delay (checks)", None, None),
    ("early STOP (bad runs)", "early_stops", str),
    ("flagged (ambiguous runs)", "ambiguous_flagged", _pct),
)


def markdown(scores: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    head = "| rule | split | " + " | ".join(c[0] for c in COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for name, by_split in scores.items():
        for split, s in by_split.items():
            cells = []
            for _, key, show in COLUMNS:
                if key is None:
                    cells.append(f"{_num(s['max_delay_checks'])} / {_num(s['mean_delay_checks'])}")
                elif key == "before_faults":
                    stops, escalated = s["false_stop_rate_before_faults"], s["escalation_rate_before_faults"]
                    cells.append(f"{_pct(stops)} / {_pct(escalated)}")
                else:
                    assert show is not None
                    cells.append(show(s[key]))
            lines.append(f"| {name} | {split} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paired_delays(ours: Sequence[RunResult], theirs: Sequence[RunResult]) -> dict[str, Any]:
    """Mean delay of both rules on the bad runs both recalled: a rule that recalls few runs is otherwise
    judged on an easier set (or on a single run), which its own mean delay hides."""
    pairs = [
        (a.caught_at - a.visible, b.caught_at - b.visible)
        for a, b in zip(ours, theirs, strict=True)
        if a.run.label == "bad" and a.caught_at is not None and b.caught_at is not None
    ]
    return {
        "runs": len(pairs),
        "ours_mean_delay": float(np.mean([a for a, _ in pairs])) if pairs else None,
        "their_mean_delay": float(np.mean([b for _, b in pairs])) if pairs else None,
        "ours_later": sum(a > b for a, b in pairs),
        "theirs_later": sum(b > a for a, b in pairs),
    }


def paired_markdown(table: Mapping[str, Sequence[RunResult]]) -> str:
    ours_name, *others = table
    lines = [
        "| rule | bad runs both recalled | mean delay, ours | mean delay, theirs | ours later / theirs later |",
        "|---|---|---|---|---|",
    ]
    for name in others:
        p = paired_delays(table[ours_name], table[name])
        lines.append(
            f"| {name} | {p['runs']} | {_num(p['ours_mean_delay'])} | {_num(p['their_mean_delay'])} | "
            f"{p['ours_later']} / {p['theirs_later']} |"
        )
    return "\n".join(lines)


def split_scores(results: Sequence[RunResult]) -> dict[str, dict[str, Any]]:
    return {
        split: score(r for r in results if split == "all" or r.run.split == split)
        for split in ("train", "holdout", "all")
    }


def source_kind(run: Run) -> str:
    """Where a real run comes from (`corpus_real/README.md`): the MLPerf results, a log excerpt quoted in an
    issue thread, or a whole log committed to a repository; "own" for `corpus/`."""
    source = run.provenance.get("source") or {}
    if "repo" in source:
        return "MLPerf results" if str(source["repo"]).startswith("mlcommons/") else "committed full log"
    return "issue excerpt" if "url" in source else "own"


def source_scores(results: Sequence[RunResult]) -> dict[str, dict[str, Any]]:
    """Scores by source kind and split (aggregate figures only, as `split_scores`)."""
    kinds = sorted({source_kind(r.run) for r in results})
    return {
        f"{kind}, {split}": score(
            r for r in results if source_kind(r.run) == kind and split in ("all", r.run.split)
        )
        for kind in kinds
        for split in ("train", "holdout", "all")
    }


def counts_against(r: RunResult) -> bool:
    """Whether a figure counts this run against the rule: a healthy run stopped or escalated, a bad run not
    stopped within one check of its fault becoming visible, an ambiguous run never flagged."""
    if r.run.label == "healthy":
        return any(d is not Decision.CONTINUE for d in r.decisions)
    if r.run.label == "bad":
        return r.caught_at is None or r.caught_at - r.visible > 1
    return not r.flagged_after_visible


def print_details(table: Mapping[str, Sequence[RunResult]], *, split: str, misses_only: bool) -> None:
    for name, results in table.items():
        if misses_only and name != next(iter(table)):
            continue
        print(f"## {name}")
        for r in results:
            if (split != "all" and r.run.split != split) or (misses_only and not counts_against(r)):
                continue
            print(f"  {r.run.id} {r.run.label:9s} {r.run.fault:20s} {r.code()}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--checks", type=int, default=DEFAULT_CHECKS)
    parser.add_argument("--pipeline", choices=("fast", "monitor"), default="fast")
    parser.add_argument("--config", choices=("full", "hints"), default="full", dest="config_mode")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--details", nargs="?", const="all", choices=("train", "holdout", "all"),
                        help="print each run's decisions per check (of one split: tune on train only)")
    parser.add_argument("--misses", action="store_true",
                        help="with --details: only our runs a figure counts against")  # fmt: skip
    parser.add_argument("--by-source", action="store_true",
                        help="also print our figures by source kind (MLPerf, issue excerpt, committed full log)")
    args = parser.parse_args(argv)
    if args.pipeline == "monitor" and args.config_mode == "full":
        args.config_mode = "hints"  # a JSONL log read by Monitor carries no training config
    start = time.perf_counter()
    runs = load_corpus(args.corpus)
    table = run_all(runs, checks=args.checks, config_mode=args.config_mode, pipeline=args.pipeline)
    elapsed = time.perf_counter() - start
    scores = {name: split_scores(results) for name, results in table.items()}
    ours, *others = table
    paired = {name: paired_delays(table[ours], table[name]) for name in others}
    if args.json:
        print(json.dumps({"checks_per_run": args.checks, "pipeline": args.pipeline, "config": args.config_mode,
                          "seconds": round(elapsed, 1), "scores": scores, "paired_delays": paired},
                         indent=2))  # fmt: skip
        return
    if args.details:
        print_details(table, split=args.details, misses_only=args.misses)
    print(markdown(scores))
    if args.by_source:
        print("\nOurs by source kind:\n")
        print(markdown({"training-check (ours)": source_scores(table[ours])}).replace("| split |", "| source, split |"))
    print("\nDelay on the same runs (all splits):\n")
    print(paired_markdown(table))
    print(
        f"\n{len(runs)} runs × {args.checks} checks, pipeline {args.pipeline}, config {args.config_mode}, "
        f"{elapsed:.0f} s"
    )


if __name__ == "__main__":
    main()
