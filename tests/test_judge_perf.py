"""Judging a history at the state's bounded size completes (timing itself is in benchmarks/bench_judge.py)."""

from __future__ import annotations

import numpy as np

from mcp_training_check.judge import judge
from mcp_training_check.models import Decision
from tests.test_judge_helpers import ar1, decay_loss, make_history, make_series, roles_of, warmup_cosine_lr

N = 4000


def test_ten_metrics_of_four_thousand_points_are_judged():
    rng = np.random.default_rng(0)
    series = [
        make_series("loss", decay_loss(N, tau_points=800)),
        make_series("grad_norm", np.exp(ar1(N, 0.2, 0.5, rng))),
        make_series("learning_rate", warmup_cosine_lr(N)),
        *(make_series(f"eval/loss_{i}", decay_loss(N, seed=i, tau_points=800)) for i in range(4)),
        *(make_series(f"throughput_{i}", rng.normal(100, 5, N)) for i in range(3)),
    ]
    history = make_history(*series)
    verdict = judge(history, roles_of(history), run_config={"max_steps": N * 20, "max_grad_norm": 10.0})
    assert verdict.summary.startswith(verdict.decision.value.upper() + ":")
    assert verdict.decision is not Decision.STOP, verdict.summary
    assert 1 <= len(verdict.signals) <= 8
    assert any(s.metric == "loss" for s in verdict.signals)
