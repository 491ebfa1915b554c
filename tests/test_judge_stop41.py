"""Judge changes of stop 41: an eval loss's confirmed collapse (≥ 3× its best) is a warning, not a stop, while
every quality eval of the run holds its best within the strict 5 % margin (no noise widening). Each real-run test
fails on the code before its change; the controls pass on both."""

from __future__ import annotations

from benchmarks.replay import checkpoints
from mcp_training_check.models import Severity, SignalKind
from tests.test_judge_classes import decisions, replay_cuts, replay_real


def _collapse(verdict, metric: str):
    return [
        s for s in verdict.signals
        if s.kind is SignalKind.EVAL_DEGRADING and s.metric == metric and "collapsed_evals" in s.evidence
    ]  # fmt: skip


def test_a_val_loss_tripling_beside_a_top1_at_its_best_is_not_stopped(real):
    """log-nf-tony2408-1 (round 75, train, healthy): a YOLO classifier whose val loss, noisy around 0.02-0.1 once
    its top-1 reaches 0.98-1.0, read 0.068 and 0.10 at epochs 46 and 51 against its held best 0.021: a collapse
    confirmed over two checks, and the run was stopped at its tenth check with its top-1 at 0.98 (best 1.0) and
    its top-5 at 1.0. A loss that multiplies while every quality eval holds its best is over-confidence on a
    few samples: a warning (unsure), not a stop."""
    run = real["log-nf-tony2408-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    (loss,) = _collapse(verdicts[9], "eval/loss")
    assert loss.severity is Severity.WARNING, verdicts[9].summary
    assert "the quality eval is at its best (eval/accuracy_top1 0.98" in loss.message


def test_the_same_collapse_with_the_top1_slipping_is_stopped(real):
    """Control: the same run with its top-1 and top-5 at 0.85× their values from epoch 40 on (a top-1 near
    0.83, 17 % under its best): the quality no longer holds, so the confirmed collapse stops the run at the
    same check as before."""
    run = real["log-nf-tony2408-1"]
    metrics = dict(run.metrics)
    for name in ("eval/accuracy_top1", "eval/accuracy_top5"):
        steps, values = run.metrics[name]
        metrics[name] = (steps, values * (1 - 0.15 * (steps >= 40)))
    verdicts = replay_cuts(metrics, checkpoints(run), run_config=run.config)
    code = decisions(verdicts)
    assert code[9] == "S", code
    (loss,) = _collapse(verdicts[9], "eval/loss")
    assert loss.severity is Severity.CRITICAL, verdicts[9].summary


def test_a_val_loss_collapse_beside_a_falling_accuracy_is_still_stopped(real):
    """Control on a real bad run: issue-keras-9214 (train), an InceptionV3 fine-tune whose val loss jumps from
    1.15 to 5.5 while its val accuracy falls from 0.77 to 0.5: within the accuracy's wide noise margin on four
    evals, but 33 % under its best, so not at its best by the strict margin; stopped the check after its fault
    is visible, as before."""
    run = real["issue-keras-9214"]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    assert code[visible + 1] == "S", code
    (loss,) = _collapse(verdicts[visible + 1], "eval/loss")
    assert loss.severity is Severity.CRITICAL


def _non_finite(verdict, metric: str):
    return [s for s in verdict.signals if s.kind is SignalKind.NON_FINITE and s.metric == metric]


def test_a_lone_inf_in_a_train_loss_that_carries_on_at_its_level_is_not_stopped(real):
    """log-pe-marcusayay-1 (round 98, train, healthy): a YOLOv8 whose train box loss is Inf at epoch 62 of 100, its
    only non-finite value, between 0.750 and 0.742, and falls to 0.69 by the end while every eval ends at its best.
    The Inf stopped the run at each of its last eight checks. One non-finite value with the loss at its level
    since is an overflowed batch a loss scaler skipped: a warning (unsure), not a stop."""
    run = real["log-pe-marcusayay-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    first = next(i for i, v in enumerate(verdicts) if _non_finite(v, "train/box_loss"))
    (inf,) = _non_finite(verdicts[first], "train/box_loss")
    assert inf.severity is Severity.WARNING and "its one non-finite value" in inf.message, inf.message


def test_the_same_run_with_a_second_inf_or_a_loss_off_its_level_is_stopped(real):
    """Controls: the same run with a second Inf two epochs after the first, or with its box loss at 3× its level
    after the Inf (weights that took the overflow): critical at the first check that sees them, as before."""
    run = real["log-pe-marcusayay-1"]
    steps, values = run.metrics["train/box_loss"]
    second = values.copy()
    second[(steps == 64)] = float("inf")
    off = values.copy()
    off[steps > 62] *= 3
    for changed in (second, off):
        metrics = dict(run.metrics) | {"train/box_loss": (steps, changed)}
        verdicts = replay_cuts(metrics, checkpoints(run), run_config=run.config)
        code = decisions(verdicts)
        first = next(i for i, v in enumerate(verdicts) if _non_finite(v, "train/box_loss"))
        assert code[first] == "S", code
        assert _non_finite(verdicts[first], "train/box_loss")[0].severity is Severity.CRITICAL
