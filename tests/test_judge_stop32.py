"""Judge changes of stop 32: each test fails on the code before its change, each with a control."""

from __future__ import annotations

import numpy as np

from mcp_training_check.judge.evaltrend_unchanged import repeats_across_one_eval
from mcp_training_check.models import Decision, SignalKind
from tests.test_judge_classes import decisions, replay_cuts, replay_real, stopped_within_one_check
from tests.test_judge_helpers import make_series, run_judge


def _long_overfit_signals(verdict):
    return [s for s in verdict.signals if s.kind is SignalKind.EVAL_DEGRADING and "long_overfit" in s.evidence]


def test_a_long_overfit_of_a_run_without_a_quality_eval_is_stopped_when_a_second_check_sees_it(real):
    """log-rl-shhaurya17-1 (round 20, train, bad; a rainfall-downscaling GAN): its val L1, the run's only held-out
    measure, rises 7-12 % over its best from epoch 50 at Mann–Kendall z 4.6-6.9 while the train L1 falls. It was
    'a long overfit, a flag … never a stop' at every check to the end: the sole-eval stop waited for 20 %."""
    run = real["log-rl-shhaurya17-1"]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    first = code.index("S")
    assert visible <= first and "S" not in code[:visible], code
    stop = verdicts[first]
    assert stop.decision is Decision.STOP
    critical = [
        s for s in stop.signals if s.kind is SignalKind.EVAL_DEGRADING and "as at the previous check" in s.message
    ]
    assert critical and critical[0].metric == "eval/loss", [s.message for s in stop.signals]
    assert _long_overfit_signals(verdicts[first - 1]), "the check before the stop saw the long overfit first"


def test_an_lstm_chatbots_long_overfit_is_stopped_within_a_check_of_being_visible(real):
    """log-lc-jckuri-1 (round 10, train, bad): val loss 4.66 at epoch 5, rising steadily while the train loss falls
    6.8 → 0.1; stopped 6 checks after its fault was visible (waiting for 1.2× its best), now within one."""
    run = real["log-lc-jckuri-1"]
    code, visible, _ = replay_real(run)
    assert stopped_within_one_check(code, visible), (code, visible)


