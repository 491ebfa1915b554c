"""NaN/Inf in the train loss or the grad norm, including the ways Hugging Face's Trainer hides them."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from ..models import Severity, Signal, SignalKind
from ..state import MetricSeries
from .context import Detector, JudgeContext, signal
from .stats import fmt_step, trailing_run


def _kind_word(value: float) -> str:
    return "NaN" if np.isnan(value) else "Inf"


def _finite_at(loss: MetricSeries, steps: np.ndarray) -> bool:
    """Whether the train loss was logged and finite at every one of ``steps`` (the HF Trainer trap)."""
    idx = np.searchsorted(loss.steps, steps)
    inside = idx < loss.steps.size
    if not inside.all() or not np.array_equal(loss.steps[idx], steps):
        return False
    return bool(np.isfinite(loss.values[idx]).all())


class NonFiniteDetector(Detector):
    """Non-finite train loss / grad norm; the HF Trainer trap (finite loss, NaN grad norm; 0.0 losses).

    Thresholds:
    - ``recovered_points``: a non-finite value followed by at least this many finite values of the same
      metric is a warning instead of critical. fp16 loss scalers (DeepSpeed "OVERFLOW! Skipping step",
      AMP GradScaler) skip overflowed steps and carry on; 50 logged points is far past that early churn.
    - ``overflow_points``: an Inf grad norm is an overflowed, skipped step; this many Inf grad norms in a
      row at the end is critical ("loss scale already at minimum" is fatal in DeepSpeed). NaN is
      critical at once: HF's ``logging_nan_inf_filter`` keeps the logged loss finite after the weights
      went NaN, so a NaN grad norm is the only tell.
    - ``zero_loss_points``: this many train-loss values of exactly 0.0 among the last
      ``recovered_points`` → warning. No real loss is exactly zero; HF logs 0.0 when every label is
      masked or the loss is dropped. 3 so that one odd batch does not count. None turns it off.
    """

    recovered_points: int = Field(default=50, ge=1)
    overflow_points: int = Field(default=3, ge=1)
    zero_loss_points: int | None = Field(default=3, ge=1)

    def check(self, ctx: JudgeContext) -> list[Signal]:
        out: list[Signal] = []
        loss, grad = ctx.train_loss, ctx.grad_norm
        if loss is not None:
            out += self._series(loss, is_grad=False)
            out += self._zeros(loss)
        if grad is not None:
            out += self._series(grad, is_grad=True, loss=loss)
        return out

    def _series(self, series: MetricSeries, *, is_grad: bool, loss: MetricSeries | None = None) -> list[Signal]:
        raw, steps = series.raw_values, series.raw_steps
        bad = ~np.isfinite(raw)
        if not bad.any():
            return self._old(series)
        last_bad = int(np.flatnonzero(bad)[-1])
        value, step = float(raw[last_bad]), int(steps[last_bad])
        finite_after = int(raw.size - 1 - last_bad)
        count = int(bad.sum())
        name = series.name
        where = f"{count} non-finite value(s) of {name} in the last {raw.size} points"
        evidence = {"non_finite_points": count, "finite_after": finite_after}
        if finite_after >= self.recovered_points:
            msg = (
                f"{where}, the latest ({_kind_word(value)}) at step {fmt_step(step)}; finite for the "
                f"{finite_after} points since (recovered)."
            )
            return [signal(SignalKind.NON_FINITE, Severity.WARNING, msg, metric=name, step=step, **evidence)]
        if is_grad and np.isinf(value):
            return [self._overflow(series, bad, step, where, evidence)]
        is_new = last_bad >= raw.size - max(series.new_points, 0) and series.new_points > 0
        if finite_after == 0:
            tail = "still non-finite at the latest point"
        else:
            tail = "in this check" if is_new else f"and only {finite_after} finite point(s) since"
        trap = (
            " while the logged loss stays finite there (HF Trainer's NaN filter hides it)"
            if is_grad and loss is not None and _finite_at(loss, steps[bad])
            else ""
        )
        msg = f"{name} is {_kind_word(value)} at step {fmt_step(step)}{trap}: {where}, {tail}."
        return [signal(SignalKind.NON_FINITE, Severity.CRITICAL, msg, metric=name, step=step, **evidence)]

    def _overflow(
        self, series: MetricSeries, bad: np.ndarray, step: int, where: str, evidence: dict[str, int]
    ) -> Signal:
        run = trailing_run(bad)
        if run >= self.overflow_points:
            msg = (
                f"{series.name} is Inf for the last {run} points up to step {fmt_step(step)} "
                f"(threshold {self.overflow_points}): the loss scaler cannot recover."
            )
            return signal(
                SignalKind.NON_FINITE, Severity.CRITICAL, msg, metric=series.name, step=step, **evidence
            )
        msg = (
            f"{where}, the latest Inf at step {fmt_step(step)}: overflowed steps skipped by the loss "
            f"scaler, normal early in fp16 runs; critical after {self.overflow_points} in a row."
        )
        return signal(SignalKind.NON_FINITE, Severity.WARNING, msg, metric=series.name, step=step, **evidence)

    def _old(self, series: MetricSeries) -> list[Signal]:
        if series.non_finite <= 0:
            return []
        msg = (
            f"{series.non_finite} non-finite value(s) of {series.name} earlier in the run, none in the "
            f"last {series.raw_values.size} points (recovered)."
        )
        return [
            signal(
                SignalKind.NON_FINITE,
                Severity.INFO,
                msg,
                metric=series.name,
                non_finite_points=series.non_finite,
            )
        ]

    def _zeros(self, series: MetricSeries) -> list[Signal]:
        if self.zero_loss_points is None:
            return []
        recent = series.raw_values[-self.recovered_points :]
        zeros = np.flatnonzero(recent == 0.0)
        if zeros.size < self.zero_loss_points:
            return []
        step = int(series.raw_steps[-recent.size + int(zeros[-1])])
        msg = (
            f"{series.name} is exactly 0.0 in {zeros.size} of the last {recent.size} points "
            f"(threshold {self.zero_loss_points}), latest at step {fmt_step(step)}: a dropped or "
            f"fully masked loss, not a real value."
        )
        return [
            signal(
                SignalKind.NON_FINITE,
                Severity.WARNING,
                msg,
                metric=series.name,
                step=step,
                zero_points=zeros.size,
            )
        ]
