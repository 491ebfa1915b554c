"""Failure classes of corpus_real/'s ninth round (train split): YOLO oriented-box `results.csv` runs, Keras-style
`training_history.csv` logs and issue excerpts; one test per class on values copied from a real train-split run,
each with a control."""

from __future__ import annotations

import numpy as np

from mcp_training_check.judge.evaltrend import EvalTrendDetector
from mcp_training_check.models import Direction
from tests.test_judge_classes import decisions, replay_cuts

# log-obb-schnilchmitte-1 (corpus_real train, healthy; runs/obb/train/results.csv of the round-9 unbiased walk):
# YOLOv8n-obb trained from scratch (yaml) for 20 epochs, epochs 1-17. Every loss falls; the mAPs rise at every
# epoch but one and are at their best at the last epoch (mAP50-95 0.0525 at epoch 20).
OBB_STEPS = np.arange(1, 18, dtype=np.int64)
OBB = {
    "train/box_loss": [5.2124, 4.7397, 4.2673, 3.9181, 3.7498, 3.6038, 3.4796, 3.3847, 3.2807, 3.2455, 3.1346,
                       3.0461, 2.9628, 2.9426, 2.8914, 2.8639, 2.7837],
    "eval/mAP50(B)": [0.0, 0.00111, 0.00558, 0.00939, 0.01934, 0.02934, 0.03944, 0.05225, 0.06033, 0.06612,
                      0.07415, 0.0768, 0.0764, 0.08548, 0.08818, 0.0931, 0.09818],
    "eval/mAP50-95(B)": [0.0, 0.00023, 0.00133, 0.00264, 0.00744, 0.01307, 0.01821, 0.02429, 0.02883, 0.03203,
                         0.03572, 0.03842, 0.03808, 0.04202, 0.04372, 0.04632, 0.04983],
    "eval/recall(B)": [0.0, 0.01038, 0.02742, 0.03354, 0.03873, 0.05675, 0.06432, 0.08149, 0.08435, 0.08846,
                       0.10256, 0.09703, 0.09701, 0.10378, 0.1064, 0.11297, 0.11984],
}  # fmt: skip
OBB_CUTS = [13, 14, 15, 16, 17]


def test_an_eval_better_eval_after_eval_is_learning_however_little_it_gained():
    """log-obb-schnilchmitte-1: its mAP50-95 climbs 0 → 0.044 over its first 15 epochs, better at every epoch
    but one, yet had gained under 5 % of its headroom: 'not learning ... still so at a second check', stopped at
    4 checks (epochs 15-18). The autocorrelation correction of the Theil–Sen band read the curvature of the climb
    as noise (z 1.9 on 2.2 effective points). An eval with ≥ 95 % of its pairs in its good order is learning.
    Control: the same values out of order (a stuck eval's noise, no trend) are still stopped. The control reads
    the mAPs a tenth as high (best 0.005-0.0098): since stop 42 an mAP whose best is >= 0.01 is never judged stuck
    (``stuck_ap_floor_fraction``), which would spare the noise too (`_steady` alone: the test below)."""
    metrics = {name: (OBB_STEPS, np.array(values)) for name, values in OBB.items()}
    config = {"total_steps": 20}
    verdicts = replay_cuts(metrics, OBB_CUTS, run_config=config)
    assert decisions(verdicts) == "." * len(OBB_CUTS), [v.summary for v in verdicts]
    order = np.random.default_rng(9).permutation(OBB_STEPS.size)
    tenth = {"eval/mAP50(B)": 0.1, "eval/mAP50-95(B)": 0.1}
    noise = {name: (steps, values if name.startswith("train") else values[order] * tenth.get(name, 1)) for
             name, (steps, values) in metrics.items()}  # fmt: skip
    assert "S" in decisions(replay_cuts(noise, OBB_CUTS, run_config=config))


def test_a_steady_climb_of_rounding_digits_is_not_learning():
    """The measure itself, on a stuck MLPerf BERT's eval loss (mlperf-v1.0-bert-supermicro-as-2124gq-nart-r6,
    corpus_real train, bad: 8.0031 → 7.9732 over its first 18 evals, falling in 86 % of its pairs): a steady fall
    of 0.4 % of its level is not a steady improvement, a falling order of a larger fall is."""
    detector = EvalTrendDetector()
    tiny = np.linspace(8.0031, 7.9732, 10)
    assert not detector._steady(tiny, Direction.LOWER)
    assert detector._steady(np.linspace(8.0, 7.0, 10), Direction.LOWER)
    assert detector._steady(np.array(OBB["eval/mAP50-95(B)"]), Direction.HIGHER)
    assert not detector._steady(np.array(OBB["eval/mAP50-95(B)"]), Direction.LOWER)


