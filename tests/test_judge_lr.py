"""Learning rate against its schedule, and the run config it is read from."""

from __future__ import annotations

import numpy as np
import pytest

from mcp_training_check.judge import parse_run_config
from mcp_training_check.models import Decision, Severity, SignalKind
from tests.test_judge_helpers import decay_loss, kinds, make_series, run_judge, sgdr_lr, warmup_cosine_lr

N = 600
LOSS = decay_loss(N, seed=2)


def _jumped(lr: np.ndarray, at: int, factor: float) -> np.ndarray:
    out = lr.copy()
    out[at:] *= factor
    return out


def _compounding_from(lr: np.ndarray, at: int, rate: float) -> np.ndarray:
    out = lr.copy()
    out[at:] = out[at] * rate ** np.arange(1, out.size - at + 1)
    return out


def _dead_from(lr: np.ndarray, at: int) -> np.ndarray:
    out = lr.copy()
    out[at:] = 0.0
    return out


TABLE = [
    # name, lr, run_config, expected LR_ANOMALY severity (None: no anomaly)
    ("warmup + cosine", warmup_cosine_lr(N), {"max_steps": N * 10, "warmup_steps": 200}, None),
    ("warmup + cosine, no config", warmup_cosine_lr(N), None, None),
    ("warmup from 0 held at 0 for two skipped steps, no config", np.r_[0.0, 0.0, warmup_cosine_lr(N - 2)[1:]], None,
     None),
    ("10× jump after warmup", _jumped(warmup_cosine_lr(N), 400, 10.0), None, "warning"),
    ("10× jump, cosine config", _jumped(warmup_cosine_lr(N), 400, 10.0), {"schedule": "cosine"}, "warning"),
    ("SGDR restarts, no config", sgdr_lr(N), None, None),
    ("SGDR restarts, restart config", sgdr_lr(N), {"lr_scheduler_type": "cosine_with_restarts"}, None),
    ("SGDR restarts, linear config", sgdr_lr(N), {"lr_scheduler_type": "linear"}, "warning"),
    ("dead LR at 50 % of the run", _dead_from(warmup_cosine_lr(N), 300), {"max_steps": N * 20}, "warning"),
    ("LR ~0 at the very end", np.full(N, 1e-9), {"max_steps": N * 10, "learning_rate": 3e-4}, None),
    ("dead LR, total unknown", _dead_from(warmup_cosine_lr(N), N - 100), None, "warning"),
    ("LR ~0 for its last 5 % of steps, total unknown: a schedule's end", _dead_from(warmup_cosine_lr(N), N - 30),
     None, None),
    ("LR 2× the configured peak", np.full(N, 6e-4), {"learning_rate": 3e-4}, "warning"),
    ("LR compounding past 2× the peak", _compounding_from(np.full(N, 3e-4), 500, 1.02), {"learning_rate": 3e-4},
     "critical"),
    ("LR compounding, peak not configured", _compounding_from(np.full(N, 3e-4), 500, 1.02), None, "warning"),
    ("warmup overshooting a misread peak", np.linspace(1e-5, 3e-3, N), {"learning_rate": 3e-4}, "warning"),
    ("climb not yet 2× the peak", _compounding_from(np.full(N, 3e-4), 570, 1.02), {"learning_rate": 3e-4},
     "warning"),
    ("LR NaN now", np.append(warmup_cosine_lr(N - 1), np.nan), None, "critical"),
    ("jump from the schedule to 10× the peak", _jumped(np.full(N, 3e-4), 590, 10.0), {"learning_rate": 3e-4},
     "critical"),
    ("10× jump landing at the peak", _jumped(np.full(N, 3e-5), 590, 10.0), {"learning_rate": 3e-4}, "warning"),
    ("jump from above a misread peak", _jumped(np.full(N, 9e-4), 590, 10.0), {"learning_rate": 3e-4},
     "warning"),
]  # fmt: skip


@pytest.mark.parametrize(("lr", "config", "expected"), [t[1:] for t in TABLE], ids=[t[0] for t in TABLE])
def test_lr_table(lr, config, expected):
    verdict = run_judge(make_series("loss", LOSS), make_series("learning_rate", lr), run_config=config)
    assert kinds(verdict).get(SignalKind.LR_ANOMALY) == expected, verdict.summary


