"""Failure classes of corpus_real/'s seventh round (train split): YOLO pose runs with two quality heads and
issue excerpts whose train loss carries another name; one test per class on values copied from a real
train-split run, each with a control."""

from __future__ import annotations

import numpy as np

from mcp_training_check.models import MetricRole
from mcp_training_check.roles import assign_roles, primary_train_loss
from tests.test_judge_classes import decisions, replay_cuts

# issue-sockeye-706 (corpus_real train, healthy; github.com/awslabs/sockeye/issues/706): Sockeye 1.18's
# training lines, epoch 0, batches 2,400-2,750: perplexity and accuracy only.
SOCKEYE_STEPS = np.arange(2400, 2800, 50, dtype=np.int64)
SOCKEYE_PPL = np.array([405.629516, 396.849807, 388.205724, 379.507301, 371.427908, 363.507287, 355.576054, 348.39016])
SOCKEYE_ACC = np.array([0.197842, 0.199711, 0.201655, 0.203657, 0.205518, 0.207421, 0.209457, 0.211241])


def test_a_train_perplexity_is_the_train_loss_in_another_unit():
    """issue-sockeye-706: with no metric named loss, its train perplexity falling 406 -> 348 at every log was
    no train loss, so the run was unsure at every check ('no train loss'). A perplexity is e^loss: it is the
    train loss. Controls: a plain loss beside it still ranks first; an eval perplexity stays an eval; the
    same perplexity climbing back is no longer judged continue at every check."""
    roles = assign_roles(["train/perplexity", "train/accuracy"])
    assert roles["train/perplexity"].role is MetricRole.TRAIN_LOSS
    assert primary_train_loss(assign_roles(["train/perplexity", "train/loss"])) == "train/loss"
    assert assign_roles(["eval/perplexity"])["eval/perplexity"].role is MetricRole.EVAL
    metrics = {"train/perplexity": (SOCKEYE_STEPS, SOCKEYE_PPL), "train/accuracy": (SOCKEYE_STEPS, SOCKEYE_ACC)}
    cuts = [int(s) for s in SOCKEYE_STEPS[3:]]
    assert decisions(replay_cuts(metrics, cuts)) == "." * len(cuts)
    climbing = {"train/perplexity": (SOCKEYE_STEPS, SOCKEYE_PPL[::-1] * np.geomspace(1, 3, SOCKEYE_PPL.size))}
    assert "." not in decisions(replay_cuts(climbing, cuts))[-2:]


def test_a_perplexity_is_held_against_ln_n_on_its_log():
    """A perplexity's chance level is N itself (ln of it is the loss that ln N bounds): a train perplexity
    of 348 with a 32,000-token vocabulary is far below chance, not 'at or above ln 32,000 = 10.4'. Control:
    one flat at 31,000 is at chance and stopped."""
    flat = np.full(SOCKEYE_STEPS.size, 348.0) * (1 + 1e-3 * np.sin(np.arange(SOCKEYE_STEPS.size)))
    cuts = [int(s) for s in SOCKEYE_STEPS[3:]]
    config = {"vocab_size": 32000}
    learned = replay_cuts({"train/perplexity": (SOCKEYE_STEPS, flat)}, cuts, run_config=config)
    assert not any("ln 32,000" in v.spelled_out() for v in learned)
    chance = replay_cuts({"train/perplexity": (SOCKEYE_STEPS, flat * 31000 / 348)}, cuts, run_config=config)
    assert any("ln 32,000" in v.spelled_out() for v in chance)


# log-pose-jdoubleu2-1 (corpus_real train, healthy; JdoubleU2/YOLOv8-Pose-Estimation-Clean-n-Jerk
# runs/pose/train/results.csv): epochs 1-16 of 100, the keypoint head's mAP50(P) and the box head's mAP50(B).
POSE_STEPS = np.arange(1, 17, dtype=np.int64)
POSE_MAP50_P = np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.04146, 0, 0.04146, 0, 0])
POSE_MAP50_B = np.array([0.1172, 0.3227, 0.3628, 0.4609, 0.4879, 0.5209, 0.5189, 0.6337, 0.5625, 0.5664, 0.5884,
                         0.5664, 0.594, 0.6273, 0.7298, 0.6526])  # fmt: skip
POSE_BOX_LOSS = np.array([1.233, 1.095, 1.096, 1.085, 1.056, 1.056, 1.069, 1.072, 1.05, 1.01, 0.9863, 0.9805, 0.9494,
                          0.9317, 0.9472, 0.9539])  # fmt: skip


def test_a_head_that_never_left_its_floor_beside_one_that_learns_does_not_collapse():
    """log-pose-jdoubleu2-1: the keypoint mAP50 at 0 for 11 epochs, 0.041 at two evals, 0 again at epochs
    15-16 while the box mAP50 is at 0.65-0.73: 'collapsed ... at zero: the model is broken', stopped at
    epoch 16 (it learns to 0.35 later). A head under 5 % of its scale beside one above it has no level to
    collapse from. Control: the same eval alone (no other head learning) still collapses at zero."""
    cuts = [8, 12, 14, 16]
    loss = {"train/box_loss": (POSE_STEPS, POSE_BOX_LOSS)}
    both = loss | {"eval/mAP50(P)": (POSE_STEPS, POSE_MAP50_P), "eval/mAP50(B)": (POSE_STEPS, POSE_MAP50_B)}
    verdicts = replay_cuts(both, cuts)
    assert "S" not in decisions(verdicts), [v.summary for v in verdicts]
    assert not any("collapsed" in v.spelled_out() for v in verdicts)
    alone = replay_cuts(loss | {"eval/mAP50(P)": (POSE_STEPS, POSE_MAP50_P)}, cuts)
    assert decisions(alone)[-1] == "S" and "at zero" in alone[-1].spelled_out(), alone[-1].summary
