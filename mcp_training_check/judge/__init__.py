"""The judge: stored history → signals → one decision (stop / continue / unsure).

One detector per module, each a small class whose thresholds are its keyword arguments:

- ``nonfinite.NonFiniteDetector`` NaN/Inf in loss or grad norm; the HF Trainer traps
- ``trend.TrendDetector``         divergence, blow-up, rising, flat, improving (on log loss); its
                                  rise tests in ``trend_rise``, slow climbs in ``trend_climb``, stall tests
                                  in ``trend_stall``, thresholds in ``trend_base``
- ``spikes.SpikeDetector``        robust-z spikes, recovered (info), persisting (watch), recurring ≥ 10× (warning)
- ``evals.EvalDetector``          eval vs baseline, vs its own best (overfitting), collapse; its degrading
                                  tests in ``evals_degrading``, thresholds in ``evals_base``, which evals
                                  count (quality vs secondary) in ``evalkinds``
- ``evaltrend.EvalTrendDetector`` a run without a train loss: its primary eval's trend, not learning;
                                  stuck tests in ``evaltrend_stuck``, unchanged-output tests in
                                  ``evaltrend_unchanged``, thresholds in ``evaltrend_base``
- ``lr.LrDetector``               LR jumps outside warmup, dead LR, non-finite LR
- ``gradnorm.GradNormDetector``   exploding / vanishing grad norm, clip rate

``policy`` turns their signals into a `Verdict`; ``settings.JudgeSettings`` holds every threshold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..models import Verdict
from ..roles import RoleInfo, primary_train_loss
from ..state import RunHistory
from .context import JudgeContext, LrEvents
from .evals import EvalDetector
from .evaltrend import EvalTrendDetector
from .gradnorm import GradNormDetector
from .lr import LrDetector
from .nonfinite import NonFiniteDetector
from .policy import (
    combine,
    compact,
    converged_floor,
    data_signals,
    decide,
    exact_evidence_only,
    unchanged_evidence,
    witnessed_stall,
)
from .runconfig import RunConfig, judged_facts, parse_run_config
from .scale import log_scale_view
from .settings import JudgeSettings, PolicySettings, judge_settings
from .spikes import SpikeDetector
from .trend import TrendDetector

__all__ = [
    "EvalDetector",
    "EvalTrendDetector",
    "GradNormDetector",
    "JudgeSettings",
    "LrDetector",
    "NonFiniteDetector",
    "PolicySettings",
    "RunConfig",
    "SpikeDetector",
    "TrendDetector",
    "judge",
    "judge_settings",
    "judged_facts",
    "parse_run_config",
]


def judge(
    history: RunHistory,
    roles: Mapping[str, RoleInfo],
    *,
    baselines: Mapping[str, float] | None = None,
    previous: Sequence[Verdict] = (),
    run_config: Mapping[str, Any] | None = None,
    settings: JudgeSettings | None = None,
) -> Verdict:
    """Judge a run's stored history.

    ``previous`` are the verdicts of earlier checks of this run, most recent first; ``run_config`` the
    training config (total/max steps, learning rate, warmup, schedule, max_grad_norm), falling back to
    ``history.info.config``. Pure: reads nothing, writes nothing. A perplexity is judged as its ln, the
    cross-entropy (`scale`); the verdict names every metric as logged.
    """
    settings = settings or JudgeSettings()
    config = parse_run_config(run_config if run_config is not None else history.info.config)
    view = log_scale_view(history, roles, baselines or {}, previous)
    ctx = JudgeContext(
        history=view.history, roles=view.roles, config=config, baselines=view.baselines, previous=view.previous
    )
    return view.restore(_judge(ctx, settings))


def _judge(ctx: JudgeContext, settings: JudgeSettings) -> Verdict:
    """Every detector's signals on ``ctx``, combined into one verdict by the policy."""
    history, config = ctx.history, ctx.config
    if settings.lr is not None:
        ctx.lr_events = settings.lr.analyse(ctx.learning_rate, config)
    else:
        ctx.lr_events = LrEvents(warmup_end=config.warmup_steps, peak=config.peak_lr)
    signals = data_signals(ctx)
    if any(s.values.size for s in history.metrics.values()):
        for detector in settings.detectors():
            signals += detector.check(ctx)
    train_loss = primary_train_loss(ctx.roles)
    signals = witnessed_stall(combine(signals, train_loss), train_loss)
    signals = converged_floor(signals, ctx, settings.policy)
    signals = unchanged_evidence(exact_evidence_only(signals, history))
    return decide(compact(signals, settings.policy.max_signals), ctx, settings.policy)