# log-th-m-elga-1 (corpus_real train, healthy; a training_history.csv of the round-9 unbiased walk): a classifier
# trained for 191 epochs on a 140-sample training set (its train accuracy moves in steps of 1/140), every 2nd
# epoch of its first 60. Its val accuracy holds 0.76-0.80 from epoch 33 to its end while its train accuracy
# reaches 1.0.
PLATEAU_STEPS = np.arange(2, 61, 2, dtype=np.int64)
PLATEAU = {
    "train/loss": [3.344, 3.729, 3.002, 2.819, 2.376, 2.429, 2.244, 2.17, 1.945, 1.841, 1.671, 1.797, 1.839, 1.685,
                   1.833, 1.668, 1.706, 1.641, 1.354, 1.308, 1.074, 1.141, 1.161, 1.042, 1.148, 1.278, 1.125, 1.134,
                   1.133, 1.071],
    "train/acc": [0.2, 0.2429, 0.2929, 0.4214, 0.45, 0.5214, 0.6, 0.65, 0.7214, 0.7857, 0.8714, 0.9286, 0.9357, 0.95,
                  0.9357, 0.9429, 0.9429, 0.9429, 0.9357, 0.9429, 0.9571, 0.9643, 0.9786, 0.9714, 0.9714, 0.9786,
                  0.9786, 0.9786, 0.9857, 0.9857],
    "eval/acc": [0.232, 0.282, 0.328, 0.364, 0.408, 0.43, 0.476, 0.494, 0.546, 0.598, 0.66, 0.692, 0.714, 0.738,
                 0.748, 0.77, 0.772, 0.754, 0.76, 0.762, 0.766, 0.778, 0.776, 0.77, 0.766, 0.756, 0.754, 0.762, 0.768,
                 0.778],
}  # fmt: skip
PLATEAU_CUTS = [50, 54, 58, 60]


def test_a_held_out_accuracy_that_learned_is_at_its_plateau_not_overfitting():
    """log-th-m-elga-1: its val accuracy rose 0.17 → 0.77 (over 70 % of its headroom since its first eval) and
    holds there while the train accuracy memorises its 140 samples: 'the training set is memorised while held-out
    accuracy stays ≥ 0.2 below it' at 16 of its 20 checks. A held-out accuracy that learned half of its headroom
    or more is at its plateau, its level the task's ceiling, not a fault the log shows. Control: the same gap
    from an eval that has not learned (an excerpt from the plateau on: its first eval already at 0.77) is still
    flagged."""
    metrics = {name: (PLATEAU_STEPS, np.array(values)) for name, values in PLATEAU.items()}
    verdicts = replay_cuts(metrics, PLATEAU_CUTS)
    assert "u" not in decisions(verdicts), [v.summary for v in verdicts]
    late = PLATEAU_STEPS >= 32
    excerpt = {name: (steps[late], values[late]) for name, (steps, values) in metrics.items()}
    flagged = replay_cuts(excerpt, PLATEAU_CUTS)
    assert decisions(flagged)[-1] == "u" and "the training set is memorised" in flagged[-1].spelled_out()


# log-th-jayshenoy-1 (corpus_real train, bad; a training_history.csv of the round-9 unbiased walk): a contrastive
# CLIP-style fine-tune, epochs 1-14 of 50. Val retrieval top-1 among 87 pairs (chance 1/87 = 0.0115) peaks at
# 0.080 at epoch 6 and falls back; the val loss never improves on its epoch-2 best while the train loss falls 94 %.
CLIP_STEPS = np.arange(1, 15, dtype=np.int64)
CLIP = {
    "train/loss": [4.3955, 3.2869, 2.3596, 1.6705, 1.2171, 0.92921, 0.72179, 0.60369, 0.50657, 0.41649, 0.39295,
                   0.33178, 0.31375, 0.26735],
    "eval/loss": [4.0655, 4.0204, 4.0903, 4.0473, 4.0559, 4.1101, 4.0733, 4.1736, 4.1836, 4.2177, 4.1969, 4.2584,
                  4.2659, 4.305],
    "eval/accuracy_top1": [0.011494, 0.022988, 0.034483, 0.063218, 0.068965, 0.08046, 0.057471, 0.074713, 0.057471,
                           0.063218, 0.045977, 0.068965, 0.063218, 0.063218],
}  # fmt: skip
CLIP_CUTS = [11, 13, 14]


def test_a_hopeless_eval_beside_an_overfitting_eval_loss_is_stopped():
    """log-th-jayshenoy-1: its top-1 had gained 5.3 % of its headroom (medians of 3), just above the 5 % under which
    a hopeless eval is stopped, so it was 'not learning' as a warning at 18 checks while its val loss sat 5-6 %
    above its best and the train loss fell to 0.09: never stopped. A stuck hopeless eval beside an eval loss
    overfitting (≥ 5 % worse than its best while the train loss falls) is stopped at the second check that sees it.
    Control: the same top-1 beside a val loss at its best at its last evals is still only a warning."""
    metrics = {name: (CLIP_STEPS, np.array(values)) for name, values in CLIP.items()}
    verdicts = replay_cuts(metrics, CLIP_CUTS)
    assert decisions(verdicts)[-2:] == "SS", [v.summary for v in verdicts]
    assert "the training set is memorised, nothing generalises" in verdicts[-1].spelled_out()
    improving = metrics | {"eval/loss": (CLIP_STEPS, np.linspace(4.0655, 3.8, CLIP_STEPS.size))}
    assert "S" not in decisions(replay_cuts(improving, CLIP_CUTS))


