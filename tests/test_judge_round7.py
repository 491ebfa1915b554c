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
    same perplexity climbing back (its cross-entropy, which the judge reads, doubling: the short-log climb
    rule's 1.5× and more) is no longer judged continue at every check."""
    roles = assign_roles(["train/perplexity", "train/accuracy"])
    assert roles["train/perplexity"].role is MetricRole.TRAIN_LOSS
    assert primary_train_loss(assign_roles(["train/perplexity", "train/loss"])) == "train/loss"
    assert assign_roles(["eval/perplexity"])["eval/perplexity"].role is MetricRole.EVAL
    metrics = {"train/perplexity": (SOCKEYE_STEPS, SOCKEYE_PPL), "train/accuracy": (SOCKEYE_STEPS, SOCKEYE_ACC)}
    cuts = [int(s) for s in SOCKEYE_STEPS[3:]]
    assert decisions(replay_cuts(metrics, cuts)) == "." * len(cuts)
    climbing_nats = np.log(SOCKEYE_PPL[::-1]) * np.geomspace(1, 2, SOCKEYE_PPL.size)
    climbing = {"train/perplexity": (SOCKEYE_STEPS, np.exp(climbing_nats))}
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
POSE_STEPS = np.arange(1, 22, dtype=np.int64)
POSE_MAP50_P = np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.04146, 0, 0.04146, 0, 0, 0, 0, 0, 0, 0.03238])
POSE_MAP50_B = np.array([0.1172, 0.3227, 0.3628, 0.4609, 0.4879, 0.5209, 0.5189, 0.6337, 0.5625, 0.5664, 0.5884,
                         0.5664, 0.594, 0.6273, 0.7298, 0.6526, 0.6814, 0.6097, 0.638, 0.6517, 0.6609])  # fmt: skip
POSE_BOX_LOSS = np.array([1.233, 1.095, 1.096, 1.085, 1.056, 1.056, 1.069, 1.072, 1.05, 1.01, 0.9863, 0.9805, 0.9494,
                          0.9317, 0.9472, 0.9539, 0.94, 0.9291, 0.9006, 0.9136, 0.9323])  # fmt: skip


def test_a_head_that_never_left_its_floor_beside_one_that_learns_does_not_collapse():
    """log-pose-jdoubleu2-1: the keypoint mAP50 at 0 for 11 epochs, 0.041 at two evals, 0 again at epochs
    15-16 while the box mAP50 is at 0.65-0.73: 'collapsed ... at zero: the model is broken', stopped at
    epoch 16 (it learns to 0.35 later). A head under 5 % of its scale beside one above it has no level to
    collapse from, nor to degrade from ('100 % worse than its best 0.0415' at epoch 21: unsure). Control: the
    same eval alone (no other head learning) still collapses at zero."""
    cuts = [8, 12, 14, 16, 21]
    loss = {"train/box_loss": (POSE_STEPS, POSE_BOX_LOSS)}
    both = loss | {"eval/mAP50(P)": (POSE_STEPS, POSE_MAP50_P), "eval/mAP50(B)": (POSE_STEPS, POSE_MAP50_B)}
    verdicts = replay_cuts(both, cuts)
    assert "S" not in decisions(verdicts), [v.summary for v in verdicts]
    assert not any("collapsed" in v.spelled_out() for v in verdicts)
    assert decisions(verdicts)[-1] == ".", verdicts[-1].summary
    alone = replay_cuts(loss | {"eval/mAP50(P)": (POSE_STEPS, POSE_MAP50_P)}, cuts[:4])
    assert decisions(alone)[-1] == "S" and "at zero" in alone[-1].spelled_out(), alone[-1].summary


