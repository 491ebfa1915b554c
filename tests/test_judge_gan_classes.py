"""Logs whose losses carry no name the judge reads as a train loss (issue 9, round 6): GANs judged on their
generator's reconstruction terms, and a multi-task model's unnamed terms. One test per class on a real
train-split run of corpus_real/, each with a control the class must not swallow."""

from __future__ import annotations

import numpy as np

from benchmarks.replay import checkpoints
from mcp_training_check.models import Direction, MetricRole
from mcp_training_check.roles import assign_roles, primary_train_loss
from tests.test_judge_classes import decisions, replay_cuts, replay_real


def test_a_pix2pixhd_run_is_judged_on_its_perceptual_term_and_its_long_flat_start_is_no_stall(real):
    """log-pix2pixHD-Owain-1 (train, healthy; github.com/Owain-LTW/Python_Exercises loss_log.txt): it logs
    G_GAN, G_GAN_Feat, G_VGG, D_real, D_fake and no name the judge read as a loss: unsure at all 20 checks for
    lack of one. Its VGG perceptual term is a reconstruction term in feature space: the train loss now. It sits
    at 5.8 for the first 60 % of the run (medians of twentieths 5.75, 5.84, 6.03, 5.89, 5.85, 5.78, ...) before
    it falls to 4.6, which the not-learning test stopped at checks 7, 8 and 10: in a GAN a flat reconstruction
    term is information. Control: the same term blowing up 20x over its last quarter is still a stop."""
    run = real["log-pix2pixHD-Owain-1"]
    roles = assign_roles(run.metrics)
    assert primary_train_loss(roles) == "train/G_VGG"
    assert roles["train/G_GAN_Feat"].role is MetricRole.OTHER  # an adversarial word: the game, not the output
    code, _, verdicts = replay_real(run)
    assert code == "." * 20, code
    assert any("information, not a stall" in s.message for v in verdicts for s in v.signals)
    steps, values = run.metrics["train/G_VGG"]
    blown = np.where(steps > steps[int(0.75 * steps.size)], values * 20, values)
    metrics = dict(run.metrics) | {"train/G_VGG": (steps, blown)}
    assert "S" in decisions(replay_cuts(metrics, checkpoints(run))), "a blow-up of a GAN term must still stop"


def test_a_resumed_cyclegans_flat_cycle_term_is_information_but_a_named_loss_is_judged_as_ever(real):
    """log-CycleGAN-akamob-1 (train, healthy; a CycleGAN resumed at epoch 45): its cycle_A moves 0.26 -> 0.23
    over 350k iterations late in the run, 'not learning' (unsure) at 8 checks. A CycleGAN's cycle term trades
    against its discriminators: information. Control: the same values logged under a plain name beside the
    discriminators (``train/loss``) are judged as any loss and still flagged."""
    run = real["log-CycleGAN-akamob-1"]
    code, _, _ = replay_real(run)
    assert code == "." * 20, code
    metrics = {("train/loss" if name == "train/cycle_A" else name): series for name, series in run.metrics.items()}
    assert "u" in decisions(replay_cuts(metrics, checkpoints(run)))


def test_a_log_of_unnamed_train_terms_is_judged_on_them(real):
    """log-MAJOR-BCT-3D-1 (train, healthy; github.com/MAJOR-BCT/3D loss_log.txt): a multi-task 3D model
    prints train/mtm, train/fdepth, train/bdepth, train/segmt, train/warp with a pix2pix-style logger, none
    with a word the judge reads: unsure at all 20 checks. Every metric of the run is a train-split term with
    no word of its own, so each is a train loss: continue at every check. Control: the same terms frozen at
    their first values are a stop (the judge reads them, it does not just stay quiet)."""
    run = real["log-MAJOR-BCT-3D-1"]
    roles = assign_roles(run.metrics)
    assert {name for name, info in roles.items() if info.role is MetricRole.TRAIN_LOSS} == set(run.metrics)
    code, _, _ = replay_real(run)
    assert code == "." * 20, code
    frozen = {name: (steps, np.full_like(values, values[0])) for name, (steps, values) in run.metrics.items()}
    assert "S" in decisions(replay_cuts(frozen, checkpoints(run)))


def test_an_inpainting_gans_kl_and_psnr_on_its_reconstruction_branch_are_no_train_loss(real):
    """log-Inpainting-Evaluation-1 (train, healthy; HemanthGaddey/Semantic-Image-Inpainting-Evaluation
    loss_log.txt): a text-guided inpainting GAN whose reconstruction branch logs ``kl_rec`` (a KL term, flat at
    0.3: medians of twentieths 0.37, 0.40, 0.33, ... 0.28) and ``psnr_img_rec`` (a PSNR, 27.9 dB: higher is
    better) beside its L1 terms (``l1_rec`` 10.7 -> 5.9). The ``rec`` word made both reconstruction losses and
    the KL term the train loss the judge followed. A KL term need not fall (`NOT_FALLING_TOKENS`, as for
    unnamed terms) and a PSNR rises as the model learns: neither is a loss; the L1 terms are. Controls: the
    run stays continue at every check; its L1 terms stay train losses."""
    run = real["log-Inpainting-Evaluation-1"]
    roles = assign_roles(run.metrics)
    assert roles["train/kl_rec"].role is MetricRole.OTHER
    assert roles["train/psnr_img_rec"].role is MetricRole.OTHER
    assert roles["train/psnr_img_rec"].direction is Direction.HIGHER
    assert roles["train/l1_rec"].role is roles["train/l1_g"].role is MetricRole.TRAIN_LOSS
    code, _, verdicts = replay_real(run)
    assert code == "." * 20, code
    judged = {s.metric for v in verdicts for s in v.signals if s.metric}
    assert judged and judged <= {"train/l1_rec", "train/l1_g"}, judged
