"""Loss spikes: recovered ones are info and never stop a run; persisting ones are warnings."""

from __future__ import annotations

import numpy as np
import pytest

from mcp_training_check.models import Decision, Severity, SignalKind
from tests.test_judge_helpers import ar1, decay_loss, kinds, make_series, run_judge, sgdr_lr

N = 500


def _spiked(at: list[int], factor: float = 3.0, width: int = 1, seed: int = 1) -> np.ndarray:
    loss = decay_loss(N, seed=seed)
    for i in at:
        loss[i : i + width] *= factor
    return loss


TABLE = [
    # name, loss, expected severity per kind, decision
    ("one spike, recovered", _spiked([400]), {SignalKind.SPIKE_RECOVERED: "info"}, Decision.CONTINUE),
    (
        "two-point spike, recovered",
        _spiked([300], width=2),
        {SignalKind.SPIKE_RECOVERED: "info"},
        Decision.CONTINUE,
    ),
    (
        "three spikes, recovered",
        _spiked([200, 300, 450], factor=2.0),
        {SignalKind.SPIKE_RECOVERED: "info"},
        Decision.CONTINUE,
    ),
    # not back yet: watched (continue, next check in 10 min), whether it recovers is the evidence
    ("spike at the last point", _spiked([N - 1]), {SignalKind.SPIKE: "watch"}, Decision.CONTINUE),
    (
        "spike for the last 3 points",
        _spiked([N - 3], width=3),
        {SignalKind.SPIKE: "watch"},
        Decision.CONTINUE,
    ),
    ("small bump under the ratio", _spiked([400], factor=1.15), {}, Decision.CONTINUE),
]


@pytest.mark.parametrize(("loss", "expected", "decision"), [t[1:] for t in TABLE], ids=[t[0] for t in TABLE])
def test_spike_table(loss, expected, decision):
    verdict = run_judge(make_series("loss", loss, new_points=10))
    found = kinds(verdict)
    for kind, severity in expected.items():
        assert found.get(kind) == severity, verdict.summary
    if not expected:
        assert SignalKind.SPIKE not in found and SignalKind.SPIKE_RECOVERED not in found
    assert verdict.decision is decision, verdict.summary


def test_recovered_spike_message_has_value_ratio_and_threshold():
    verdict = run_judge(make_series("loss", _spiked([400])))
    spike = next(s for s in verdict.signals if s.kind is SignalKind.SPIKE_RECOVERED)
    assert spike.step == 4010
    assert "at step 4,010" in spike.message and "threshold 6" in spike.message
    assert "back to normal within 1 points" in spike.message
    assert spike.evidence["z"] >= 6


def test_three_recovered_spikes_are_one_merged_signal():
    verdict = run_judge(make_series("loss", _spiked([200, 300, 450], factor=2.0)))
    recovered = [s for s in verdict.signals if s.kind is SignalKind.SPIKE_RECOVERED]
    assert len(recovered) == 1 and recovered[0].evidence["spikes"] == 3
    assert recovered[0].message.startswith("3 spikes")


def test_grad_norm_co_spike_is_reported_as_evidence():
    grad = np.exp(ar1(N, 0.1, 0.3, np.random.default_rng(2)))
    grad[N - 2 :] *= 8
    verdict = run_judge(make_series("loss", _spiked([N - 2], width=2)), make_series("grad_norm", grad))
    spike = next(s for s in verdict.signals if s.kind is SignalKind.SPIKE)
    assert "grad norm co-spiked" in spike.message and spike.evidence["grad_z"] >= 3.5


def test_bump_right_after_a_scheduled_lr_restart_is_info():
    n = 420
    lr = sgdr_lr(n, period_points=200)
    loss = decay_loss(n, seed=3)
    loss[400:] *= 1.8  # the restart at point 400 bumps the loss
    verdict = run_judge(make_series("loss", loss), make_series("learning_rate", lr))
    spike = next(s for s in verdict.signals if s.kind is SignalKind.SPIKE)
    assert spike.severity is Severity.INFO and "scheduled LR restart" in spike.message
    assert verdict.decision is not Decision.STOP
