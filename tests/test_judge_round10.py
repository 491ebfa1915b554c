"""Failure classes of corpus_real/'s tenth round (train split): how a GAN's adversarial losses are read. One
test per rule on values copied from a real train-split run (4 significant digits), each with a control."""

from __future__ import annotations

import numpy as np

from mcp_training_check.models import Decision, SignalKind
from tests.test_judge_classes import decisions, replay_cuts
from tests.test_judge_helpers import make_series, run_judge

# log-ls-yggyatsso-1 (corpus_real train, healthy; YGGYatsso/Image-Colorization-Using-CGAN losses.csv at 31f6405):
# an image-colourisation conditional GAN, its first 91 prints (iterations 1-9,001 of 60,000). The discriminator's
# loss falls to 0.001-0.002 while the generator's output is easy to tell apart, then rises to a contested
# 0.01-0.6 as the generator (adversarial + L1 loss, 38.4 -> ~10) learns.
YGG_STEPS = np.arange(1, 9002, 100, dtype=np.int64)
YGG_D = np.array(
    [
        0.7155, 0.3148, 0.01649, 0.1677, 0.00356, 0.002656, 0.001999, 0.001842, 0.001623, 0.5567,
        0.009001, 0.01212, 0.002067, 0.001254, 0.007008, 0.001569, 0.001007, 0.0005494, 0.0007662, 0.0005607,
        0.001579, 0.2297, 0.5894, 0.09379, 0.1954, 0.1029, 0.2178, 0.3464, 0.02871, 0.01083,
        0.2038, 0.0532, 0.01015, 0.004548, 0.06452, 0.007531, 0.08427, 1.901, 0.06003, 0.003118,
        1.631, 0.1911, 0.0133, 0.01275, 0.004123, 0.6089, 0.01737, 0.002281, 0.3765, 0.001541,
        0.03412, 0.002867, 0.01414, 0.01854, 0.01799, 0.002647, 0.001499, 0.002447, 0.6656, 0.04537,
        0.09585, 0.0328, 0.04905, 0.004468, 0.008057, 0.0162, 0.006236, 0.5742, 0.01547, 0.009697,
        0.004416, 0.01003, 1.624, 0.004398, 0.0007705, 0.001409, 0.01356, 0.0001496, 0.1165, 0.3637,
        0.009512, 0.06887, 0.3201, 0.005599, 0.0333, 0.05835, 0.1003, 0.002073, 0.06747, 0.3081,
        0.05399,
    ]
)  # fmt: skip
YGG_G = np.array(
    [
        38.41, 10.03, 12.65, 12.81, 13.43, 13.68, 13.72, 12.64, 13.38, 8.602,
        12, 14.43, 15.29, 12.69, 12.81, 14.53, 14.83, 13.66, 14.11, 15.04,
        13.54, 8.531, 9.895, 10.97, 9.077, 11.65, 9.22, 10.74, 11.15, 12.86,
        11.89, 12.22, 11.99, 12.7, 11.82, 11.97, 10.29, 9.737, 10.9, 14.64,
        9.902, 10.98, 11.3, 13.19, 16.7, 7.631, 12.61, 14.38, 9.518, 15.08,
        11.89, 13.62, 12.16, 11.79, 14.53, 17.18, 13.53, 13.88, 11.08, 13.05,
        11.58, 11.32, 10.92, 14.04, 13.32, 12.39, 13.57, 7.898, 11.21, 13.2,
        17.22, 13.14, 18.45, 11.9, 14.44, 12.38, 12.91, 17.66, 11.32, 12.16,
        14.43, 10.69, 15.72, 15.89, 11.43, 10.71, 10.33, 17.99, 13.22, 13.2,
        11.55,
    ]
)  # fmt: skip