# log-pose-vahhabbm-1 (corpus_real train, healthy; VahhabBM/complete-football-player-recognizer-and-tracker-
# having-tactical-map runs/pose/train/results.csv): epochs 1-16 of 150, a fine-tune's box mAP50 at its ceiling.
VAHHAB_STEPS = np.arange(1, 17, dtype=np.int64)
VAHHAB_BOX_LOSS = np.array([1.858, 0.9814, 0.9097, 0.9096, 0.9025, 0.9129, 0.8476, 0.8727, 0.8098, 0.814, 0.8728,
                            0.7935, 0.7707, 0.733, 0.7892, 0.7535])  # fmt: skip
VAHHAB_MAP50_B = np.array([0.995, 0.995, 0.9881, 0.9101, 0.9587, 0.9939, 0.9882, 0.9716, 0.9655, 0.9895, 0.9775,
                           0.7166, 0.921, 0.8917, 0.985, 0.995])  # fmt: skip
VAHHAB_MAP50_P = np.array([0.0] * 14 + [0.01278, 0.00147])


def test_a_box_head_at_its_ceiling_outvotes_a_keypoint_head_not_yet_started():
    """log-pose-vahhabbm-1: the box mAP50 at 0.995 from its first eval has no headroom to 'gain 15 %', so the
    keypoint mAP50 at 0 for 14 epochs (0.96 by epoch 40) was 'not learning' and stopped at epoch 16. A quality
    eval at its ceiling says the model learns. Control: a box mAP50 exactly 1.0 at every eval (a degenerate
    test set, log-OGM-GE-1's shape) outvotes nothing: the keypoint head, still exactly 0 at epoch 14, is stopped
    there (at 16 its best 0.013 has left 0, which the stuck rule's ``stuck_ap_floor_fraction`` spares)."""
    cuts = [8, 16]
    loss = {"train/box_loss": (VAHHAB_STEPS, VAHHAB_BOX_LOSS), "eval/mAP50(P)": (VAHHAB_STEPS, VAHHAB_MAP50_P)}
    ceiling = replay_cuts(loss | {"eval/mAP50(B)": (VAHHAB_STEPS, VAHHAB_MAP50_B)}, cuts)
    assert decisions(ceiling) == "..", [v.summary for v in ceiling]
    frozen = replay_cuts(loss | {"eval/mAP50(B)": (VAHHAB_STEPS, np.ones(VAHHAB_STEPS.size))}, [8, 14])
    assert decisions(frozen) == "uS", [v.summary for v in frozen]


# log-pose-fournier-1 (corpus_real train, bad; FournierRobin/skate-kp-tricks-detect runs/pose/train/results.csv):
# epochs 1-16 of 50: the box head learns, the keypoint mAP50 is exactly 0 at every epoch (to epoch 50).
FOURNIER_STEPS = np.arange(1, 17, dtype=np.int64)
FOURNIER_BOX_LOSS = np.array([2.684, 2.144, 1.777, 1.537, 1.429, 1.522, 1.23, 1.377, 1.28, 1.277, 1.091, 1.159, 1.215,
                              1.181, 1.149, 1.159])  # fmt: skip
FOURNIER_MAP50_B = np.array([0.00639, 0.3487, 0.5764, 0.6889, 0.7192, 0.7289, 0.7391, 0.6773, 0.6177, 0.6363, 0.7157,
                             0.5653, 0.7929, 0.8242, 0.8342, 0.8712])  # fmt: skip


def test_a_head_at_zero_for_a_quarter_of_the_run_is_stopped_beside_one_that_learns():
    """log-pose-fournier-1: the keypoint mAP50 exactly 0 at all 50 epochs while the box mAP50 reaches 0.87 was
    information to the end (the learning box head outvoted it). Once it has been exactly 0 at every eval for a
    quarter of the known total it is a warning, critical at the next check. Controls: before a quarter it is
    still information (healthy keypoint heads start by 9-11 % of their runs), and without a known total it
    stays so."""
    metrics = {
        "train/box_loss": (FOURNIER_STEPS, FOURNIER_BOX_LOSS),
        "eval/mAP50(B)": (FOURNIER_STEPS, FOURNIER_MAP50_B),
        "eval/mAP50(P)": (FOURNIER_STEPS, np.zeros(FOURNIER_STEPS.size)),
    }
    cuts = [8, 10, 13, 16]
    known = replay_cuts(metrics, cuts, run_config={"total_steps": 50})
    assert decisions(known) == "..uS", [v.summary for v in known]
    assert "scores nothing" in known[-1].spelled_out()
    unknown = replay_cuts(metrics, cuts)
    assert decisions(unknown) == "....", [v.summary for v in unknown]


