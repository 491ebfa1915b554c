"""Eval metrics in their own direction: baseline gaps early vs late, overfitting, collapse."""

from __future__ import annotations

import numpy as np
import pytest

from mcp_training_check.judge.evalkinds import is_quality_eval, is_secondary_eval
from mcp_training_check.models import Decision, RunStatus, Severity, SignalKind
from tests.test_judge_helpers import decay_loss, kinds, make_series, run_judge, steps_for

TRAIN = decay_loss(600, seed=1)  # steps 10..6,000, still improving
EVAL_EVERY = 600  # steps between evals: 10 evals over the run


def _eval(name: str, values: list[float]) -> object:
    return make_series(name, np.array(values), steps_for(len(values), EVAL_EVERY), new_points=1)


IMPROVING_LOSS = [3.0, 2.7, 2.5, 2.4, 2.35, 2.3, 2.28, 2.26, 2.25, 2.24]
OVERFITTING_LOSS = [3.0, 2.6, 2.4, 2.35, 2.3, 2.38, 2.45, 2.55, 2.6, 2.7]
ACC = [0.40, 0.55, 0.62, 0.66, 0.68, 0.69, 0.70, 0.70, 0.71, 0.71]

TABLE = [
    # name, eval series, baselines, run_config, expected {kind: severity}, decision
    ("improving eval loss", _eval("eval_loss", IMPROVING_LOSS), None, None, {}, Decision.CONTINUE),
    ("overfitting", _eval("eval_loss", OVERFITTING_LOSS), None, None,
     {SignalKind.EVAL_DEGRADING: "warning"}, Decision.UNSURE),
    ("accuracy below baseline early, on its way", _eval("eval_accuracy", ACC[:4]), {"eval_accuracy": 0.80},
     {"max_steps": 60000}, {SignalKind.EVAL_BELOW_BASELINE: "info"}, Decision.CONTINUE),
    ("accuracy far below baseline late, first check", _eval("eval_accuracy", ACC), {"eval_accuracy": 0.95},
     {"max_steps": 7000}, {SignalKind.EVAL_BELOW_BASELINE: "warning"}, Decision.UNSURE),
    ("accuracy slightly below baseline late", _eval("eval_accuracy", ACC), {"eval_accuracy": 0.75},
     {"max_steps": 7000}, {SignalKind.EVAL_BELOW_BASELINE: "warning"}, Decision.UNSURE),
    ("far below, total unknown, stalled 12 evals", _eval("eval_accuracy", [*ACC[:7], 0.69, 0.70, 0.70, 0.69, 0.70]),
     {"eval_accuracy": 0.95}, None, {SignalKind.EVAL_BELOW_BASELINE: "warning"}, Decision.UNSURE),
    ("far below, total unknown, still improving", _eval("eval_accuracy", ACC[:5]), {"eval_accuracy": 0.95},
     None, {SignalKind.EVAL_BELOW_BASELINE: "info"}, Decision.CONTINUE),
    ("better than baseline", _eval("eval_accuracy", ACC), {"eval_accuracy": 0.60}, {"max_steps": 7000},
     {}, Decision.CONTINUE),
    ("accuracy collapsed for two evals, first check", _eval("eval_accuracy", [*ACC[:8], 0.11, 0.10]), None, None,
     {SignalKind.EVAL_DEGRADING: "warning"}, Decision.UNSURE),
    ("accuracy collapsed for four evals", _eval("eval_accuracy", [*ACC[:6], 0.12, 0.11, 0.11, 0.10]), None, None,
     {SignalKind.EVAL_DEGRADING: "critical"}, Decision.STOP),
    ("accuracy collapsed for one eval", _eval("eval_accuracy", [*ACC[:9], 0.10]), None, None,
     {SignalKind.EVAL_DEGRADING: "watch"}, Decision.CONTINUE),
    ("eval loss exploding, first check", _eval("eval_loss", [*IMPROVING_LOSS[:8], 9.0, 12.0]), None, None,
     {SignalKind.EVAL_DEGRADING: "warning"}, Decision.UNSURE),
    ("eval loss NaN", _eval("eval_loss", [*IMPROVING_LOSS[:9], float("nan")]), None, None,
     {SignalKind.EVAL_DEGRADING: "critical"}, Decision.STOP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("series", "baselines", "config", "expected", "decision"),
    [t[1:] for t in TABLE],
    ids=[t[0] for t in TABLE],
)
def test_eval_table(series, baselines, config, expected, decision):
    verdict = run_judge(make_series("loss", TRAIN, new_points=20), series, baselines=baselines, run_config=config)
    found = {
        k: v for k, v in kinds(verdict).items() if k in (SignalKind.EVAL_DEGRADING, SignalKind.EVAL_BELOW_BASELINE)
    }
    assert found == expected, verdict.summary
    assert verdict.decision is decision, verdict.summary


def test_one_collapsed_eval_is_watched_while_the_run_goes_on_and_a_warning_once_it_has_ended():
    """A single collapsed eval is watched (the next check confirms it or sees it recover); a run that has ended
    has no next check, so there it is a warning."""
    series = (make_series("loss", TRAIN, new_points=20), _eval("eval_accuracy", [*ACC[:9], 0.10]))
    running, ended = (run_judge(*series, status=status) for status in (RunStatus.RUNNING, RunStatus.FINISHED))
    assert kinds(running)[SignalKind.EVAL_DEGRADING] == "watch" and running.decision is Decision.CONTINUE
    assert kinds(ended)[SignalKind.EVAL_DEGRADING] == "warning" and ended.decision is Decision.UNSURE


def test_overfitting_message_names_best_and_train_loss():
    verdict = run_judge(make_series("loss", TRAIN), _eval("eval_loss", OVERFITTING_LOSS))
    sig = next(s for s in verdict.signals if s.kind is SignalKind.EVAL_DEGRADING)
    assert sig.metric == "eval_loss"
    assert "its best 2.35 at step 3,000" in sig.message and "overfitting" in sig.message
    assert sig.evidence["train_change"] < 0


def test_baseline_gap_message_says_why_it_is_not_yet_conclusive():
    verdict = run_judge(
        make_series("loss", TRAIN), _eval("eval_accuracy", ACC[:4]),
        baselines={"eval_accuracy": 0.8}, run_config={"max_steps": 60000},
    )  # fmt: skip
    sig = next(s for s in verdict.signals if s.kind is SignalKind.EVAL_BELOW_BASELINE)
    assert "18% worse than the baseline 0.8" in sig.message and "at 10% of the run" in sig.message
    assert "still on its way there" in sig.message and sig.severity is Severity.INFO


def test_far_below_baseline_late_is_critical_when_the_next_check_still_sees_it():
    """One check far below the baseline late in the run is a warning (MLPerf's RNN-T sits at WER 1 for 12
    epochs); the next check that still sees it (with an eval since) stops it."""
    args = {"baselines": {"eval_accuracy": 0.95}, "run_config": {"max_steps": 7000}}
    first = run_judge(make_series("loss", TRAIN), _eval("eval_accuracy", ACC[:9]), **args)
    assert first.decision is Decision.UNSURE, first.summary
    second = run_judge(make_series("loss", TRAIN), _eval("eval_accuracy", ACC), previous=[first], **args)
    assert second.decision is Decision.STOP, second.summary


YOLO_EVALS = ["val/box_loss", "val/obj_loss", "val/cls_loss", "metrics/precision", "metrics/recall", "metrics/mAP_0.5"]


@pytest.mark.parametrize(
    ("name", "evals", "quality", "secondary"),
    [
        ("metrics/mAP_0.5", YOLO_EVALS, True, False),
        ("metrics/mAP50-95(B)", YOLO_EVALS, True, False),
        ("val_acc", ["val_acc", "val_loss"], True, False),
        ("metrics/precision", YOLO_EVALS, False, True),
        ("metrics/recall(B)", YOLO_EVALS, False, True),
        ("val/cls_loss", YOLO_EVALS, False, True),  # one term of the objective beside the others
        ("val_loss", ["val_acc", "val_loss"], False, False),  # a run's one eval loss is its total
        ("val/loss", ["val/loss", "val/acc"], False, False),
        ("eval/loss", ["eval/loss", "eval/loss_ce"], False, False),  # the plain total beside its terms
    ],
)
def test_quality_and_secondary_evals_are_told_by_name(name, evals, quality, secondary):
    """A quality eval sums up the model (mAP, accuracy); a secondary is one side of a trade-off or one term of
    the objective, which a quality eval at its best outvotes."""
    assert is_quality_eval(name) is quality
    assert is_secondary_eval(name, evals) is secondary
