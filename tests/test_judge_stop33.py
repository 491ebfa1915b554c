"""Judge changes of stop 33: each test fails on the code before its change, each with a control."""

from __future__ import annotations

import numpy as np

from mcp_training_check.models import Decision, Severity, SignalKind
from tests.test_judge_classes import decisions, replay_cuts, replay_real, stopped_within_one_check


def _frozen_game(verdict, severity: Severity):
    return [
        s for s in verdict.signals
        if s.kind is SignalKind.FLAT and s.severity is severity and "holds one value" in s.message
    ]  # fmt: skip


def test_a_gan_whose_discriminator_and_generator_never_leave_their_start_is_stopped_at_a_second_check(real):
    """log-lz-aloilor-1 (round 35, train, bad; a wavelet diffusion GAN): its discriminator prints 1.384-1.390
    (2 ln 2) at all 448 prints and its generator's loss stays within 3 % of its first value. It was unsure at
    every check ("the game is not being played, worth a look"): the first sight stays a flag, the second a stop."""
    run = real["log-lz-aloilor-1"]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    assert stopped_within_one_check(code, visible), (code, visible)
    assert code[0] == "u" and _frozen_game(verdicts[0], Severity.WARNING), code
    stop = verdicts[code.index("S")]
    critical = _frozen_game(stop, Severity.CRITICAL)
    assert critical and critical[0].metric == "train/d_loss"
    assert "nothing in this run is training" in critical[0].message


def test_a_frozen_discriminator_beside_terms_that_learn_stays_a_flag(real):
    """Control: log-conditional-style-transfer-1 (round 6, train, ambiguous): its adversarial pair sits at 1.00 for
    1.2M iterations while its identity loss falls 2.4 → 0.4; the frozen game is flagged at every check, never
    stopped."""
    run = real["log-conditional-style-transfer-1"]
    assert run.split == "train" and run.label == "ambiguous"
    code, _, verdicts = replay_real(run)
    assert "S" not in code and set(code) == {"u"}, code
    assert all(_frozen_game(v, Severity.WARNING) for v in verdicts)


