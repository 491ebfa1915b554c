"""Failure classes found in corpus_real/'s train split in the eleventh judge round; one test per rule on values
copied from a real train-split run, each with a control."""

from __future__ import annotations

import numpy as np

from benchmarks.replay import checkpoints
from mcp_training_check.models import Severity
from tests.test_judge_classes import decisions, replay_cuts, replay_real
from tests.test_judge_helpers import make_series, run_judge

# log-Ganilla-Witness-Style-1 (corpus_real train, ambiguous; Arnaud58/Ganilla-Witness-Style loss_log.txt at
# 83fea62): a GANILLA style transfer, prints 50-89 of its longest session (iterations 94,640-166,880). Its
# discriminator B wins (LSGAN loss 0.004-0.019 against 0.25 at the balance) while its generator's adversarial
# loss sits near 1, the value of fakes scored 0 every time.
WON_STEPS = np.array(
    [94640, 96320, 98320, 100320, 102000, 104000, 105680, 107680, 109360, 111360, 113040, 115040, 116720, 118720,
     120400, 122400, 124080, 126080, 128080, 129760, 131760, 133440, 135440, 137120, 139120, 140800, 142800,
     144480, 146480, 148160, 150160, 152160, 153840, 155840, 157520, 159520, 161200, 163200, 164880, 166880],
    dtype=np.int64,
)  # fmt: skip
WON_D_B = np.array(
    [0.006, 0.013, 0.007, 0.012, 0.006, 0.064, 0.014, 0.009, 0.019, 0.012, 0.01, 0.019, 0.006, 0.006, 0.008, 0.006,
     0.005, 0.014, 0.012, 0.008, 0.01, 0.007, 0.013, 0.004, 0.007, 0.008, 0.007, 0.007, 0.007, 0.009, 0.008, 0.005,
     0.005, 0.005, 0.004, 0.008, 0.007, 0.007, 0.009, 0.019]
)  # fmt: skip
WON_G_B = np.array(
    [0.902, 1.077, 0.976, 0.767, 0.964, 1.097, 0.946, 1.051, 0.754, 1.001, 0.907, 0.993, 0.936, 0.906, 0.899, 0.941,
     0.994, 1.022, 0.824, 0.997, 0.9, 0.914, 1.195, 0.967, 0.861, 0.916, 1.04, 0.876, 0.974, 0.921, 0.785, 0.998,
     1.028, 0.956, 0.927, 0.998, 0.982, 0.979, 0.868, 1.035]
)  # fmt: skip
WON_CYCLE_B = np.array(
    [0.625, 0.605, 0.561, 0.586, 0.502, 0.643, 0.814, 0.597, 0.602, 0.68, 0.697, 0.52, 0.543, 0.757, 0.609, 0.575,
     0.599, 0.768, 0.49, 0.659, 0.545, 0.645, 0.632, 0.558, 0.716, 0.573, 0.662, 0.705, 0.765, 0.637, 0.781, 0.673,
     0.598, 0.584, 0.579, 0.557, 0.645, 0.583, 0.58, 0.668]
)  # fmt: skip