# log-obb-slavikovics-1 (corpus_real train, healthy; runs/obb/train/results.csv of the round-9 unbiased walk): a
# YOLO11n-obb fine-tune, epochs 1-11 of 100; its val box loss falls slowly to 0.91 by epoch 100, its mAP50-95 to
# 0.48.
FINETUNE_STEPS = np.arange(1, 12, dtype=np.int64)
FINETUNE = {
    "train/box_loss": [0.99641, 0.9851, 0.98887, 0.97518, 0.95866, 0.97163, 0.96077, 0.96232, 0.9604, 0.96124,
                       0.94681],
    "eval/box_loss": [0.95735, 0.97681, 0.98714, 0.97627, 0.97626, 0.97285, 0.96377, 0.95566, 0.96799, 0.95959,
                      0.95978],
    "eval/mAP50-95(B)": [0.4635, 0.45421, 0.4442, 0.44567, 0.44645, 0.45101, 0.44679, 0.46191, 0.4491, 0.45918,
                         0.46271],
    "eval/mAP50(B)": [0.60797, 0.60358, 0.59168, 0.59731, 0.60035, 0.59882, 0.59883, 0.61795, 0.59721, 0.60762,
                      0.61248],
}  # fmt: skip
FINETUNE_CUTS = [6, 11]  # the replay's first two checks of this run


def test_a_loss_between_0_85_and_1_is_not_a_hopeless_error_rate():
    """log-obb-slavikovics-1: its val box loss at 0.96-0.99 over the first epochs was read as a bounded metric near
    its worst end (a WER ≥ 0.85) and flagged 'not learning' at its first 3 checks. A loss has no worst end at 1.
    Control: the same values logged as a word error rate are still judged hopeless and flagged."""
    metrics = {name: (FINETUNE_STEPS, np.array(values)) for name, values in FINETUNE.items()}
    verdicts = replay_cuts(metrics, FINETUNE_CUTS, run_config={"total_steps": 100})
    assert decisions(verdicts) == "..", [v.summary for v in verdicts]
    as_wer = {("eval/wer" if name == "eval/box_loss" else name): series for name, series in metrics.items()}
    flagged = replay_cuts(as_wer, FINETUNE_CUTS, run_config={"total_steps": 100})
    assert "eval/wer is not learning" in flagged[0].spelled_out()


# issue-flair-213 (corpus_real train, ambiguous; a flair issue thread of the round-9 targeted search): a flair
# SequenceTagger's first epoch, its running train loss every 107 iterations, then its one DEV evaluation.
FLAIR_STEPS = np.array([0, 107, 214, 321, 428, 535, 642, 749, 856, 963, 1070], dtype=np.int64)
FLAIR_LOSS = np.array([45.758, 8.6674, 7.9455, 7.7503, 7.5794, 7.3857, 7.3616, 7.2974, 7.2624, 7.2544, 7.2372])
FLAIR_EVAL_STEPS = np.array([1076], dtype=np.int64)


def test_an_accuracy_exactly_zero_at_its_first_eval_is_flagged():
    """issue-flair-213: the DEV accuracy and F1 after the first epoch are exactly 0 (no entity predicted) while the
    train loss falls 45.8 → 7.24: continue at every check. An accuracy exactly 0 is below chance (1/N): no
    held-out prediction is right. Every train run of corpus_real/ with an eval accuracy exactly 0 at its first eval
    is bad or ambiguous. A warning from its first eval; a stop only from its 3rd, as before. Controls: a second
    check on the same single eval is still a warning, not a stop; an mAP exactly 0 at its first eval (a
    detector's slow start) is not flagged."""
    metrics = {
        "train/loss": (FLAIR_STEPS, FLAIR_LOSS),
        "eval/accuracy": (FLAIR_EVAL_STEPS, np.zeros(1)),
        "eval/f1": (FLAIR_EVAL_STEPS, np.zeros(1)),
    }
    verdicts = replay_cuts(metrics, [1070, 1076, 1076])
    assert decisions(verdicts) == ".uu", [v.summary for v in verdicts]
    assert "no held-out prediction is right" in verdicts[-1].spelled_out()
    detector = {"train/loss": (FLAIR_STEPS, FLAIR_LOSS), "eval/mAP50": (FLAIR_EVAL_STEPS, np.zeros(1))}
    assert decisions(replay_cuts(detector, [1070, 1076])) == ".."
