"""The replay benchmark's fast path (StateStore + judge, verdicts carried) decides exactly like the whole
pipeline (`Monitor.check` reading a JSONL log that grows between checks), and its scoring is right."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from benchmarks.replay import (
    Run,
    RunResult,
    checkpoints,
    jsonl_lines,
    load_corpus,
    replay_fast,
    replay_monitor,
    score,
    source_kind,
    source_scores,
    toml_hints,
    visible_check,
)
from mcp_training_check.config import ProjectConfig, RunEntry
from mcp_training_check.models import Decision, Severity
from mcp_training_check.service import Monitor

CHECKS = 15


@pytest.fixture(scope="module")
def corpus() -> dict[str, Run]:
    return {run.id: run for run in load_corpus()}


@pytest.mark.parametrize("run_id", ["h16", "b06", "b15", "a12"])
def test_fast_path_decides_like_monitor_check(corpus, run_id, tmp_path):
    """A noisy-shard healthy run, an LR ramp, the HF NaN trap and a baseline run: every check agrees,
    signal by signal (the fast path gets the config a JSONL user can give: total_steps and baselines)."""
    run = corpus[run_id]
    cuts = checkpoints(run, CHECKS)
    full = replay_monitor(run, cuts, tmp_path)
    fast = replay_fast(run, cuts, config_mode="hints")
    assert len(full) == len(fast) == CHECKS
    for i, (a, b) in enumerate(zip(full, fast, strict=True)):
        assert a.decision is b.decision, (i, a.summary, b.summary)
        assert [(s.kind, s.severity, s.step) for s in a.signals] == [(s.kind, s.severity, s.step) for s in b.signals]
    raised = {s.severity for v in full for s in v.signals} - {Severity.INFO}
    assert raised, "a run that never raises anything proves little"


def test_checkpoints_are_evenly_spaced_and_end_at_the_last_step(corpus):
    run = corpus["h01"]
    cuts = checkpoints(run, 20)
    assert len(cuts) == 20 and cuts[-1] == run.last_step
    gaps = {b - a for a, b in itertools.pairwise(cuts)}
    assert max(gaps) - min(gaps) <= 1


def test_visible_is_the_first_check_holding_a_point_at_or_after_the_fault(corpus):
    run = corpus["b10"]  # fault at step 1200
    cuts = checkpoints(run, 20)
    v = visible_check(run, cuts)
    assert cuts[v] >= 1200 > cuts[v - 1]
    assert visible_check(corpus["a01"], cuts) == 0  # ambiguous from step 0


def test_a_fault_first_seen_in_an_eval_is_visible_at_the_check_holding_that_eval():
    """A NaN eval loss at step 100 between train-loss points at 95 and 105 is visible where the eval is, not
    where the next train-loss point lands (a stop at the eval's check was counted as an early stop)."""
    steps = np.arange(5, 110, 10, dtype=np.int64)
    run = Run(
        id="eval-nan", label="bad", fault="nan_loss", fault_step=100, config={}, baselines={},
        metrics={
            "train/loss": (steps, np.linspace(2.0, 1.0, steps.size)),
            "eval/loss": (np.array([50, 100], dtype=np.int64), np.array([1.5, np.nan])),
        },
    )  # fmt: skip
    cuts = [25, 50, 75, 100, 105]
    assert visible_check(run, cuts) == 3


def test_scores_by_source_kind_split_the_real_corpus_by_where_a_run_comes_from():
    def run(source: dict[str, str], label: str) -> Run:
        steps = np.arange(1, 4, dtype=np.int64)
        loss = {"train/loss": (steps, np.array([3.0, 2.0, 1.0]))}
        return Run(id=str(source), label=label, fault="none", fault_step=None, config={}, baselines={},
                   metrics=loss, provenance={"source": source})  # fmt: skip

    mlperf = run({"repo": "mlcommons/training_results_v1.0", "path": "x", "commit": "0" * 40}, "healthy")
    committed = run({"repo": "someone/yolo", "path": "runs/train/exp/results.csv", "commit": "0" * 40}, "healthy")
    quoted = run({"url": "https://github.com/karpathy/nanoGPT/issues/1"}, "healthy")
    assert [source_kind(r) for r in (mlperf, committed, quoted)] == [
        "MLPerf results", "committed full log", "issue excerpt"
    ]  # fmt: skip
    results = [RunResult(run=r, decisions=[Decision.CONTINUE] * 3, visible=3) for r in (mlperf, committed, quoted)]
    scores = source_scores(results)
    assert len(scores) == 9 and scores["committed full log, all"]["false_stop_rate"] == 0.0


def test_score_counts_what_the_docstring_says(corpus):
    c, u, s = Decision.CONTINUE, Decision.UNSURE, Decision.STOP
    results = [
        RunResult(corpus["h01"], [c, c, u, s], visible=0),
        RunResult(corpus["h02"], [c, c, c, c], visible=0),
        RunResult(corpus["b10"], [c, s, c, s, s], visible=2),  # killed by the early stop: the fault never caught
        RunResult(corpus["b11"], [c, c, c, c], visible=1),  # missed
        RunResult(corpus["b12"], [c, c, u, s], visible=2),  # caught 1 check after visible
        RunResult(corpus["b13"], [c, s], visible=1),  # caught at the visible check
        RunResult(corpus["a05"], [u, c, c], visible=1),  # flagged only before the ambiguity began
        RunResult(corpus["a06"], [c, c, s], visible=1),
        RunResult(corpus["a07"], [s, u, u], visible=1),  # killed before its ambiguity began
    ]
    got = score(results)
    assert got["false_stop_rate"] == 1 / 8 and got["escalation_rate"] == 1 / 8
    assert got["healthy_runs_stopped"] == 0.5
    assert got["stop_recall"] == 0.5 and got["early_stops"] == 1
    assert got["max_delay_checks"] == 1 and got["mean_delay_checks"] == 0.5
    assert got["within_one_check"] == 0.5 and got["ambiguous_flagged"] == 1 / 3
    # issue 9's definition: the 8 healthy checks and the 9 checks of bad and ambiguous runs before visible
    assert got["false_stop_rate_before_faults"] == 3 / 17 and got["escalation_rate_before_faults"] == 2 / 17


def test_a_watched_episode_continues_and_checks_again_in_10_minutes(corpus, tmp_path):
    """h17 through `Monitor.check` on a growing JSONL log: healthy checks climb the ladder; the check that
    first sees the noisy shard's 3× loss says continue (watching), drops the interval to 10 min and asks
    for no review; the ladder climbs again once it is back."""
    run = corpus["h17"]
    log = tmp_path / "h17.jsonl"
    log.write_text("")
    entry = RunEntry(run=str(log), baselines=run.baselines, **toml_hints(run.config))
    config = ProjectConfig(path=None, base_dir=tmp_path, cwd=tmp_path, runs={"h17": entry})
    monitor = Monitor(home=tmp_path / "home", config=config)
    reports = []
    try:
        prev = None
        for cut in (1000, 1200, 1400, 1601, 2600, 2800):
            with log.open("a") as fh:
                fh.writelines(line + "\n" for line in jsonl_lines(run, prev, cut))
            reports.append(monitor.check("h17"))
            prev = cut
    finally:
        monitor.close()
    assert [r.verdict.decision for r in reports if r.verdict] == [Decision.CONTINUE] * 6
    assert [r.schedule.interval_minutes for r in reports] == [10, 20, 30, 10, 20, 30]
    watched = reports[3]
    assert watched.verdict is not None and watched.verdict.summary.startswith("CONTINUE (watching)")
    assert watched.next_action == "continue_monitoring"
