"""Where the train loss is heading, on log(loss): diverging, blown up, rising, flat or improving.

Loss noise is multiplicative, so every comparison is a ratio (a difference of logs). The detector
looks only at points after warmup and after the latest LR restart that the schedule explains.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from ..models import Severity, Signal, SignalKind
from ..series import MetricSeries
from .context import Detector, JudgeContext, finite_after, signal, train_start
from .stats import (
    fmt,
    fmt_pct,
    fmt_ratio,
    fmt_step,
    positive_log,
    rolling_median,
    theil_sen,
    trailing_run,
)

TAIL_POINTS = 512  # trailing runs above a threshold are counted over at most this many recent points


class TrendDetector(Detector):
    """Divergence, blow-up, rising, flat and improving train loss.

    Thresholds:
    - ``min_points``: fewer finite loss points after warmup than this → "too early to judge" (10: the
      smallest sample on which a median and a rank slope mean anything).
    - ``smooth_window_points``: the recent level is the rolling median of this many points (5), so a
      level "above" needs ≥ 3 of 5 points above — one outlier never counts.
    - ``reference_window_points``: "best so far" is the lowest rolling median of this many points (20),
      not the single lowest value, which noise drags down.
    - ``divergence_ratio``: the recent level ≥ this × the best so far is divergence. 2.0 is
      llm-foundry KillLossSpike's and Lightning SpikeDetection's rtol.
    - ``blowup_early_ratio`` / ``blowup_min_ratio``: the recent level ≥ 3× the median of the first
      ``early_window_points`` after warmup, or ≥ 10× the all-time minimum (Megatron's 10×), is a
      blow-up: critical as soon as it is sustained, no second check needed.
    - ``sustain_points``: smoothed points in a row above a threshold before it is reported (3 smoothed
      points ≈ 5 logged points, llm-foundry's "more than 4 consecutive steps").
    - ``confirm_points``: smoothed points in a row above ``divergence_ratio`` that make divergence
      critical within a single check (8 ≈ 10 logged points); otherwise a second consecutive check
      that still sees it is needed.
    - ``trend_window_points``: the slope is measured over the last this many points (100).
    - ``rising_min_change``: a significant rise of at least this relative change over the window, by
      the slope and by the medians of its first and last thirds, is a warning (10 %: clearly beyond
      the few-% drift of a noisy plateau).
    - ``flat_window_points`` / ``flat_max_change``: no significant slope over at least this many points
      and less than this relative change → flat (200 points, 2 %).
    - ``confidence_z``: two-sided normal quantile of the Theil–Sen band (1.96 → 95 %), with the
      variance inflated for autocorrelation (Hamed–Rao effective sample size).
    """

    min_points: int = Field(default=10, ge=4)
    smooth_window_points: int = Field(default=5, ge=1)
    reference_window_points: int = Field(default=20, ge=1)
    divergence_ratio: float = Field(default=2.0, gt=1)
    blowup_early_ratio: float = Field(default=3.0, gt=1)
    blowup_min_ratio: float = Field(default=10.0, gt=1)
    early_window_points: int = Field(default=20, ge=1)
    sustain_points: int = Field(default=3, ge=1)
    confirm_points: int = Field(default=8, ge=1)
    trend_window_points: int = Field(default=100, ge=4)
    rising_min_change: float = Field(default=0.10, gt=0)
    flat_window_points: int = Field(default=200, ge=4)
    flat_max_change: float = Field(default=0.02, gt=0)
    confidence_z: float = Field(default=1.96, gt=0)

    def check(self, ctx: JudgeContext) -> list[Signal]:
        loss = ctx.train_loss
        if loss is None:
            return []
        _, warm_values = finite_after(loss, ctx.lr_events.warmup_end)
        steps, values = finite_after(loss, train_start(ctx))
        if values.size < self.min_points:
            return [self._too_few(loss, values.size, ctx)]
        y = positive_log(values)
        smooth = self._smooth_tail(y)
        out = self._blowup(loss, steps, values, smooth, warm_values)
        if not out:
            out = self._divergence(ctx, loss, steps, y, smooth)
        return out or self._slope(loss, steps, y)

    def _smooth_tail(self, y: np.ndarray) -> np.ndarray:
        """Rolling median of the last ``TAIL_POINTS`` points (full windows only where history allows)."""
        k = min(y.size, TAIL_POINTS)
        segment = y[-(k + self.smooth_window_points - 1) :]
        return rolling_median(segment, self.smooth_window_points)[-k:]

    def _best_before(self, y: np.ndarray, k: int) -> np.ndarray:
        """For each of the last ``k`` points, the lowest block median over the blocks ended before it.

        Blocks are consecutive runs of ``reference_window_points``: medians of disjoint blocks cost n
        instead of n × window and a high block (an excursion) never lowers the minimum.
        """
        w = max(1, min(self.reference_window_points, y.size // 2))
        nb = y.size // w
        best = np.minimum.accumulate(np.median(y[: nb * w].reshape(nb, w), axis=1))
        done = (y.size - k + np.arange(k)) // w  # blocks fully before each point
        return np.where(done > 0, best[np.clip(done - 1, 0, nb - 1)], np.inf)

    def _too_few(self, loss: MetricSeries, n: int, ctx: JudgeContext) -> Signal:
        since = ctx.lr_events.warmup_end
        after = f" after warmup (step {fmt_step(since)})" if since is not None else ""
        msg = f"only {n} finite {loss.name} points{after} (need {self.min_points} to judge the trend)."
        return signal(SignalKind.TOO_FEW_POINTS, Severity.INFO, msg, metric=loss.name, points=n)

    def _blowup(
        self,
        loss: MetricSeries,
        steps: np.ndarray,
        values: np.ndarray,
        smooth: np.ndarray,
        warm_values: np.ndarray,
    ) -> list[Signal]:
        early = float(np.median(warm_values[: self.early_window_points])) if warm_values.size else None
        lowest = loss.min_value if loss.min_value is not None else float(values.min())
        limits = [
            (
                self.blowup_min_ratio * lowest,
                f"{fmt_ratio(self.blowup_min_ratio)} the all-time minimum {fmt(lowest)}",
            )
        ]
        if early is not None and early > 0:
            limits.append(
                (
                    self.blowup_early_ratio * early,
                    f"{fmt_ratio(self.blowup_early_ratio)} the early median {fmt(early)}",
                )
            )
        limit, label = min(limits, key=lambda item: item[0])
        if limit <= 0:
            return []
        above = trailing_run(smooth > np.log(limit))
        if above < self.sustain_points:
            return []
        level = float(np.exp(smooth[-1]))
        msg = (
            f"{loss.name} blew up: recent median {fmt(level)} at step {fmt_step(int(steps[-1]))} is above "
            f"{label} for {above} smoothed points (threshold {self.sustain_points})."
        )
        return [
            signal(
                SignalKind.DIVERGENCE,
                Severity.CRITICAL,
                msg,
                metric=loss.name,
                step=int(steps[-1]),
                level=level,
                limit=limit,
                points_above=above,
                since_step=int(steps[-above]),
            )
        ]

    def _divergence(
        self, ctx: JudgeContext, loss: MetricSeries, steps: np.ndarray, y: np.ndarray, smooth: np.ndarray
    ) -> list[Signal]:
        best = self._best_before(y, smooth.size)
        above = trailing_run(smooth > best + np.log(self.divergence_ratio))
        if above < self.sustain_points:
            return []
        start = y.size - above
        reference = float(np.exp(best[-above]))
        level = float(np.exp(smooth[-1]))
        ratio = level / reference
        since = int(steps[start])
        recent = max(start - 1, y.size - 50)  # is the loss already falling back?
        recovering = theil_sen(steps[recent:], y[recent:], confidence_z=self.confidence_z)
        confirmed, how = self._confirmation(ctx, loss.name, above, since)
        if recovering is not None and recovering.falling:
            confirmed, how = False, "but falling again, so not confirmed"
        msg = (
            f"{loss.name} {fmt(float(np.exp(y[-1])))} at step {fmt_step(int(steps[-1]))}: recent median "
            f"{fmt(level)} is {fmt_ratio(ratio)} the best median {fmt(reference)} (threshold "
            f"{fmt_ratio(self.divergence_ratio)}) for {above} smoothed points since step "
            f"{fmt_step(since)}; {how}."
        )
        severity = Severity.CRITICAL if confirmed else Severity.WARNING
        return [
            signal(
                SignalKind.DIVERGENCE,
                severity,
                msg,
                metric=loss.name,
                step=int(steps[-1]),
                ratio=ratio,
                reference=reference,
                points_above=above,
                since_step=since,
            )
        ]

    def _confirmation(self, ctx: JudgeContext, name: str, above: int, since: int) -> tuple[bool, str]:
        if above >= self.confirm_points:
            return True, f"confirmed by {above} points (threshold {self.confirm_points})"
        prev = ctx.previous_signal(SignalKind.DIVERGENCE, name)
        if prev is not None and prev.step is not None and ctx.last_step is not None:
            prev_since = prev.evidence.get("since_step", prev.step)
            if prev_since >= since and ctx.last_step > prev.step:
                return True, "second consecutive check"
        return False, f"critical after {self.confirm_points} points or on the next check"

    def _slope(self, loss: MetricSeries, steps: np.ndarray, y: np.ndarray) -> list[Signal]:
        """Improving or rising over the last ``trend_window_points``; else the flat test."""
        xs, ys = steps[-self.trend_window_points :], y[-self.trend_window_points :]
        trend = theil_sen(xs, ys, confidence_z=self.confidence_z)
        if trend is None:
            return []
        change = float(np.expm1(trend.slope * (xs[-1] - xs[0])))
        span = f"over the last {xs.size} points (steps {fmt_step(int(xs[0]))}–{fmt_step(int(xs[-1]))})"
        third = max(ys.size // 3, 1)
        first, last = float(np.exp(np.median(ys[:third]))), float(np.exp(np.median(ys[-third:])))
        moved = f"{fmt(first)} → {fmt(last)} (medians of the first and last thirds)"
        ev = {"change": change, "slope_per_step": trend.slope, "mk_z": trend.z, "points": trend.n}
        name, step = loss.name, int(xs[-1])
        if trend.falling:
            msg = f"{name} improving: {moved}, {fmt_pct(change)} by the slope {span}."
            return [signal(SignalKind.IMPROVING, Severity.INFO, msg, metric=name, step=step, **ev)]
        if trend.rising and min(change, last / first - 1) >= self.rising_min_change:
            msg = (
                f"{name} rising: {moved}, +{fmt_pct(change)} by the slope (threshold "
                f"+{fmt_pct(self.rising_min_change)}) {span}, Mann–Kendall z {trend.z:.1f}."
            )
            return [
                signal(SignalKind.DIVERGENCE, Severity.WARNING, msg, metric=name, step=step,
                       since_step=int(xs[0]), **ev)
            ]  # fmt: skip
        return self._flat(name, steps[-self.flat_window_points :], y[-self.flat_window_points :])

    def _flat(self, name: str, x: np.ndarray, y: np.ndarray) -> list[Signal]:
        """Flat: no significant slope and a small change over ``flat_window_points``."""
        trend = theil_sen(x, y, confidence_z=self.confidence_z)
        if trend is None:
            return []
        change = float(np.expm1(trend.slope * (x[-1] - x[0])))
        ev = {"change": change, "slope_per_step": trend.slope, "mk_z": trend.z, "points": trend.n}
        span = f"over the last {x.size} points (steps {fmt_step(int(x[0]))}–{fmt_step(int(x[-1]))})"
        significant = trend.rising or trend.falling
        if x.size >= self.flat_window_points and abs(change) <= self.flat_max_change and not significant:
            msg = (
                f"{name} flat: {fmt_pct(change)} change {span} (threshold ±{fmt_pct(self.flat_max_change)}), "
                f"no significant slope."
            )
            return [signal(SignalKind.FLAT, Severity.WARNING, msg, metric=name, step=int(x[-1]), **ev)]
        verb = "improving" if trend.falling else "no clear trend"
        msg = f"{name} {verb}: {fmt_pct(change)} change {span}."
        kind = SignalKind.IMPROVING if trend.falling else SignalKind.FLAT
        return [signal(kind, Severity.INFO, msg, metric=name, step=int(x[-1]), **ev)]
