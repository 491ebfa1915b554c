"""Learning rate against its schedule: unexpected jumps, a dead LR, a non-finite LR.

``analyse_lr`` runs once per judgement and tells the other detectors where warmup ends and where
the schedule itself restarted (SGDR), so a restart's loss bump is not mistaken for divergence.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from pydantic import Field

from ..models import MetricRole, Severity, Signal, SignalKind
from ..state import MetricSeries
from .context import Detector, JudgeContext, LrEvents, signal
from .runconfig import RunConfig
from .stats import (
    finite_xy,
    fmt,
    fmt_pct,
    fmt_ratio,
    fmt_step,
    runs,
    strictly_falling,
    trailing_run,
)


def _inferred_warmup_end(steps: np.ndarray, lr: np.ndarray) -> int | None:
    """The step where an initial rising LR first stops rising, if it at least doubled.

    From its second point on: a log whose LR doubled from its first point to its second has shown no
    schedule before that rise, so it is where a warmup would be, judged as the same log will be once a
    third point shows where the rise ended (issue 9: a SpeechBrain Conformer warming up 3.6e-5 → 7.2e-5
    between its first two epochs, in proportion to its steps, was a "jump outside warmup" until its third).
    A warmup from 0 may repeat its 0 first: the Trainer holds the scheduler on a step the loss scaler
    skipped, and fp16 runs skip their first steps while the scale settles (issue 9, a LoRA fine-tune
    logging LR 0, 0, 1e-4, 2e-4 with NaN grad norms at its first two steps), so the rise is looked
    for from the last of those zeros. The rise may repeat a value when it climbs on by exactly the smallest
    step it has taken (`_rounded_rise`), or hold each level for a while and climb in steps of one size
    (`_staircase_rise`).
    """
    if lr.size < 2:
        return None
    base = max(int(np.argmax(lr != 0)) - 1, 0)
    rises = np.diff(lr[base:])
    peak = base + (_rounded_rise(rises) or _staircase_rise(lr[base:]))
    if peak == base or lr[peak] < 2 * lr[base]:
        return None
    return int(steps[peak])


def _rounded_rise(rises: np.ndarray) -> int:
    """How many of ``rises`` (an LR's point-to-point changes from its start) belong to its initial climb: every
    change a rise, or a repeat that the climb leaves by exactly one unit, its smallest rise so far. A smooth
    ramp printed to a fixed number of decimals (darknet's burn-in, 1e-3 × (i / 1000)^4 as %f) rises by less
    than the last decimal per print for a while, so it repeats a value and then moves by exactly one unit:
    1e-06 for 12 prints, 2e-06, 3e-06… (log-tg-belitk-1, healthy, a "2× jump outside warmup" at every check). A
    plateau left by any other step (a constant LR that jumps) ends the climb where the plateau began."""
    unit, repeated, end = np.inf, False, 0
    for i, change in enumerate(rises.tolist()):
        if change > 0 and (not repeated or np.isclose(change, unit, rtol=1e-6, atol=0.0)):
            unit, repeated, end = min(unit, change), False, i + 1
        elif change == 0 and np.isfinite(unit):
            repeated = True
        else:
            break
    return end


STAIRCASE_STEP_TOLERANCE = 0.1
"""Two rises of an LR staircase are the same step within 10 % of the first: a linear warmup printed to three
significant digits (5.94e-4, 5.96e-4, 5.90e-4) varies by under 1 %; a constant LR that jumps ×10 and again
×10 rises by 0.09 and then 0.9."""


def _staircase_rise(lr: np.ndarray) -> int:
    """The index of the first point of the top level of an initial climb in held steps of one size, or 0: an LR
    held at each level for a while (a warmup stepped once an epoch) that rises ≥ 2 times, each rise within
    ``STAIRCASE_STEP_TOLERANCE`` of the first. A linear warmup from 0.01 of its peak, one level an epoch, logs
    6e-05 for an epoch, then 6.54e-04, 1.25e-03, 1.84e-03… (log-lx-zhuanglii-1, healthy, a re-ID baseline: a
    "10.9× jump outside warmup" at every check). One rise is no staircase yet: a constant LR that jumps."""
    starts = np.flatnonzero(np.diff(lr) != 0) + 1
    rises = np.diff(lr[np.r_[0, starts]])
    count = 0
    while count < rises.size and rises[count] > 0 and abs(rises[count] / rises[0] - 1) <= STAIRCASE_STEP_TOLERANCE:
        count += 1
    return int(starts[count - 1]) if count >= 2 else 0


def _warming_down(lr: np.ndarray) -> bool:
    """An LR that has fallen at every logged point since its first (≥ 2 points: one fall is already no
    departure from a schedule it was never within): a schedule starting high."""
    return lr.size >= 2 and strictly_falling(lr)


def _climbing_throughout(lr: np.ndarray) -> bool:
    """An LR whose every logged point belongs to an initial climb (`_rounded_rise`: each point a rise, or a
    repeat left by exactly its smallest rise): a warmup still under way, printed to so few digits that it
    repeats values (an SSD's 4e-05, 5e-05, 5e-05, 6e-05, 7e-05 …, log-ox-alynxx-1, healthy, was "1.7× the peak
    reached after warmup" at its second check). A constant LR that then rises is no such climb."""
    return _rounded_rise(np.diff(lr)) == lr.size - 1


class LrDetector(Detector):
    """Learning rate behaving unlike its schedule.

    Thresholds:
    - ``jump_ratio``: after warmup, an LR ≥ this × the lowest of the previous ``jump_window_points``
      points is a rise. No decaying schedule doubles between logged points; the failure this catches
      (a resume that resets the scheduler, an LR in the wrong unit) is typically 10×.
    - ``jump_window_points``: how far back a rise is measured, so a 3-point ramp counts as one rise.
    - ``restart_peak_ratio``: a rise landing at ≤ this × the highest LR seen before it is an SGDR
      restart (expected, not reported) unless the config names a single-cycle schedule. 1.25 leaves
      room for logging jitter; a restart returns to (at most) the previous peak.
    - ``above_peak_ratio``: the latest LR above this × the configured peak LR (without one: the LR at
      the end of warmup, or the first LR) → warning; 1.5 because schedules never exceed their peak, SGDR
      restarts return to it (≤ ``restart_peak_ratio``), and 50 % is far beyond rounding or per-group
      scaling. Without a configured peak, an LR that rose at every logged point has not shown its peak
      yet: a log that starts inside a warmup too short to double in view (issue 9: a Megatron excerpt
      ramping 9.2e-6 → 1.4e-5 at the same rate per step across a gap), or one printed to so few digits that
      it repeats values (`_climbing_throughout`), is not judged against its first point. A schedule with a
      peak has come down from it somewhere; an LR rising without end above a configured peak is the runaway
      test's. An LR above the peak at its first logged point that has fallen at every point since was never
      within the schedule, so it has not left it: a warm-down from a higher start (YOLOv5's bias group falls
      from warmup_bias_lr 0.1 to lr0 0.01 over its warmup epochs, while its weight groups rise to 0.01), not
      an anomaly, and no cause for an eval's dip. From its second point: a first check after two epochs sees
      0.0706 → 0.0403 against lr0 0.01 (log-yolov5_model-1, healthy, was unsure there for an LR "4× the
      configured peak"); an LR above the peak that rose or held since its first point is still judged.
      Nor is an LR that is a constant multiple (to ``group_ratio_fraction``) of another LR of the run, a
      parameter group, whose own peak is within ``above_peak_ratio`` of the configured peak: the configured
      LR is that group's, and this one carries a per-group multiplier (a YOLOv8-pose run's groups pg0/pg2/…
      at 0.0294, exactly 3× its groups pg1/pg3/… at 0.0098 against lr0 0.01, falling together over 100
      epochs: log-pose-vbalab26s-1, healthy, unsure at its first 10 checks for an LR '2.9× the configured
      peak'). Said once: found so at the previous check too (at an earlier step), and no higher than
      ``restart_peak_ratio`` × the ratio it was first found at, it is information — a schedule above the
      configured value, not one leaving it, which the loss judges from there (the configured LR is not the one
      in use: Ultralytics' ``optimizer=auto`` ignores ``lr0`` and picks its own, AdamW at 0.01 / (4 + classes)
      on a short run; a YOLOv8n-seg at 19× its lr0 of 1e-4 through a normal warmup and decay was unsure at all
      20 checks, log-ng-saksham1000-mish-1, healthy). A runaway stays critical, and an LR still climbing past that
      bound a warning.
    - ``group_ratio_fraction``: two groups' LRs are one schedule scaled when their ratio varies by at most 2 %
      of its median over their shared steps: LRs logged to 4 significant digits round by at most 0.05 % each,
      and two different schedules (a warmup against a constant) part by far more within a few points.
    - ``runaway_ratio``: with a peak LR in the run config, an LR that climbed at every logged point, from
      within the schedule (≤ ``restart_peak_ratio`` × the peak) after warmup, to ≥ 2× that peak is a
      runaway schedule → critical on its own, like a non-finite LR. After warmup no schedule rises
      past its configured peak (restarts return to it, a rescaled or misread LR is constant, a warmup
      that overshoots a misread peak started its climb inside warmup), so the cause is certain; and
      an LR compounding past 2× its peak only ends in divergence, which it would take one more check
      to see in the loss. 2× is the departure ``jump_ratio`` calls a jump, reached gradually here.
      The same holds for a sudden jump from within the schedule to ≥ 2× the configured peak (a resumed
      run that rescaled its LR, a unit slip): critical at the jump, before the loss has had time to
      show it. A jump that stays below 2× the peak is a warning.
    - ``dead_ratio``: an LR ≤ this × the peak is dead (1e-3: updates a thousand times smaller than at
      the peak do not train). Not 1e-2: the classic step schedule (ResNet's two 10× drops at 50 % and 75 %)
      sits at 1e-2 × its peak for its last quarter and trains well there.
    - ``dead_before_fraction``: a dead LR before this share of the configured total steps → warning;
      decaying to ~0 at the very end is what linear/cosine schedules do (0.9).
    - ``zero_lr_points``: an LR of exactly 0 at every one of at least 3 logged points has no peak to be
      compared with and trains nothing (a scheduler stepped to its end before training, a torchvision
      run resumed past its schedule) → warning. 3 so that a warmup logged from 0 is never it.
    - ``zero_lr_trained_ratio``: unless the train loss fell to half its start over those points: a loss that
      halves was trained, so the printed 0 is an LR too small for the print's decimals (`_trained_meanwhile`).
    - ``dead_points`` / ``dead_share_fraction``: without a known total, a dead LR for this many logged
      points in a row, covering ≥ 10 % of the steps logged so far → warning. The share keeps a cosine
      schedule's own last 2 % (below ``dead_ratio`` by design) from being called dead at the end of a
      healthy run whose total is unknown, however many points it logs.
    - A schedule with restarts reaches ~0 at the end of each cycle: once the log shows the LR coming back
      from dead (a dead stretch followed by a live point), a dead LR at its latest point is a cycle's
      trough, and dead only when it has lasted longer than the longest stretch the run came back from
      (issue 9: healthy log-ViT-LoRA-Demo-1 decays linearly to 0 every 2,500 of its 75,000 steps and
      restarts; every check whose last point was a trough was unsure, 8 of its 20).
    """

    jump_ratio: float = Field(default=2.0, gt=1)
    jump_window_points: int = Field(default=3, ge=1)
    restart_peak_ratio: float = Field(default=1.25, ge=1)
    above_peak_ratio: float = Field(default=1.5, gt=1)
    group_ratio_fraction: float = Field(default=0.02, ge=0, lt=1)
    runaway_ratio: float = Field(default=2.0, gt=1)
    dead_ratio: float = Field(default=1e-3, gt=0, lt=1)
    dead_before_fraction: float = Field(default=0.9, gt=0, le=1)
    dead_points: int = Field(default=20, ge=1)
    dead_share_fraction: float = Field(default=0.1, ge=0, le=1)
    zero_lr_points: int = Field(default=3, ge=1)
    zero_lr_trained_ratio: float = Field(default=0.5, gt=0, lt=1)

    def analyse(self, series: MetricSeries | None, config: RunConfig) -> LrEvents:
        if series is None:
            return LrEvents(warmup_end=config.warmup_steps, peak=config.peak_lr)
        steps, lr = finite_xy(series.steps, series.values)
        warmup_end = config.warmup_steps or _inferred_warmup_end(steps, lr)
        peak = config.peak_lr or (float(lr.max()) if lr.size else None)
        if lr.size < 2:
            return LrEvents(warmup_end=warmup_end, peak=peak)
        w = self.jump_window_points
        # warmup points never serve as the "before" of a rise: with downsampled history, one bucket mean
        # of the warmup ramp sits next to the first post-warmup point and would look like a jump
        before = lr if warmup_end is None else np.where(steps <= warmup_end, np.inf, lr)
        padded = np.concatenate((np.full(w - 1, np.inf), before[:-1]))
        prev_min = sliding_window_view(padded, w).min(axis=1)  # lowest of the w points before each one
        cur = lr[1:]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(prev_min > 0, cur / prev_min, np.where(cur > 0, np.inf, 1.0))
        rising = ratio >= self.jump_ratio
        if warmup_end is not None:
            rising &= steps[1:] > warmup_end
        running_peak = np.maximum.accumulate(lr)[:-1]
        restarts: list[int] = []
        jumps: list[tuple[int, float, float, float]] = []
        allow_restarts = config.restarts_expected is not False
        for start, end in runs(rising):
            i = start + int(np.argmax(cur[start:end]))
            fits = allow_restarts and cur[i] <= self.restart_peak_ratio * running_peak[start]
            if fits:
                restarts.append(int(steps[start + 1]))
            else:
                jumps.append((int(steps[start + 1]), float(ratio[start:end].max()), float(lr[start]), float(cur[i])))
        return LrEvents(warmup_end=warmup_end, peak=peak, restarts=tuple(restarts), jumps=tuple(jumps))

    def check(self, ctx: JudgeContext) -> list[Signal]:
        series = ctx.learning_rate
        if series is None or series.values.size == 0:
            return []
        out = self._non_finite(series)
        steps, lr = finite_xy(series.steps, series.values)
        if lr.size == 0:
            return out
        out += [self._jump(series, ctx, *jump) for jump in ctx.lr_events.jumps[-2:]]
        if not ctx.lr_events.jumps:
            out += self._above_peak(series, ctx, steps, lr)
        out += self._dead(series, ctx, steps, lr)
        return out

    def _above_peak(self, series: MetricSeries, ctx: JudgeContext, steps: np.ndarray, lr: np.ndarray) -> list[Signal]:
        """The latest LR above the configured peak, or, without one, above the peak the schedule reached
        by the end of warmup (its first value without warmup): a slow ramp never trips the jump test."""
        peak, what = ctx.config.peak_lr, "the configured peak"
        if not peak:
            end = ctx.lr_events.warmup_end
            upto = int(np.searchsorted(steps, end, side="right")) if end is not None else 1
            if lr.size > 1 and _climbing_throughout(lr):
                return []  # still in a warmup: no peak to compare with yet
            peak, what = float(lr[: max(upto, 1)].max()), "the peak reached after warmup"
        if peak <= 0 or lr[-1] <= self.above_peak_ratio * peak or _warming_down(lr):
            return []
        if ctx.config.peak_lr and self._scaled_group(ctx, series.name, steps, lr, peak):
            return []
        msg = (
            f"{series.name} {fmt(lr[-1])} at step {fmt_step(int(steps[-1]))} is "
            f"{fmt_ratio(lr[-1] / peak)} {what} {fmt(peak)} (threshold {fmt_ratio(self.above_peak_ratio)})"
        )
        since = self._runaway_since(ctx, steps, lr, peak) if ctx.config.peak_lr else None
        first = self._first_above_peak(ctx, series.name, int(steps[-1]))
        if since is None and first is not None and lr[-1] / peak <= self.restart_peak_ratio * first:
            severity, tail = Severity.INFO, (
                f", as when first found ({fmt_ratio(first)}) and not {fmt_ratio(self.restart_peak_ratio)} above "
                "that: a schedule above that value, not one leaving it (the configured LR is not the one in use, as "
                "with Ultralytics' optimizer=auto); the loss judges it from here."
            )
        elif since is None:
            severity, tail = Severity.WARNING, "."
        else:
            severity = Severity.CRITICAL
            tail = (
                f", climbing at every point since step {fmt_step(since)}, where it was within the schedule "
                f"(runaway at {fmt_ratio(self.runaway_ratio)}): the schedule is running away."
            )
        return [
            signal(SignalKind.LR_ANOMALY, severity, msg + tail, metric=series.name, step=int(steps[-1]),
                   ratio=lr[-1] / peak, since_step=since, first_ratio=first)
        ]  # fmt: skip

    @staticmethod
    def _first_above_peak(ctx: JudgeContext, name: str, last_step: int) -> float | None:
        """The ratio to the peak at which this LR was first found above it, when the previous check, at an earlier
        step, found it above the peak too; else None."""
        if not ctx.previous:
            return None
        for s in ctx.previous[0].signals:
            if s.kind is not SignalKind.LR_ANOMALY or s.metric != name or "ratio" not in s.evidence:
                continue
            if s.step is not None and s.step < last_step:
                return float(s.evidence.get("first_ratio", s.evidence["ratio"]))
        return None

    def _scaled_group(self, ctx: JudgeContext, name: str, steps: np.ndarray, lr: np.ndarray, peak: float) -> bool:
        """Another LR of the run (a parameter group) peaks within ``above_peak_ratio`` of the configured peak,
        and this one is a constant multiple of it at every shared step (to ``group_ratio_fraction``): a
        per-group multiplier on the configured schedule, not a schedule above its peak."""
        for other, info in ctx.roles.items():
            if other == name or info.role is not MetricRole.LEARNING_RATE or other not in ctx.history.metrics:
                continue
            o_steps, o_lr = finite_xy(ctx.history.metrics[other].steps, ctx.history.metrics[other].values)
            shared, i, j = np.intersect1d(steps, o_steps, return_indices=True)
            if shared.size < 2 or o_lr.max() > self.above_peak_ratio * peak or np.any(o_lr[j] <= 0):
                continue
            ratio = lr[i] / o_lr[j]
            if float(np.ptp(ratio)) <= self.group_ratio_fraction * float(np.median(ratio)):
                return True
        return False

    def _runaway_since(self, ctx: JudgeContext, steps: np.ndarray, lr: np.ndarray, peak: float) -> int | None:
        """Step where an unbroken climb to ≥ ``runaway_ratio`` × ``peak`` began, if it began after warmup
        at an LR within the schedule; else None."""
        if lr[-1] < self.runaway_ratio * peak:
            return None
        climb = trailing_run(np.diff(lr) > 0)
        start = lr.size - 1 - climb
        warmup_end = ctx.lr_events.warmup_end
        if climb < 2 or lr[start] > self.restart_peak_ratio * peak:
            return None
        if warmup_end is not None and steps[start] < warmup_end:
            return None
        return int(steps[start])

    def _jump(
        self, series: MetricSeries, ctx: JudgeContext, step: int, ratio: float, before: float, after: float
    ) -> Signal:
        sched = ctx.config.schedule
        why = f"not expected for a '{sched}' schedule" if sched else "above the highest LR so far, so not a restart"
        msg = (
            f"{series.name} jumped {fmt_ratio(ratio)} at step {fmt_step(step)} outside warmup "
            f"(threshold {fmt_ratio(self.jump_ratio)}), {why}"
        )
        peak = ctx.config.peak_lr
        if peak and before <= self.restart_peak_ratio * peak and after >= self.runaway_ratio * peak:
            msg += (
                f", from within the schedule to {fmt(after)}, {fmt_ratio(after / peak)} the configured peak "
                f"{fmt(peak)} (critical at {fmt_ratio(self.runaway_ratio)}): no schedule goes there. If the LR was "
                f"raised on purpose, set the new peak as learning_rate in the run's config"
            )
            return signal(SignalKind.LR_ANOMALY, Severity.CRITICAL, msg + ".", metric=series.name, step=step,
                          jump_ratio=ratio, ratio=after / peak)  # fmt: skip
        return signal(SignalKind.LR_ANOMALY, Severity.WARNING, msg + ".", metric=series.name, step=step,
                      jump_ratio=ratio)  # fmt: skip

    def _non_finite(self, series: MetricSeries) -> list[Signal]:
        raw = series.raw_values
        bad = ~np.isfinite(raw)
        if not bad.any():
            return []
        idx = int(np.flatnonzero(bad)[-1])
        step = int(series.raw_steps[idx])
        latest = bool(bad[-1])
        severity = Severity.CRITICAL if latest else Severity.WARNING
        state = "and still is" if latest else f"then finite again for {raw.size - 1 - idx} points"
        msg = f"{series.name} was non-finite at step {fmt_step(step)} ({int(bad.sum())} points) {state}."
        return [
            signal(
                SignalKind.LR_ANOMALY,
                severity,
                msg,
                metric=series.name,
                step=step,
                non_finite_points=int(bad.sum()),
            )
        ]

    def _trained_meanwhile(self, ctx: JudgeContext, last_step: int) -> bool:
        """The train loss, positive, fell to ≤ ``zero_lr_trained_ratio`` × its start (medians of its first and last
        3 points up to ``last_step``) while the LR printed 0: weights that do not move cannot halve a loss, so the
        0 is a small LR the print rounded (darknet's burn-in, 1e-3 × (i / 1000)^4 printed as %f, is 0.000000 for
        its first 150 iterations, while its loss falls 1958 → 212: log-tg-belitk-1, healthy, unsure there for
        "nothing is being trained")."""
        loss = ctx.train_loss
        if loss is None:
            return False
        steps, values = finite_xy(loss.steps, loss.values)
        values = values[steps <= last_step]
        if values.size < 6 or values.min() <= 0:
            return False
        return float(np.median(values[-3:])) <= self.zero_lr_trained_ratio * float(np.median(values[:3]))

    @staticmethod
    def _dead_share(steps: np.ndarray, dead_run: int) -> float:
        """The share of the logged steps that the trailing ``dead_run`` points span."""
        span = int(steps[-1]) - int(steps[0])
        return (int(steps[-1]) - int(steps[-dead_run])) / span if span > 0 else 0.0

    @staticmethod
    def _longest_trough(dead: np.ndarray) -> int:
        """The longest dead stretch (in points) that a live point followed: a restart's trough; 0 without one."""
        return max((end - start for start, end in runs(dead) if end < dead.size), default=0)

    def _dead(self, series: MetricSeries, ctx: JudgeContext, steps: np.ndarray, lr: np.ndarray) -> list[Signal]:
        if lr.size >= self.zero_lr_points and not lr.any() and not self._trained_meanwhile(ctx, int(steps[-1])):
            msg = (
                f"{series.name} is 0 at all {lr.size} logged points up to step {fmt_step(int(steps[-1]))} "
                f"(threshold {self.zero_lr_points}): nothing is being trained."
            )
            return [signal(SignalKind.LR_ANOMALY, Severity.WARNING, msg, metric=series.name, step=int(steps[-1]),
                           lr=0.0, dead_points=lr.size)]  # fmt: skip
        peak = ctx.lr_events.peak
        if not peak or lr[-1] > self.dead_ratio * peak:
            return []
        step = int(steps[-1])
        progress = ctx.config.progress(step)
        dead = lr <= self.dead_ratio * peak
        dead_run = trailing_run(dead)
        if dead_run <= self._longest_trough(dead):
            return []  # the end of a cycle, as the ones the run restarted from
        if progress is not None:
            if progress >= self.dead_before_fraction:
                return []
            where = (
                f"at {fmt_pct(progress)} of {fmt_step(ctx.config.total_steps)} total steps "
                f"(threshold {fmt_pct(self.dead_before_fraction)})"
            )
        elif dead_run >= self.dead_points and self._dead_share(steps, dead_run) >= self.dead_share_fraction:
            share = fmt_pct(self._dead_share(steps, dead_run))
            where = (
                f"for the last {dead_run} points, {share} of the steps logged (thresholds {self.dead_points}, "
                f"{fmt_pct(self.dead_share_fraction)}), total steps unknown"
            )
        else:
            return []
        msg = (
            f"{series.name} is {fmt(lr[-1])} at step {fmt_step(step)}, ≤ {self.dead_ratio:g}× the peak "
            f"{fmt(peak)}, {where}: the model has stopped learning."
        )
        return [
            signal(
                SignalKind.LR_ANOMALY,
                Severity.WARNING,
                msg,
                metric=series.name,
                step=step,
                lr=float(lr[-1]),
                peak_lr=peak,
                dead_points=dead_run,
            )
        ]
