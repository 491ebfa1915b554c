"""Builders for judge tests: synthetic training curves and the stored-history dataclasses around them.

Other ``test_judge_*`` modules import from here. The builders mirror what the state store keeps:
older points as bucket means before ``raw_from``, full resolution after, exact all-time extremes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from mcp_training_check.judge import JudgeSettings, judge
from mcp_training_check.models import Decision, RunInfo, RunStatus, SignalKind, Verdict
from mcp_training_check.roles import RoleInfo, assign_roles
from mcp_training_check.state import MetricSeries, RunHistory

EVERY = 10  # steps between logged points


def ar1(n: int, sigma: float, rho: float, rng: np.random.Generator) -> np.ndarray:
    """AR(1) noise with marginal standard deviation ``sigma`` and lag-1 correlation ``rho``."""
    eps = rng.normal(0.0, sigma * np.sqrt(1 - rho**2), n)
    out = np.empty(n)
    out[0] = rng.normal(0.0, sigma)
    for i in range(1, n):
        out[i] = rho * out[i - 1] + eps[i]
    return out


def decay_loss(
    n: int,
    *,
    start: float = 6.0,
    floor: float = 2.0,
    tau_points: float = 150.0,
    noise: float = 0.03,
    rho: float = 0.6,
    seed: int = 0,
) -> np.ndarray:
    """Exponential decay towards ``floor`` with multiplicative AR(1) noise (log-normal)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    clean = floor + (start - floor) * np.exp(-t / tau_points)
    return clean * np.exp(ar1(n, noise, rho, rng))


def warmup_cosine_lr(n: int, *, peak: float = 3e-4, warmup_points: int = 20, total_points: int | None = None):
    total = total_points or n
    t = np.arange(n, dtype=float)
    warm = peak * (t + 1) / warmup_points
    progress = np.clip((t - warmup_points) / max(total - warmup_points, 1), 0, 1)
    cos = peak * 0.5 * (1 + np.cos(np.pi * progress))
    return np.where(t < warmup_points, warm, np.maximum(cos, peak * 1e-2))


def sgdr_lr(n: int, *, peak: float = 1e-3, period_points: int = 100) -> np.ndarray:
    phase = (np.arange(n) % period_points) / period_points
    return 1e-5 + (peak - 1e-5) * 0.5 * (1 + np.cos(np.pi * phase))


def steps_for(n: int, every: int = EVERY) -> np.ndarray:
    return (np.arange(n, dtype=np.int64) + 1) * every


def make_series(
    name: str,
    values: Sequence[float] | np.ndarray,
    steps: np.ndarray | None = None,
    *,
    new_points: int | None = None,
    raw_points: int | None = None,
    bucket: int = 10,
) -> MetricSeries:
    """A stored series; with ``raw_points`` the older part is kept as bucket means like the state does."""
    values = np.asarray(values, dtype=np.float64)
    steps = steps_for(values.size) if steps is None else np.asarray(steps, dtype=np.int64)
    finite = np.isfinite(values)
    fv, fs = values[finite], steps[finite]
    raw_from, kept_steps, kept_values = 0, steps, values
    if raw_points is not None and raw_points < values.size:
        cut = values.size - raw_points
        old_s, old_v = steps[:cut], values[:cut]
        ok = np.isfinite(old_v)
        old_s, old_v = old_s[ok], old_v[ok]
        groups = np.arange(old_v.size) // bucket
        counts = np.bincount(groups)
        means = np.bincount(groups, weights=old_v) / counts
        last_steps = old_s[np.cumsum(counts) - 1]
        kept_steps = np.concatenate((last_steps, steps[cut:]))
        kept_values = np.concatenate((means, values[cut:]))
        raw_from = means.size
    return MetricSeries(
        name=name,
        steps=kept_steps,
        values=kept_values,
        raw_from=raw_from,
        total_points=int(values.size),
        non_finite=int((~finite).sum()),
        new_points=int(values.size if new_points is None else new_points),
        first_step=int(steps[0]) if steps.size else None,
        min_value=float(fv.min()) if fv.size else None,
        min_step=int(fs[np.argmin(fv)]) if fv.size else None,
        max_value=float(fv.max()) if fv.size else None,
        max_step=int(fs[np.argmax(fv)]) if fv.size else None,
    )


def make_history(*series: MetricSeries, status: RunStatus = RunStatus.RUNNING) -> RunHistory:
    return RunHistory(
        run_key="file:/tmp/run.jsonl", metrics={s.name: s for s in series}, info=RunInfo(status=status)
    )


def roles_of(history: RunHistory, overrides: Mapping[str, str] | None = None) -> dict[str, RoleInfo]:
    return assign_roles(history.metrics, overrides)


def run_judge(
    *series: MetricSeries,
    status: RunStatus = RunStatus.RUNNING,
    overrides: Mapping[str, str] | None = None,
    baselines: Mapping[str, float] | None = None,
    previous: Sequence[Verdict] = (),
    run_config: Mapping[str, Any] | None = None,
    settings: JudgeSettings | None = None,
) -> Verdict:
    history = make_history(*series, status=status)
    return judge(
        history,
        roles_of(history, overrides),
        baselines=baselines,
        previous=previous,
        run_config=run_config,
        settings=settings,
    )


def kinds(verdict: Verdict) -> dict[SignalKind, str]:
    """Kind → severity of each signal (compact verdicts hold one per kind and metric)."""
    return {s.kind: s.severity.value for s in verdict.signals}


def replay(
    metrics: Mapping[str, np.ndarray],
    check_every: int,
    *,
    start: int | None = None,
    run_config: Mapping[str, Any] | None = None,
    baselines: Mapping[str, float] | None = None,
    raw_points: int | None = None,
) -> list[tuple[int, Verdict]]:
    """Judge growing prefixes of a run like a cron would, carrying ``previous``; (points, verdict) each."""
    n = min(v.size for v in metrics.values())
    out: list[tuple[int, Verdict]] = []
    previous: list[Verdict] = []
    for end in range(start or check_every, n + 1, check_every):
        series = [
            make_series(name, values[:end], new_points=check_every, raw_points=raw_points)
            for name, values in metrics.items()
        ]
        verdict = run_judge(*series, previous=previous, run_config=run_config, baselines=baselines)
        previous.insert(0, verdict)
        out.append((end, verdict))
    return out


# --------------------------------------------------------------------------- tests of the builders


def test_downsampled_series_keeps_exact_extremes_and_full_resolution_tail():
    values = decay_loss(1000, seed=1)
    values[100] = 50.0  # an old outlier that bucket means would smear
    series = make_series("loss", values, raw_points=200)
    assert series.raw_values.size == 200
    assert series.raw_from == 80
    np.testing.assert_array_equal(series.raw_values, values[-200:])
    assert series.max_value == 50.0 and series.max_step == 1010
    assert series.values[:80].max() < 50.0
    assert np.all(np.diff(series.steps) > 0)


def test_ar1_noise_is_autocorrelated_with_the_requested_scale():
    x = ar1(20000, 0.1, 0.8, np.random.default_rng(0))
    assert x.std() == pytest.approx(0.1, rel=0.1)
    assert np.corrcoef(x[:-1], x[1:])[0, 1] == pytest.approx(0.8, abs=0.05)


def test_healthy_decay_judged_continue():
    verdict = run_judge(make_series("loss", decay_loss(400, seed=3)))
    assert verdict.decision is Decision.CONTINUE, verdict.summary
    assert SignalKind.IMPROVING in kinds(verdict)
