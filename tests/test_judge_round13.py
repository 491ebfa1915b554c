"""Failure classes found in corpus_real/'s train split in the thirteenth judge round; one test per rule on a
real train-split run, each with a control."""

from __future__ import annotations

import numpy as np

from benchmarks.replay import checkpoints
from mcp_training_check.models import SignalKind
from tests.test_judge_classes import decisions, replay_cuts, replay_real
from tests.test_judge_helpers import make_series, run_judge


def test_a_long_steady_overfit_of_a_run_without_a_quality_eval_is_stopped(real):
    """log-lc-jckuri-1 (train, bad; jckuri's learning_curve.csv, an LSTM next-word chatbot, 90 epochs): its val
    loss, the only eval it logs, climbs from its best 4.66 at epoch 5 to 6.86 while the train loss falls 6.8 ->
    0.1. It was unsure at 15 checks and never stopped; with nothing in the run to say the model still improves,
    a rise >= 20 % over its best, steady over half the run, is now stopped."""
    run = real["log-lc-jckuri-1"]
    code, visible, _ = replay_real(run)
    assert "S" in code[visible:], code


def test_a_long_overfit_beside_a_quality_eval_is_not_stopped(real):
    """Control on log-lc-jckuri-1: the same run with an accuracy eval that holds (a quality eval that can outvote
    its loss) is never stopped. (Its second control, the val loss held under 1.15× its best, was never stopped
    either; since stop 32 a long overfit still rising at a second check is stopped at any gap in a run without
    a quality eval, and that held series still rises at its sixth check: the levelled-off control is
    tests/test_judge_stop32.py's.)"""
    run = real["log-lc-jckuri-1"]
    steps, _ = run.metrics["eval/loss"]
    noise = np.random.default_rng(0).normal(0.0, 0.003, steps.size)
    with_accuracy = dict(run.metrics) | {"eval/accuracy": (steps, 0.31 + noise)}
    cuts = checkpoints(run)
    assert "S" not in decisions(replay_cuts(with_accuracy, cuts, run_config=run.run_config("full")))


def test_a_warmup_printed_to_six_decimals_is_neither_a_jump_nor_a_dead_lr(real):
    """log-tg-belitk-1 (train, healthy; a darknet YOLOv3 train.log): its burn-in LR, 1e-3 x (i / 1000)^4 printed
    as %f, is 0.000000 for 150 iterations while the loss falls 1958 -> 212, then 1e-06 for 12 prints, 2e-06, 3e-06
    ...: 'nothing is being trained' at the first check and 'jumped 2.0x outside warmup' at every later one. A
    loss that falls by half was trained, and a value repeated under 100 units of the last printed decimal is a
    rise the print rounded away: continue at every check."""
    run = real["log-tg-belitk-1"]
    code, _, _ = replay_real(run)
    assert code == "." * 20, code
    zero = make_series("train/lr", np.zeros(21))
    falling = make_series("train/loss", np.geomspace(1958, 200, 21))
    assert not any(s.kind is SignalKind.LR_ANOMALY for s in run_judge(falling, zero).signals)


def test_a_real_jump_or_a_zero_lr_with_a_flat_loss_is_still_found_at_six_decimals(real):
    """Controls on log-tg-belitk-1: the same LR multiplied by 10 from iteration 1,600 (0.001000 -> 0.010000) is a
    jump; an LR printed 0 while the loss stays flat trains nothing; a constant LR printed 0.01 for 20 points that
    then prints 0.1 is a jump, not the end of a rounded warmup."""
    run = real["log-tg-belitk-1"]
    steps, lr = run.metrics["train/lr"]
    jumped = dict(run.metrics) | {"train/lr": (steps, np.where(steps >= 1600, lr * 10, lr))}
    verdicts = replay_cuts(jumped, checkpoints(run), run_config=run.run_config("full"))
    assert any(s.kind is SignalKind.LR_ANOMALY and "jumped" in s.message for v in verdicts for s in v.signals)

    flat = make_series("train/loss", np.full(21, 2.0) + np.random.default_rng(1).normal(0, 0.01, 21))
    zero = make_series("train/lr", np.zeros(21))
    assert any(s.kind is SignalKind.LR_ANOMALY for s in run_judge(flat, zero).signals)

    coarse = make_series("train/lr", np.r_[np.full(20, 0.01), np.full(5, 0.1)])
    loss = make_series("train/loss", np.geomspace(3.0, 1.0, 25))
    found = [s for s in run_judge(loss, coarse).signals if s.kind is SignalKind.LR_ANOMALY]
    assert any("jumped" in s.message for s in found), found


def test_a_train_loss_climbing_steadily_for_half_the_run_is_flagged_without_an_eval(real):
    """log-tx-aaaaaiden-1 (train, bad; AAAAAiden/IAE-implementation training_log.txt, an adversarial
    autoencoder): its reconstruction loss climbs 0.00624 -> 0.0077 (+23 %) at every epoch from epoch 8 of 54,
    while its latent critic's game runs away; no eval. It was continue at every check ('a schedule can do
    this'). Over half the run by >= 10 %, seen at two checks, it is now a flag — never a stop."""
    run = real["log-tx-aaaaaiden-1"]
    code, visible, _ = replay_real(run)
    assert "u" in code[visible:] and "S" not in code, code


def test_a_train_loss_held_at_its_minimum_is_not_flagged(real):
    """Control on log-tx-aaaaaiden-1: the same run with its reconstruction loss held within 1 % of its minimum
    after epoch 8 is continue at every check."""
    run = real["log-tx-aaaaaiden-1"]
    steps, values = run.metrics["train/loss"]
    held = dict(run.metrics) | {"train/loss": (steps, np.where(steps > 8, values.min() * 1.005, values))}
    assert decisions(replay_cuts(held, checkpoints(run), run_config=run.run_config("full"))) == "." * 20


def test_a_percent_accuracy_at_its_ceiling_is_not_a_plateau(real):
    """log-lg-hjygotoplay-1 (train, healthy; a ChineseNER BiLSTM-CRF log/train.log): its dev accuracy, printed in
    percent, sits at 98.2-98.8 for 55 evals while the train loss falls. Read as unbounded (98.7 of headroom), it was
    "flat below its ceiling" at 12 checks; on the [0, 1] scale it is printed from, it is at its ceiling."""
    run = real["log-lg-hjygotoplay-1"]
    code, _, _ = replay_real(run)
    assert "u" not in code, code


def test_a_percent_accuracy_flat_well_below_its_ceiling_is_still_a_plateau(real):
    """Control on log-lg-hjygotoplay-1: the same dev accuracy 20 points lower (78.2-78.8 %) is still flagged as
    a plateau."""
    run = real["log-lg-hjygotoplay-1"]
    steps, values = run.metrics["eval/dev_accuracy"]
    lowered = dict(run.metrics) | {"eval/dev_accuracy": (steps, values - 20)}
    assert "u" in decisions(replay_cuts(lowered, checkpoints(run), run_config=run.run_config("full")))
