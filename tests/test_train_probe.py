"""The train-split tuning probe: folds follow the source repository, a late run's delay splits into detection
and confirmation, and a holdout run is never shown."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.corpus_runs import CORPUS_REAL, Run, load_corpus
from benchmarks.replay import RunResult
from benchmarks.train_probe import fold, latency, main, source_repo, train_runs
from mcp_training_check.models import Decision


def _run(label: str = "bad", source: dict | None = None) -> Run:
    steps = np.arange(10)
    return Run(id="x", label=label, fault="overfit", fault_step=3, config={}, baselines={},
               metrics={"train/loss": (steps, np.ones(10))}, given_split="train",
               provenance={"source": source or {}})  # fmt: skip


def test_fold_follows_the_repository_of_a_log_or_an_issue():
    log = _run(source={"repo": "Owner/Name", "path": "a.csv"})
    issue = _run(source={"url": "https://github.com/owner/name/issues/12"})
    assert source_repo(issue) == "owner/name"
    assert fold(log) == fold(issue)  # case-insensitive: one repository, one fold


C, U, S = Decision.CONTINUE, Decision.UNSURE, Decision.STOP


@pytest.mark.parametrize(
    ("decisions", "visible", "label", "expected"),
    [
        ([C, C, U, U, U, S], 1, "bad", (1, 3)),  # seen 1 check after visible, stopped 3 checks later
        ([C, C, C, C, S], 1, "bad", (3, 0)),  # nothing seen until the stop itself
        ([C, C, U, U], 1, "bad", (1, 2)),  # never stopped: confirmation runs to the replay's end
        ([C, C, S], 1, "bad", None),  # within one check: not late
        ([S, C, C], 1, "bad", None),  # stopped before its fault: early, not late
        ([C, U, U], 0, "healthy", None),
    ],
)
def test_latency_splits_a_late_stop_into_detection_and_confirmation(decisions, visible, label, expected):
    assert latency(RunResult(_run(label), decisions, visible)) == expected


def test_signals_refuse_a_holdout_run(capsys):
    """Issue 9's blindness: a holdout run's id is refused before anything of it is replayed."""
    holdout = next(run.id for run in load_corpus(CORPUS_REAL) if run.split == "holdout")
    assert holdout not in {run.id for run in train_runs()}
    with pytest.raises(SystemExit):
        main(["--corpus", str(CORPUS_REAL), "--signals", holdout])
    assert "holdout runs are never shown" in capsys.readouterr().err
