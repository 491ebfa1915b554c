"""Judge changes of stop 39: a memorised training set is a train loss fallen to half its level, not one easing a few
percent; a quality eval exactly 0 at every eval vouches for nothing; a head is not called dead over fewer than 10 evals;
a recall at k is a ranking quality eval. Each real-run test fails on the code before its change; the controls (the same
runs with a train loss memorised, an mAP that learns, a keypoint head that never scores; a detector's recall; a healthy
retrieval model) pass on both."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.replay import checkpoints
from mcp_training_check.judge.evalkinds import is_quality_eval, is_secondary_eval
from mcp_training_check.models import Severity, SignalKind
from tests.test_judge_classes import decisions, replay_cuts, replay_real

MEMORISED = "the training set is memorised"


def _stuck(verdict, metric: str):
    return [s for s in verdict.signals if s.kind is SignalKind.FLAT and s.metric == metric]


def test_a_slow_detector_beside_a_train_loss_easing_a_few_percent_is_not_stopped(real):
    """log-np-it21344756-1 (round 83, train, healthy): a YOLO segmenter's box mAP50-95 at 0.10 after 16 epochs (7.5 %
    of its headroom by medians of 3) while its val box loss sits 36 % above its third-epoch best and the train box loss
    is 5.4 % lower than then; its mAP reaches 0.5 later. The 5.4 % was read as a memorised training set and the run was
    stopped at its third check. It is now a warning there (hopeless, but not under 5 % of its headroom) and the run is
    never stopped."""
    run = real["log-np-it21344756-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    flat = _stuck(verdicts[2], "eval/mAP50-95(B)")
    assert flat and flat[0].severity is Severity.WARNING and MEMORISED not in flat[0].message, verdicts[2].summary


def test_the_same_detector_with_its_train_loss_memorised_is_stopped(real):
    """Control: the same run with its train box loss falling to a third of its level after the val box loss's best
    (epoch 3): the witness holds, so the hopeless mAP is critical at the second check that sees it."""
    run = real["log-np-it21344756-1"]
    steps, values = run.metrics["train/box_loss"]
    memorised = np.where(steps > 3, values * np.maximum(0.3, 1.0 - (steps - 3) * 0.1), values)
    metrics = dict(run.metrics) | {"train/box_loss": (steps, memorised)}
    verdicts = replay_cuts(metrics, checkpoints(run), run_config=run.config)
    code = decisions(verdicts)
    assert code[2] == "S", code
    assert any(MEMORISED in s.message for s in _stuck(verdicts[2], "eval/mAP50-95(B)")), verdicts[2].summary


def test_nan_val_losses_beside_a_quality_eval_that_scored_nothing_stop_the_run(real):
    """log-np-egoryankovsky-1 (round 83, train, bad): a YOLO segmenter whose box and mask precision, recall and mAPs
    are exactly 0 at all 20 validations and whose every val loss is NaN: the evaluation never scores anything. The
    NaN losses were information ("the quality eval is not degrading, which outvotes a secondary eval") and the run
    was stopped four checks after its third eval. An mAP exactly 0 at each of 3 evals vouches for nothing: the
    broken evaluation is critical at the check that sees the third."""
    run = real["log-np-egoryankovsky-1"]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    assert code.index("S") == visible, (code, visible)
    broke = [s for s in verdicts[visible].signals if "the evaluation broke" in s.message]
    assert broke and all(s.severity is Severity.CRITICAL for s in broke), verdicts[visible].summary


def test_nan_val_losses_beside_a_quality_eval_that_learns_stay_information(real):
    """Control: the same run with its box mAP50 rising from 0.01 to 0.5: a quality eval that scores and is not
    degrading outvotes the NaN component losses, so the check that sees the third eval does not stop."""
    run = real["log-np-egoryankovsky-1"]
    steps, _ = run.metrics["eval/mAP50(B)"]
    learning = np.linspace(0.01, 0.5, steps.size)
    verdicts = replay_cuts(dict(run.metrics) | {"eval/mAP50(B)": (steps, learning)}, checkpoints(run))
    _, visible, _ = replay_real(run)
    broke = [s for s in verdicts[visible].signals if "the evaluation broke" in s.message]
    assert broke and all(s.severity is Severity.INFO for s in broke), verdicts[visible].summary
    assert decisions(verdicts)[visible] != "S"


def test_a_keypoint_head_at_zero_for_seven_epochs_of_twenty_five_is_not_stopped(real):
    """log-ns-kedarnathkc-1 (round 86, train, healthy): a YOLOv8n-pose fine-tune of 25 epochs whose keypoint mAPs are
    exactly 0 at epochs 1-7 while its box mAP learns; they rise from epoch 8 to 0.26 at its last. At 28 % of its run
    the zero head was critical and the run was stopped at epoch 7: a quarter of a short run is 7 evals, too few to
    call a head dead. It is now never stopped."""
    run = real["log-ns-kedarnathkc-1"]
    assert run.split == "train" and run.label == "healthy" and run.config["total_steps"] == 25
    code, _, _ = replay_real(run)
    assert "S" not in code, code


def test_a_keypoint_head_at_zero_for_ten_epochs_is_still_stopped(real):
    """Control: the same run with its keypoint mAPs, precision and recall exactly 0 at all 25 epochs: stopped by its
    12th epoch (before the change at its 7th) and to its end."""
    run = real["log-ns-kedarnathkc-1"]
    metrics = dict(run.metrics)
    for name in ("eval/mAP50(P)", "eval/mAP50-95(P)", "eval/precision(P)", "eval/recall(P)"):
        steps, values = metrics[name]
        metrics[name] = (steps, np.zeros_like(values))
    cuts = checkpoints(run)
    verdicts = replay_cuts(metrics, cuts, run_config=run.config)
    code = decisions(verdicts)
    first = code.index("S")
    assert cuts[first] <= 12 and set(code[first:]) == {"S"}, (code, cuts)
    assert any("that head scores nothing" in s.message for s in verdicts[first].signals), verdicts[first].summary


@pytest.mark.parametrize(
    "name", ["eval/recall@20", "eval/t2m_recall_at_10", "eval/HR@10", "eval/R@1", "eval/hit_rate@5"]
)
def test_a_recall_or_hit_rate_at_k_is_a_ranking_quality_eval(name):
    assert is_quality_eval(name) and not is_secondary_eval(name, [name, "eval/loss"])


@pytest.mark.parametrize("name", ["eval/recall(B)", "metrics/recall", "eval/recall_1", "eval/precision@5"])
def test_a_threshold_recall_or_a_per_class_one_stays_secondary(name):
    """Control: a detector's recall, one class's recall (``recall_1``), a precision at k: each one side of a
    trade-off."""
    assert not is_quality_eval(name) and is_secondary_eval(name, [name, "eval/loss"])


def test_a_recommenders_recall_at_k_judges_its_run(real):
    """log-lx-unhappyh2-1 (round 22, train, healthy): a diffusion recommender's recall@20 and NDCG@20 rise to a
    creeping plateau. Its recall@20 was read as a detector's recall, a secondary eval that NDCG outvoted or not, and
    the run was unsure at one check; recall at a cut-off k is a ranking score as NDCG is, and the run is continue at
    every check."""
    run = real["log-lx-unhappyh2-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, _ = replay_real(run)
    assert set(code) == {"."}, code


def test_a_retrieval_models_val_loss_rising_while_its_recall_at_k_holds_is_not_stopped(real):
    """Control: log-tu-mukundshankar-dev-1 (round 32, train, healthy): a text-to-motion retrieval model's composite val
    loss 9-14 % over its best for 300 epochs while its recall@10 holds near its best: never stopped, before and now."""
    run = real["log-tu-mukundshankar-dev-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, _ = replay_real(run)
    assert "S" not in code, code