# log-ls-zechariabarriga-1 (corpus_real train, healthy; ZechariaBarriga/thesis losses.csv at d401e0a): a molecule
# GAN, its first 78 prints (steps 1-309 of 2,063). The generator's adversarial loss swings around 0 (-0.6 to 1.6),
# the discriminator's 0.0004-0.7; the share of valid molecules it generates rises 0.02 -> 0.95 over the run.
ZB_STEPS = np.arange(1, 310, 4, dtype=np.int64)
ZB_G = np.array(
    [
        1.159, 0.2221, -0.1685, -0.1063, -0.08297, -1.08, 0.3776, -0.15, -0.07512, -0.2048,
        -0.2253, -0.09726, -0.1264, -0.06472, -0.04093, -0.04327, -0.438, -0.6625, -0.1373, -0.2308,
        0.2951, 0.2545, -0.2762, 0.01666, 0.4107, 0.01792, 0.1487, -0.1437, -0.117, -0.2028,
        -0.4662, 1.28, -0.2906, -0.1577, 0.1472, -0.2752, -0.4159, -0.2012, -0.3789, -0.05334,
        0.2398, -0.3137, 0.1175, 0.8439, 0.1301, 0.4911, 0.6078, -0.5962, -0.7036, -0.1789,
        -0.1662, -0.444, 0.4095, -0.6482, -0.5312, -0.1502, 1.149, -0.4061, -0.3332, 0.6609,
        0.4022, -0.3071, 0.2881, -0.4439, -0.604, -0.4966, -0.1053, -0.3752, 0.01348, -0.9264,
        -0.563, 0.2234, -0.01875, 0.2089, 0.1011, -0.7182, 0.008241, 0.1784,
    ]
)  # fmt: skip
ZB_D = np.array(
    [
        0.6974, 0.01574, 0.005374, 0.0154, 0.0001058, 0.004546, 0.008356, 0.0003123, 0.0001557, 0.0003755,
        0.000233, 6.528e-05, 0.0001143, 2.001e-05, 1.74e-06, 5.38e-06, 0.02882, 0.0508, 0.007454, 0.0005157,
        0.007246, 0.006077, 0.004657, 0.02904, 0.01014, 0.00133, 0.01808, 0.001696, 0.01163, 0.01746,
        0.00607, 0.03389, 0.01904, 0.03973, 0.01421, 0.01752, 0.01739, 0.01644, 0.009218, 0.02016,
        0.02208, 0.02023, 0.02198, 0.01964, 0.03451, 0.03003, 0.03875, 0.01542, 0.01567, 0.02576,
        0.06165, 0.02159, 0.04095, 0.03045, 0.01927, 0.02338, 0.09047, 0.01395, 0.03432, 0.0812,
        0.04029, 0.03786, 0.04788, 0.05253, 0.02263, 0.07659, 0.0532, 0.03503, 0.04974, 0.04022,
        0.05401, 0.07408, 0.05573, 0.03457, 0.05427, 0.02328, 0.0651, 0.03939,
    ]
)  # fmt: skip


def test_a_discriminator_loss_rising_to_a_contested_level_is_no_blow_up():
    """log-ls-yggyatsso-1 was stopped from its third check to its end: its discriminator's ``d_loss``, ranked
    the run's loss by name (``d_loss`` before ``g_loss``), "blew up" from 0.002 to 0.02. A discriminator's loss
    rises in a healthy GAN as the generator catches up; the generator's loss is followed instead. Control: the
    discriminator's loss alone (nothing else to follow) is still read, and its rise still flagged."""
    both = {"train/d_loss": (YGG_STEPS, YGG_D), "train/g_loss": (YGG_STEPS, YGG_G)}
    cuts = [3001, 6001, 9001]  # the checks of a 20-check replay of its 60,000 iterations
    assert "S" not in decisions(replay_cuts(both, cuts)), "the discriminator's rise read as a blow-up"
    verdict = run_judge(make_series("train/d_loss", YGG_D, YGG_STEPS), make_series("train/g_loss", YGG_G, YGG_STEPS))
    assert all(s.metric != "train/d_loss" for s in verdict.signals if s.kind is SignalKind.DIVERGENCE)

    alone = {"train/d_loss": (YGG_STEPS, YGG_D)}
    assert "S" in decisions(replay_cuts(alone, cuts)), "a run's only loss is still judged"


def test_a_loss_that_goes_below_zero_has_no_ratio_spikes():
    """log-ls-zechariabarriga-1 was stopped at every check on its discriminator's rise (the rule above), and with
    the generator's loss followed instead, unsure at its second and third checks: "train/g_loss exploded 14
    times, 155x the median" of a loss swinging around 0, whose negative points all clamp to one floor on the log
    scale. A loss that goes below zero is not scored for spikes by ratios; the trend detector reads it on its own
    scale. Control: the same swings with their negative points clipped to 0.001 are still scored as spikes."""
    game = {"train/d_loss": (ZB_STEPS, ZB_D), "train/g_loss": (ZB_STEPS, ZB_G)}
    verdicts = replay_cuts(game, [205, 309])
    assert decisions(verdicts) == "..", [v.summary for v in verdicts]
    assert not any(s.kind is SignalKind.SPIKE for v in verdicts for s in v.signals)

    clipped = run_judge(make_series("train/g_loss", np.clip(ZB_G, 1e-3, None), ZB_STEPS))
    assert any(s.kind is SignalKind.SPIKE for s in clipped.signals), "the same swings kept above zero are scored"