# log-pose-andrejet55-1 (corpus_real train, bad from epoch 15; andrejet55/ComputerVisionwithDL
# runs/pose/train/results.csv): epochs 1-9 of 500, a fine-tune's box mAP50 at 0.88-0.91, keypoint mAP50 0.
ANDRE_STEPS = np.arange(1, 10, dtype=np.int64)
ANDRE_BOX_LOSS = np.array([0.6462, 0.6508, 0.7165, 0.7737, 0.716, 0.8224, 0.8184, 0.8336, 0.7904])
ANDRE_MAP50_B = np.array([0.9077, 0.9071, 0.9057, 0.9057, 0.9058, 0.9059, 0.9061, 0.906, 0.8821])


def test_a_box_head_near_the_top_of_its_scale_outvotes_a_keypoint_head_at_zero_early():
    """log-pose-andrejet55-1: the box mAP50 at 0.91 from its first eval (a fine-tune: no headroom gained) did not
    outvote the keypoint mAP50 at 0, so the run was stopped at epoch 9 of 500, before its box mAP's real decay
    (epoch 15). A quality eval ≥ 0.85 (1 − hopeless_fraction) says the model works. Control: the same box head
    at 0.80 (neither near the top nor gaining) still leaves the zero head a stop."""
    cuts = [6, 9]
    loss = {"train/box_loss": (ANDRE_STEPS, ANDRE_BOX_LOSS), "eval/mAP50(P)": (ANDRE_STEPS, np.zeros(9))}
    config = {"total_steps": 500}
    top = replay_cuts(loss | {"eval/mAP50(B)": (ANDRE_STEPS, ANDRE_MAP50_B)}, cuts, run_config=config)
    assert "S" not in decisions(top), [v.summary for v in top]
    lower = replay_cuts(loss | {"eval/mAP50(B)": (ANDRE_STEPS, ANDRE_MAP50_B - 0.1)}, cuts, run_config=config)
    assert decisions(lower)[-1] == "S", [v.summary for v in lower]


# log-pose-ignaher12-1 (corpus_real train, bad from epoch 16; ignaher12/cardumen_yolo runs/pose/train/results.csv):
# epochs 1-11 of 100: the box mAP50 doubles while the stricter keypoint mAP50-95 sits at 0.05-0.085.
IGNA_STEPS = np.arange(1, 12, dtype=np.int64)
IGNA_BOX_LOSS = np.array([1.06, 0.9919, 1.026, 0.6828, 1.331, 0.6529, 0.8613, 1.272, 1.007, 0.8545, 0.802])
IGNA_MAP50_B = np.array([0.1474, 0.1532, 0.1655, 0.1807, 0.1906, 0.1696, 0.2044, 0.2098, 0.2387, 0.2758, 0.3206])
IGNA_MAP5095_P = np.array([0.0599, 0.06185, 0.06367, 0.05842, 0.05449, 0.05106, 0.05215, 0.0733, 0.08456, 0.08337,
                           0.07917])  # fmt: skip


