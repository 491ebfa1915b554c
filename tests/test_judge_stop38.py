"""Judge change of stop 38: an overfit confirmed across checks. Each real-run test fails on the code before the change;
the controls (a gap that narrows once, a quality eval holding its best, a healthy run widening for four checks) pass on
both."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from benchmarks.replay import checkpoints
from mcp_training_check.judge.evalkinds import is_per_class_score
from mcp_training_check.models import Severity, SignalKind, Verdict
from tests.test_judge_classes import decisions, replay_cuts, replay_real

SUSTAINED = "a sustained overfit"


def _overfit(verdict: Verdict, metric: str = "eval/loss"):
    return [s for s in verdict.signals if s.kind is SignalKind.EVAL_DEGRADING and s.metric == metric]


def test_a_val_loss_widening_its_gap_at_six_checks_in_a_row_is_stopped(real):
    """log-tm-vikas-gp-1 (round 44, train, bad): a leaf-segmentation U-Net's val loss climbs from its best 0.522
    (epoch 32) for 25 epochs while the train loss falls, 1.15x its best at epoch 49. Every check from epoch 40 on
    flagged it overfitting (unsure), each further from its best than the one before, and the run was never stopped:
    the large-overfit stop waits for 1.5x its best, and its LR is still logged. It is now stopped at the sixth such
    check, two checks after its fault became visible."""
    run = real["log-tm-vikas-gp-1"]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    first = code.index("S")
    assert first >= visible and set(code[first:]) == {"S"}, (code, visible)
    stop = [s for s in _overfit(verdicts[first]) if s.severity is Severity.CRITICAL]
    assert stop and SUSTAINED in stop[0].message, verdicts[first].summary
    gaps = [_overfit(v)[0].evidence["gap"] for v in verdicts[first - 5 : first + 1]]
    assert all(a <= b for a, b in itertools.pairwise(gaps)), gaps
    assert all(_overfit(v)[0].severity is Severity.WARNING for v in verdicts[first - 5 : first])


def test_a_val_accuracy_held_below_its_best_for_six_checks_is_stopped(real):
    """log-tj-longcinao-1 (round 37, train, bad, the other fold): a four-label tongue-image classifier whose mean val
    accuracy is 0.855 exactly for 17 epochs, then 0.795 exactly (each label at its majority share or its flip),
    7 % under its first-epoch best while its train loss falls 25 %: overfitting at every check from its 3rd, each
    as far from its best as the one before (a gap held is no recovery), unsure to its end and never stopped. Stopped
    now at the sixth such check."""
    run = real["log-tj-longcinao-1"]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    first = code.index("S")
    assert first >= visible and set(code[first:]) == {"S"}, code
    assert any(SUSTAINED in s.message for s in _overfit(verdicts[first], "eval/accuracy"))


def test_a_gap_that_narrows_at_one_check_restarts_the_count(real):
    """Control: the U-Net's val loss brought back near its best for the three epochs up to its 16th check (epoch 49):
    that check is nearer its best than the one before, so the six-check count starts again and the run ends before
    it is reached: flagged, not stopped."""
    run = real["log-tm-vikas-gp-1"]
    steps, values = run.metrics["eval/loss"]
    dipped = np.where((steps >= 47) & (steps <= 49), 0.53, values)
    verdicts = replay_cuts(dict(run.metrics) | {"eval/loss": (steps, dipped)}, checkpoints(run), run_config=run.config)
    code = decisions(verdicts)
    assert "S" not in code and "u" in code[-3:], code


def test_a_val_loss_widening_beside_a_quality_eval_at_its_best_is_not_stopped(real):
    """Control: the same U-Net with a Dice that holds its best while its val loss widens: a loss that worsens while
    the model's quality holds is over-confidence (the mild overfit's exemption), so the count does not stop it."""
    run = real["log-tm-vikas-gp-1"]
    steps, _ = run.metrics["eval/loss"]
    dice = np.minimum(0.80, 0.5 + steps / 40.0) + np.random.default_rng(0).normal(0.0, 0.002, steps.size)
    verdicts = replay_cuts(dict(run.metrics) | {"eval/dice": (steps, dice)}, checkpoints(run), run_config=run.config)
    assert "S" not in decisions(verdicts), decisions(verdicts)


def test_a_healthy_val_loss_widening_for_four_checks_is_not_stopped(real):
    """Control: log-hj-facuvcanale-1 (train, healthy), a bike-share GNN whose val loss settles 5-8 % above its best
    while its LR decays: overfitting at up to four checks in a row, each further from its best, then nearer again.
    Never stopped."""
    run = real["log-hj-facuvcanale-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    assert any(_overfit(v) for v in verdicts)


def test_a_per_class_map_beside_the_overall_map_does_not_stop_the_run(real):
    """log-ni-jordana-gc-1 (round 77, train, healthy): a YOLOv5 run logging an mAP and an mAP50 per grocery class
    beside its overall mAPs. Its egg-carton mAP (best 0.044, the rarest class) slid to 0.019 by epoch 25 while the
    overall mAP rose, and the run was stopped at 4 checks for it. One class's score is one term of the overall
    score, as a component loss is of the total: secondary now, never a stop while the overall mAP judges the run."""
    run = real["log-ni-jordana-gc-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    per_class = [s for v in verdicts for s in v.signals if s.metric and s.metric.startswith("eval/egg_carton")]
    assert all(s.severity is not Severity.CRITICAL for s in per_class)


def test_a_class_named_map_without_an_overall_map_is_judged_as_before(real):
    """Control: the same run without its overall mAP columns: the egg-carton mAP has no overall score beside it to
    be a term of, so its slide is judged as any quality eval's (stopped, as before)."""
    run = real["log-ni-jordana-gc-1"]
    metrics = {k: v for k, v in run.metrics.items() if k not in ("eval/mAP_0.5", "eval/mAP_0.5:0.95")}
    code = decisions(replay_cuts(metrics, checkpoints(run), run_config=run.config))
    assert "S" in code, code