def test_a_long_overfit_beside_a_quality_eval_is_still_only_a_flag(real):
    """Control: log-tl-ismayilabdullazada-1 (train, healthy): its val loss rises steadily from a third of the run
    (z ≥ 4) while its accuracy climbs to 0.93 near the end; the accuracy speaks for the model, so the long
    overfit is flagged, never stopped."""
    run = real["log-tl-ismayilabdullazada-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    assert any(_long_overfit_signals(v) for v in verdicts)


def _eval_loss_from_its_best(cap: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A run logging a falling train loss and only an eval loss: best 1.0 at step 5, then rising 0.15 % a step
    (1.14 at step 100, under the sole-eval margin's 1.2) or levelled off at ``cap``."""
    steps = np.arange(1, 101)
    train = np.geomspace(2.0, 0.2, 100) * (1 + np.random.default_rng(1).normal(0.0, 0.01, 100))
    rise = np.where(steps <= 5, 1.0 + (5 - steps) * 0.02, 1.0 + (steps - 5) * 0.0015)
    noise = np.random.default_rng(2).normal(0.0, 0.003, 100)
    return {"train/loss": (steps, train), "eval/loss": (steps, np.minimum(rise, cap) + noise)}


def test_a_long_overfit_still_rising_is_stopped_under_a_fifth():
    """Checks every 5 steps from step 80: a second check sees the eval loss's long overfit still rising (the later
    half of its evals since the best, a significant trend) at 1.12-1.14× its best: a stop."""
    code = decisions(replay_cuts(_eval_loss_from_its_best(np.inf), list(range(80, 101, 5))))
    assert code.startswith("u") and "S" in code[1:3], code


def test_a_long_overfit_that_levelled_off_is_left_to_the_margin():
    """Control: the same rise levelled off at 1.07× its best from step 50; checks from step 80 see a plateau
    (its later half has no significant rise), which the plateau's noise cannot tell from its best-to-now rise:
    flagged, not stopped, as under the 20 % margin before."""
    code = decisions(replay_cuts(_eval_loss_from_its_best(1.07), list(range(80, 101, 5))))
    assert code == "uuuuu", code


def test_a_frozen_eval_loss_interrupted_by_one_odd_eval_is_still_frozen(real):
    """log-Tweet-Popularity-1 (round 6, train, bad): val loss exactly 0.03065895905925168 from epoch 3 to 4,000
    but 0.314 at epoch 386. The frozen tail restarted after that one eval, so the check after it saw fewer than 10
    repeats and the stop waited for a second warning: '|u.uS'. Counted across the one odd eval, it stops at the
    check after the first warning."""
    run = real["log-Tweet-Popularity-1"]
    assert run.split == "train" and run.label == "bad"
    code, visible, _ = replay_real(run)
    assert stopped_within_one_check(code, visible), (code, visible)


def test_repeats_are_counted_across_one_differing_eval_only():
    """Control: the join needs the same value on both sides of exactly one eval; two evals between, or a new
    value after the odd one, start the count again."""
    frozen = 0.03065895905925168
    assert repeats_across_one_eval(np.array([0.1] + [frozen] * 12 + [0.31] + [frozen] * 3)) == 16
    assert repeats_across_one_eval(np.array([0.1] + [frozen] * 12 + [0.31, 0.2] + [frozen] * 3)) == 3
    assert repeats_across_one_eval(np.array([0.1] + [frozen] * 12 + [0.31] + [0.0307] * 3)) == 3
    assert repeats_across_one_eval(np.array([frozen] * 5)) == 5
    assert repeats_across_one_eval(np.array([0.2, frozen])) == 1


def test_a_long_overfit_beside_a_retrieval_recall_is_not_stopped(real):
    """Control from round 32 (log-tu-mukundshankar-dev-1, train, healthy; a text-to-motion retriever, 500 epochs):
    its composite val loss sits 8-11 % above its best for the second half of the run, rising at z 7-8, while its
    recall@10 creeps to its best. `is_quality_eval` does not name a recall@k, so the first version of the long
    overfit stop read the run as logging no quality eval and stopped it at its last 8 checks. The stop needs
    every eval of the run to be a loss."""
    run = real["log-tu-mukundshankar-dev-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, _ = replay_real(run)
    assert "S" not in code, code


def test_a_stuck_f1_beside_a_learning_accuracy_in_an_eval_only_run_is_information(real):
    """log-tu-gaallmin-1 (round 32, train, healthy; eval numbers only): accuracy 0.33 → 0.40 over its first 10
    epochs, rising at each, while its macro F1 over many imbalanced classes wanders 0.04-0.10: 'not learning …
    still so at a second check' stopped it at 3 checks, since a learning sibling was asked only in a run with a
    train loss."""
    run = real["log-tu-gaallmin-1"]
    assert run.split == "train" and run.label == "healthy" and not any(n.startswith("train/") for n in run.metrics)
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    outvoted = [s for v in verdicts for s in v.signals if s.metric == "eval/f1" and "outvoted" in s.evidence]
    assert outvoted and "eval/accuracy" in outvoted[0].message


def test_a_stuck_f1_with_its_accuracy_stuck_too_still_stops():
    """Control: the same eval-only run whose accuracy does not rise either (0.33-0.34 at every epoch) has no
    learning sibling: the F1 that gains under 5 % of its headroom is stopped at a second check."""
    steps = np.arange(1, 13)
    f1 = np.array([0.059, 0.046, 0.056, 0.069, 0.042, 0.054, 0.061, 0.05, 0.058, 0.047, 0.055, 0.06])
    accuracy = 0.33 + 0.01 * (np.arange(12) % 2)
    metrics = {"eval/accuracy": (steps, accuracy), "eval/f1": (steps, f1)}
    code = decisions(replay_cuts(metrics, [6, 8, 10, 12]))
    assert "S" in code, code


def test_a_smoothed_loss_falling_at_every_print_is_learning_slowly(real):
    """log-tu-bclavie-1 (round 32, train, healthy; a ColBERT fine-tune): its printed loss is an EMA (weight 0.999)
    that falls 6.26 → 5.31 at every one of its 500 prints. The autocorrelation correction leaves 3 effective
    points (Mann–Kendall z −2.7, under the slow learner's 3), so it was 'not learning' at 13 checks. ≥ 99 % of its
    pairs of points falling make it a steady fall: information."""
    run = real["log-tu-bclavie-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert code[7:] == "." * 13, code
    last = verdicts[-1].signals
    slow = [s for s in last if s.kind is SignalKind.IMPROVING and "pairs of points falling" in s.message]
    assert slow, [s.message for s in verdicts[-1].signals]


def test_a_loss_printed_to_two_decimals_at_one_level_is_not_learning_slowly(real):
    """Control: log-tu-yazanshannak-1 (round 32, train, bad; a U-Net at 1.68-1.70, printed to 2 decimals, for its
    990 steps): its Theil–Sen slope is 0 and 41 % of its pairs fall; it is never 'learning slowly' and, stopped
    once, stays stopped."""
    run = real["log-tu-yazanshannak-1"]
    code, _, verdicts = replay_real(run)
    assert not any("learning slowly" in s.message for v in verdicts for s in v.signals)
    first = code.index("S")
    assert set(code[first:]) == {"S"}, code


def test_a_discriminator_that_has_won_outright_is_flagged_whatever_its_generator_does(real):
    """log-tu-buchuitoudegou-1 (round 32, train, ambiguous; a CycleGAN, 100 epochs): its discriminator loss prints
    0.0000 from epoch 88 on while the generator's total falls 3.27 → 0.42 on its cycle and identity terms. The
    won-game flag waited for the generator's loss to stop falling, so the run was continue at every check."""
    run = real["log-tu-buchuitoudegou-1"]
    assert run.split == "train" and run.label == "ambiguous"
    code, _, verdicts = replay_real(run)
    assert code.endswith("u") and "S" not in code, code
    assert any("won its game outright" in s.message for s in verdicts[-1].signals)


def test_a_discriminator_near_zero_beside_a_falling_generator_is_not_flagged():
    """Control: a discriminator whose last 20 prints sit at 0.002-0.008 (under game_won_loss, over a tenth of it)
    beside a generator loss that falls is read as before: no won-game flag."""
    steps = np.arange(1, 61)
    rng = np.random.default_rng(3)
    disc = np.concatenate([np.linspace(0.6, 0.05, 30), 0.005 + 0.003 * rng.uniform(-1, 1, 30)])
    gen = np.geomspace(3.0, 0.5, 60) * (1 + rng.normal(0.0, 0.01, 60))
    metrics = {"train/discriminator_loss": (steps, disc), "train/generator_loss": (steps, gen)}
    verdicts = replay_cuts(metrics, [40, 50, 60])
    assert not any("won its game" in s.message for v in verdicts for s in v.signals)


def test_zeros_among_a_loss_printed_at_its_resolution_are_rounding(real):
    """log-lw-seuncoker-1 (round 31, train, healthy; a face classifier that memorises a small set): its per-batch
    loss is printed to 4 decimals and reaches 0.0001-0.0004 between 0.0s. Each 0.0 came after a value 4+ units
    above the last decimal, so it was 'a dropped or fully masked loss' at its last 9 checks."""
    run = real["log-lw-seuncoker-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, _ = replay_real(run)
    assert code == "." * 20, code


def test_zeros_among_losses_far_above_their_resolution_still_warn():
    """Control: a loss at 0.05-0.3 (hundreds of units of its 4th decimal) with three 0.0s among its last prints is
    still a dropped or masked loss: a warning."""
    rng = np.random.default_rng(4)
    values = np.round(np.geomspace(2.0, 0.1, 60) * (1 + rng.normal(0.0, 0.05, 60)), 4)
    values[[50, 54, 58]] = 0.0
    verdict = run_judge(make_series("train/loss", values))
    assert any("dropped or fully masked" in s.message for s in verdict.signals), [s.message for s in verdict.signals]


def test_an_error_metrics_lucky_best_is_no_large_overfit_while_the_eval_loss_improves_since(real):
    """log-tc-andreyprado-1 (round 34, train, healthy; a Keras streamflow forecaster): val MAE and MSE dip to 0.36
    and 0.15 at epoch 20 and swing back to 0.56 and 0.39, while the val loss, which carries an extra term, keeps
    reaching new bests to its end. 'A large overfit' on MAE and MSE stopped it at its last 15 checks."""
    run = real["log-tc-andreyprado-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, _ = replay_real(run)
    assert "S" not in code, code


def test_an_error_metric_rising_with_its_eval_loss_is_still_a_large_overfit():
    """Control: the same error metric doubling from its best while the eval loss, best at the same eval, rises
    with it, the train loss falling: a large overfit, stopped at a second check."""
    steps = np.arange(1, 41)
    train = np.geomspace(2.0, 0.2, 40)
    shape = np.where(steps <= 10, 1.0 - 0.05 * (steps - 1) / 9, 0.95 + 0.06 * (steps - 10))
    metrics = {"train/loss": (steps, train), "eval/loss": (steps, 3.0 * shape), "eval/mae": (steps, 0.4 * shape)}
    code = decisions(replay_cuts(metrics, [24, 28, 32, 36, 40]))
    assert "S" in code, code