def test_a_quality_eval_rising_significantly_outvotes_a_hopeless_stricter_one():
    """log-pose-ignaher12-1: the box mAP50 rising 0.15 -> 0.32 at every few epochs had gained 14.5 % of its
    headroom by medians of 3 (< 15 %), so the keypoint mAP50-95 'not learning' stopped the run at epoch 11, five
    epochs before its overfit. A sibling rising significantly is learning. Control: the same box mAP50 flat at
    its first value leaves the stop. Both read the keypoint mAP50-95 a tenth as high (0.005-0.008): the real one
    has left 0 by more than the stuck rule's ``stuck_ap_floor_fraction`` (0.01), which alone spares it since stop
    42, and the sibling's vote is what this test is about."""
    cuts = [6, 11]
    base = {"train/box_loss": (IGNA_STEPS, IGNA_BOX_LOSS), "eval/mAP50-95(P)": (IGNA_STEPS, IGNA_MAP5095_P * 0.1)}
    # a total of 40, not the run's 100: a stuck eval that still moves waits for a quarter of a known total
    # (stuck_min_run_fraction), and epoch 11 of 40 is past it, so the sibling alone spares the run here
    config = {"total_steps": 40}
    rising = replay_cuts(base | {"eval/mAP50(B)": (IGNA_STEPS, IGNA_MAP50_B)}, cuts, run_config=config)
    assert "S" not in decisions(rising), [v.summary for v in rising]
    flat_box = IGNA_MAP50_B[0] + 0.01 * np.sin(np.arange(IGNA_STEPS.size))
    flat = replay_cuts(base | {"eval/mAP50(B)": (IGNA_STEPS, flat_box)}, cuts, run_config=config)
    assert decisions(flat)[-1] == "S", [v.summary for v in flat]


# log-pose-vbalab26s-1 (corpus_real train, healthy; runs/pose/train/results.csv of the vbalab26s repository of round
# 7's walk): epochs 1-12 of 100, two of its LR groups (pg0 = pg2 = …, pg1 = pg3 = …) and its box mAP50, lr0 0.01.
VB_STEPS = np.arange(1, 13, dtype=np.int64)
VB_PG0 = np.array([0.009974, 0.01977, 0.02938, 0.0291, 0.0288, 0.0285, 0.02821, 0.02791, 0.02761, 0.02731, 0.02701,
                   0.02671])  # fmt: skip
VB_PG1 = np.array([0.003325, 0.006592, 0.009792, 0.009701, 0.009601, 0.009501, 0.009402, 0.009302, 0.009202,
                   0.009103, 0.009003, 0.008903])  # fmt: skip
VB_BOX_LOSS = np.array([1.195, 1.039, 1.174, 1.24, 1.177, 1.122, 1.055, 1.004, 1.009, 0.9763, 0.9481, 0.9401])


def test_an_lr_group_at_a_constant_multiple_of_the_configured_group_is_not_above_its_peak():
    """log-pose-vbalab26s-1: its LR group pg0 at 0.029, exactly 3x group pg1 (0.0098, the configured lr0 0.01)
    at every epoch, was '2.9x the configured peak' and the run unsure at its first 10 checks. The configured
    LR is pg1's; pg0 carries a per-group multiplier. Control: pg0 alone, or beside a pg1 whose ratio to it
    changes, is still above the peak."""
    cuts = [6, 9, 12]
    config = {"learning_rate": 0.01, "total_steps": 100}
    loss = {"train/box_loss": (VB_STEPS, VB_BOX_LOSS)}
    scaled = replay_cuts(loss | {"train/lr/pg0": (VB_STEPS, VB_PG0), "train/lr/pg1": (VB_STEPS, VB_PG1)}, cuts,
                         run_config=config)  # fmt: skip
    assert decisions(scaled) == "...", [v.summary for v in scaled]
    alone = replay_cuts(loss | {"train/lr/pg0": (VB_STEPS, VB_PG0)}, cuts, run_config=config)
    assert decisions(alone) == "u..", [v.summary for v in alone]  # said once since stop 38, then information
    other = np.full(VB_STEPS.size, 0.0098)
    unscaled = replay_cuts(loss | {"train/lr/pg0": (VB_STEPS, VB_PG0), "train/lr/pg1": (VB_STEPS, other)}, cuts,
                           run_config=config)  # fmt: skip
    assert decisions(unscaled) == "u..", [v.summary for v in unscaled]
