"""Slow divergences of corpus_real/'s train split (issue 9, class loss_blowup / slow_divergence): a train loss back
above where it started, with no eval witness (`LossRiseTests._undone`); one test on a real train-split run, with
controls."""

from __future__ import annotations

import numpy as np
import pytest

from tests.test_judge_classes import decisions, every, replay_cuts, replay_real

UNDONE = "all it learned is undone"  # the back-at-its-start finding's message


def _undone_checks(verdicts) -> list[int]:
    return [i for i, v in enumerate(verdicts) if any(UNDONE in s.message for s in v.signals)]


def test_a_loss_back_above_its_start_with_no_eval_witness_is_flagged(real):
    """log-lr-cheralia-1 (train, bad, slow_divergence): a predictive-coding GPT's batch loss 9.46 -> best block median
    7.89, then back at 9.26 by step 2,007, above the 8.41 of its first 20 prints, and 9.3-10.9 to its end; only 2
    evals, so no eval accuracy can witness it. It was continue at every check from its fault; it is now unsure two
    checks after the fault shows (a look, not a stop: the episode is not confirmed on 3 checks in a row)."""
    run = real["log-lr-cheralia-1"]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    assert "u" in code[visible : visible + 3], code
    assert "S" not in code, code
    flagged = _undone_checks(verdicts)
    assert flagged and flagged[0] == code.index("u", visible), (flagged, code)


def test_a_climb_back_flag_keeps_its_continuity_across_a_back_at_start_check(real):
    """log-tx-aaaaaiden-1 (train, bad): an adversarial autoencoder's reconstruction loss climbing back 0.00624 ->
    0.0077 from epoch 8. The back-at-start warning fires at three checks before the climb-back test's own warning
    takes over; the climb-back test counts it as the climb seen at the previous check, so no check in between
    drops to continue (unsure from the 7th check to the end, as before)."""
    run = real["log-tx-aaaaaiden-1"]
    assert run.split == "train" and run.label == "bad"
    code, _, verdicts = replay_real(run)
    assert code[6:] == "u" * (len(code) - 6), code
    assert _undone_checks(verdicts), code


@pytest.mark.parametrize(
    "run_id",
    [
        "log-MLP_FPS-1",  # a regression loss 0.2 -> 4e-5 wobbling at its floor by 3x its best
        "log-rt-qinggangwu-2",  # a YOLOv7 keypoint fine-tune whose box loss climbs 0.0136 -> 0.0221 in its warm-up
        "log-tokalign-baseline-1",  # continued pretraining, per-step 1.95-2.37, flat then slowly falling
    ],
)
def test_healthy_runs_that_wobble_or_climb_a_little_are_not_back_at_their_start(real, run_id):
    """Controls, healthy train runs: a floor's wobble, a fine-tune's warm-up climb and a noisy continued pretraining
    never read as a loss back above its start."""
    run = real[run_id]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    assert not _undone_checks(verdicts), code


def _climb_back(to: float, seed: int = 3) -> np.ndarray:
    """A loss falling 3 -> 2 over 300 points (the median of its first 20 about 2.8), then climbing back to ``to``
    over 200, 2 % noise: below the divergence's 2x its best, so only the slow-divergence rules can see it."""
    rng = np.random.default_rng(seed)
    fall = 2.0 + np.exp(-np.arange(300) / 40.0)
    climb = np.geomspace(2.0, to, 200)
    return np.concatenate((fall, climb)) * np.exp(rng.normal(0.0, 0.02, 500))


def test_a_climb_part_of_the_way_back_is_not_undone_and_one_past_the_start_is():
    """Synthetic: the same fall, then a climb to 1.25x its best (two thirds of the way back to its early median on
    the log scale, 10 % below it: a lift a schedule or a curriculum can make) is never read as undone; a climb to
    1.8x its best, above the median of its first points, is flagged, and not stopped before it is confirmed."""
    cuts = [1000, 2000, 3000, 3500, 4000, 4500, 5000]
    steps = every(10, 500)
    partial = replay_cuts({"train/loss": (steps, _climb_back(2.5))}, cuts)
    assert not _undone_checks(partial), decisions(partial)
    assert "S" not in decisions(partial)
    past = replay_cuts({"train/loss": (steps, _climb_back(3.6))}, cuts)
    assert _undone_checks(past), decisions(past)


WARMUP_UNDONE = "never came back after its warmup"  # `LossClimbTests._warmup_undone`'s finding


def test_a_warmup_that_undid_the_run_is_stopped_before_ten_logs_follow_it(real):
    """log-Whisper_Finetune-1 (train, bad, slow_divergence): a Whisper LoRA's loss 0.118 at step 125, then 0.30-0.33
    as its LR warms up to 1e-4 (ended at step 525); eval loss 0.219 -> 0.416 by step 500. The warmup-undone test
    waited for 10 logs after the warmup (the trend rules' minimum): watched at step 750, stopped at 825 (the 10th
    check). From 3 logs after it, it is watched at step 600 and stopped at 675 (the 8th check)."""
    run = real["log-Whisper_Finetune-1"]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    first = code.find("S")
    assert visible < first <= 8, code
    assert any(WARMUP_UNDONE in s.message for s in verdicts[first].signals), verdicts[first].summary


@pytest.mark.parametrize(
    "run_id",
    [
        "log-whisper-small-zh-1",  # a Whisper fine-tune with its LR warmup and a CER eval
        "log-rl-its-kumar-yash-1",  # a LoRA fine-tune: 2.39 -> 2.09 in its 5-step warmup
        "log-tl-ishihara-masabumi-1",  # an SFT with a 16-log warmup and an eval loss
        "log-CattleAssist-Chatbot-1",  # a chatbot fine-tune: warmup over its first 10 logs, eval loss
    ],
)
def test_healthy_fine_tunes_with_a_warmup_are_not_undone_by_it(real, run_id):
    """Controls, healthy train runs whose LR warms up beside an eval: no warmup-undone finding at any check."""
    run = real[run_id]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    assert not any(WARMUP_UNDONE in s.message for v in verdicts for s in v.signals), code