# log-ls-yggyatsso-1 (corpus_real train, healthy; YGGYatsso/Image-Colorization-Using-CGAN losses.csv at 31f6405):
# an image-colourisation cGAN, its first 84 prints (iterations 1-8,301). Its discriminator loss sits at
# 0.0001-0.02 for stretches, but its generator's loss (adversarial + L1) falls 38.4 -> 13.
YGG_STEPS = np.arange(1, 8302, 100, dtype=np.int64)
YGG_D = np.array(
    [0.7155, 0.3148, 0.0165, 0.1677, 0.0036, 0.0027, 0.002, 0.0018, 0.0016, 0.5567, 0.009, 0.0121, 0.0021, 0.0013,
     0.007, 0.0016, 0.001, 0.0005, 0.0008, 0.0006, 0.0016, 0.2297, 0.5894, 0.0938, 0.1954, 0.1029, 0.2178, 0.3464,
     0.0287, 0.0108, 0.2038, 0.0532, 0.0102, 0.0045, 0.0645, 0.0075, 0.0843, 1.9005, 0.06, 0.0031, 1.6311, 0.1911,
     0.0133, 0.0127, 0.0041, 0.6089, 0.0174, 0.0023, 0.3765, 0.0015, 0.0341, 0.0029, 0.0141, 0.0185, 0.018, 0.0026,
     0.0015, 0.0024, 0.6656, 0.0454, 0.0959, 0.0328, 0.049, 0.0045, 0.0081, 0.0162, 0.0062, 0.5742, 0.0155, 0.0097,
     0.0044, 0.01, 1.6245, 0.0044, 0.0008, 0.0014, 0.0136, 0.0001, 0.1165, 0.3637, 0.0095, 0.0689, 0.3201, 0.0056]
)  # fmt: skip
YGG_G = np.array(
    [38.4149, 10.0325, 12.6478, 12.8083, 13.432, 13.6764, 13.7193, 12.6358, 13.3786, 8.6021, 12.0038, 14.4258,
     15.295, 12.6877, 12.8076, 14.5284, 14.8347, 13.6631, 14.1106, 15.0381, 13.5416, 8.5305, 9.8946, 10.9743,
     9.0768, 11.6454, 9.22, 10.7397, 11.1548, 12.8591, 11.8853, 12.2188, 11.9902, 12.6991, 11.8232, 11.9652,
     10.291, 9.7372, 10.8984, 14.643, 9.9023, 10.9756, 11.2966, 13.1911, 16.6991, 7.6306, 12.6054, 14.3756,
     9.5177, 15.0786, 11.8941, 13.6205, 12.1551, 11.789, 14.532, 17.1811, 13.5292, 13.8784, 11.0761, 13.0473,
     11.583, 11.3155, 10.9229, 14.0399, 13.3158, 12.3856, 13.574, 7.8975, 11.2069, 13.2026, 17.2238, 13.1445,
     18.4492, 11.8973, 14.4419, 12.3804, 12.912, 17.6615, 11.3248, 12.1593, 14.4289, 10.6929, 15.7166, 15.8886]
)  # fmt: skip

# log-Juanki0396-TFG-1 (corpus_real train, healthy; Juanki0396/TFG loss_log.txt at 8718ca8): a CycleGAN, 40 prints
# around the lowest 20-print median of its discriminator A (0.024, iterations 44,948-51,644) while G_A climbs.
JUANKI_STEPS = np.array(
    [44948, 45100, 45300, 45452, 45604, 45804, 45956, 46156, 46308, 46508, 46660, 46812, 47012, 47164, 47364, 47516,
     47716, 47868, 48020, 48220, 48372, 48572, 48724, 48924, 49076, 49228, 49428, 49580, 49780, 49932, 50132, 50284,
     50436, 50636, 50788, 50988, 51140, 51340, 51492, 51644],
    dtype=np.int64,
)  # fmt: skip
JUANKI_D_A = np.array(
    [0.076, 0.029, 0.008, 0.091, 0.071, 0.096, 0.05, 0.112, 0.011, 0.067, 0.097, 0.088, 0.223, 0.082, 0.026, 0.172,
     0.054, 0.096, 0.028, 0.04, 0.049, 0.097, 0.009, 0.018, 0.02, 0.02, 0.151, 0.036, 0.013, 0.012, 0.044, 0.167,
     0.215, 0.021, 0.01, 0.068, 0.027, 0.056, 0.018, 0.017]
)  # fmt: skip
JUANKI_G_A = np.array(
    [0.999, 0.514, 0.947, 0.594, 0.497, 0.407, 0.82, 0.316, 1.054, 0.936, 0.373, 0.394, 0.205, 0.81, 0.764, 0.189,
     0.634, 0.362, 0.861, 0.732, 0.508, 0.406, 0.823, 0.747, 0.398, 1.014, 0.58, 0.765, 0.841, 1.004, 0.797, 0.288,
     1.163, 0.727, 1.068, 0.597, 0.662, 0.243, 0.729, 1.546]
)  # fmt: skip


