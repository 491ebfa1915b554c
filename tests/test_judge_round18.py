"""Failure classes found in corpus_real/'s train split of rounds 18-19 (stop 29); one test per rule on a real
train-split run, each with a control."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.replay import checkpoints
from mcp_training_check.judge.stats import fisher_fewer
from mcp_training_check.models import Decision, SignalKind
from tests.test_judge_classes import decisions, replay_cuts, replay_real
from tests.test_judge_helpers import make_series, run_judge


def test_a_collapse_within_the_sampling_noise_of_a_tiny_eval_set_is_not_stopped(real):
    """log-ly-aparna534-1 (train, healthy; a baldness-stage classifier validated on 5 images): accuracy 0.4 at its
    first eval, 0 at the next three, 0.4, then 0.6 from epoch 11. 2 right of 5 against 0 of 10 or 0 of 15 is
    what sampling gives one time in ten or twenty (Fisher's exact test: 9.5 %, 5.3 %): it was 'collapsed ...
    confirmed' and stopped at its 2nd and 3rd checks; no check stops it now."""
    run = real["log-ly-aparna534-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    assert not any("collapsed" in s.message for v in verdicts for s in v.signals)


def test_a_collapse_beyond_the_sampling_noise_of_a_tiny_eval_set_is_still_stopped():
    """Control: the same 5-sample accuracy at 0.8 for four evals, then 0 for four (16 of 20 against 0 of 20:
    p < 1e-6) is a collapse, as is 0.4 → 0 on a set too large for its values to be fractions of it."""
    loss = make_series("train/loss", np.geomspace(2.0, 0.5, 40))
    for values in ([0.2, 0.4, 0.8, 0.8, 0.8, 0.8, 0.0, 0.0, 0.0, 0.0], [0.3, 0.4123, 0.4, 0.0, 0.0, 0.0]):
        acc = make_series("eval/accuracy", np.array(values), np.arange(1, len(values) + 1) * 4)
        verdict = run_judge(loss, acc)
        found = [s for s in verdict.signals if s.kind is SignalKind.EVAL_DEGRADING and "collapsed" in s.message]
        assert found and verdict.decision is Decision.STOP, (values, [s.message for s in verdict.signals])


def test_fisher_fewer_is_the_one_sided_hypergeometric_tail():
    assert fisher_fewer(2, 5, 0, 15) == pytest.approx(10 / 190)  # C(5,2)/C(20,2)
    assert fisher_fewer(2, 5, 0, 10) == pytest.approx(10 / 105)  # both right answers among the first 5: C(5,2)/C(15,2)
    assert fisher_fewer(1, 5, 0, 5) == pytest.approx(0.5)
    assert fisher_fewer(0, 5, 3, 5) == pytest.approx(1.0)  # no shortfall at all
    assert fisher_fewer(4, 5, 0, 15) < 0.01


def test_a_linear_warmup_stepped_once_an_epoch_is_a_warmup_not_a_jump(real):
    """log-lx-zhuanglii-1 (round 22, train, healthy; a NAIC 2020 re-ID baseline): its LR is held for an epoch at
    each level of a linear warmup from 0.01 of its peak, 6e-05, 6.54e-04, 1.25e-03, 1.84e-03 …: 'jumped 10.9×
    at step 643 outside warmup' at every check. Two or more rises of one size from the start are a warmup."""
    run = real["log-lx-zhuanglii-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert code == "." * 20, code
    assert not any(s.kind is SignalKind.LR_ANOMALY for v in verdicts for s in v.signals)


@pytest.mark.parametrize(
    "levels",
    [
        [0.01, 0.1, 1.0],  # a constant LR that jumps x10 twice: rises of 0.09 and 0.9
        [0.001, 0.002, 0.01],  # a staircase whose third step is 8x its first
        [6e-5, 6.54e-4],  # one rise: no staircase yet
    ],
)
def test_an_lr_staircase_of_unequal_steps_or_one_step_is_still_a_jump(levels):
    per_level = 12
    lr = np.repeat(levels, per_level).astype(float)
    steps = np.arange(1, lr.size + 1, dtype=np.int64) * 50
    loss = make_series("train/loss", np.geomspace(3.0, 1.0, lr.size), steps)
    found = [s for s in run_judge(loss, make_series("train/lr", lr, steps)).signals if s.kind is SignalKind.LR_ANOMALY]
    assert any("jumped" in s.message for s in found), (levels, [s.message for s in found])


def test_a_run_whose_only_metric_is_nan_at_every_point_is_stopped(real):
    """log-rl-robotsorcerer-1 (round 20, train, bad; a Torch7 optim.Logger file): the train-set class accuracy is
    NaN at all 1,679 rows, the only metric the file holds: 'no train-loss or eval metric' and unsure at every
    check. Every value the run logs being NaN/Inf is critical, as a NaN loss is: stopped at its first check."""
    run = real["log-rl-robotsorcerer-1"]
    assert run.split == "train" and run.label == "bad"
    code, _, verdicts = replay_real(run)
    assert code == "S" * 20, code
    assert any(s.kind is SignalKind.NON_FINITE and "every value" in s.message for s in verdicts[0].signals)


def test_a_nan_metric_beside_a_train_loss_or_a_finite_one_is_no_stop():
    """Controls: a train Dice NaN at every epoch beside a falling train loss (log-th-dextergomez-1's shape), or a
    NaN accuracy beside another metric that is finite, or only 2 NaN values so far, are no 'nothing is a
    number' stop."""
    steps = np.arange(1, 31, dtype=np.int64)
    nan = make_series("train/dice", np.full(30, np.nan), steps)
    loss = make_series("train/loss", np.geomspace(0.01, 0.001, 30), steps)
    finite = make_series("train/throughput", np.full(30, 120.0), steps)
    for series in ((loss, nan), (finite, nan), (make_series("train/accuracy", [np.nan, np.nan]),)):
        found = [s for s in run_judge(*series).signals if "every value" in s.message]
        assert not found, [s.message for s in found]


def test_a_ranking_metric_low_on_its_scale_is_not_hopeless(real):
    """log-ck-hmz76-1 (round 21, train, healthy; a SASRec recommender on Amazon Beauty): NDCG@10 0.008 -> 0.041 in
    10 epochs, then a plateau. Read as an accuracy near 0 it had gained '3.3 % of what there was to gain' and was
    stopped at 9 checks; a ranking metric's level is the catalogue's, so it is no longer judged hopeless."""
    run = real["log-ck-hmz76-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, _ = replay_real(run)
    assert "S" not in code, code


def test_the_same_curve_named_as_an_accuracy_is_still_hopeless(real):
    """Control: the same values logged as a classifier's accuracy (0.041 at best: within 15 % of its worst end)
    are still a model that has learned nothing, stopped."""
    run = real["log-ck-hmz76-1"]
    metrics = {("eval/accuracy" if name == "eval/ndcg" else name): series for name, series in run.metrics.items()}
    code = decisions(replay_cuts(metrics, checkpoints(run), run_config=run.run_config("full")))
    assert "S" in code, code


def test_a_loss_blown_up_by_its_first_updates_is_flagged(real):
    """log-rl-jamie0725-1 (round 20, train, bad; an LSTM question classifier at SGD lr 0.1): 1.80 (ln 6) at
    iteration 0, 18.3 at 10, 31.0 at 20 and 8-24 to its last print: nothing at any check. A loss whose every
    later point sits >= 3x its first, never back below it, is now flagged (a warning, never a stop)."""
    run = real["log-rl-jamie0725-1"]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    assert "u" in code[visible:] and "S" not in code, code
    assert any("blew up at its first updates" in s.message for v in verdicts for s in v.signals)


def test_a_blowup_that_recovers_or_a_loss_that_starts_high_is_not_flagged():
    """Controls: a loss that blows up to 4x its start for 3 of its 12 points and falls back below its start, and a
    loss that falls from its first point, are no 'blown up' flag."""
    recovering = make_series("train/loss", [2.0, 8.0, 8.5, 7.9, 1.9, 1.8, 1.7, 1.7, 1.6, 1.5, 1.5, 1.4])
    falling = make_series("train/loss", np.geomspace(20.0, 2.0, 12))
    for loss in (recovering, falling):
        assert not any("blew up" in s.message for s in run_judge(loss).signals)