def test_a_validation_dice_is_read_as_the_eval_it_is():
    """issue-monai-2722 (corpus_real train, healthy; Project-MONAI/MONAI#2722): a spleen segmentation whose log
    starts with its validation mean Dice 0.909 at epoch 12, its per-batch train loss after it. ``eval/dice`` was
    no metric the judge knew (a quality word missing): unsure at its first 8 checks for want of anything to
    judge. Dice (and Jaccard) are overlap scores, higher is better; ``dice_loss`` stays a loss by its last word.
    Control: the same value under a name with no quality word is still nothing to judge."""
    dice = run_judge(make_series("eval/dice", [0.9092], np.array([192])))
    assert dice.decision is Decision.CONTINUE, dice.summary
    unknown = run_judge(make_series("eval/overlap", [0.9092], np.array([192])))
    assert unknown.decision is Decision.UNSURE, unknown.summary


# log-th-marlonselvi-1 (corpus_real train, healthy; MarlonSelvi/debris-detection training_history.csv at b0956ad): a
# debris detector, 34 epochs. Its mAP50 sits at the 11-point VOC AP's ceiling 10/11 = 0.909 from epoch 2 while its
# mAP75 and mAP90 still climb and its LR steps down at epochs 18 and 33.
VOC_STEPS = np.arange(1, 35, dtype=np.int64)
VOC = {
    "train/loss": [
        0.579, 0.3452, 0.2843, 0.2619, 0.246, 0.2416, 0.2331, 0.2303, 0.2295, 0.2295, 0.2208, 0.2221, 0.2206, 0.2204,
        0.221, 0.2155, 0.2156, 0.2123, 0.2062, 0.2045, 0.2064, 0.2086, 0.2046, 0.2068, 0.208, 0.2065, 0.2058, 0.2087,
        0.2102, 0.2065, 0.2089, 0.2088, 0.2085, 0.2064,
    ],
    "eval/map50": [0.904] + [0.909] * 33,
    "eval/map75": [
        0.399, 0.758, 0.779, 0.869, 0.877, 0.878, 0.882, 0.884, 0.884, 0.881, 0.886, 0.89, 0.889, 0.888, 0.883, 0.891,
        0.889, 0.893, 0.891, 0.893, 0.892, 0.892, 0.892, 0.892, 0.893, 0.892, 0.893, 0.894, 0.893, 0.893, 0.894, 0.893,
        0.892, 0.893,
    ],
    "eval/map90": [
        0.023, 0.111, 0.088, 0.139, 0.083, 0.11, 0.099, 0.107, 0.15, 0.134, 0.145, 0.109, 0.15, 0.149, 0.114, 0.151,
        0.111, 0.155, 0.152, 0.156, 0.156, 0.157, 0.153, 0.155, 0.156, 0.156, 0.155, 0.157, 0.153, 0.153, 0.158, 0.156,
        0.156, 0.158,
    ],
    "train/lr": [0.0034, 0.0067] + [0.01] * 15 + [0.001] * 15 + [0.0001] * 2,
}  # fmt: skip


def _frozen_tail_flags(names: tuple[str, ...]) -> list[str]:
    verdict = run_judge(*(make_series(name, VOC[name], VOC_STEPS) for name in names))
    return [s.message for s in verdict.signals if s.metric == "eval/map50" and "repeats" in s.message]


def test_a_score_repeated_at_its_ceiling_is_not_frozen_while_another_eval_improves():
    """log-th-marlonselvi-1 was unsure at 11 of its 20 checks: "eval/map50 repeats 0.909 exactly over its last 33
    evals ... the held-out predictions stopped changing and nothing else moves". The mAP75 of the same
    predictions rises significantly over those evals, so they do change: no flag while another eval improves.
    Control: without the evals that improve, the repeated mAP50 is flagged as before."""
    assert _frozen_tail_flags(tuple(VOC)) == []
    assert len(_frozen_tail_flags(("train/loss", "eval/map50", "train/lr"))) == 1
