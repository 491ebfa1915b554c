"""Judge changes of stop 37: each test fails on the code before its change, the GAN exemption included (the rule it
exempts from is new); the step-down and LR controls pass on both."""

from __future__ import annotations

import numpy as np

from benchmarks.replay import checkpoints
from mcp_training_check.models import Severity
from tests.test_judge_classes import decisions, replay_cuts, replay_real
from tests.test_judge_stop35 import _not_learning

PERSISTED = "large share of its steps"


def _flat_start(verdict, metric: str = "train/loss"):
    return [s for s in _not_learning(verdict, metric) if "from its start" in s.message]


def test_a_loss_at_its_first_level_for_all_its_epochs_is_stopped_once_the_stall_persists(real):
    """log-lv-maple-ntf-1 (round 41, train, bad): an LSTM classifier at 2.80-2.97 for all 121 epochs, no LR and no
    total logged. 'Not learning from its start' was a warning at 17 checks and the run was never stopped. It is now
    stopped at the first check whose stall spans 50 points, the check before having found it too."""
    run = real["log-lv-maple-ntf-1"]
    assert run.split == "train" and run.label == "bad"
    code, _, verdicts = replay_real(run)
    first = code.index("S")
    assert "S" not in code[:first] and set(code[first:]) == {"S"}, code
    stop = [s for s in _flat_start(verdicts[first]) if s.severity is Severity.CRITICAL]
    assert stop and PERSISTED in stop[0].message and stop[0].evidence["points"] >= 50, stop
    before = _flat_start(verdicts[first - 1])
    assert before and before[0].severity is Severity.WARNING and before[0].evidence["points"] < 50


def test_a_binary_classifier_at_chance_for_its_whole_log_is_stopped_once_the_stall_persists(real):
    """log-tw-kruthikahassan-1 (round 38, train, bad, the other fold): a loss at 100 ln 2 = 69.32 and an accuracy at
    0.50 for 100 epochs, unsure at every check from its 3rd: stopped now once the flat start spans 50 points."""
    run = real["log-tw-kruthikahassan-1"]
    assert run.split == "train" and run.label == "bad"
    code, _, verdicts = replay_real(run)
    assert "S" in code, code
    assert any(PERSISTED in s.message for s in _flat_start(verdicts[code.index("S")]))


def test_a_flat_start_that_steps_down_between_its_thirds_is_not_stuck(real):
    """Control: the LSTM's loss with a 3 % step down from its 40th epoch (every point still within 5 % of the first
    by its rolling median) has moved beyond its noise: the flat-start flag stays a warning, never a stop."""
    run = real["log-lv-maple-ntf-1"]
    steps, values = run.metrics["train/loss"]
    stepped = np.where(np.arange(values.size) >= 40, values * 0.97, values)
    verdicts = replay_cuts({"train/loss": (steps, stepped)}, checkpoints(run))
    assert "S" not in decisions(verdicts)
    flagged = [s for v in verdicts for s in _flat_start(v)]
    assert flagged and all(s.severity is Severity.WARNING for s in flagged)


def test_a_flat_start_beside_a_logged_lr_is_left_to_the_lr_rule(real):
    """Control: the same stall beside a constant logged LR: the LR says whether the schedule has spent its learning
    phase (it has not), so the persistence rule does not speak; a warning to the end."""
    run = real["log-lv-maple-ntf-1"]
    steps, values = run.metrics["train/loss"]
    metrics = {"train/loss": (steps, values), "train/lr": (steps, np.full(values.size, 1e-3))}
    verdicts = replay_cuts(metrics, checkpoints(run))
    assert "S" not in decisions(verdicts)
    assert all(PERSISTED not in s.message for v in verdicts for s in _flat_start(v))


def test_a_gan_generator_loss_held_at_its_first_level_is_a_flag(real):
    """Control: the same values as a GAN generator's adversarial loss beside a moving discriminator: its level is set
    by the other side of the game, so the persisted stall is a flag, never a stop."""
    run = real["log-lv-maple-ntf-1"]
    steps, values = run.metrics["train/loss"]
    d_loss = 0.6 + 0.1 * np.sin(np.arange(values.size) / 3.0)
    verdicts = replay_cuts({"train/g_loss": (steps, values), "train/d_loss": (steps, d_loss)}, checkpoints(run))
    assert "S" not in decisions(verdicts)
    held = [s for v in verdicts for s in _flat_start(v, "train/g_loss") if PERSISTED in s.message]
    assert held and all(s.severity is Severity.WARNING and "one side of a GAN" in s.message for s in held)


def test_a_frozen_eval_loss_beside_a_perfect_top1_is_not_a_dead_network(real):
    """log-nf-hsbi-lerngruppe-bres-1 (round 75, train, healthy): an Ultralytics classifier at top-1 1.0 for its last
    epochs, its val loss 2.2484 to the last digit at 19 of its last 20 evals while its train loss rests at its floor:
    the held-out predictions no longer change because they are all right. It was stopped for the frozen loss."""
    run = real["log-nf-hsbi-lerngruppe-bres-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, _ = replay_real(run)
    assert "S" not in code, code


def test_a_frozen_eval_loss_beside_an_imperfect_top1_still_stops(real):
    """Control: the same run with its top-1 at 0.99 over the evals where the loss repeats is the frozen output it was:
    stopped as before."""
    run = real["log-nf-hsbi-lerngruppe-bres-1"]
    steps, top1 = run.metrics["eval/accuracy_top1"]
    imperfect = np.where(top1 >= 1.0, 0.99, top1)
    verdicts = replay_cuts(dict(run.metrics) | {"eval/accuracy_top1": (steps, imperfect)}, checkpoints(run))
    assert "S" in decisions(verdicts)