def test_jump_message_names_ratio_step_and_schedule():
    lr = _jumped(warmup_cosine_lr(N), 400, 10.0)
    verdict = run_judge(make_series("loss", LOSS), make_series("learning_rate", lr), run_config={"schedule": "cosine"})
    sig = next(s for s in verdict.signals if s.kind is SignalKind.LR_ANOMALY)
    assert sig.step == 4010 and sig.evidence["jump_ratio"] >= 9.5
    assert "jumped 9.9×" in sig.message and "threshold 2.0×" in sig.message and "'cosine'" in sig.message


def test_divergence_after_an_lr_jump_stops_the_run():
    lr = _jumped(warmup_cosine_lr(N), 450, 10.0)
    loss = LOSS.copy()
    loss[460:] *= np.linspace(1.0, 1.9, N - 460)
    verdict = run_judge(make_series("loss", loss), make_series("learning_rate", lr))
    assert verdict.decision is Decision.STOP, verdict.summary
    div = verdict.signals[0]
    assert div.kind is SignalKind.DIVERGENCE and div.severity is Severity.CRITICAL
    assert "the LR left its schedule before it" in div.message


def test_a_jump_far_past_the_configured_peak_stops_before_the_loss_reacts():
    lr = _jumped(np.full(N, 3e-4), 598, 20.0)
    verdict = run_judge(make_series("loss", LOSS), make_series("learning_rate", lr), run_config={"learning_rate": 3e-4})
    assert verdict.decision is Decision.STOP, verdict.summary
    sig = verdict.signals[0]
    assert sig.kind is SignalKind.LR_ANOMALY and sig.severity is Severity.CRITICAL
    assert sig.evidence["ratio"] == pytest.approx(20.0) and "set the new peak as learning_rate" in sig.message


def test_lr_jump_with_a_healthy_loss_is_only_unsure():
    lr = _jumped(warmup_cosine_lr(N), 450, 10.0)
    verdict = run_judge(make_series("loss", LOSS), make_series("learning_rate", lr))
    assert verdict.decision is Decision.UNSURE


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"max_steps": -1, "learning_rate": 5e-5}, {"total_steps": None, "peak_lr": 5e-5}),
        ({"max_steps": {"value": 1000, "desc": None}}, {"total_steps": 1000}),
        ({"optimizer": {"lr": 1e-3}, "trainer": {"max_steps": 500}}, {"peak_lr": 1e-3, "total_steps": 500}),
        ({"train_iters": 2000, "warmup_ratio": 0.1}, {"total_steps": 2000, "warmup_steps": 200}),
        ({"lr_scheduler_type": "cosine_with_restarts"}, {"schedule": "cosine_with_restarts"}),
        ({"max_grad_norm": 1.0, "learning_rate": True}, {"max_grad_norm": 1.0, "peak_lr": None}),
        (None, {"total_steps": None, "schedule": None}),
    ],
)
def test_parse_run_config(config, expected):
    parsed = parse_run_config(config)
    for field, value in expected.items():
        assert getattr(parsed, field) == value


@pytest.mark.parametrize(
    ("schedule", "expected"), [("cosine_with_restarts", True), ("linear", False), ("rex", None), (None, None)]
)
def test_restarts_expected(schedule, expected):
    assert parse_run_config({"schedule": schedule} if schedule else {}).restarts_expected is expected


def test_downsampled_warmup_is_not_an_lr_jump():
    """Bucket means of the warmup ramp sit next to the first post-warmup points in a long stored run."""
    n = 3000
    lr = warmup_cosine_lr(n, warmup_points=200, total_points=n)
    verdict = run_judge(
        make_series("loss", decay_loss(n, seed=2), raw_points=500, bucket=100),
        make_series("learning_rate", lr, raw_points=500, bucket=100),
        run_config={"warmup_steps": 2000, "total_steps": 10 * n},
    )
    assert SignalKind.LR_ANOMALY not in kinds(verdict), verdict.summary
