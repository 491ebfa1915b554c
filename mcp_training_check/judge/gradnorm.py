"""Gradient norm: exploding, vanishing, and how often it is clipped."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from ..models import Severity, Signal, SignalKind
from ..state import MetricSeries
from .context import Detector, JudgeContext, finite_after, signal
from .stats import MAD_TO_SIGMA, finite_xy, fmt, fmt_pct, fmt_ratio, fmt_step, positive_log


class GradNormDetector(Detector):
    """Exploding and vanishing gradient norms; the clip rate as evidence.

    Thresholds:
    - ``sustain_points`` / ``window_points``: the median of the last 5 grad norms is compared with the
      median of the 50 before them; 5 points so a single clipped outlier (ZClip's z > 2.5 territory)
      never counts as an explosion. A log shorter than that is judged once it has
      ``min_before_points`` before its last 5 (3: the fewest whose median one outlier cannot move, as
      the spike scan's history): a pasted excerpt of 8 lines whose grad norm goes 3.5 → 28–59 (issue 9,
      BEVFusion) is an explosion before it has 10 points.
    - ``explode_ratio``: that ratio ≥ 5× → exploding (warning; the policy makes it critical when the
      loss rises too). Grad norms drift by tens of percent over a run, not 5× in a few points.
    - ``vanish_ratio`` / ``vanish_points``: the last 20 grad norms all ≤ 1e-3× the early median (first
      ``early_window_points`` after warmup) → vanishing: updates three orders of magnitude smaller
      than at the start do not train.
    - ``clip_share``: with ``max_grad_norm`` in the run config, a share ≥ 50 % of recent points at or
      above it is reported (info): most steps are being clipped, so the effective LR is lower than set.
    """

    window_points: int = Field(default=50, ge=5)
    sustain_points: int = Field(default=5, ge=1)
    min_before_points: int = Field(default=3, ge=1)
    explode_ratio: float = Field(default=5.0, gt=1)
    vanish_ratio: float = Field(default=1e-3, gt=0, lt=1)
    vanish_points: int = Field(default=20, ge=1)
    early_window_points: int = Field(default=20, ge=1)
    clip_share: float = Field(default=0.5, gt=0, le=1)

    def check(self, ctx: JudgeContext) -> list[Signal]:
        grad = ctx.grad_norm
        if grad is None:
            return []
        steps, values = finite_xy(grad.raw_steps, grad.raw_values)
        if values.size == 0:
            return []
        clip = self._clip_rate(ctx, values)
        out = self._exploding(grad, steps, values, clip) + self._vanishing(ctx, grad, steps, values)
        if not out and clip is not None and clip >= self.clip_share:
            limit = ctx.config.max_grad_norm
            msg = (
                f"{grad.name} ≥ max_grad_norm {fmt(limit)} in {fmt_pct(clip)} of the last "
                f"{values.size} points (threshold {fmt_pct(self.clip_share)}): most updates are clipped."
            )
            out.append(
                signal(
                    SignalKind.GRAD_EXPLODING,
                    Severity.INFO,
                    msg,
                    metric=grad.name,
                    step=int(steps[-1]),
                    clip_rate=clip,
                )
            )
        return out

    @staticmethod
    def _clip_rate(ctx: JudgeContext, values: np.ndarray) -> float | None:
        limit = ctx.config.max_grad_norm
        return float(np.mean(values >= limit)) if limit else None

    def _exploding(
        self, grad: MetricSeries, steps: np.ndarray, values: np.ndarray, clip: float | None
    ) -> list[Signal]:
        k = self.sustain_points
        if values.size < k + self.min_before_points:
            return []
        before = values[-k - self.window_points : -k]
        recent = float(np.median(values[-k:]))
        base = float(np.median(before))
        if base <= 0 or recent < self.explode_ratio * base:
            return []
        logs = positive_log(before)
        sigma = max(MAD_TO_SIGMA * float(np.median(np.abs(logs - np.median(logs)))), 1e-3)
        z = (np.log(recent) - np.log(base)) / sigma
        clip_note = f"; {fmt_pct(clip)} of points clipped" if clip is not None else ""
        msg = (
            f"{grad.name} exploding: median {fmt(recent)} of the last {k} points up to step "
            f"{fmt_step(int(steps[-1]))} is {fmt_ratio(recent / base)} the median {fmt(base)} of the "
            f"{before.size} before (threshold {fmt_ratio(self.explode_ratio)}, z {z:.1f}){clip_note}."
        )
        return [
            signal(
                SignalKind.GRAD_EXPLODING,
                Severity.WARNING,
                msg,
                metric=grad.name,
                step=int(steps[-1]),
                ratio=recent / base,
                z=float(z),
                clip_rate=clip,
                since_step=int(steps[-k]),
            )
        ]

    def _vanishing(
        self, ctx: JudgeContext, grad: MetricSeries, steps: np.ndarray, values: np.ndarray
    ) -> list[Signal]:
        _, all_values = finite_after(grad, ctx.lr_events.warmup_end)
        if all_values.size < self.early_window_points + self.vanish_points:
            return []
        early = float(np.median(all_values[: self.early_window_points]))
        recent = values[-self.vanish_points :]
        if early <= 0 or recent.size < self.vanish_points or recent.max() > self.vanish_ratio * early:
            return []
        msg = (
            f"{grad.name} vanishing: the last {recent.size} points up to step {fmt_step(int(steps[-1]))} are "
            f"all ≤ {fmt(float(recent.max()))}, {fmt_ratio(early / max(float(recent.max()), 1e-300))} "
            f"below the "
            f"early median {fmt(early)} (threshold {self.vanish_ratio:g}×)."
        )
        return [
            signal(
                SignalKind.GRAD_VANISHING,
                Severity.WARNING,
                msg,
                metric=grad.name,
                step=int(steps[-1]),
                recent_max=float(recent.max()),
                early_median=early,
            )
        ]