@pytest.mark.parametrize(
    ("name", "names", "per_class"),
    [
        ("val/acc_cat", ["val/acc", "val/acc_cat", "val/acc_dog"], True),
        ("val/acc", ["val/acc", "val/acc_cat", "val/acc_dog"], False),
        ("eval/mAP50(M)", ["eval/mAP50(B)", "eval/mAP50(M)"], False),  # two heads, neither the overall
        ("eval/acc_c1", ["eval/accuracy", "eval/acc_c1"], False),  # another word than the overall's
    ],
)
def test_per_class_scores_are_named_against_a_plain_sibling(name, names, per_class):
    assert is_per_class_score(name, names) is per_class


def _above_peak(verdict: Verdict):
    return [s for s in verdict.signals if s.kind is SignalKind.LR_ANOMALY and "ratio" in s.evidence]


def test_an_lr_above_its_configured_value_from_the_start_is_said_once(real):
    """log-ng-saksham1000-mish-1 (round 76, train, healthy): an Ultralytics YOLOv8n-seg with lr0 1e-4 in its args and
    optimizer=auto, which ignores lr0: its logged LR warms up to 1.9e-3 and decays linearly, 19x the configured value
    at every point. It was unsure at all 20 checks for 'lr/pg0 ... 19.5x the configured peak'. The first check that
    sees it still warns; the later ones, finding it no higher, say it as information."""
    run = real["log-ng-saksham1000-mish-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    found = [(i, s) for i, v in enumerate(verdicts) for s in _above_peak(v)]
    warned = [i for i, s in found if s.severity is Severity.WARNING]
    assert len(warned) == 1 and found[0][0] == warned[0], [(i, s.severity) for i, s in found]
    later = [s for i, s in found if i > warned[0]]
    assert later and all(s.severity is Severity.INFO and "as when first found" in s.message for s in later)
    assert code.count("u") <= 2, code


def test_an_lr_that_keeps_climbing_above_its_configured_value_stays_a_warning(real):
    """Control: the same run with its LR multiplied by 1.1 more at each of its epochs from the 10th: past 1.25x the
    ratio it was first found at, it is an LR leaving its schedule again, a warning at the checks that see it."""
    run = real["log-ng-saksham1000-mish-1"]
    steps, lr = run.metrics["train/lr/pg0"]
    climbing = lr * np.where(steps >= 10, 1.1 ** (steps - 9.0), 1.0)
    metrics = dict(run.metrics) | {name: (steps, climbing) for name in run.metrics if name.startswith("train/lr/")}
    verdicts = replay_cuts(metrics, checkpoints(run), run_config=run.config)
    late = [s for v in verdicts[-5:] for s in _above_peak(v)]
    assert late and all(s.severity is not Severity.INFO for s in late), [s.severity for s in late]
