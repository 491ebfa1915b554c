"""Failure classes of the judge on healthy real runs (issue 9, the healthy side): what made it stop or escalate
a run that was fine, one test per class on a fragment of a real train-split run of corpus_real/, each with a
control the class must not swallow."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.corpus_runs import CORPUS, load_corpus
from benchmarks.replay import checkpoints
from mcp_training_check.judge.stats import eval_set_size
from mcp_training_check.models import MetricRole
from mcp_training_check.roles import assign_roles, primary_train_loss
from tests.test_judge_classes import decisions, replay_cuts, replay_real, with_point


def collapses(verdicts: list) -> list[str]:
    return [s.message for v in verdicts for s in v.signals if "collapsed" in s.message]


def test_a_loss_eval_near_its_floor_is_measured_from_the_level_it_held_not_its_luckiest_eval(real):
    """log-EmoNetTCN-1 (train, healthy): its eval loss, logged to 4 decimals, wanders 4e-4-1.5e-3 for its last
    hundred epochs; its single lowest eval is 3e-4, so an eval of 1e-3 was 'collapsed: 3x its best' (unsure at
    check 17). Measured from the level it held (best median of 3 evals, 4e-4) no eval collapses. Control: the
    same eval loss jumping to 3e-3 (7x that level) for its last evals before check 17 still collapses, and
    four such evals in a row are a stop."""
    run = real["log-EmoNetTCN-1"]
    code, _, verdicts = replay_real(run)
    assert set(code) == {"."}, code
    assert not collapses(verdicts), collapses(verdicts)
    steps, values = run.metrics["eval/loss"]
    jumped = np.where((steps > 444) & (steps <= 450), 3e-3, values)
    metrics = dict(run.metrics) | {"eval/loss": (steps, jumped)}
    last = replay_cuts(metrics, checkpoints(run)[:18])[-1]
    assert last.decision.value == "stop" and "eval/loss collapsed" in last.spelled_out(), last.summary


def test_an_accuracy_at_zero_on_a_five_sample_eval_is_confirmed_not_stopped_at_once(real):
    """log-st-gcn-master-improved-1 (train, ambiguous only from epoch 29): its top-1 accuracy is measured on 5
    samples (0, 0.2, 0.4 only) and reads 0.2, 0.2, 0, 0.4: 'at zero: the model is broken' stopped it at its
    third check. A model at 0.2 scores 0 on 5 samples a third of the time (0.8^5), and 1 right of 5 against 0
    of 5 is no shortfall sampling cannot explain (Fisher's exact test: p = 0.5, `_beyond_sampling`, stop 29):
    no collapse at all (it was watched at one eval before that rule). Control: the same eval falling from 0.8
    to 0 (0.2^5 = 0.03 %) is still at zero at once."""
    run = real["log-st-gcn-master-improved-1"]
    code, visible, verdicts = replay_real(run)
    assert "S" not in code[:visible] and code[2] == ".", code
    assert not any("collapsed" in s.message for s in verdicts[2].signals), verdicts[2]
    steps, values = run.metrics["eval/top1_accuracy"]
    fell = np.where(steps < 14, 0.8, values)
    metrics = dict(run.metrics) | {"eval/top1_accuracy": (steps, fell)}
    third = replay_cuts(metrics, checkpoints(run)[:3])[-1]
    assert third.decision.value == "stop" and "at zero" in third.spelled_out(), third.summary


@pytest.mark.parametrize(
    ("values", "size"),
    [
        ([0.2, 0.4, 0.0], 5),
        ([0.5, 0.25, 0.75], 4),
        ([0.83, 0.0], 100),
        ([0.4123, 0.0], None),
        ([12.5, 0.0], None),
    ],
)
def test_the_eval_set_size_is_the_fewest_samples_whose_fractions_give_every_value(values, size):
    assert eval_set_size(np.array(values), 100) == size


def test_a_mild_overfit_of_the_eval_loss_while_the_accuracy_holds_its_best_is_information(real):
    """log-Detect-Clothes-1 (train, healthy): after its last LR cut a Keras classifier's val loss creeps 2-12 %
    above its best (a significant trend, 'mildly overfitting') while its val accuracy holds 0.90-0.91: unsure at
    its last 7 checks. With the quality eval at its best the creep is over-confidence: information. Control:
    the same run with its accuracy 10 % lower over the same epochs (no longer at its best) is flagged on the
    val loss's mild overfit again."""
    run = real["log-Detect-Clothes-1"]
    code, _, verdicts = replay_real(run)
    assert set(code) == {"."}, code
    assert any("over-confidence" in s.message for s in verdicts[-1].signals), verdicts[-1].summary
    steps, values = run.metrics["eval/accuracy"]
    lowered = dict(run.metrics) | {"eval/accuracy": (steps, np.where(steps > 200, values * 0.9, values))}
    last = replay_cuts(lowered, checkpoints(run))[-1]
    assert last.decision.value == "unsure", last.summary
    assert any("mildly overfitting" in s.message and s.severity.value == "warning" for s in last.signals), [
        s.message for s in last.signals
    ]


def test_a_loss_below_zero_is_judged_on_its_own_scale_not_by_ratios(real):
    """log-keypoint-yjy-1 (train, healthy): an unsupervised keypoint network's loss is a log-scale distance,
    -3.84 at its first print, -6.0 fifty epochs later, -6.4 at its end. Read as log(loss) every negative point
    clamped to one floor, so the loss looked frozen: 'not learning from its start' at its first 7 checks and
    stopped from check 7 on. On its own scale it falls: continue at every check. Control: the same points in
    reverse order (a loss climbing from -6.4 back to -3.8) are flagged, never stopped (its untrained level is
    unknown)."""
    run = real["log-keypoint-yjy-1"]
    code, _, _ = replay_real(run)
    assert set(code) == {"."}, code
    steps, values = run.metrics["train/O_loss"]
    metrics = dict(run.metrics) | {"train/O_loss": (steps, values[::-1].copy())}
    climbing = decisions(replay_cuts(metrics, checkpoints(run)))
    assert "S" not in climbing and climbing.endswith("u"), climbing


def test_an_adversarial_term_on_a_reconstruction_branch_is_not_the_train_loss(real):
    """log-Inpainting-Evaluation-1 (train, healthy): a text-guided inpainting GAN logs its generator's and its
    discriminator's adversarial losses on its reconstruction branch as ``gan_rec`` and ``dis_img_rec``. The
    ``rec`` made ``gan_rec`` a reconstruction loss, and the first of them by name: the judge followed an
    adversarial term that swings around its balance (0.3-0.8) for 228 epochs, 'not learning', and stopped the
    run at its last 4 checks. With adversarial words outvoting the branch name it follows an L1 term (a KL term
    on that branch, ``kl_rec``, is no reconstruction loss: `test_judge_gan_classes`), which falls: continue at
    every check. Control: that reconstruction term frozen at its first value is still a stop."""
    run = real["log-Inpainting-Evaluation-1"]
    roles = assign_roles(run.metrics)
    assert primary_train_loss(roles) == "train/l1_rec"
    assert roles["train/gan_rec"].role is MetricRole.OTHER and roles["train/dis_img_rec"].role is MetricRole.OTHER
    assert roles["train/l1_rec"].role is MetricRole.TRAIN_LOSS
    code, _, _ = replay_real(run)
    assert set(code) == {"."}, code
    steps, values = run.metrics["train/l1_rec"]
    metrics = dict(run.metrics) | {"train/l1_rec": (steps, np.full_like(values, values[0]))}
    frozen = decisions(replay_cuts(metrics, checkpoints(run)))
    assert "S" in frozen, frozen


def test_a_frozen_eval_accuracy_beside_a_falling_eval_loss_is_a_flag_not_a_stop(real):
    """log-EEG-Classification-1 (train, bad: an overfit from step 79): its val accuracy is 0.48062, one class's
    share, at its first 23 evals while its val loss falls 1.78 -> 1.70 over the first 6, then the model learns
    (val accuracy 0.50-0.56, train accuracy 0.3 -> 0.9). 'Frozen from its first eval: the output does not
    change' stopped it at its second check, 12 steps into 118, before its fault. The falling val loss says the
    outputs do change: a flag there, and the overfit is still stopped after it is visible. Control: the same
    run with its val loss frozen too over those evals is stopped at its second check as before."""
    run = real["log-EEG-Classification-1"]
    code, visible, _ = replay_real(run)
    assert "S" not in code[:visible] and code[0] == "u" and "S" in code[visible:], code
    steps, values = run.metrics["eval/loss"]
    frozen = np.where(steps <= 45, values[0], values)
    metrics = dict(run.metrics) | {"eval/loss": (steps, frozen)}
    second = replay_cuts(metrics, checkpoints(run)[:2])[-1]
    assert second.decision.value == "stop" and "to the last digit" in second.summary, second.summary


def test_an_eval_loss_repeated_to_the_last_digit_over_its_last_evals_is_stopped(real):
    """log-Tweet-Popularity-1 (train, bad: eval_frozen): a Keras regressor's val loss is 0.0325, 0.0333, then
    exactly 0.03065895905925168 at every epoch to 4,000 (one 0.314 at epoch 386) while its train loss sits at
    0.042: a dead network, visible at the first check, stopped only at check 7 by the train loss's 'not
    learning'. A continuous loss repeated to the last digit over ≥ 10 evals while nothing else moves is
    confirmed at the next check: stopped at check 1 (until stop 32 the epoch-386 eval restarted the count once,
    and the stop waited to check 3; the repeats are now counted across that one eval). Control: the same val
    loss with a jitter in its 5th significant digit is not read as frozen."""
    run = real["log-Tweet-Popularity-1"]
    code, visible, _ = replay_real(run)
    assert visible == 0 and code.index("S") == 1, code
    steps, values = run.metrics["eval/loss"]
    jitter = values * (1 + 1e-4 * (np.arange(values.size) % 3))
    metrics = dict(run.metrics) | {"eval/loss": (steps, jitter)}
    verdicts = replay_cuts(metrics, checkpoints(run)[:4])
    assert not any("to the last digit" in s.message for v in verdicts for s in v.signals)
    assert "S" not in decisions(verdicts), decisions(verdicts)


def test_an_eval_loss_frozen_by_a_dead_lr_is_the_lr_flag_not_a_stop():
    """corpus/ a05 (ambiguous: dead LR): a cosine schedule decays its LR a thousandfold by mid-run, after which
    the model no longer changes and its eval loss repeats to the last digit at every eval. The schedule
    explains the frozen eval: the LR detector's dead-LR flag, unsure to the end, never a stop. Control: the
    same run without its LR logged has nothing to explain the frozen eval loss, which is then stopped."""
    run = {r.id: r for r in load_corpus(CORPUS)}["a05"]
    cuts = checkpoints(run)
    code = decisions(replay_cuts(dict(run.metrics), cuts, run_config=run.config))
    assert "S" not in code and code.count("u") >= 10, code
    without_lr = {name: series for name, series in run.metrics.items() if name != "train/lr"}
    assert "S" in decisions(replay_cuts(without_lr, cuts, run_config=run.config))


def test_a_quality_eval_collapsed_at_one_eval_is_watched_not_escalated(real):
    """log-yolo_gas-1 (train, healthy): a YOLOv5 mAP_0.5:0.95 at 0.115 for one epoch (25) after 0.272, back to
    0.232 at the next: 'collapsed: ≤ 50 % of its best' made check 12 unsure, and a reviewer asked then could
    only have answered WAIT. One collapsed eval is watched, as a train-loss episode seen once is. Control: the
    same mAP held at 0.115 from epoch 25 on is confirmed at the next check with a new eval, a stop."""
    run = real["log-yolo_gas-1"]
    code, _, verdicts = replay_real(run)
    assert set(code) == {"."}, code
    assert any(s.severity.value == "watch" for s in verdicts[12].signals if "collapsed" in s.message), verdicts[12]
    steps, values = run.metrics["eval/mAP_0.5:0.95"]
    metrics = dict(run.metrics) | {"eval/mAP_0.5:0.95": (steps, np.where(steps >= 25, 0.115, values))}
    held = decisions(replay_cuts(metrics, checkpoints(run)[:14]))
    assert held[12] == "." and held[13] == "S", held


def test_a_flat_train_loss_beside_an_eval_that_gained_most_of_its_headroom_is_not_flagged(real):
    """log-irrigation-classification-1 (train, healthy): a per-step train loss noisy at 1e-3..0.2 reads flat over
    its 21-24 points after its first epoch (unsure at checks 6-7), while its 2 evals so far gained 79 % of the
    F1's headroom (0.874 → 0.973) and 84 % of the eval loss (0.474 → 0.077): too few for a rank test, but the
    model plainly still improves on held-out data. Control: the same run with its second eval barely better
    (F1 0.875, eval loss 0.470) is flagged flat again."""
    run = real["log-irrigation-classification-1"]
    code, _, _ = replay_real(run)
    assert set(code) == {"."}, code
    loss_steps, loss = run.metrics["eval/loss"]
    metrics = with_point(run, "eval/f1", 1, 0.875) | {"eval/loss": (loss_steps, np.r_[loss[0], 0.470, loss[2:]])}
    last = replay_cuts(metrics, checkpoints(run)[:7])[-1]
    assert last.decision.value == "unsure" and "is flat over all" in last.spelled_out(), last.summary


def test_a_loss_lower_at_every_logged_point_is_not_flat(real):
    """issue-mmpretrain-742 (train, healthy): mmcls in its LR warm-up, loss 6.704 → 6.618 over 8 logs, lower at
    every one; the autocorrelation correction of a smooth curve leaves its Mann–Kendall z at -1.9, and its
    band ruled out a 5 % fall: 'flat', unsure at its last check. A loss that fell at every logged point is
    falling. Control: the same log with its 5th log a hair above its 4th (6.654 after 6.6535) is flagged flat
    again: the exemption is for a fall at every point, not for a loss that leans down."""
    run = real["issue-mmpretrain-742"]
    code, _, _ = replay_real(run)
    assert set(code) == {"."}, code
    last = replay_cuts(with_point(run, "train/loss", 4, 6.654), checkpoints(run))[-1]
    assert last.decision.value == "unsure" and "is flat over all" in last.spelled_out(), last.summary
