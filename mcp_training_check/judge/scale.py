"""Perplexities judged on the loss's scale: the judge reads ln(perplexity), the cross-entropy it stands for.

A perplexity is e^(the per-token cross-entropy) (fairseq's ``ppl`` is 2^ its base-2 loss: ln of it is the same
cross-entropy in nats). On its own scale a perplexity twice its median is a loss only ln 2 = 0.69 nats
higher: every detector written for losses (spikes, divergence, blow-up, flat, noise bands) would read a
perplexity's change as a far larger change of the loss, and its per-batch noise (a per-step perplexity
196-284 around 230 beside its loss's 5.3-5.6) as a noisy loss. So a perplexity that is a train loss or an
eval is handed to every detector once, here, as ln of its values under the name ``ln(<name>)``: each
message names the scale its numbers are on, and the findings go back under the metric's own name (a plot or
a stop table finds its series by it).

Not a perplexity, so left as logged: a name that says it is a log already (MLPerf's ``eval_log_perplexity``),
and a series or baseline holding a value ≤ 0 (no e^x is; such a log is judged on its own scale, as before).
NaN and ±Inf stay as they are, so the non-finite detector still fires on them. A long run's older points,
stored as bucket means of the perplexity, become ln of the mean: above the mean of the ln by half the
variance of the ln within a bucket (0.005 nats for a per-step perplexity ±10 %), well inside any threshold.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..models import MetricRole, Verdict
from ..roles import RoleInfo, is_raw_perplexity, log_scale_name
from ..state import MetricSeries, RunHistory

__all__ = ["LogScaleView", "log_scale_view"]

_JUDGED_ROLES = (MetricRole.TRAIN_LOSS, MetricRole.EVAL)


@dataclass(frozen=True)
class LogScaleView:
    """What the detectors see: the run with its perplexities as ln(perplexity), and the way back."""

    history: RunHistory
    roles: Mapping[str, RoleInfo]
    baselines: Mapping[str, float]
    previous: Sequence[Verdict]
    logged: Mapping[str, str]  # ln name → the metric's own name

    def restore(self, verdict: Verdict) -> Verdict:
        """The verdict with each finding's metric under its own name again (messages keep ``ln(...)``)."""
        return _renamed(verdict, self.logged)


def log_scale_view(
    history: RunHistory,
    roles: Mapping[str, RoleInfo],
    baselines: Mapping[str, float],
    previous: Sequence[Verdict],
) -> LogScaleView:
    """The run as the detectors judge it: every judged perplexity (`_on_exp_scale`) replaced by its ln."""
    names = {name: log_scale_name(name) for name in roles if _on_exp_scale(name, roles[name], history, baselines)}
    if not names:
        return LogScaleView(history, roles, baselines, previous, {})
    metrics = {names.get(n, n): _ln_series(s, names[n]) if n in names else s for n, s in history.metrics.items()}
    return LogScaleView(
        history=dataclasses.replace(history, metrics=metrics),
        roles={names.get(n, n): info for n, info in roles.items()},
        baselines={names.get(n, n): float(np.log(v)) if n in names else v for n, v in baselines.items()},
        previous=[_renamed(v, names) for v in previous],
        logged={ln: name for name, ln in names.items()},
    )


def _on_exp_scale(name: str, info: RoleInfo, history: RunHistory, baselines: Mapping[str, float]) -> bool:
    """A judged perplexity logged as e^loss, every finite value and its baseline > 0, its ln name free."""
    series = history.metrics.get(name)
    if series is None or info.role not in _JUDGED_ROLES or not is_raw_perplexity(name):
        return False
    if log_scale_name(name) in history.metrics:
        return False
    finite = series.values[np.isfinite(series.values)]
    extremes = [v for v in (series.min_value, baselines.get(name)) if v is not None]
    return not (np.any(finite <= 0) or any(v <= 0 for v in extremes))


def _ln_series(series: MetricSeries, name: str) -> MetricSeries:
    """ln of every finite value (all > 0, `_on_exp_scale`); NaN and ±Inf kept as logged."""
    values = series.values.astype(np.float64)
    finite = np.isfinite(values)
    values[finite] = np.log(values[finite])
    return dataclasses.replace(
        series,
        name=name,
        values=values,
        min_value=_ln(series.min_value),
        max_value=_ln(series.max_value),
    )


def _ln(value: float | None) -> float | None:
    return None if value is None else float(np.log(value))


def _renamed(verdict: Verdict, names: Mapping[str, str]) -> Verdict:
    """The verdict with each signal's metric renamed by ``names`` (those not in it unchanged)."""
    if not names or not any(s.metric in names for s in verdict.signals):
        return verdict
    signals = [s.model_copy(update={"metric": names.get(s.metric or "", s.metric)}) for s in verdict.signals]
    return verdict.model_copy(update={"signals": signals})