def _gan(generator_fall: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A GAN logging every 10 steps: a discriminator at 2 ln 2 ± 0.1 %, a generator whose loss falls by
    ``generator_fall`` of its start over the run (noise 1 %)."""
    steps = np.arange(1, 301) * 10
    rng = np.random.default_rng(3)
    disc = 2 * np.log(2) * (1 + rng.normal(0.0, 0.001, steps.size))
    gen = 0.74 * (1 - generator_fall * np.linspace(0.0, 1.0, steps.size)) * (1 + rng.normal(0.0, 0.01, steps.size))
    return {"train/d_loss": (steps, disc), "train/g_loss": (steps, gen)}


def test_a_dead_game_is_stopped_only_when_a_second_check_finds_it_again():
    """Checks at 1,000, 2,000 and 3,000 steps of a GAN whose generator moves 2 %: flagged, then stopped."""
    code = decisions(replay_cuts(_gan(0.02), [1000, 2000, 3000]))
    assert code == "uSS", code


def test_a_frozen_discriminator_whose_generator_learns_is_never_stopped():
    """Control: the same discriminator while the generator's loss falls 30 %: flagged at every check."""
    verdicts = replay_cuts(_gan(0.3), [1000, 2000, 3000])
    assert all(v.decision is not Decision.STOP for v in verdicts), decisions(verdicts)
    assert all(_frozen_game(v, Severity.WARNING) for v in verdicts)


def test_an_eval_only_runs_loss_rising_steadily_is_stopped_in_its_own_direction(real):
    """log-lz-cagatayogretmen-1 (round 35, train, bad): an age regressor that logs only its val MSE, 167 at epoch 41,
    then 190, 212, 219, 231 … 259 by block. It was unsure from its ninth check to its end: the steady-decay stop
    of an eval-only run was read for higher-is-better evals only."""
    run = real["log-lz-cagatayogretmen-1"]
    assert run.split == "train" and run.label == "bad" and set(run.metrics) == {"eval/loss"}
    code, visible, verdicts = replay_real(run)
    assert "S" in code and "S" not in code[:visible], code
    stop = verdicts[code.index("S")]
    critical = [s for s in stop.signals if s.kind is SignalKind.EVAL_DEGRADING and s.severity is Severity.CRITICAL]
    assert critical and "no train loss and no eval score" in critical[0].message


def _eval_only_loss(cap: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """An eval-only run: its val loss falls to 1.0 at eval 10, then rises 2 % an eval, or levels off at ``cap``."""
    steps = np.arange(1, 61)
    shape = np.where(steps <= 10, 1.0 + (10 - steps) * 0.1, 1.0 + (steps - 10) * 0.02)
    noise = np.random.default_rng(5).normal(0.0, 0.01, steps.size)
    return {"eval/loss": (steps, np.minimum(shape, cap) * (1 + noise))}


def test_an_eval_only_loss_rising_steadily_is_stopped_once_it_is_further_than_at_the_check_before():
    code = decisions(replay_cuts(_eval_only_loss(np.inf), list(range(30, 61, 5))))
    assert "S" in code, code


def test_an_eval_only_loss_that_rose_and_levelled_off_is_not_stopped():
    """Control: the same rise levelled off at 1.25× its best from eval 23: flagged, never stopped."""
    code = decisions(replay_cuts(_eval_only_loss(1.25), list(range(30, 61, 5))))
    assert "S" not in code and "u" in code, code


def test_a_loss_found_at_its_untrained_level_and_still_at_its_start_a_check_later_is_stopped(real):
    """log-lz-ardalcar-1 (round 35, train, bad): a light-curve CNN's loss 0.1375 -> 0.1366 over 1,000 epochs, printed
    to 4 digits. Its first check found it identical to the last digit over its last 3 prints (critical at a second
    sight); at the next, its last 3 prints differed, so only the flat-start flag (never a stop) spoke, and the stop
    waited a check more."""
    run = real["log-lz-ardalcar-1"]
    code, visible, verdicts = replay_real(run)
    assert stopped_within_one_check(code, visible), (code, visible)
    stop = verdicts[code.index("S")]
    assert any("at its untrained level" in s.message for s in stop.signals if s.severity is Severity.CRITICAL)


def _flat_loss(identical_tail: bool) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A per-epoch loss at 0.1375 ± 0.3 %, printed to 4 digits; with ``identical_tail``, prints 23-25 are equal."""
    steps = np.arange(1, 61)
    values = np.round(0.1375 * (1 + np.random.default_rng(7).normal(0.0, 0.003, steps.size)), 4)
    if identical_tail:
        values[22:25] = 0.1375
    return {"train/loss": (steps, values)}


def test_a_frozen_finding_is_confirmed_by_a_loss_still_at_its_start():
    code = decisions(replay_cuts(_flat_loss(identical_tail=True), [25, 50]))
    assert code == "uS", code


def test_a_flat_start_alone_stays_a_flag_at_a_second_check():
    """Control: the same loss without the identical prints: the flat-start flag at both checks, not a stop while it
    spans fewer than the 50 points from which a flat start that persists is stopped (stop 37)."""
    code = decisions(replay_cuts(_flat_loss(identical_tail=False), [25, 45]))
    assert code == "uu", code


def test_an_eval_only_runs_loss_frozen_to_the_last_digit_is_flagged(real):
    """log-lh-agronowski-1 (round 39, train, ambiguous: converged or starved): a Keras MNIST classifier logging only
    its val loss, 0.5737 to four decimals from epoch 81 of 200 and 0.5736554 to seven from 141. It was continue at
    every check ("no clear trend", information); the frozen tail is a flag now, never a stop."""
    run = real["log-lh-agronowski-1"]
    assert run.split == "train" and run.label == "ambiguous" and set(run.metrics) == {"eval/loss"}
    code, _, verdicts = replay_real(run)
    assert "S" not in code and "u" in code, code
    flagged = verdicts[code.index("u")]
    assert any("to the last digit" in s.message and s.severity is Severity.WARNING for s in flagged.signals)


def test_an_eval_only_loss_still_moving_in_its_last_digits_is_not_flagged():
    """Control: the same geometric freeze printed to 4 significant digits but still moving in them is left to the
    trend ("no clear trend": information)."""
    steps = np.arange(1, 201)
    values = np.round(0.5737 + 1.5 * 0.93 ** steps + 1e-4 * np.sin(steps), 4)
    code = decisions(replay_cuts({"eval/loss": (steps, values)}, [120, 160, 200]))
    assert "u" not in code and "S" not in code, code
