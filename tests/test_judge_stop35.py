"""Judge changes of stop 35: each test fails on the code before its change."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.corpus_runs import Run, load_corpus
from benchmarks.replay import checkpoints
from mcp_training_check.models import Severity, SignalKind
from tests.test_judge_classes import REAL, replay_cuts, replay_real


@pytest.fixture(scope="module")
def real() -> dict[str, Run]:
    return {run.id: run for run in load_corpus(REAL)}


def _not_learning(verdict, metric: str = "train/loss"):
    flat = [s for s in verdict.signals if s.kind is SignalKind.FLAT and s.metric == metric]
    return [s for s in flat if "not learning" in s.message]


def test_a_late_stretch_of_pretraining_whose_eval_loss_falls_at_every_eval_is_not_stopped(real):
    """log-lk-jaipkapoor99-1 (round 51, train, healthy): a resumed GPT-2 124M pre-training, steps 70,250-152,587,
    whose one-batch train loss wanders 2.93-3.56 around a slowly falling median while its eval loss falls at
    nearly every eval, 3.274 -> 3.142. 'Not learning: within 5 % of its initial level' stopped it at checks
    13-15; an eval improving significantly over the same steps makes it a flag."""
    run = real["log-lk-jaipkapoor99-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    flagged = [s for v in verdicts for s in _not_learning(v)]
    assert flagged and all(s.severity is Severity.WARNING for s in flagged)
    assert any("mid-run (step 70,250)" in s.message and "improves significantly" in s.message for s in flagged)


def test_the_same_stall_beside_an_eval_loss_that_does_not_improve_is_still_stopped(real):
    """Control: the same train loss beside an eval loss that only wobbles around its first value is stopped as
    before at its second 'not learning' check."""
    run = real["log-lk-jaipkapoor99-1"]
    steps, values = run.metrics["eval/loss"]
    wobble = values[0] + 0.004 * np.sin(np.arange(values.size))
    metrics = dict(run.metrics) | {"eval/loss": (steps, wobble)}
    verdicts = replay_cuts(metrics, checkpoints(run))
    assert any(s.severity is Severity.CRITICAL for v in verdicts for s in _not_learning(v))
