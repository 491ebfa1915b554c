"""A train loss going up: blow-ups, divergences (smoothed and on raw points of a short log), a slow climb
back that the evals witness, and when such an episode is confirmed across checks."""

from __future__ import annotations

import numpy as np

from ..models import Direction, Severity, Signal, SignalKind
from ..state import MetricSeries
from .context import JudgeContext, restated, signal
from .stats import (
    finite_xy,
    fmt,
    fmt_pct,
    fmt_ratio,
    fmt_step,
    positive_log,
    robust_sigma,
    rolling_median,
    strictly_rising,
    theil_sen,
    trailing_run,
)
from .trend_base import MEDIAN_SE, TAIL_POINTS, LossTrendBase, median_gap_error


class LossRiseTests(LossTrendBase):
    """The rise tests of ``TrendDetector`` (its thresholds: ``LossTrendBase``)."""

    def _early_log(self, warm: np.ndarray) -> float | None:
        """log of the median of the run's first points after warmup (where the loss started), None without."""
        if warm.size == 0:
            return None
        early = float(np.median(warm[: self._early_points(warm.size)]))
        return float(np.log(early)) if early > 0 else None

    def _way_back(self, level: float, best: float, early: float | None) -> float:
        """The share of the way from the best level back up to where the loss started, on the log scale (1.0
        when the start is unknown or not above the best: nothing to compare the rise against)."""
        if early is None or not np.isfinite(best) or early - best <= np.log(self.divergence_ratio):
            return 1.0
        return (level - best) / (early - best)

    def _smooth_points(self, y: np.ndarray) -> int:
        """Fewest points whose median tells a ``divergence_ratio`` change from noise at ``divergence_z``."""
        sigma = robust_sigma(y[-TAIL_POINTS:])
        need = (MEDIAN_SE * sigma * self.divergence_z / np.log(self.divergence_ratio)) ** 2
        return int(np.clip(np.ceil(need), self.min_smooth_points, max(self.smooth_window_points, 1)))

    @staticmethod
    def _smooth_tail(y: np.ndarray, window: int) -> np.ndarray:
        """Rolling median of the last ``TAIL_POINTS`` points (full windows only where history allows)."""
        k = min(y.size, TAIL_POINTS)
        segment = y[-(k + window - 1) :]
        return rolling_median(segment, window)[-k:]

    def _gap_error(self, y: np.ndarray, window: int) -> float:
        """Standard error of (recent median − best block median) in log units, from the point noise."""
        sigma = robust_sigma(y[-TAIL_POINTS:])
        w_ref = self._block_width(y.size)
        return median_gap_error(sigma, window, w_ref)

    def _blowup(
        self,
        ctx: JudgeContext,
        loss: MetricSeries,
        steps: np.ndarray,
        y: np.ndarray,
        smooth: np.ndarray,
        best: np.ndarray,
        warm: np.ndarray,
    ) -> list[Signal]:
        early = float(np.median(warm[: self._early_points(warm.size)])) if warm.size else None
        limits = best + np.log(self.blowup_min_ratio)
        if early is not None and early > 0:
            limits = np.minimum(limits, np.log(self.blowup_early_ratio * early))
        if not np.isfinite(limits[-1]):
            return []
        above = trailing_run(smooth > limits)
        if above < self.sustain_points:
            return []
        level, limit = float(np.exp(smooth[-1])), float(np.exp(limits[-1]))
        by_early = early is not None and np.isclose(limit, self.blowup_early_ratio * early)
        label = (
            f"{fmt_ratio(self.blowup_early_ratio)} the early median {fmt(early)}"
            if by_early
            else f"{fmt_ratio(self.blowup_min_ratio)} the best median {fmt(limit / self.blowup_min_ratio)}"
        )
        growth = self._runaway(y[y.size - above :], robust_sigma(y[-TAIL_POINTS:]))
        if growth is not None:
            severity, how = Severity.CRITICAL, f"still climbing, +{fmt_pct(growth)} from its first to its last third"
        elif self._rising_before(ctx, loss.name):
            severity, how = Severity.CRITICAL, "still there at a second check, so confirmed"
        else:
            how = (  # no new points: the last check's evidence, which the next check may see again unchanged
                "first seen at this check: critical if the next check still sees it"
                if loss.new_points > 0
                else "critical if a check with new points still sees it"
            )
            severity = Severity.WARNING
        msg = (
            f"{loss.name} blew up: recent median {fmt(level)} at step {fmt_step(int(steps[-1]))} is above "
            f"{label} for {above} smoothed points (threshold {self.sustain_points}); {how}."
        )
        return [
            signal(SignalKind.DIVERGENCE, severity, msg, metric=loss.name, step=int(steps[-1]),
                   level=level, limit=limit, points_above=above, since_step=int(steps[-above]))
        ]  # fmt: skip

    def _divergence(
        self,
        ctx: JudgeContext,
        loss: MetricSeries,
        steps: np.ndarray,
        y: np.ndarray,
        smooth: np.ndarray,
        best: np.ndarray,
        window: int,
        early: float | None,
    ) -> list[Signal]:
        margin = max(float(np.log(self.divergence_ratio)), self.divergence_z * self._gap_error(y, window))
        above = trailing_run(smooth > best + margin)
        if above < self.sustain_points:
            return []
        back = self._way_back(float(smooth[-1]), float(best[-above]), early)
        if back < self.floor_min_share:
            return []
        start = y.size - above
        reference = float(np.exp(best[-above]))
        level = float(np.exp(smooth[-1]))
        ratio = level / reference
        since = int(steps[start])
        growth = self._runaway(y[start:], robust_sigma(y[-TAIL_POINTS:]))
        confirmed, how = self._confirmation(ctx, loss.name, steps, since, self._falling_back(steps, y, since))
        if growth is not None and not confirmed:
            confirmed, how = True, f"still climbing within it, +{fmt_pct(growth)} from its first to its last third"
        peak = self._unrecovered_peak(steps, y, since, window, float(best[-above]), early)
        if peak is not None and not confirmed:
            i, jump = peak
            blown = f"{fmt(float(np.exp(y[i])))} at step {fmt_step(int(steps[i]))}"
            confirmed, how = True, (
                f"it blew up to {blown}, {fmt_ratio(jump)} the best median and past "
                f"{fmt_ratio(self.blowup_early_ratio)} the early median (thresholds "
                f"{fmt_ratio(self.blowup_stop_ratio)}, {fmt_ratio(self.blowup_early_ratio)}), and has not come back: "
                "weights thrown off by a blow-up do not return to their best, so critical"
            )
        msg = (
            f"{loss.name} {fmt(float(np.exp(y[-1])))} at step {fmt_step(int(steps[-1]))}: recent median "
            f"{fmt(level)} is {fmt_ratio(ratio)} the best median {fmt(reference)} (threshold "
            f"{fmt_ratio(float(np.exp(margin)))}) for {above} smoothed points since step "
            f"{fmt_step(since)}; {how}."
        )
        return [
            signal(SignalKind.DIVERGENCE, self._severity(confirmed), msg, metric=loss.name,
                   step=int(steps[-1]), ratio=ratio, way_back=back,
                   reference=reference, points_above=above, since_step=since)
        ]  # fmt: skip

    def _slow_divergence(
        self,
        ctx: JudgeContext,
        loss: MetricSeries,
        steps: np.ndarray,
        y: np.ndarray,
        smooth: np.ndarray,
        best: np.ndarray,
        window: int,
        early: float | None,
    ) -> list[Signal]:
        """A train loss climbing back above its best by less than ``divergence_ratio`` but by at least
        ``slow_divergence_ratio`` and ``divergence_z`` standard errors, for ``sustain_points`` smoothed points.
        Reported when the eval accuracies fell with it (`_witnessed`) or when it is back where the loss started
        (`_undone`); otherwise the slope's rising test judges it."""
        margin = max(float(np.log(self.slow_divergence_ratio)), self.divergence_z * self._gap_error(y, window))
        above = trailing_run(smooth > best + margin)
        if above < self.sustain_points:
            return []
        since, reference = int(steps[y.size - above]), float(np.exp(best[-above]))
        if self._way_back(float(smooth[-1]), float(best[-above]), early) < self.floor_min_share:
            return []
        ratio = float(np.exp(smooth[-1])) / reference
        msg = (
            f"{loss.name} {fmt(float(np.exp(y[-1])))} at step {fmt_step(int(steps[-1]))} is climbing back: recent "
            f"median {fmt(float(np.exp(smooth[-1])))} is {fmt_ratio(ratio)} the best median {fmt(reference)} "
            f"(threshold {fmt_ratio(float(np.exp(margin)))}) for {above} smoothed points since step {fmt_step(since)}."
        )
        severity, undone_flag = Severity.WATCH, None
        if self._eval_accuracy_drop(ctx, self._episode_start(steps, since, window)) is None:
            undone = self._undone(ctx, loss.name, steps, y, float(smooth[-1]), float(best[-above]), since, early)
            if undone is None:
                return []
            (severity, how), undone_flag = undone, 1.0
            msg = msg[:-1] + f"; {how}."
        return [
            signal(SignalKind.DIVERGENCE, severity, msg, metric=loss.name, step=int(steps[-1]), ratio=ratio,
                   reference=reference, points_above=above, since_step=since, undone=undone_flag)
        ]  # fmt: skip

    def _undone(
        self,
        ctx: JudgeContext,
        name: str,
        steps: np.ndarray,
        y: np.ndarray,
        level: float,
        best: float,
        since: int,
        early: float | None,
    ) -> tuple[Severity, str] | None:
        """A slow divergence with no eval witness whose recent median is back at or above the median of the run's
        first points after warmup (``undone_start_share`` of the way back: all it learned is undone), in a run that
        had learned (its best ≥ ``stuck_drop_fraction`` below that median): a warning, critical when confirmed as a
        divergence is (`_confirmation`); None otherwise."""
        if self.undone_start_share is None or early is None:
            return None
        learned = early - best >= -np.log1p(-self.stuck_drop_fraction)  # best ≥ 5 % below the start: not stuck
        if not learned or (level - best) < self.undone_start_share * (early - best):
            return None
        confirmed, how = self._confirmation(ctx, name, steps, since, self._falling_back(steps, y, since))
        back = (
            f"back at {fmt(float(np.exp(level)))}, above the median {fmt(float(np.exp(early)))} of its first points "
            f"(its best {fmt_pct(1 - float(np.exp(best - early)))} below them; learned at "
            f"{fmt_pct(self.stuck_drop_fraction)})"
        )
        if confirmed:
            return Severity.CRITICAL, f"{back}: all it learned is undone; {how}"
        return Severity.WARNING, f"{back}: all it learned is undone, worth a look; {how}"

    def _unrecovered_peak(
        self, steps: np.ndarray, y: np.ndarray, since: int, window: int, best: float, early: float | None
    ) -> tuple[int, float] | None:
        """The raw peak of a divergence episode when it was a blow-up past recovery: ≥ ``blowup_stop_ratio`` ×
        the best median before the episode and ≥ ``blowup_early_ratio`` × the early median (past the loss the
        run started from); (its index, its ratio to the best), else None. The divergence that follows such a
        peak is the run's state after the blow-up, not a transient lift: it is critical at once, falling or
        not (`_divergence`)."""
        if early is None:
            return None
        start = int(np.searchsorted(steps, self._episode_start(steps, since, window), side="left"))
        i = start + int(np.argmax(y[start:]))
        if y[i] - best < np.log(self.blowup_stop_ratio) or y[i] - early < np.log(self.blowup_early_ratio):
            return None
        return i, float(np.exp(y[i] - best))

    @staticmethod
    def _episode_start(steps: np.ndarray, since: int, window: int) -> int:
        """The first raw point of an episode whose first smoothed point above is at ``since``: the start of
        that point's smoothing window (the evals from there on were made by the worsening model)."""
        i = int(np.searchsorted(steps, since, side="left"))
        return int(steps[max(i - (window - 1), 0)])

    def _witnessed(
        self, ctx: JudgeContext, found: list[Signal], steps: np.ndarray, y: np.ndarray, window: int
    ) -> list[Signal]:
        """A train-loss episode not yet confirmed (``watch``) and not falling back becomes critical when an eval
        accuracy fell with it."""
        out = []
        for s in found:
            since = s.evidence.get("since_step")
            drop = None
            if since is not None and s.severity is Severity.WATCH and not self._falling_back(steps, y, int(since)):
                start = self._episode_start(steps, int(since), window)
                drop = self._eval_accuracy_drop(ctx, start)
            if drop is not None:
                name, share = drop
                note = (
                    f"{name} fell with it, its median since step {fmt_step(start)} {fmt_pct(share)} below its median "
                    f"before (threshold {fmt_pct(self.witness_drop_fraction)}): the model got worse on held-out data "
                    "too, so critical."
                )
                s = restated(s, note, Severity.CRITICAL)
            out.append(s)
        return out

    def _falling_back(self, steps: np.ndarray, y: np.ndarray, since: int) -> bool:
        """The loss falls again since the episode began (Theil–Sen over its points, at most the last 50, as the
        divergence test asks): a transient recovering, which is not stopped."""
        start = max(int(np.searchsorted(steps, since, side="left")) - 1, y.size - 50)
        trend = theil_sen(steps[start:], y[start:], confidence_z=self.confidence_z)
        return trend is not None and trend.falling

    def _eval_accuracy_drop(self, ctx: JudgeContext, since: int) -> tuple[str, float] | None:
        """The higher-is-better eval that fell most since ``since``: the median of its evals since then
        against the median of its last ``witness_evals`` before, when ≥ ``witness_drop_fraction`` lower."""
        found: tuple[str, float] | None = None
        for series, direction in ctx.evals:
            if direction is not Direction.HIGHER:
                continue
            steps, values = finite_xy(series.steps, series.values)
            before, after = values[steps < since][-self.witness_evals :], values[steps >= since]
            if min(before.size, after.size) < self.witness_evals:
                continue
            level = float(np.median(before))
            if level <= 0:
                continue
            drop = 1 - float(np.median(after)) / level
            if drop >= self.witness_drop_fraction and (found is None or drop > found[1]):
                found = (series.name, drop)
        return found

    def _runaway(self, y: np.ndarray, sigma: float) -> float | None:
        """The rise within a divergence episode when it is still climbing, else None.

        The episode's thirds must have rising medians, the last ≥ ``rising_min_change`` above the first and
        ``rising_z`` standard errors of the point noise apart. (A rank test is blind here: a smooth
        exponential's curved residuals look autocorrelated and inflate its variance.) A corrupted shard
        lifts the loss in one step and then stays or falls; a runaway keeps climbing.
        """
        k = y.size // 3
        if k < max(self.min_points // 3, 2):
            return None
        m1, m2, m3 = (float(np.median(part)) for part in (y[:k], y[k : 2 * k], y[-k:]))
        rise = m3 - m1
        noise = self.rising_z * median_gap_error(sigma, k, k)
        if not (m1 < m2 < m3) or rise < max(float(np.log1p(self.rising_min_change)), noise):
            return None
        return float(np.expm1(rise))

    def _confirmation(
        self, ctx: JudgeContext, name: str, steps: np.ndarray, since: int, falling: bool
    ) -> tuple[bool, str]:
        """Critical when the ``confirm_checks - 1`` previous checks saw this same episode, it has lasted
        ``confirm_share`` of the judged steps (``steps``, from ``since``), and it is not falling."""
        share = (int(steps[-1]) - since) / max(int(steps[-1]) - int(steps[0]), 1)
        seen = 1
        for prev, step in ctx.earlier_findings(SignalKind.DIVERGENCE, name, ctx.last_step, self.confirm_checks - 1):
            if prev.evidence.get("since_step", step) < since:
                break  # an earlier episode's finding confirms nothing of this one
            seen += 1
        if falling:
            return False, f"seen on {seen} consecutive check(s) but falling again, so not confirmed"
        if seen >= self.confirm_checks and share >= self.confirm_share:
            return True, (
                f"confirmed on {seen} consecutive checks over {fmt_pct(share)} of the judged steps (thresholds "
                f"{self.confirm_checks} checks, {fmt_pct(self.confirm_share)})"
            )
        if seen >= self.confirm_checks:
            return False, (
                f"seen on {seen} consecutive checks but over only {fmt_pct(share)} of the judged steps "
                f"(confirmed at {fmt_pct(self.confirm_share)}), so still watched"
            )
        return False, (
            f"seen on {seen} consecutive check(s); critical on {self.confirm_checks}, or at once with an LR "
            f"jump, a grad-norm explosion or an eval collapse"
        )

    @staticmethod
    def _severity(confirmed: bool) -> Severity:
        """Critical when confirmed; until then watch: the next checks, 10 minutes apart, either see the
        episode fall back or confirm it, and a reviewer asked in between could only answer WAIT."""
        return Severity.CRITICAL if confirmed else Severity.WATCH

    def _raw_episode(self, y: np.ndarray, ratio: float) -> tuple[int, float, int] | None:
        """The raw-point rules' reference (the median of the log's first points: at least
        ``sustain_points``, at most its first third) and how many of its last log points in a row are
        ≥ ``ratio`` × it: (points in the reference, the reference's log, the run); None when the log is
        too short to hold both."""
        first = max(self.sustain_points, self._early_points(y.size))
        if y.size < first + self.sustain_points:
            return None
        reference = float(np.median(y[:first]))
        return first, reference, trailing_run(y > reference + np.log(ratio))

    def _raw_blowup(
        self, ctx: JudgeContext, loss: MetricSeries, steps: np.ndarray, values: np.ndarray
    ) -> list[Signal]:
        """A blow-up on raw points, at any length of log: its last ``sustain_points`` or more raw points in
        a row each ≥ ``blowup_min_ratio`` × the median of its first points (Megatron's 10×; raw points, so
        three in a row: one spike is not a blow-up). The smoothed rule cannot see it in a log whose noise
        sizes the rolling median wider than the episode. A warning at the first check, critical when the
        previous check (with points since) saw it too, or at once when every one of those points is
        ≥ ``blowup_stop_ratio`` × that median."""
        k = self.sustain_points
        y = positive_log(values)
        episode = self._raw_episode(y, self.blowup_min_ratio)
        if episode is None:
            return []
        first, reference, above = episode
        if above < k or y.size - above < first:
            return []
        runaway = trailing_run(y > reference + np.log(self.blowup_stop_ratio)) >= k
        confirmed = self._rising_before(ctx, loss.name)
        if runaway:
            how = f"each ≥ {fmt_ratio(self.blowup_stop_ratio)} it, too far out for a transient, so critical at once"
        elif confirmed:
            how = "still there at a second check, so confirmed"
        else:
            how = "critical if the next check still sees it"
        level, start = float(np.median(values[-above:])), float(np.exp(reference))
        msg = (
            f"{loss.name} blew up: its last {above} points (median {fmt(level)}, up to step "
            f"{fmt_step(int(steps[-1]))}) "
            f"are all ≥ {fmt_ratio(self.blowup_min_ratio)} the median {fmt(start)} of its first {first}; {how}."
        )
        severity = Severity.CRITICAL if runaway or confirmed else Severity.WARNING
        return [
            signal(SignalKind.DIVERGENCE, severity, msg, metric=loss.name, step=int(steps[-1]), level=level,
                   limit=start * self.blowup_min_ratio, points_above=above, since_step=int(steps[-above]))
        ]  # fmt: skip

    def _raw_divergence(
        self, ctx: JudgeContext, loss: MetricSeries, steps: np.ndarray, values: np.ndarray
    ) -> list[Signal]:
        """A log too short for the smoothed divergence whose last ``sustain_points`` or more raw points are
        each ≥ ``divergence_ratio`` × the median of its first points: watch, a warning while still climbing
        or still there at a second check; the policy makes it critical when a cause is behind it."""
        k = self.sustain_points
        y = positive_log(values)
        episode = self._raw_episode(y, self.divergence_ratio)
        if episode is None:
            return []
        first, reference, above = episode
        # points of the reference window are not counted: an episode begun there lifts the reference,
        # which only understates the ratio
        above = min(above, y.size - first)
        if above < k:
            return self._raw_climb(loss, steps, values, y, first, reference)
        climbing = strictly_rising(y[-k:])
        again = self._rising_before(ctx, loss.name)
        if climbing:
            how = "still climbing at each of its last points, worth a look"
        elif again:
            how = "still there at a second check, worth a look"
        else:
            how = "watched; a cause behind it (an LR jump, a grad-norm explosion) makes it critical"

        level, start = float(np.median(values[-above:])), float(np.exp(reference))
        msg = (
            f"{loss.name} diverging: its last {above} points (median {fmt(level)}, up to step "
            f"{fmt_step(int(steps[-1]))}) are all ≥ {fmt_ratio(self.divergence_ratio)} the median {fmt(start)} "
            f"of its first {first}, in a log too short for the smoothed test; {how}."
        )
        severity = Severity.WARNING if climbing or again else Severity.WATCH
        return [
            signal(SignalKind.DIVERGENCE, severity, msg, metric=loss.name, step=int(steps[-1]), level=level,
                   ratio=level / start, points_above=above, since_step=int(steps[-above]))
        ]  # fmt: skip

    def _raw_climb(
        self, loss: MetricSeries, steps: np.ndarray, values: np.ndarray, y: np.ndarray, first: int, reference: float
    ) -> list[Signal]:
        """A short log whose last ``sustain_points`` raw points each rose above the one before and above
        every point before them, the last ≥ ``raw_climb_ratio`` × the median of its first points: a
        warning (a reviewer's look, never a stop on its own), below the raw divergence's 2×."""
        k = self.sustain_points
        if y.size - k < first:
            return []
        tail, before = y[-k:], y[:-k]
        climbing = strictly_rising(tail) and float(tail[0]) > float(np.max(before))
        ratio = float(np.exp(tail[-1] - reference))
        if not climbing or ratio < self.raw_climb_ratio:
            return []
        start = float(np.exp(reference))
        msg = (
            f"{loss.name} climbing: its last {k} points (up to {fmt(float(values[-1]))} at step "
            f"{fmt_step(int(steps[-1]))}) each rose above every point before them, the last "
            f"{fmt_ratio(ratio)} the median {fmt(start)} of its first {first}, in a log too short for the "
            "smoothed test; worth a look."
        )
        return [
            signal(SignalKind.DIVERGENCE, Severity.WARNING, msg, metric=loss.name, step=int(steps[-1]),
                   level=float(values[-1]), ratio=ratio, points_above=k, since_step=int(steps[-k]))
        ]  # fmt: skip