def _won_game_signals(metrics: dict[str, tuple[np.ndarray, np.ndarray]]) -> tuple[str, list[str]]:
    verdict = run_judge(*(make_series(name, values, steps) for name, (steps, values) in metrics.items()))
    found = [s.message for s in verdict.signals if "has won its game" in s.message]
    assert all(s.severity is not Severity.CRITICAL for s in verdict.signals if "has won its game" in s.message)
    return verdict.decision.value, found


def test_a_discriminator_that_has_won_is_flagged_never_stopped():
    """log-Ganilla-Witness-Style-1: its discriminator B's loss at a 20-print median of 0.007 (an LSGAN's balance is
    0.25) while G_B's adversarial loss stays near 1 (0.955 -> 0.962, medians of its first and last 20 prints),
    continue at every check before this rule: the discriminator wins every time and the generator learns
    nothing from it (ganhacks: "D loss goes to 0: failure mode"). A flag, never a stop. Controls: a colourisation
    cGAN whose discriminator sits as low while its generator's loss falls 38 -> 13 (healthy log-ls-yggyatsso-1);
    a CycleGAN whose discriminator's lowest 20-print median is 0.024 while G_A climbs (healthy
    log-Juanki0396-TFG-1); and the won game with its generator loss reversed (falling)."""
    won = {
        "train/D_B": (WON_STEPS, WON_D_B),
        "train/G_B": (WON_STEPS, WON_G_B),
        "train/cycle_B": (WON_STEPS, WON_CYCLE_B),
    }
    decision, found = _won_game_signals(won)
    assert decision == "unsure" and len(found) == 1 and found[0].startswith("train/D_B has won its game"), found

    healthy = {"train/d_loss": (YGG_STEPS, YGG_D), "train/g_loss": (YGG_STEPS, YGG_G)}
    assert float(np.median(YGG_D[-20:])) <= 0.01  # the discriminator is as low as the won game's
    assert _won_game_signals(healthy)[1] == []
    contested = {"train/D_A": (JUANKI_STEPS, JUANKI_D_A), "train/G_A": (JUANKI_STEPS, JUANKI_G_A)}
    assert _won_game_signals(contested)[1] == []
    falling = dict(won, **{"train/G_B": (WON_STEPS, np.sort(WON_G_B)[::-1])})
    assert _won_game_signals(falling)[1] == []


# log-rt-qinggangwu-2 (corpus_real train, healthy; qinggangwu/yolov7-pose_Npoint_Ncla runs/train/exp/results.txt at
# 057f4e0): a YOLOv7 keypoint fine-tune from a trained model, its first 6 epochs of 100.
KNOCK_STEPS = np.arange(6, dtype=np.int64)
KNOCK = {
    "train/box_loss": [0.0136, 0.01429, 0.01479, 0.01636, 0.01849, 0.02215],
    "train/obj_loss": [0.00357, 0.00362, 0.00371, 0.00378, 0.00387, 0.00418],
    "train/kpt_loss": [0.02744, 0.02642, 0.02452, 0.02264, 0.02141, 0.02049],
    "eval/precision": [0.9408, 0.9269, 0.9265, 0.8114, 0.8749, 0.7493],
    "eval/recall": [0.8802, 0.8802, 0.8708, 0.8523, 0.871, 0.4839],
    "eval/mAP_0.5": [0.9211, 0.9214, 0.9229, 0.8397, 0.9043, 0.4557],
    "eval/mAP_0.5:0.95": [0.7429, 0.7317, 0.7364, 0.6591, 0.6889, 0.3733],
    "eval/box_loss": [0.01278, 0.01337, 0.01322, 0.01518, 0.0187, 0.03187],
    "eval/obj_loss": [0.00199, 0.00201, 0.00207, 0.00229, 0.00254, 0.00513],
}
KNOCK_CONFIG = {"total_steps": 100, "learning_rate": 0.01}


