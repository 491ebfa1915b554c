"""Failure classes of corpus_real/'s ninth judge round (train split); one test per rule on values copied from a
real train-split run, each with a control."""

from __future__ import annotations

import numpy as np

from mcp_training_check.models import Severity
from tests.test_judge_classes import decisions, replay_cuts
from tests.test_judge_helpers import make_series, run_judge

# log-conditional-style-transfer-1 (corpus_real train, ambiguous; PolarJE/conditional-style-transfer
# loss_log.txt at cf9f15a): a conditional style-transfer GAN, its first 24 prints (iterations 500-56,704 of 1.2M).
# Its discriminator and generator adversarial losses sit at 1.00 at every print; its transfer term falls slowly.
GAME_STEPS = np.array(
    [500, 3000, 5500, 7856, 10356, 12712, 15212, 17712, 20068, 22568, 24924, 27424, 29924, 32280, 34780, 37136,
     39636, 42136, 44492, 46992, 49348, 51848, 54204, 56704],
    dtype=np.int64,
)  # fmt: skip
GAME_DISC = np.array(
    [1.029, 1.013, 1.002, 1.027, 0.999, 1.059, 1.023, 0.985, 0.998, 1.027, 1.009, 0.994, 0.989, 1.005, 0.999,
     1.004, 1.002, 1.038, 1.001, 1.0, 1.0, 1.01, 1.014, 1.013]
)  # fmt: skip
GAME_GEN = np.array(
    [1.026, 1.006, 1.008, 1.028, 1.013, 0.954, 1.022, 1.039, 1.005, 1.018, 0.994, 1.011, 1.012, 1.009, 0.999,
     0.997, 1.004, 1.037, 1.001, 1.006, 0.995, 1.011, 1.017, 0.992]
)  # fmt: skip
GAME_TRANSF = np.array(
    [55.147, 55.653, 50.541, 51.288, 52.54, 54.234, 52.508, 47.911, 52.331, 52.609, 51.467, 53.043, 48.734, 49.652,
     49.929, 46.373, 49.473, 50.265, 48.499, 48.194, 51.247, 49.033, 52.288, 49.156]
)  # fmt: skip

# log-CycleGAN-NNFL-1 (corpus_real train, healthy; shreyas-bk/NNFL_Term_Paper loss_log.txt at 664e809): a CycleGAN's
# first 24 prints (iterations 100-4,700); its discriminator losses swing 0.03-0.54 as the two players trade.
NNFL_STEPS = np.arange(100, 4800, 200, dtype=np.int64)
NNFL_D_A = np.array(
    [0.446, 0.302, 0.181, 0.202, 0.27, 0.223, 0.264, 0.135, 0.05, 0.07, 0.136, 0.116, 0.275, 0.09, 0.316, 0.216,
     0.216, 0.375, 0.213, 0.036, 0.25, 0.242, 0.19, 0.191]
)  # fmt: skip
NNFL_D_B = np.array(
    [0.423, 0.323, 0.543, 0.242, 0.377, 0.247, 0.276, 0.085, 0.083, 0.207, 0.252, 0.179, 0.178, 0.171, 0.212, 0.138,
     0.171, 0.027, 0.163, 0.189, 0.279, 0.146, 0.108, 0.088]
)  # fmt: skip
NNFL_CYCLE_A = np.array(
    [2.365, 2.143, 2.485, 3.135, 2.013, 3.864, 2.779, 3.022, 2.239, 3.54, 2.969, 2.398, 2.718, 5.008, 2.174, 2.515,
     2.054, 1.961, 2.047, 2.626, 2.635, 1.369, 2.723, 2.127]
)  # fmt: skip


def _frozen_game_signals(metrics: dict[str, tuple[np.ndarray, np.ndarray]]) -> list[str]:
    verdict = run_judge(*(make_series(name, values, steps) for name, (steps, values) in metrics.items()))
    return [s.message for s in verdict.signals if "holds one value" in s.message and s.severity is Severity.WARNING]


def test_a_discriminator_loss_holding_one_value_is_flagged_never_stopped():
    """log-conditional-style-transfer-1: its discriminator loss at 0.985-1.059 over 24 prints (a spread of 3 % of
    its level, 10th to 90th percentile) while its transfer term falls slowly; the judge had nothing to say about
    the game (continue at every check). A discriminator whose output does not depend on its input gives the
    generator no adversarial signal: a flag at every check, never a stop. Controls: the healthy CycleGAN's
    discriminators (spread ≥ 38 % at every check of the train split's healthy GANs) are not flagged; nor is the same
    frozen discriminator before its 20th print; nor a frozen term in a run without a discriminator."""
    frozen = {
        "train/disc": (GAME_STEPS, GAME_DISC),
        "train/gen": (GAME_STEPS, GAME_GEN),
        "train/transf": (GAME_STEPS, GAME_TRANSF),
    }
    found = _frozen_game_signals(frozen)
    assert len(found) == 1 and "train/disc holds one value" in found[0], found
    verdicts = replay_cuts(frozen, [int(GAME_STEPS[19]), int(GAME_STEPS[-1])])
    assert decisions(verdicts) == "uu", [v.summary for v in verdicts]

    healthy = {
        "train/D_A": (NNFL_STEPS, NNFL_D_A),
        "train/D_B": (NNFL_STEPS, NNFL_D_B),
        "train/cycle_A": (NNFL_STEPS, NNFL_CYCLE_A),
    }
    assert _frozen_game_signals(healthy) == []
    early = {name: (steps[:19], values[:19]) for name, (steps, values) in frozen.items()}
    assert _frozen_game_signals(early) == []
    no_game = {"train/gen": (GAME_STEPS, GAME_GEN), "train/transf": (GAME_STEPS, GAME_TRANSF)}
    assert _frozen_game_signals(no_game) == []
