"""Gradient norm: exploding, vanishing, clip rate; with a rising loss an explosion stops the run."""

from __future__ import annotations

import numpy as np
import pytest

from mcp_training_check.models import Decision, Severity, SignalKind
from tests.test_judge_helpers import ar1, decay_loss, kinds, make_series, run_judge

N = 500
LOSS = decay_loss(N, seed=3)


def _grad(seed: int = 4) -> np.ndarray:
    return 0.8 * np.exp(ar1(N, 0.15, 0.5, np.random.default_rng(seed)))


def _scaled(values: np.ndarray, last: int, factor: float) -> np.ndarray:
    out = values.copy()
    out[-last:] *= factor
    return out


TABLE = [
    # name, grad, run_config, expected {kind: severity}
    ("stable", _grad(), None, {}),
    ("one clipped outlier", _scaled(_grad(), 1, 30.0), None, {}),
    ("20× for the last 6 points", _scaled(_grad(), 6, 20.0), None, {SignalKind.GRAD_EXPLODING: "warning"}),
    ("3× for the last 6 points", _scaled(_grad(), 6, 3.0), None, {}),
    (
        "1e-5× for the last 30 points",
        _scaled(_grad(), 30, 1e-5),
        None,
        {SignalKind.GRAD_VANISHING: "warning"},
    ),
    ("1e-5× for only 10 points", _scaled(_grad(), 10, 1e-5), None, {}),
    ("mostly clipped", _grad(), {"max_grad_norm": 0.5}, {SignalKind.GRAD_EXPLODING: "info"}),
    ("rarely clipped", _grad(), {"max_grad_norm": 5.0}, {}),
]


@pytest.mark.parametrize(("grad", "config", "expected"), [t[1:] for t in TABLE], ids=[t[0] for t in TABLE])
def test_grad_norm_table(grad, config, expected):
    verdict = run_judge(make_series("loss", LOSS), make_series("grad_norm", grad), run_config=config)
    found = {
        k: v for k, v in kinds(verdict).items() if k in (SignalKind.GRAD_EXPLODING, SignalKind.GRAD_VANISHING)
    }
    assert found == expected, verdict.summary


def test_clip_rate_is_evidence_on_an_explosion():
    verdict = run_judge(
        make_series("loss", LOSS),
        make_series("grad_norm", _scaled(_grad(), 6, 20.0)),
        run_config={"max_grad_norm": 1.0},
    )
    sig = next(s for s in verdict.signals if s.kind is SignalKind.GRAD_EXPLODING)
    assert 0 < sig.evidence["clip_rate"] < 0.5 and "clipped" in sig.message
    assert "threshold 5.0×" in sig.message and sig.evidence["ratio"] > 10


def test_explosion_with_a_rising_loss_is_critical():
    loss = LOSS.copy()
    loss[-8:] *= 2.6  # loss over 2× its best, not yet confirmed by itself
    verdict = run_judge(make_series("loss", loss), make_series("grad_norm", _scaled(_grad(), 8, 20.0)))
    assert verdict.decision is Decision.STOP, verdict.summary
    assert verdict.signals[0].kind is SignalKind.DIVERGENCE
    assert (
        verdict.signals[0].severity is Severity.CRITICAL
        and "with the grad norm" in verdict.signals[0].message
    )


def test_explosion_with_a_healthy_loss_is_unsure():
    verdict = run_judge(make_series("loss", LOSS), make_series("grad_norm", _scaled(_grad(), 6, 20.0)))
    assert verdict.decision is Decision.UNSURE
