"""Loss spikes: far outside the recent noise, then either recovered (harmless) or persisting; huge ones
that keep coming back are a warning."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import Field

from ..models import Severity, Signal, SignalKind
from ..state import MetricSeries
from .context import Detector, JudgeContext, signal
from .stats import MAD_TO_SIGMA, finite_xy, fmt, fmt_ratio, fmt_step, positive_log, previous_median_mad, runs


@dataclass(frozen=True)
class Episode:
    first: int  # index of the first spiking point (into the scored arrays)
    peak: int  # index of the highest point
    end: int  # one past the last spiking point
    recovered_after: int | None  # points after `end` until back to normal, None if not back


@dataclass(frozen=True)
class Scored:
    steps: np.ndarray
    values: np.ndarray
    median: np.ndarray  # rolling median of log(loss) over the previous window
    sigma: np.ndarray  # robust σ of log(loss) over the previous window
    z: np.ndarray
    before: np.ndarray  # how many points the median and σ of each scored point are over


def score(
    series: MetricSeries, window: int, min_log_sigma: float, scan_points: int, min_history: int | None = None
) -> Scored | None:
    """Robust z of the last ``scan_points`` full-resolution log values against the points before each (up to
    ``window`` of them; from ``min_history`` on when the log's first points are in the scan)."""
    steps, values = finite_xy(series.raw_steps, series.raw_values)
    whole = values.size <= scan_points + window  # the log's first points are in the scan: no history is cut off
    steps, values = steps[-(scan_points + window) :], values[-(scan_points + window) :]
    y = positive_log(values)
    med, mad, start = previous_median_mad(y, window, min_history if whole else None)
    if med.size == 0:
        return None
    sigma = np.maximum(MAD_TO_SIGMA * mad, min_log_sigma)
    before = np.minimum(np.arange(start, y.size), window)
    return Scored(steps[start:], values[start:], med, sigma, (y[start:] - med) / sigma, before)


def _goes_below_zero(loss: MetricSeries) -> bool:
    """A loss that goes below zero (a WGAN's or a hinge GAN's adversarial loss, a log-likelihood) has no
    spikes in this sense: every test here reads log(loss) and ratios to a median, and its negative points all
    clamp to one floor, so a generator's loss swinging around 0 (a molecule GAN's -1.1 to 1.6, median 0.02:
    corpus_real log-ls-zechariabarriga-1, healthy) read as "exploded 14 times, 155× the median". The trend
    detector reads such a loss on its own scale (`TrendDetector._signed_loss`); a NaN or Inf in it is the
    non-finite detector's."""
    values = np.asarray(loss.raw_values, dtype=float)
    return bool((values[np.isfinite(values)] < 0).any())


class SpikeDetector(Detector):
    """Single-point and short loss spikes on log(loss) against a rolling median and MAD.

    Thresholds:
    - ``window_points``: median and MAD come from the previous 50 points (llm-foundry's 100-step
      window at the common 1-in-2 logging; Lightning's running mean of 10 is too short for a MAD).
    - ``z``: a spike is ≥ 6 robust σ above that median — far beyond normal variance (ZClip's 2.5 clips
      gradients every few hundred steps; a stop-relevant loss spike must be much rarer).
    - ``min_ratio``: and ≥ 1.25× the median, so a very smooth loss does not turn jitter into spikes.
    - ``recover_z``: back to normal = within 3 σ of the pre-spike median. A spike that came back is
      info whatever it took (never a stop); one not back yet is ``watch`` (continue, next check in 10
      minutes: whether it recovers is the evidence), and the trend detector turns it into divergence
      when it is sustained.
    - ``min_log_sigma``: σ floor of 0.01 (1 %), for losses logged with few digits.
    - ``grad_z``: a grad-norm z ≥ 3.5 at the same steps is a co-spike, reported as evidence.
    - ``restart_grace_points``: a spike starting within 10 points after an expected LR restart is the
      restart's bump: info.
    - ``scan_points``: only the last 500 full-resolution points are scanned; an older spike has long
      been recovered or become divergence, and scanning all of a run costs n × window medians.
    - ``min_history_points``: a log shorter than the window is scanned from its 4th point on, each point
      against all the points before it (3: the fewest whose median one outlier among them cannot move).
      Before, such a log was scored at its last point only, so a short pasted log never showed more
      than one spike.
    - ``recurring_ratio`` / ``recurring_spikes``: spikes each ≥ 10× the median before them (Megatron's
      10×, the trend's blow-up line) that come back, 2 or more in the scanned points, are a warning — a
      reviewer's look, never a stop on their own: the steps between them may train normally (issue 9: a
      detection loss at 1e16 on 3 of 8 logged batches, 0.05–0.09 between, was a single watched spike
      at every check). One such spike that recovers stays info; no healthy run of either corpus' train
      split has a spike ≥ 10× its median at all (the largest is 7×, a single bad batch).
    """

    window_points: int = Field(default=50, ge=5)
    z: float = Field(default=6.0, gt=0)
    min_ratio: float = Field(default=1.25, ge=1)
    recover_z: float = Field(default=3.0, gt=0)
    min_log_sigma: float = Field(default=0.01, gt=0)
    grad_z: float = Field(default=3.5, gt=0)
    restart_grace_points: int = Field(default=10, ge=0)
    scan_points: int = Field(default=500, ge=1)
    min_history_points: int = Field(default=3, ge=1)
    recurring_ratio: float = Field(default=10.0, gt=1)
    recurring_spikes: int = Field(default=2, ge=2)

    def check(self, ctx: JudgeContext) -> list[Signal]:
        loss = ctx.train_loss
        if loss is None or _goes_below_zero(loss):
            return []
        scored = score(loss, self.window_points, self.min_log_sigma, self.scan_points, self.min_history_points)
        if scored is None:
            return []
        episodes = self._episodes(scored)
        if not episodes:
            return []
        grad = (
            score(ctx.grad_norm, self.window_points, self.min_log_sigma, self.scan_points, self.min_history_points)
            if ctx.grad_norm is not None
            else None
        )
        out: list[Signal] = []
        last = episodes[-1]
        recovered = [e for e in episodes if e.recovered_after is not None]
        if recovered:
            out.append(self._recovered(loss, scored, recovered, grad, len(scored.steps)))
        if last.recovered_after is None:
            out.append(self._persisting(ctx, loss, scored, last, grad))
        huge = [e for e in episodes if self._ratio(scored, e) >= self.recurring_ratio]
        if len(huge) >= self.recurring_spikes:
            out.append(self._recurring(loss, scored, huge))
        return out

    @staticmethod
    def _ratio(s: Scored, e: Episode) -> float:
        """The episode's peak over the median of the points before it."""
        return float(s.values[e.peak] / np.exp(s.median[e.peak]))

    def _recurring(self, loss: MetricSeries, s: Scored, huge: list[Episode]) -> Signal:
        """Spikes ≥ ``recurring_ratio`` × their median that keep coming back: a warning (a reviewer's look),
        never a stop on their own — the steps between them may be training normally."""
        worst = max(huge, key=lambda e: self._ratio(s, e))
        steps = ", ".join(fmt_step(int(s.steps[e.peak])) for e in huge[-5:])
        msg = (
            f"{loss.name} exploded {len(huge)} times in the last {len(s.steps)} points, each spike ≥ "
            f"{fmt_ratio(self.recurring_ratio)} the median of the points before it (at steps {steps}; "
            f"warning from {self.recurring_spikes}); largest: {self._describe(loss.name, s, worst)}. Spikes this "
            f"large that keep coming back are worth a look (a bad shard, an overflow on some batches)."
        )
        return signal(
            SignalKind.SPIKE,
            Severity.WARNING,
            msg,
            metric=loss.name,
            step=int(s.steps[huge[-1].peak]),
            z=float(s.z[worst.peak]),
            spikes=len(huge),
            ratio=self._ratio(s, worst),
            since_step=int(s.steps[huge[0].first]),
        )

    def _episodes(self, s: Scored) -> list[Episode]:
        log_ratio = np.log(s.values) - s.median if np.all(s.values > 0) else s.z * s.sigma
        spike = (s.z >= self.z) & (log_ratio >= np.log(self.min_ratio))
        episodes = []
        for first, end in runs(spike):
            peak = first + int(np.argmax(s.z[first:end]))
            base, sigma = s.median[first], s.sigma[first]
            after = (positive_log(s.values[end:]) - base) / sigma if end < s.z.size else np.empty(0)
            back = np.flatnonzero(after < self.recover_z)
            episodes.append(Episode(first, peak, end, int(back[0]) + 1 if back.size else None))
        return episodes

    def _grad_note(self, grad: Scored | None, s: Scored, e: Episode) -> tuple[str, float | None]:
        if grad is None:
            return "", None
        lo, hi = np.searchsorted(grad.steps, [s.steps[e.first], s.steps[e.end - 1]], side="left")
        window = grad.z[lo : hi + 1]
        if window.size == 0 or float(window.max()) < self.grad_z:
            return "", None
        gz = float(window.max())
        return f"; grad norm co-spiked (z {gz:.1f}, threshold {self.grad_z:g})", gz

    def _describe(self, name: str, s: Scored, e: Episode) -> str:
        i = e.peak
        median = float(np.exp(s.median[i]))
        return (
            f"{name} {fmt(float(s.values[i]))} at step {fmt_step(int(s.steps[i]))} was "
            f"{fmt_ratio(float(s.values[i]) / median)} the median {fmt(median)} of the previous "
            f"{int(s.before[i])} points (z {s.z[i]:.1f}, threshold {self.z:g})"
        )

    def _recovered(
        self, loss: MetricSeries, s: Scored, quick: list[Episode], grad: Scored | None, scanned: int
    ) -> Signal:
        worst = max(quick, key=lambda e: float(s.z[e.peak]))
        note, gz = self._grad_note(grad, s, worst)
        count = (
            f"{len(quick)} spikes in the last {scanned} points, all recovered; largest: "
            if len(quick) > 1
            else ""
        )
        back = f"back to normal within {worst.recovered_after} points"
        msg = f"{count}{self._describe(loss.name, s, worst)}, {back}{note}."
        return signal(
            SignalKind.SPIKE_RECOVERED,
            Severity.INFO,
            msg,
            metric=loss.name,
            step=int(s.steps[worst.peak]),
            z=float(s.z[worst.peak]),
            spikes=len(quick),
            recovered_after_points=worst.recovered_after,
            grad_z=gz,
        )

    def _persisting(
        self, ctx: JudgeContext, loss: MetricSeries, s: Scored, e: Episode, grad: Scored | None
    ) -> Signal:
        note, gz = self._grad_note(grad, s, e)
        start = int(s.steps[e.first])
        after_restart = [r for r in ctx.lr_events.restarts if r <= start]
        elevated = s.z.size - e.first
        severity = Severity.WATCH
        if after_restart:
            restart_idx = int(np.searchsorted(s.steps, after_restart[-1]))
            if e.first - restart_idx <= self.restart_grace_points:
                severity = Severity.INFO
                note += f"; it follows the scheduled LR restart at step {fmt_step(after_restart[-1])}"
        msg = f"{self._describe(loss.name, s, e)} and is still elevated {elevated} point(s) later{note}."
        return signal(
            SignalKind.SPIKE,
            severity,
            msg,
            metric=loss.name,
            step=int(s.steps[e.peak]),
            z=float(s.z[e.peak]),
            elevated_points=elevated,
            grad_z=gz,
            since_step=start,
        )
