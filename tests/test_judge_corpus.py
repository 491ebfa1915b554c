"""Each detector on real fragments of the labelled corpus (corpus/runs.jsonl.gz): the stored series cut
at a few steps and judged through the real state store, earlier verdicts carried, as a cron would."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from benchmarks.replay import Run, load_corpus, replay_fast
from mcp_training_check.models import Decision, Severity, Signal, SignalKind, Verdict


@pytest.fixture(scope="module")
def corpus() -> dict[str, Run]:
    return {run.id: run for run in load_corpus()}


def checks(run: Run, cuts: Sequence[int]) -> list[Verdict]:
    return replay_fast(run, list(cuts))


def found(verdict: Verdict, kind: SignalKind, metric: str | None = None) -> Signal:
    hit = next((s for s in verdict.signals if s.kind is kind and (metric is None or s.metric == metric)), None)
    assert hit is not None, (kind, metric, verdict.summary, [s.message for s in verdict.signals])
    return hit


def test_nan_onset_of_a_real_overflow_is_critical_and_not_called_the_hf_trap(corpus):
    """b01: a hand-written log-softmax overflows after an LR jump; loss and grad norm go NaN together."""
    *_, last = checks(corpus["b01"], [1149, 1230])
    assert last.decision is Decision.STOP
    loss = found(last, SignalKind.NON_FINITE, "train/loss")
    grad = found(last, SignalKind.NON_FINITE, "train/grad_norm")
    assert loss.severity is grad.severity is Severity.CRITICAL
    assert "HF Trainer" not in grad.message and "non-finite at every point since step" in grad.message
    assert "only 0 finite" not in loss.message


def test_hf_trap_nan_grad_norm_under_a_finite_loss_is_critical(corpus):
    """b15: HF Trainer's logging_nan_inf_filter logs finite (then 0.0) losses while the grad norm is NaN."""
    *_, last = checks(corpus["b15"], [986, 1060])
    grad = found(last, SignalKind.NON_FINITE, "train/grad_norm")
    assert grad.severity is Severity.CRITICAL and "HF Trainer's NaN filter" in grad.message
    zeros = found(last, SignalKind.NON_FINITE, "train/loss")
    assert "exactly 0.0" in zeros.message
    assert last.decision is Decision.STOP


def test_recovered_bad_batch_spike_is_info_never_stop(corpus):
    """h14: one corrupted batch at step 1200 of a healthy run."""
    verdicts = checks(corpus["h14"], [1150, 1205, 1300, 1450])
    assert all(v.decision is not Decision.STOP for v in verdicts), [v.summary for v in verdicts]
    spike = found(verdicts[-1], SignalKind.SPIKE_RECOVERED)
    assert spike.severity is Severity.INFO and spike.step is not None and 1200 <= spike.step < 1210


def test_flat_from_the_start_is_a_not_learning_warning_then_stopped(corpus):
    """a02: AdamW with a learning rate of 1e-6 — the loss barely moves (1.4 % below its start): a warning at
    the first check, critical at the next that still sees it at its initial level (issue 9, class 3)."""
    first, last = checks(corpus["a02"], [300, 600])
    flat = found(first, SignalKind.FLAT, "train/loss")
    assert flat.severity is Severity.WARNING and "not learning" in flat.message
    assert first.decision is Decision.UNSURE
    assert found(last, SignalKind.FLAT, "train/loss").severity is Severity.CRITICAL and last.decision is Decision.STOP


def test_converged_healthy_run_is_not_flat(corpus):
    """h08: logistic regression at a constant LR converges by step 300 and stays there."""
    verdicts = checks(corpus["h08"], [500, 1000, 1500, 2000])
    assert all(v.decision is Decision.CONTINUE for v in verdicts), [v.summary for v in verdicts]


def test_overfitting_is_eval_degrading_while_train_falls(corpus):
    """a07: a 1,000-example training subset; eval loss rises from step 150 on."""
    *_, last = checks(corpus["a07"], [400, 800])
    degrading = found(last, SignalKind.EVAL_DEGRADING, "eval/loss")
    assert degrading.severity is Severity.WARNING and "(overfitting)" in degrading.message
    assert last.decision is Decision.UNSURE


def test_sgdr_restarts_do_not_make_eval_degrading(corpus):
    """h06: SGDR restarts every 1,000 steps worsen eval for a few hundred steps, on purpose."""
    verdicts = checks(corpus["h06"], range(1200, 4001, 200))
    assert not any(s.kind is SignalKind.EVAL_DEGRADING for v in verdicts for s in v.signals)


def test_dead_lr_is_an_lr_warning(corpus):
    """a06: the linear schedule was configured for 3,000 steps but reaches 0 at step 900."""
    *_, last = checks(corpus["a06"], [800, 1000])
    lr = found(last, SignalKind.LR_ANOMALY, "train/lr")
    assert lr.severity is Severity.WARNING and "stopped learning" in lr.message


def test_lr_jump_then_divergence_is_critical_within_one_check(corpus):
    """b09: the LR is multiplied by 50 at step 1000; the loss climbs to chance level."""
    *_, last = checks(corpus["b09"], [990, 1080])
    div = found(last, SignalKind.DIVERGENCE, "train/loss")
    assert div.severity is Severity.CRITICAL and last.decision is Decision.STOP
    assert found(last, SignalKind.LR_ANOMALY, "train/lr").evidence["jump_ratio"] >= 10


