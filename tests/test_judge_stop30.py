"""Failure classes found in corpus_real/'s train split at stop 30; one test per rule on real train-split runs, each
with controls."""

from __future__ import annotations

import numpy as np
import pytest

from mcp_training_check.models import Decision, Severity, SignalKind
from tests.test_judge_classes import decisions, every, replay_cuts, replay_real, stopped_within_one_check

RUN_END = "by the end of the run"  # the stuck-for-its-run finding (`LossStallTests._stuck_for_its_run`)


@pytest.mark.parametrize(
    ("run_id", "latest_stop"),
    [
        # a seq2seq stock-return regressor: MSE 0.4489 at epoch 1, within 0.1 % of 0.443 from epoch 3 to 20
        ("log-lj-seavleu-1", 8),
        # a protein-interaction predictor: 0.0982, 0.0971, then 0.0963-0.0968 for 17 of its 20 epochs
        ("log-lr-bibhuprasadbehera-1", 12),
        # an LLM knowledge-graph scorer: binary loss 0.696 -> 0.689 (ln 2 = 0.693) over all 133 logs of 1,330 steps
        ("log-tl-adamhermes-1", 6),
    ],
)
def test_a_loss_held_at_its_start_for_a_quarter_of_a_known_total_is_stopped(real, run_id, latest_stop):
    """Train-split bad runs whose loss never leaves its first level: a flat-window flag ("a plateau or a stuck run,
    worth a look") at every check from the 10th point on, never a stop, since a plateau's window looks the same. Past
    a quarter of the run's known total, a slope whose band rules out a 5 % fall even projected to the run's last step
    says the rest of the budget will not make it learn: a warning, critical at the next check that still sees it."""
    run = real[run_id]
    assert run.split == "train" and run.label == "bad"
    code, _, verdicts = replay_real(run)
    first = code.find("S")
    assert 0 <= first <= latest_stop, code
    assert any(RUN_END in s.message for s in verdicts[first].signals if s.kind is SignalKind.FLAT)


@pytest.mark.parametrize(
    "run_id",
    [
        "log-rl-its-kumar-yash-1",  # a LoRA fine-tune: 2.39 -> 2.09 in its 5-step warmup, then 2.10-2.19 to the end
        "log-tokalign-baseline-1",  # continued pretraining: per-step 1.95-2.37, deciles 2.225 -> 2.115
        "log-bangla_stt-1",  # a low first log (0.27), then 0.5-1.0, falling to 0.2
        "log-tg-asem000-1",  # a Keras regressor at lr 6.25e-6: 0.0110 -> 0.0091, slow and steady
    ],
)
def test_a_loss_that_learned_in_its_first_points_or_falls_slowly_is_not_stuck_for_its_run(real, run_id):
    """Controls, healthy train runs: a loss that fell in its warmup and then holds its floor left its start; a slow
    fall's band still holds a 5 % fall by the run's end; a first point below the next ones is no start level."""
    run = real[run_id]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    assert not any(RUN_END in s.message for v in verdicts for s in v.signals)


def test_a_flat_start_without_a_known_total_or_before_a_quarter_of_it_is_no_stop():
    """The same held start is a flag, not a stop, when the run's length is unknown (nothing says most of its budget
    is spent) and before a quarter of a known one."""
    rng = np.random.default_rng(7)
    steps = every(1, 40)
    loss = 0.444 * (1 + 0.002 * rng.standard_normal(steps.size))
    metrics = {"train/loss": (steps, loss)}
    cuts = [10, 15, 20, 25, 30, 35, 40]
    unknown = replay_cuts(metrics, cuts)
    assert "S" not in decisions(unknown), decisions(unknown)
    long_run = replay_cuts(metrics, cuts, run_config={"total_steps": 200})  # 20 % of the run at the last cut
    assert "S" not in decisions(long_run), decisions(long_run)
    known = replay_cuts(metrics, cuts, run_config={"total_steps": 40})
    assert decisions(known)[-1] == "S" and known[-1].decision is Decision.STOP, decisions(known)


def test_a_gan_generator_loss_climbing_as_its_discriminator_learns_is_a_flag_not_a_stop(real):
    """log-tt-plxiv-1 (round 25, train, healthy; a DCGAN on anime faces): the generator's adversarial loss
    ``g_loss`` goes 0.38 -> 3-7 in its first prints, the discriminator learning to tell the fakes apart, while both
    discriminator losses stay at 0.3-1.0. Judged as a plain train loss it 'blew up' and was stopped at 7 checks;
    as one side of the game it is a flag."""
    run = real["log-tt-plxiv-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code and "u" in code, code
    flagged = [s for v in verdicts for s in v.signals if s.kind is SignalKind.DIVERGENCE and s.metric == "train/g_loss"]
    assert flagged and not any(s.severity is Severity.CRITICAL for s in flagged)
    assert any("one side of a GAN's game" in s.message for s in flagged)


def test_the_same_climb_without_a_discriminator_or_on_a_reconstruction_term_is_still_stopped(real):
    """Controls: the same ``g_loss`` curve in a run that logs no discriminator is a train loss like any other, and
    under a reconstruction term's name (pix2pix's ``G_L1``) beside the discriminator it is judged as any loss: both
    are stopped."""
    run = real["log-tt-plxiv-1"]
    cuts = [int(c) for c in np.linspace(4, run.last_step, 20)]
    alone = {"train/g_loss": run.metrics["train/g_loss"]}
    assert "S" in decisions(replay_cuts(alone, cuts)), decisions(replay_cuts(alone, cuts))
    renamed = {("train/G_L1" if name == "train/g_loss" else name): series for name, series in run.metrics.items()}
    assert "S" in decisions(replay_cuts(renamed, cuts)), decisions(replay_cuts(renamed, cuts))


def test_a_loss_that_never_moves_beside_a_quality_eval_at_zero_is_stopped_within_a_check(real):
    """log-tt-simbalol2006-1 (round 25, train, bad; a lung segmenter): its Dice loss is 1.0 and its val Dice 0.0 at
    every one of its 15 epochs. A train accuracy at 0 already told a loss at its start that never learned; a quality
    eval at 0 tells it too. It was stopped at its 7th eval (the stuck-eval test); now unsure at the check where the
    fault is visible and stopped at the next."""
    run = real["log-tt-simbalol2006-1"]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    assert stopped_within_one_check(code, visible), code
    assert any("eval/dice ≤ 0.001 at every point" in s.message for s in verdicts[code.index("S")].signals)


@pytest.mark.parametrize("run_id", ["log-pose-dlhagger-1", "log-rt-kokomier-1", "log-lg-gaoq1-1"])
def test_a_quality_eval_at_zero_beside_a_falling_loss_is_not_read_as_a_dead_run(real, run_id):
    """Controls, healthy train runs whose quality eval is 0 for their first 4-41 evals (an mAP50(B) over 41 epochs, an
    mAP_0.5, a dev F1) while their train loss falls: the loss is learning, so the zero eval says nothing of it."""
    run = real[run_id]
    assert run.split == "train" and run.label == "healthy"
    _, _, verdicts = replay_real(run)
    assert not any("≤ 0.001 at every point" in s.message for v in verdicts for s in v.signals)