def _knock_verdict(metrics: dict[str, list[float]]):
    series = [make_series(name, values, KNOCK_STEPS) for name, values in metrics.items()]
    return run_judge(*series, run_config=KNOCK_CONFIG)


def test_a_fine_tunes_warm_up_knocking_its_loss_and_one_eval_is_no_witnessed_divergence():
    """log-rt-qinggangwu-2: a fine-tune whose box loss climbs 0.0136 -> 0.0221 over its first 6 epochs (each of
    the last 3 above every point before) while its mAP@0.5, 0.92 from its first epoch, dips to 0.46 at epoch 5
    alone (back to 0.90 at epoch 6): the climb, 'witnessed' by that one collapsed eval, was a stop at the first
    check. An eval that began at its best is a trained start the warm-up knocks: one cause seen twice, so the
    climb is a warning. Controls: with the eval collapsed at two evals, or with an eval that learned its best
    during the run (first mAP 0.30), the same climb is a witnessed divergence and a stop."""
    verdict = _knock_verdict(KNOCK)
    assert verdict.decision.value == "unsure", verdict.summary
    assert any(s.kind.value == "divergence" and s.metric == "train/box_loss" for s in verdict.signals)

    twice = {name: list(values) for name, values in KNOCK.items()}
    twice["eval/mAP_0.5"][4] = 0.45
    assert _knock_verdict(twice).decision.value == "stop"
    learned = {name: list(values) for name, values in KNOCK.items()}
    learned["eval/mAP_0.5"][0] = 0.30
    assert _knock_verdict(learned).decision.value == "stop"


def test_a_fine_tune_whose_quality_eval_sat_at_its_ceiling_from_its_first_eval_is_not_stuck(real):
    """log-rt-ljt666666-1 (train, healthy; LJT666666/polygon-yolov5 runs/train/exp/results.txt at 4055013): a
    2,000-epoch fine-tune of a trained detector, its mAP@0.5 0.996-0.998 from its first epoch, while its box
    loss wanders 0.015 -> 0.02-0.07 and back: 'not learning ... still at its initial level' stopped it at checks
    8-11. A model already as good as its eval can tell has nothing to fall to: no not-learning finding. Control:
    the same run with its mAP@0.5 a tenth lower (0.90, below the 0.95 ceiling) is still stopped."""
    run = real["log-rt-ljt666666-1"]
    code, _, _ = replay_real(run)
    assert "S" not in code, code
    steps, values = run.metrics["eval/mAP_0.5"]
    lowered = dict(run.metrics) | {"eval/mAP_0.5": (steps, values - 0.1)}
    assert "S" in decisions(replay_cuts(lowered, checkpoints(run), run_config=run.run_config("full")))


def test_a_secondary_eval_loss_collapsing_in_a_long_overfit_is_flagged_like_a_smaller_one(real):
    """log-rt-thigiacmaytinh-1 (train, ambiguous; thigiacmaytinh/tomato_yolov7 runs/train/exp/results.txt at
    3b7fd0c): a YOLOv7 val obj loss 0.09 at epoch 22 -> 0.35 at the end (x3.9) while its mAP holds its best. Its
    collapse (>= 3x its best) and large overfit were critical, outvoted by the quality eval to information, so the
    run was continue at every check while a +29 % long overfit of another run was flagged. Now a warning while
    the rise is a long, steady overfit, never a stop. Control: the same run with that loss held near its best is
    continue at every check."""
    run = real["log-rt-thigiacmaytinh-1"]
    code, visible, _ = replay_real(run)
    assert "S" not in code and "u" in code[visible:], code
    steps, values = run.metrics["eval/obj_loss"]
    held = dict(run.metrics) | {"eval/obj_loss": (steps, np.minimum(values, 1.05 * values.min()))}
    assert decisions(replay_cuts(held, checkpoints(run), run_config=run.run_config("full"))) == "." * 20
