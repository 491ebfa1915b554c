"""Judge changes of stop 42: a detector's average precision that has left 0 is not judged stuck at a second check
(a detector without skill scores 0; one whose best mAP is ≥ 1 % finds objects, and a low plateau of it is unsure,
not a stop), and every train loss of a run is read for NaN/Inf, not only its primary one. Each real-run test fails
on the code before its change; the controls pass on both."""

from __future__ import annotations

import numpy as np

from benchmarks.replay import checkpoints
from mcp_training_check.models import Severity, SignalKind
from tests.test_judge_classes import decisions, replay_cuts, replay_real

MAP50_95 = "eval/mAP50-95(B)"


def _stuck(verdict, metric: str):
    return [s for s in verdict.signals if s.kind is SignalKind.FLAT and s.metric == metric]


def test_a_low_but_rising_map_after_a_warmup_dip_is_not_stopped(real):
    """log-pg-rolanddeschain-ship-it-1 (round 100, train, healthy): a YOLO detector of air-cargo containers whose
    mAP50-95 dips from 0.042 to 0.029 in its warm-up and is 0.077 after 7 of its 20 epochs: 3.6 % of the whole
    scale, so "not learning" at a second check, and the run was stopped at checks 5-7. Its mAP50-95 reaches 0.23
    and its mAP50 0.42, both at the last epoch. An average precision that has left 0 is a detector finding
    objects: the finding stays a warning (unsure)."""
    run = real["log-pg-rolanddeschain-ship-it-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    (stuck,) = _stuck(verdicts[5], MAP50_95)
    assert stuck.severity is Severity.WARNING, verdicts[5].summary
    assert "still so at a second check, but a detector without skill holds an average precision at 0" in stuck.message


def test_the_same_run_with_its_maps_a_tenth_as_high_is_stopped(real):
    """Control: the same run with every mAP a tenth of its value (a best mAP50-95 of 0.0077 at check 5, under the
    1 % floor; the same shape, so the same share of growth) is a detector that finds almost nothing: stopped at
    check 5 as before."""
    run = real["log-pg-rolanddeschain-ship-it-1"]
    metrics = dict(run.metrics)
    for name in (MAP50_95, "eval/mAP50(B)"):
        steps, values = run.metrics[name]
        metrics[name] = (steps, values * 0.1)
    verdicts = replay_cuts(metrics, checkpoints(run), run_config=run.config)
    code = decisions(verdicts)
    assert code[5] == "S", code
    (stuck,) = _stuck(verdicts[5], MAP50_95)
    assert stuck.severity is Severity.CRITICAL, verdicts[5].summary


def test_a_detector_at_exactly_zero_is_still_stopped(real):
    """Control on a real bad run: log-no-deskthom-1 (train), a YOLO detector whose mAPs are exactly 0 at every
    epoch: stopped at its third check, as before."""
    run = real["log-no-deskthom-1"]
    assert run.split == "train" and run.label == "bad"
    code, _, verdicts = replay_real(run)
    assert code[2] == "S", code
    (stuck,) = _stuck(verdicts[2], MAP50_95)
    assert stuck.severity is Severity.CRITICAL and np.isclose(stuck.evidence["progress"], 0.0)


def _non_finite(verdict):
    return [s for s in verdict.signals if s.kind is SignalKind.NON_FINITE and s.severity is not Severity.INFO]


def test_a_second_train_loss_nan_at_every_point_is_stopped_at_once(real):
    """log-ps-bmsacchi-1 (round 107, train, bad): a CUB-200 classifier with a classification and a regression head,
    whose regression loss is NaN at all 26 logged rows while the classification loss sits at ln 200. Only the
    primary train loss was read for NaN: the run was a flat loss at a few checks and never stopped. Every train
    loss is read now: stopped at its first check."""
    run = real["log-ps-bmsacchi-1"]
    assert run.split == "train" and run.label == "bad"
    code, _, verdicts = replay_real(run)
    assert code[0] == "S", code
    (nan,) = _non_finite(verdicts[0])
    assert nan.metric == "train/loss_regression" and nan.severity is Severity.CRITICAL, nan.message


def test_the_same_run_with_a_finite_regression_loss_is_not_stopped_at_once(real):
    """Control: the same run with its regression loss finite (falling 1.0 → 0.5) has no non-finite finding and
    is not stopped at its first check."""
    run = real["log-ps-bmsacchi-1"]
    steps, values = run.metrics["train/loss_regression"]
    metrics = dict(run.metrics) | {"train/loss_regression": (steps, np.linspace(1.0, 0.5, values.size))}
    verdicts = replay_cuts(metrics, checkpoints(run), run_config=run.config)
    assert decisions(verdicts)[0] != "S", verdicts[0].summary
    assert not _non_finite(verdicts[0])


def test_a_nan_primary_loss_speaks_for_its_nan_terms(real):
    """Control: log-pr-kerong2002-1 (round 106, train, bad), a YOLOv5 whose box, objectness and class losses are
    NaN at all 100 epochs: stopped at its first check, as before, on its primary loss alone (its terms are read
    only while the primary is finite, so the verdict does not say the same fault three times)."""
    run = real["log-pr-kerong2002-1"]
    assert run.split == "train" and run.label == "bad"
    code, _, verdicts = replay_real(run)
    assert code[0] == "S", code
    assert [s.metric for s in _non_finite(verdicts[0])] == ["train/box_loss"], verdicts[0].summary
