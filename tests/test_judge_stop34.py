"""Judge changes of stop 34: each test fails on the code before its change."""

from __future__ import annotations

import re

import numpy as np

from mcp_training_check.models import Severity, SignalKind
from tests.test_judge_classes import replay_cuts


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
    (verdict,) = replay_cuts({"train/loss": (steps, np.full(steps.size, np.nan)), "eval/loss": (steps, 1 / steps)}, [40])
    finding = _non_finite(verdict, "train/loss")
    assert finding.severity is Severity.CRITICAL
    assert _since(finding.message) == (1, None) and "its first" in finding.message, finding.message
