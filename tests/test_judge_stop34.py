"""Judge changes of stop 34: each test fails on the code before its change."""

from __future__ import annotations

import re

import numpy as np

from mcp_training_check.models import Decision, Severity, SignalKind
from tests.test_judge_classes import decisions, replay_cuts, replay_real


def _non_finite(verdict, metric: str):
    return next(s for s in verdict.signals if s.kind is SignalKind.NON_FINITE and s.metric == metric)


def _since(message: str) -> tuple[int, int | None]:
    found = re.search(r"since step ([\d,]+)(?: \(the last finite one at step ([\d,]+)\))?", message)
    assert found, message
    first, last = (int(g.replace(",", "")) if g else None for g in found.groups())
    assert first is not None
    return first, last


def test_a_loss_gone_nan_names_the_step_it_went_and_the_last_finite_one():
    """A user stopping a run that went NaN resumes from a checkpoint before it: the finding says where the streak
    began (step 700 of a log every 10 steps) and the last finite step (690), not only the latest NaN step."""
    steps = np.arange(1, 101) * 10
    loss = 2.0 * np.exp(-steps / 400) + 0.5
    loss[steps >= 700] = np.nan
    (verdict,) = replay_cuts({"train/loss": (steps, loss)}, [1000])
    finding = _non_finite(verdict, "train/loss")
    assert finding.severity is Severity.CRITICAL
    assert _since(finding.message) == (700, 690), finding.message


def test_a_grad_norm_nan_under_hf_trainers_zero_loss_names_where_it_began():
    """HF Trainer's NaN filter logs loss 0.0 once the weights are NaN: the grad-norm finding names the first NaN."""
    steps = np.arange(1, 101) * 10
    loss = 2.0 * np.exp(-steps / 400) + 0.5
    grad = np.full(steps.size, 1.2)
    loss[steps >= 730], grad[steps >= 730] = 0.0, np.nan
    (verdict,) = replay_cuts({"train/loss": (steps, loss), "train/grad_norm": (steps, grad)}, [1000])
    finding = _non_finite(verdict, "train/grad_norm")
    assert finding.severity is Severity.CRITICAL and "HF Trainer" in finding.message
    assert _since(finding.message) == (730, 720), finding.message


def test_a_log_nan_from_its_first_point_says_so():
    steps = np.arange(1, 41)
    metrics = {"train/loss": (steps, np.full(steps.size, np.nan)), "eval/loss": (steps, 1 / steps)}
    (verdict,) = replay_cuts(metrics, [40])
    finding = _non_finite(verdict, "train/loss")
    assert finding.severity is Severity.CRITICAL
    assert _since(finding.message) == (1, None) and "its first" in finding.message, finding.message


def test_a_memorised_loss_jittering_at_its_floor_is_not_stopped(real):
    """log-js-carloslfu-1 (round 45, train, healthy): a grokking transformer whose train loss sits at 3e-7 with jumps
    to 1e-4 and whose eval loss wanders 1e-4 to 1e-3 at eval accuracy 1.0. Ratios at that floor ("blew up 10× its
    best", "collapsed ≥ 3× its best") stopped it at 12 of its 20 checks; only its first check, where the eval loss
    rises 4.8 → 16.9 while it memorises, is a stop now."""
    run = real["log-js-carloslfu-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert code[0] == "S" and "S" not in code[1:], code
    floored = [s for v in verdicts for s in v.signals if "converged to its floor" in s.message]
    assert floored and all(s.severity is Severity.INFO for s in floored)


def _memorised(jump_to: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A loss falling from 2.3 to 1e-6 by step 1,000, then at 1e-6 ± 30 % with one block (steps 1,500-1,800) at
    ``jump_to``."""
    steps = np.arange(1, 301) * 10
    rng = np.random.default_rng(7)
    loss = np.maximum(2.3 * np.exp(-steps / 70), 1e-6) * np.exp(rng.normal(0.0, 0.3, steps.size))
    loss[(steps >= 1500) & (steps <= 1800)] = jump_to * np.exp(rng.normal(0.0, 0.1, 31))
    return {"train/loss": (steps, loss)}


def test_a_rise_within_the_floor_is_information():
    """The block at 3e-4 (1,000× the floor, 0.01 % of the start): no stop, no flag for it."""
    verdicts = replay_cuts(_memorised(3e-4), [1400, 1600, 1700, 1800])
    assert all(v.decision is not Decision.STOP for v in verdicts), decisions(verdicts)
    assert any("converged to its floor" in s.message for v in verdicts for s in v.signals)


def test_a_loss_that_leaves_its_floor_is_still_stopped():
    """Control: the same block at 0.5 (a fifth of the start) is a blow-up, stopped within the block."""
    code = decisions(replay_cuts(_memorised(0.5), [1400, 1600, 1700, 1800]))
    assert "S" in code, code


def test_an_eval_loss_on_another_scale_from_its_first_eval_is_no_deep_overfit(real):
    """log-tv-pereteanugeorge-1 (round 46, train, healthy): a model-inversion attack whose test loss (181 → 132,
    +3 % at the end) is a sum beside a per-sample train loss (9.2 → 4.4): 20× the train loss from its first eval.
    Rising 136 → 137 there read as "a deep, growing overfit" and stopped it at its tenth check."""
    run = real["log-tv-pereteanugeorge-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    assert not any("deep, growing overfit" in s.message for v in verdicts for s in v.signals)


def test_a_deep_overfit_whose_gap_keeps_opening_is_still_stopped(real):
    """Control: log-rl-shania3322-1 (round 20, train, bad): a Joey-NMT dev loss summed over tokens, 1.5·10⁵× its train
    loss at its first eval and 1.5·10⁶× two evals later, ten times the gap it started with."""
    run = real["log-rl-shania3322-1"]
    code, visible, verdicts = replay_real(run)
    assert "S" in code[visible:], code
    stop = verdicts[code.index("S", visible)]
    assert any("deep, growing overfit" in s.message and s.severity is Severity.CRITICAL for s in stop.signals)


def test_a_continue_verdict_does_not_lead_with_a_finding_found_harmless():
    """The one-line summary of a continue verdict whose loss rose within its floor named the floored finding
    ("CONTINUE: train/loss blew up ..."); it leads with a signal that names no problem now."""
    verdicts = replay_cuts(_memorised(3e-4), [1400, 1600, 1700, 1800])
    floored = [(v, s) for v in verdicts for s in v.signals if "converged to its floor" in s.message]
    assert floored
    for verdict, finding in floored:
        assert verdict.decision is Decision.CONTINUE
        assert not verdict.summary.startswith(f"CONTINUE: {finding.gist()}"), verdict.summary
        assert verdict.summary.startswith("CONTINUE: no problem to act on") or finding.gist() not in verdict.summary