def test_eval_collapse_is_critical_once_a_second_check_sees_it(corpus):
    """b12: eval labels misaligned from step 1500: accuracy falls to chance while train looks fine. The
    first check seeing the collapse warns (a transient would be back by the next); the next confirms it."""
    first, *_, last = checks(corpus["b12"], [1650, 1700])
    assert found(first, SignalKind.EVAL_DEGRADING, "eval/acc").severity is Severity.WARNING
    collapse = found(last, SignalKind.EVAL_DEGRADING, "eval/acc")
    assert collapse.severity is Severity.CRITICAL and "collapsed" in collapse.message


def test_eval_collapse_right_after_an_lr_jump_stops_at_once(corpus):
    """b10: the LR is 200× for a few steps from 1200 (all ReLUs die); the eval at 1200 already collapsed.
    One collapsed eval alone waits for a second; after an LR jump it is that jump's damage."""
    *_, last = checks(corpus["b10"], [1100, 1200])
    collapse = found(last, SignalKind.EVAL_DEGRADING, "eval/loss")
    assert collapse.evidence["collapsed_evals"] == 1
    assert collapse.severity is Severity.CRITICAL and "right after the LR left its schedule" in collapse.message
    assert last.decision is Decision.STOP


def test_eval_collapse_without_a_cause_waits_for_a_second_eval(corpus):
    """b13: blank eval inputs and a train spike at step 1200, no LR or grad-norm cause: one eval is not enough."""
    *_, last = checks(corpus["b13"], [1100, 1200])
    assert found(last, SignalKind.EVAL_DEGRADING, "eval/loss").severity is Severity.WARNING
    assert last.decision is Decision.UNSURE


def test_lr_running_away_from_a_constant_schedule_stops_before_the_loss_moves(corpus):
    """b06: from step 1000 the LR of a constant schedule grows 1 % a step; at 1080 it is 2.2× its
    configured value and the loss has not moved yet."""
    *_, last = checks(corpus["b06"], [990, 1080])
    lr = found(last, SignalKind.LR_ANOMALY, "train/lr")
    assert lr.severity is Severity.CRITICAL and "running away" in lr.message and lr.evidence["since_step"] == 1000
    assert last.decision is Decision.STOP
    assert not any(s.kind is SignalKind.DIVERGENCE and s.severity is not Severity.INFO for s in last.signals)


def test_noisy_shard_lifts_the_loss_for_two_checks_without_a_stop(corpus):
    """h17: 400 steps of 60 % corrupted labels: train loss 3× higher, then back. Watched (continue, the
    interval back to 10 min), never escalated: no reviewer could say more than WAIT before it recovers."""
    verdicts = checks(corpus["h17"], range(1400, 2401, 200))
    assert all(v.decision is Decision.CONTINUE for v in verdicts), [v.summary for v in verdicts]
    assert any(s.kind is SignalKind.DIVERGENCE and s.severity is Severity.WATCH for v in verdicts for s in v.signals)
    assert "(watching)" in next(v.summary for v in verdicts if any(s.severity is Severity.WATCH for s in v.signals))
    assert not any(s.severity is Severity.WATCH for s in verdicts[-1].signals)


def test_eval_worse_after_a_noisy_shard_is_not_called_overfitting(corpus):
    """h16: 60 % label noise over steps 1000–1300 worsens the evals at 1100–1300; the train loss was
    worse then too, so the train change is measured from the points the best eval (1000) had seen, and
    the eval only mirrors the train-loss episode: watched, not escalated."""
    *_, last = checks(corpus["h16"], [950, 1050, 1200, 1351])
    degrading = found(last, SignalKind.EVAL_DEGRADING, "eval/loss")
    assert degrading.severity is Severity.WATCH and "overfitting" not in degrading.message
    assert degrading.evidence["train_change"] > 0 and "train-loss trend judges it" in degrading.message
    assert last.decision is Decision.CONTINUE


def test_an_lr_jump_far_past_the_configured_peak_stops_at_the_first_check_after_it(corpus):
    """b16: cosine schedule, peak 0.1; at step 1500 the LR jumps 40× to 2.0, and the first check holds
    one point after it: the loss has not moved yet, the LR alone is certain."""
    *_, last = checks(corpus["b16"], [1400, 1501])
    lr = found(last, SignalKind.LR_ANOMALY, "train/lr")
    assert last.decision is Decision.STOP and lr.severity is Severity.CRITICAL
    assert lr.step == 1500 and lr.evidence["ratio"] == pytest.approx(20.0, rel=0.01)


def test_eval_below_baseline_is_a_warning(corpus):
    """a12: the given baseline accuracy (0.872) is never reached."""
    *_, last = checks(corpus["a12"], [1000, 2000])
    below = found(last, SignalKind.EVAL_BELOW_BASELINE, "eval/acc")
    assert below.severity is Severity.WARNING


def test_grad_norm_explosion_with_a_rising_loss_is_critical(corpus):
    """b17: an LR jump at step 1200 sends the grad norm up 7× before the NaNs."""
    *_, last = checks(corpus["b17"], [1198, 1211])
    grad = found(last, SignalKind.GRAD_EXPLODING, "train/grad_norm")
    assert grad.severity is Severity.WARNING and grad.evidence["ratio"] >= 5
    assert last.decision is Decision.STOP
