"""Non-finite train loss / grad norm and the Hugging Face Trainer's disguises of it."""

from __future__ import annotations

import numpy as np
import pytest

from mcp_training_check.models import Decision, Severity, SignalKind
from tests.test_judge_helpers import decay_loss, make_series, run_judge

N = 400
NAN, INF = float("nan"), float("inf")


def _grad(n: int = N) -> np.ndarray:
    return np.exp(np.random.default_rng(7).normal(0, 0.2, n))


def _with(values: np.ndarray, index: list[int] | slice, value: float) -> np.ndarray:
    out = values.copy()
    out[index] = value
    return out


CASES = [
    # name, loss, grad (None: no grad metric), new_points, expected severity of the loss/grad finding
    ("nan loss at the latest point", _with(decay_loss(N), [-1], NAN), None, 10, "critical"),
    ("inf loss in this check", _with(decay_loss(N), [-1], INF), None, 10, "critical"),
    ("two nan losses in this check", _with(decay_loss(N), [-6, -3], NAN), None, 10, "critical"),
    ("one nan loss in this check, at its level since: a skipped batch", _with(decay_loss(N), [-3], NAN), None, 10,
     "warning"),
    ("one nan loss in this check, far above its level since", _with(decay_loss(N), [-3], NAN) * np.r_[np.ones(N - 2),
     3, 3], None, 10, "critical"),
    ("nan loss long recovered", _with(decay_loss(N), [300], NAN), None, 10, "warning"),
    ("two nan losses 20 points ago", _with(decay_loss(N), [-24, -21], NAN), None, 10, "critical"),
    ("one nan grad at the latest point, finite loss: maybe skipped", decay_loss(N), _with(_grad(), [-1], NAN), 10,
     "warning"),
    ("hf trap: nan grads that stay under a finite loss", decay_loss(N), _with(_grad(), slice(-3, None), NAN), 10,
     "critical"),
    ("hf trap: 0.0 loss under a nan grad", _with(decay_loss(N), [-1], 0.0), _with(_grad(), [-1], NAN), 10,
     "critical"),
    ("nan grad under a nan loss", _with(decay_loss(N), [-1], NAN), _with(_grad(), [-1], NAN), 10, "critical"),
    ("nan grad skipped in this check, finite since", decay_loss(N), _with(_grad(), [-4], NAN), 10, "info"),
    ("single fp16 overflow, finite since", decay_loss(N), _with(_grad(), [-4], INF), 10, "info"),
    ("overflow at the minimum scale", decay_loss(N), _with(_grad(), slice(-3, None), INF), 10, "critical"),
    ("overflow early, long recovered", decay_loss(N), _with(_grad(), [5], INF), 10, "info"),
    ("hf trap: repeated 0.0 loss", _with(decay_loss(N), [-9, -5, -1], 0.0), None, 10, "warning"),
    ("one 0.0 loss is not a pattern", _with(decay_loss(N), [-5], 0.0), None, 10, None),
    ("0.0 losses of a loss converged below its 4-decimal rounding",
     np.r_[np.round(np.geomspace(1.0, 2e-4, N - 3), 4), 0.0, 0.0, 0.0], None, 10, None),
    ("0.0 losses after a loss logged at full precision", np.r_[np.geomspace(1.0, 2e-4, N - 2)[:-1], 0.0, 0.0, 0.0],
     None, 10, "warning"),
    ("0.0 losses after a rounded loss far above its last decimal",
     np.r_[np.round(np.geomspace(1.0, 0.05, N - 3), 4), 0.0, 0.0, 0.0], None, 10, "warning"),
    ("all finite", decay_loss(N), _grad(), 10, None),
]


@pytest.mark.parametrize(
    ("loss", "grad", "new_points", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_non_finite_table(loss, grad, new_points, expected):
    series = [make_series("loss", loss, new_points=new_points)]
    if grad is not None:
        series.append(make_series("grad_norm", grad, new_points=new_points))
    verdict = run_judge(*series)
    found = [s for s in verdict.signals if s.kind is SignalKind.NON_FINITE]
    if expected is None:
        assert not found, verdict.summary
        return
    assert found and found[0].severity.value == expected, verdict.summary
    assert found[0].step is not None and any(ch.isdigit() for ch in found[0].message)
    if expected == "critical":
        assert verdict.decision is Decision.STOP
    elif expected == "warning":
        assert verdict.decision is Decision.UNSURE
    else:
        assert verdict.decision is Decision.CONTINUE, verdict.summary


def test_hf_trap_message_names_the_nan_filter():
    verdict = run_judge(
        make_series("loss", _with(decay_loss(N), [-1], 0.0)), make_series("grad_norm", _with(_grad(), [-1], NAN))
    )
    assert verdict.signals[0].metric == "grad_norm"
    assert "NaN filter" in verdict.signals[0].message
    assert verdict.summary.startswith("STOP: grad_norm is NaN at step 4,000")


def test_a_nan_grad_norm_the_optimizer_stepped_on_is_critical_at_once():
    """Logged every step, a NaN grad norm where the LR moved on was not skipped by a loss scaler (which holds
    the scheduler): the weights took it. The same NaN with the LR held is a skipped step."""
    steps = np.arange(1, N + 1)
    moving = np.linspace(1e-4, 1e-5, N)
    held = _with(moving, [-1], moving[-2])
    grad = make_series("grad_norm", _with(_grad(), [-1], NAN), steps, new_points=10)
    loss = make_series("loss", decay_loss(N), steps, new_points=10)
    stepped = run_judge(loss, grad, make_series("lr", moving, steps, new_points=10))
    skipped = run_judge(loss, grad, make_series("lr", held, steps, new_points=10))
    assert stepped.decision is Decision.STOP and "LR moved" in stepped.spelled_out(), stepped.summary
    assert skipped.decision is Decision.UNSURE, skipped.summary


def test_non_finite_only_in_downsampled_history_is_info():
    loss = _with(decay_loss(2000), [50], NAN)
    verdict = run_judge(make_series("loss", loss, raw_points=500, new_points=10))
    found = [s for s in verdict.signals if s.kind is SignalKind.NON_FINITE]
    assert [s.severity for s in found] == [Severity.INFO]
    assert verdict.decision is Decision.CONTINUE


def test_a_streak_of_steps_the_scaler_skipped_with_the_lr_held_waits_for_the_scale_to_settle():
    """fp16 runs skip their first steps in a row while the scaler halves its scale from 2^16. Logged every
    step with the LR held at each NaN grad norm, 5 in a row are still the scaler settling (unsure, not a stop);
    the same 5 without an LR to tell by are critical (overflow_points), and 16 held ones are too."""
    steps = np.arange(1, N + 1)
    lr = np.linspace(1e-4, 1e-5, N)
    loss = make_series("loss", decay_loss(N), steps, new_points=10)

    def judge(nan_points: int, with_lr: bool):
        held = lr.copy()
        held[-nan_points:] = lr[-nan_points - 1]
        grad = make_series("grad_norm", _with(_grad(), slice(-nan_points, None), NAN), steps, new_points=10)
        series = [loss, grad] + ([make_series("lr", held, steps, new_points=10)] if with_lr else [])
        return run_judge(*series)

    assert judge(5, with_lr=True).decision is Decision.UNSURE
    assert judge(5, with_lr=False).decision is Decision.STOP
    assert judge(16, with_lr=True).decision is Decision.STOP
