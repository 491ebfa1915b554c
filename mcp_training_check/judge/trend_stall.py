"""A train loss not going down: flat over every point seen, not learning from its start or its first points,
at its untrained model's level (chance), or learning slowly (information)."""

from __future__ import annotations

import numpy as np

from ..models import Direction, MetricRole, Severity, Signal, SignalKind
from ..roles import tokenize
from ..state import MetricSeries
from .chance import implied_class_count, names_accuracy
from .context import PLATEAU_EVIDENCE, JudgeContext, signal, warming_up_at
from .evalkinds import is_quality_eval, unit_scaled
from .stats import (
    end_thirds,
    falling_pairs_share,
    finite_xy,
    fmt,
    fmt_move,
    fmt_pct,
    fmt_ratio,
    fmt_step,
    is_frozen,
    positive_log,
    robust_sigma,
    rolling_median,
    strictly_falling,
    strictly_rising,
    theil_sen,
)
from .trend_base import MEDIAN_SE, LossTrendBase, holds_start, median_gap_error

PERSISTED_START = "persisted_start"
"""Evidence key of a flat start made critical by its persistence alone (`LossStallTests._persisted`): the one
finding of this kind that a GAN's adversarial side holds by design (`trend._game_level`)."""

UNTRAINED_LEVEL = "untrained_level"
"""Evidence key of a loss found at its untrained level (`_at_chance`): the next check's flat-start test reads it."""


class LossStallTests(LossTrendBase):
    """The stall tests of ``TrendDetector`` (its thresholds: ``LossTrendBase``)."""

    def _no_progress(
        self, ctx: JudgeContext, loss: MetricSeries, steps: np.ndarray, values: np.ndarray
    ) -> list[Signal]:
        """A loss flat over all the points seen (≥ ``plateau_min_points``; a log holding its start from its
        second point after warmup, ≥ ``min_points``): no significant rise nor steady fall (``slow_learner_z``),
        and its Theil–Sen band (``confidence_z``, log loss) rules out a fall of ``stuck_drop_fraction``, or,
        from ``flat_start_min_points``, its last third's median holds its first third's level (not below it,
        less than ``rising_min_change`` above). A warning (a reviewer's look, never a stop: a converged
        plateau and a stuck run look the same in a window). A log blown up from its start is flagged as that
        instead (`_blown_from_start`), only here, where no other finding speaks. Not while an eval of the run improves
        significantly over the same steps (`_eval_improving`): the model still gets better on held-out data."""
        least, warming = self.plateau_min_points, False
        whole_steps, whole = finite_xy(loss.steps, loss.values)
        if holds_start(whole_steps):  # the whole log after its first point and warmup, restarts or not
            stalled = self._blown_from_start(loss, whole_steps, whole) or self._stuck_for_its_run(ctx, loss)
            if stalled:
                return stalled
            warming = self._warming_throughout(ctx, int(whole_steps[-1]))
            after = int(whole_steps[0]) if warming else max(int(whole_steps[0]), ctx.lr_events.warmup_end or 0)
            least = self.flat_start_min_points if warming else self.min_points
            steps, values = whole_steps[whole_steps > after], whole[whole_steps > after]
            if self._early_floor(ctx, whole, values, int(whole_steps[-1])):
                return []
        if values.size < least:
            return []
        y = positive_log(values)
        trend = theil_sen(steps, y, confidence_z=self.confidence_z)
        if trend is None or trend.rising or trend.z <= -self.slow_learner_z or strictly_falling(values):
            return []  # a loss lower at every logged point is falling, whatever the autocorrelation does to z
        span = float(steps[-1] - steps[0])
        fall_ruled_out = float(-np.expm1(trend.low * span))
        first, last = (float(np.exp(level)) for level in end_thirds(y))
        floor = first * (1 - self.stuck_drop_fraction) if warming else first  # a warmup's loss should fall
        level_held = floor <= last < first * (1 + self.rising_min_change)  # a higher one is an episode's
        no_gain = values.size >= self.flat_start_min_points and level_held and not trend.falling
        if fall_ruled_out >= self.stuck_drop_fraction and not no_gain:
            return []
        if self._eval_improving(ctx, int(steps[0])):
            return []
        why = (
            f"its slope's band rules out a fall of {fmt_pct(self.stuck_drop_fraction)} over them (at most "
            f"{fmt_pct(fall_ruled_out)})"
            if fall_ruled_out < self.stuck_drop_fraction
            else f"its last third no lower than its first (nor {fmt_pct(self.rising_min_change)} above it) over ≥ "
            f"{self.flat_start_min_points} points"
        )
        msg = (
            f"{loss.name} is flat over all {values.size} points seen (steps {fmt_step(int(steps[0]))}–"
            f"{fmt_step(int(steps[-1]))}): {fmt_move(first, last)} (medians of the first and last thirds), no "
            f"significant trend (Mann–Kendall z {trend.z:.1f}), and {why}; a plateau or a stuck run, worth a look."
        )
        return [
            signal(SignalKind.FLAT, Severity.WARNING, msg, metric=loss.name, step=int(steps[-1]),
                   mk_z=trend.z, points=values.size, since_step=int(steps[0]), **{PLATEAU_EVIDENCE: fall_ruled_out})
        ]  # fmt: skip

    @staticmethod
    def _warming_throughout(ctx: JudgeContext, last_step: int) -> bool:
        """Whether the LR's warmup is still under way at the log's last point (it rose at every logged point),
        so no point is past it. The flat test then reads the points after the first, from
        ``flat_start_min_points`` on: a loss flat for that long while its LR keeps growing is flat just the same
        (the warmup is where a loss falls fastest), and the no-gain reading needs that many points."""
        return ctx.learning_rate is not None and warming_up_at(ctx, last_step)

    def _early_floor(self, ctx: JudgeContext, whole: np.ndarray, window: np.ndarray, last_step: int) -> bool:
        """A loss that learned from its first point (its window's median ≥ ``flat_min_drop_fraction`` below it)
        and is flat at less than ``stuck_min_run_fraction`` of a known total: the noise floor of the LR it
        still has, which its schedule's decay lowers later (the example training every new user runs falls
        2.2 → 0.66 in its warmup and wanders at 0.66 until its LR decays: unsure at step 354 of 7,000)."""
        progress = ctx.config.progress(last_step)
        if progress is None or progress >= self.stuck_min_run_fraction or window.size == 0:
            return False
        return float(np.median(window)) <= (1 - self.flat_min_drop_fraction) * float(whole[0])

    def _eval_improving(self, ctx: JudgeContext, since: int) -> bool:
        """Whether an eval of the run improves from step ``since`` on: over its ≥ 4 evals there, a Mann–Kendall
        z of at least ``eval_improving_z`` in its better direction; over 2 or 3 (too few for a rank test),
        each better than the one before and the last ≥ ``eval_gain_fraction`` of the way from the first to
        its end of the scale (`_large_gain`)."""
        for series, direction in ctx.evals:
            steps, values = finite_xy(series.steps, series.values)
            keep = steps >= since
            better = -1.0 if direction is Direction.LOWER else 1.0
            if int(keep.sum()) < 4:
                if self._large_gain(better * unit_scaled(series.name, values)[keep], direction):
                    return True
                continue
            trend = theil_sen(steps[keep], values[keep], confidence_z=self.confidence_z)
            if trend is not None and better * trend.z >= self.eval_improving_z:
                return True
        return False

    def _trained_start(self, ctx: JudgeContext) -> bool:
        """Whether a quality eval (`is_quality_eval`) bounded in [0, 1] (`unit_scaled`), higher is better, was at its
        ceiling (≥ ``trained_start_fraction``) at its first eval and still is over its last ``chance_min_points``: the
        run fine-tunes a model that was already as good as its eval can tell, so a train loss that holds its first level
        is a converged model's, not a stuck one's."""
        if self.trained_start_fraction is None:
            return False
        for series, direction in ctx.evals:
            _, values = finite_xy(series.steps, series.values)
            values = unit_scaled(series.name, values)
            if direction is not Direction.HIGHER or values.size < self.chance_min_points:
                continue
            if not is_quality_eval(series.name) or values.min() < 0 or values.max() > 1:
                continue
            recent = float(np.median(values[-self.chance_min_points :]))
            if min(float(values[0]), recent) >= self.trained_start_fraction:
                return True
        return False

    def _large_gain(self, signed: np.ndarray, direction: Direction) -> bool:
        """2-3 evals (signed so that higher is better) each above the one before, the last a share ≥
        ``eval_gain_fraction`` of what there was to gain from the first: to 1 for a bounded higher-is-better
        eval (an F1 0.874 → 0.973 gains 79 % of its headroom), else the first's own size (an eval loss 0.474
        → 0.077 falls 84 %)."""
        if signed.size < 2 or not strictly_rising(signed):
            return False
        first, last = float(signed[0]), float(signed[-1])
        bounded = direction is Direction.HIGHER and first >= 0 and last <= 1
        room = 1 - first if bounded else abs(first)
        return room > 0 and (last - first) / room >= self.eval_gain_fraction

    def _plateau(self, name: str, x: np.ndarray, y: np.ndarray) -> list[Signal]:
        """Info only: still improving over the longer ``plateau_window_points``, or no clear trend."""
        trend = theil_sen(x, y, confidence_z=self.confidence_z)
        if trend is None:
            return []
        change = float(np.expm1(trend.slope * (x[-1] - x[0])))
        ev = {"change": change, "slope_per_step": trend.slope, "mk_z": trend.z, "points": trend.n}
        span = f"over the last {x.size} points (steps {fmt_step(int(x[0]))}–{fmt_step(int(x[-1]))})"
        kind, verb = (SignalKind.IMPROVING, "improving") if trend.falling else (SignalKind.FLAT, "no clear trend")
        msg = f"{name} {verb}: {fmt_pct(change)} change {span}."
        return [signal(kind, Severity.INFO, msg, metric=name, step=int(x[-1]), **ev)]

    def _not_learning(self, ctx: JudgeContext, loss: MetricSeries) -> list[Signal]:
        """A best level barely below the run's first points, after ``flat_min_points`` points."""
        steps, values = finite_xy(loss.steps, loss.values)
        if values.size < self.flat_min_points:
            return []
        y = positive_log(values)
        early = float(np.median(y[: self.early_window_points]))
        best = float(self._best_before(y, 1)[-1])
        drop = float(-np.expm1(best - early))
        if not np.isfinite(drop) or drop >= self.flat_min_drop_fraction:
            return []
        eval_drop = self._eval_drop(ctx)
        if eval_drop is not None and eval_drop >= self.flat_min_drop_fraction:
            return []
        if self._trained_start(ctx):
            return []
        evals = f"; eval loss improved {fmt_pct(eval_drop)}" if eval_drop is not None else ""
        learning = self._learning_slowly(loss.name, steps, y, drop)
        if learning:
            return learning
        stuck = drop < self.stuck_drop_fraction and not self._falling(steps, y)
        if not stuck and holds_start(steps) and float(-np.expm1(best - y[0])) >= self.flat_min_drop_fraction:
            return []  # it learned from its first point within the early window: a converged plateau
        critical = stuck and ctx.not_learning_before(loss.name, int(steps[-1]), new_points=True)
        progress = ctx.config.progress(int(steps[-1])) or 1.0  # an unknown total: judged as done
        if not stuck:
            tail = ""
        elif not holds_start(steps):
            critical, tail = False, self._mid_run_tail(ctx, int(steps[0]))
        elif progress < self.stuck_min_run_fraction:
            critical, tail = False, (
                f"; within {fmt_pct(self.stuck_drop_fraction)} of its initial level, at {fmt_pct(progress)} of "
                f"its {fmt_step(ctx.config.total_steps)} steps: critical from "
                f"{fmt_pct(self.stuck_min_run_fraction)} if still there (a pretrained start can sit at its level)"
            )
        elif critical:
            tail = (
                f"; still at its initial level at a second check (critical below {fmt_pct(self.stuck_drop_fraction)})"
            )
        else:
            tail = f"; critical below {fmt_pct(self.stuck_drop_fraction)} if the next check still sees it"
        msg = (
            f"{loss.name} is not learning: its best median {fmt(float(np.exp(best)))} over {values.size} points "
            f"up to step {fmt_step(int(steps[-1]))} is only {fmt_pct(drop)} below the first points' "
            f"{fmt(float(np.exp(early)))} (threshold {fmt_pct(self.flat_min_drop_fraction)}){evals}{tail}."
        )
        severity = Severity.CRITICAL if critical else Severity.WARNING
        return [
            signal(SignalKind.FLAT, severity, msg, metric=loss.name, step=int(steps[-1]), drop=drop,
                   eval_drop=eval_drop, points=values.size)
        ]  # fmt: skip

    def _mid_run_tail(self, ctx: JudgeContext, first: int) -> str:
        """Why a loss within ``stuck_drop_fraction`` of where a log that starts mid-run starts is a flag, not a stop:
        the level a log starts at mid-run is not the run's initial one, so "still at its initial level" cannot be
        said: a late stretch of a long run learns more slowly than its loss's noise. An eval improving over the
        same steps says so too (log-lk-jaipkapoor99-1, a resumed GPT-2 124M pre-training); without one it is a
        converged tail (log-qk-abhi0069-1, a 30M decoder's steps 8,201-8,548, stopped at a second check)."""
        improving = self._eval_improving(ctx, first)
        evals = ", while an eval of the run improves significantly over the same steps" if improving else ""
        return (
            f"; within {fmt_pct(self.stuck_drop_fraction)} of the level the log starts at, mid-run (step "
            f"{fmt_step(first)}){evals}: a flag, not a stop (a log that starts mid-run does not show the run's initial "
            "level, and a late stretch of a long run learns more slowly than its train loss's noise)"
        )

    def _learning_slowly(self, name: str, steps: np.ndarray, y: np.ndarray, drop: float) -> list[Signal]:
        """Info when the loss falls over the whole run at a Mann–Kendall z of ``slow_learner_z`` or more, or with
        ≥ ``slow_learner_pairs_share`` of its pairs of points falling (a smoothed loss's steady fall)."""
        trend = theil_sen(steps, y, confidence_z=self.confidence_z)
        if trend is None or trend.slope >= 0:
            return []
        share = falling_pairs_share(y)
        if trend.z <= -self.slow_learner_z:
            how = f"Mann–Kendall z {trend.z:.1f} (significant from -{self.slow_learner_z:g})"
        elif share >= self.slow_learner_pairs_share:
            how = (
                f"{fmt_pct(share)} of its pairs of points falling (threshold "
                f"{fmt_pct(self.slow_learner_pairs_share)}: a smoothed loss, whose z the autocorrelation caps)"
            )
        else:
            return []
        change = float(np.expm1(trend.slope * (steps[-1] - steps[0])))
        msg = (
            f"{name} learning slowly: {fmt_pct(drop)} below its first points at its best, {fmt_pct(change)} by the "
            f"slope over its {y.size} points, {how}: a steady fall, not a loss that does not learn."
        )
        return [
            signal(SignalKind.IMPROVING, Severity.INFO, msg, metric=name, step=int(steps[-1]), change=change,
                   mk_z=trend.z, drop=drop, points=y.size)
        ]  # fmt: skip

    def _at_chance(self, ctx: JudgeContext, loss: MetricSeries, steps: np.ndarray, values: np.ndarray) -> list[Signal]:
        """A loss at its untrained model's level (by the run's class count, a frozen value or a zero
        accuracy), not falling; or inside a narrow band around ln N with an eval loss inside it too
        (`_both_in_chance_band`), falling slowly or not."""
        if values.size < self.chance_min_points:
            return []
        y = positive_log(values)
        drop = -np.expm1(float(np.min(rolling_median(y, 3))) - float(y[0]))
        level = float(np.median(values))  # a perplexity arrives as its ln, the cross-entropy (`scale`)
        band = self._both_in_chance_band(ctx, steps, values)
        count = band[0] if band is not None else ctx.config.class_count or implied_class_count(ctx, level)
        if band is not None:
            why = ""  # said whole below
        elif self._falling(steps, y) or drop >= self.stuck_drop_fraction:
            return []
        elif count is not None and level >= (1 - self.stuck_drop_fraction) * np.log(count):
            chance = fmt(float(np.log(count)))  # the count from the config, or an accuracy at 1/N (chance.py)
            implied = f"the {count} classes its accuracy at 1/{count} implies"
            whose = "its class count" if ctx.config.class_count else implied
            why = f"is at or above ln {count:,} = {chance}, the untrained model's loss for {whose}"
        elif is_frozen(values[-self.chance_min_points :]):
            why = (
                f"sits there identical to the last digit at its last {self.chance_min_points} points "
                "(the model's output does not change)"
            )
        else:
            zero = self._zero_accuracy(ctx)
            if zero is None:
                return self._stuck_for_its_run(ctx, loss) or self._never_below_start(ctx, loss, steps, values, y)
            zero_at = fmt(self.zero_accuracy_fraction)
            why = f"sits there with {zero} ≤ {zero_at} at every point (never one prediction right)"
        critical = ctx.not_learning_before(loss.name, int(steps[-1]), new_points=False)
        tail = "still there at a second check, so critical" if critical else "critical if the next check still sees it"
        if band is not None:
            msg = (
                f"{loss.name} is not learning: every one of its {values.size} points up to step "
                f"{fmt_step(int(steps[-1]))} is within {fmt_pct(self.chance_band_fraction)} of ln {band[0]} = "
                f"{fmt(float(np.log(band[0])))}, and {band[1]} too: the untrained model's loss for {band[0]} classes "
                f"on both sets (a slow drift inside that band learns the classes' shares, not the task); {tail}."
            )
        else:
            msg = (
                f"{loss.name} is not learning: its median {fmt(level)} over {values.size} points up to step "
                f"{fmt_step(int(steps[-1]))} {why}, and it is not falling; {tail}."
            )
        severity = Severity.CRITICAL if critical else Severity.WARNING
        return [
            signal(SignalKind.FLAT, severity, msg, metric=loss.name, step=int(steps[-1]), level=level,
                   class_count=count, points=values.size, **{UNTRAINED_LEVEL: level})
        ]  # fmt: skip

    def _both_in_chance_band(self, ctx: JudgeContext, steps: np.ndarray, values: np.ndarray) -> tuple[int, str] | None:
        """N and a phrase naming the eval, when this train loss (from the run's start) and an eval loss of the run
        are each within ``chance_band_fraction`` of ln N at every point from their first, over ≥
        ``chance_band_min_points`` points each, for one N from 2 to ``chance_band_max_classes``: both sides of
        the model at the untrained classifier's loss, with no accuracy needed to name N."""
        if values.size < self.chance_band_min_points or not holds_start(steps):
            return None
        count = self._chance_band_count(values)
        if count is None:
            return None
        for series, direction in ctx.evals:
            if direction is not Direction.LOWER or "loss" not in tokenize(series.name):
                continue
            _, evals = finite_xy(series.steps, series.values)
            if evals.size >= self.chance_band_min_points and self._chance_band_count(evals) == count:
                return count, f"{series.name} at each of its {evals.size} evals"
        return None

    def _chance_band_count(self, values: np.ndarray) -> int | None:
        """N from 2 to ``chance_band_max_classes`` when every value is within ``chance_band_fraction`` of ln N."""
        count = round(float(np.exp(float(np.median(values))))) if float(np.median(values)) < 30 else 0
        if not 2 <= count <= self.chance_band_max_classes:
            return None
        inside = np.abs(values / np.log(count) - 1) <= self.chance_band_fraction
        return count if bool(inside.all()) else None

    def _never_below_start(
        self, ctx: JudgeContext, loss: MetricSeries, steps: np.ndarray, values: np.ndarray, y: np.ndarray
    ) -> list[Signal]:
        """A log holding the run's start (its first step within two of its logging intervals, the median
        step between points, so unit-free: updates or epochs) whose loss, over at least ``start_min_points``
        points, never went below its first point, sits above it by ≥ ``rising_z`` errors of the point noise
        (not a slow decay whose first point happened to be low) but < ``rising_min_change`` (a larger rise
        is the divergence rules' business), and is not falling: the model has not moved from its initial
        loss. A warning, never a stop: its chance level is unknown, and a warmup the config does not state
        keeps a start flat too."""
        if values.size < self.start_min_points:
            return []
        if not holds_start(steps):
            return []
        rest, first = y[1:], float(y[0])
        gap = float(np.median(rest)) - first
        if gap >= np.log1p(self.rising_min_change):
            return []
        spent = None
        within_start = values.size >= self.flat_start_min_points
        if within_start:
            how = f"it stayed within {fmt_pct(self.stuck_drop_fraction)} of its first value"  # the caller's test
            spent = self._lr_spent(ctx, int(steps[-1]))
        else:
            error = robust_sigma(y) * float(np.sqrt(1 + MEDIAN_SE**2 / rest.size))
            if float(np.min(rest)) < first or gap < self.rising_z * error:
                return []
            how = "it never went below its first value"
        critical = spent is not None and ctx.not_learning_before(loss.name, int(steps[-1]), new_points=True)
        at_chance_before = within_start and spent is None and self._at_chance_before(ctx, loss.name, int(steps[-1]))
        persisted = within_start and spent is None and not at_chance_before and self._persisted(ctx, loss.name, y,
                                                                                                 int(steps[-1]))
        critical = critical or at_chance_before or persisted
        if persisted:
            tail = (
                "; no LR or total steps tell a warmup from a stall, but the previous check found it too, it now "
                f"spans ≥ {self.stuck_persist_min_points} points, and its last third is no lower than its first "
                "beyond its noise: stuck at its initial level for a large share of its steps, so critical."
            )
        elif at_chance_before:
            tail = (
                "; the previous check found it at its untrained level (at chance, or identical to the last digit), "
                "and it has not moved from its start since: still not learning at a second check, so critical."
            )
        elif spent is None:
            tail = (
                "; worth a look (a warmup the config does not state would explain it, or a run that converged "
                "within its first logged point)."
            )
        else:
            lr_name, share = spent
            again = "still so at a second check, so critical" if critical else "critical if the next check sees it"
            tail = (
                f" while {lr_name} decayed to {fmt_pct(share)} of its peak (threshold "
                f"{fmt_pct(self.stuck_lr_spent_fraction)}): past its warmup, its schedule's learning phase spent "
                f"with no progress; {again}."
            )
        msg = (
            f"{loss.name} is not learning from its start: over its first {values.size} points (steps "
            f"{fmt_step(int(steps[0]))}–{fmt_step(int(steps[-1]))}) {how} "
            f"{fmt(float(values[0]))} and is not falling{tail}"
        )
        severity = Severity.CRITICAL if critical else Severity.WARNING
        return [
            signal(SignalKind.FLAT, severity, msg, metric=loss.name, step=int(steps[-1]),
                   level=float(np.median(values)), points=values.size, since_step=int(steps[0]),
                   **({PERSISTED_START: 1.0} if persisted else {}))
        ]  # fmt: skip

    def _persisted(self, ctx: JudgeContext, name: str, y: np.ndarray, last: int) -> bool:
        """A flat start of ≥ ``stuck_persist_min_points`` (log) points found at the previous check too, in a run that
        logs no LR and states no total (either would judge it: `_lr_spent`, `_stuck_for_its_run`), whose last
        third's median is not below its first third's by ``rising_z`` standard errors (`median_gap_error`, the point
        noise from first differences): no step down its noise cannot explain."""
        if y.size < self.stuck_persist_min_points or ctx.learning_rate is not None or ctx.config.total_steps:
            return False
        start, now = end_thirds(y)
        third = y.size // 3
        fall = start - now
        if fall > 0 and fall >= self.rising_z * median_gap_error(robust_sigma(y), third, third):
            return False
        return ctx.not_learning_before(name, last, new_points=True)

    @staticmethod
    def _at_chance_before(ctx: JudgeContext, name: str, last: int) -> bool:
        """The previous check, with points since, found this loss at its untrained level (`_at_chance`: at ln N,
        frozen to the last digit, or beside an accuracy at 0), a finding that is critical at a second sight: a
        loss that has since stayed within ``stuck_drop_fraction`` of its first value is that finding again, seen
        through a test its noise let pass (a 4-digit loss identical over its last 3 prints at one check and not
        at the next; corpus_real log-lz-ardalcar-1, bad: 0.1375 -> 0.1366 over 1,000 epochs)."""
        prev = ctx.previous_signal(SignalKind.FLAT, name)
        return (
            prev is not None
            and prev.severity is Severity.WARNING
            and UNTRAINED_LEVEL in prev.evidence
            and prev.step is not None
            and prev.step < last
        )

    def _stuck_for_its_run(self, ctx: JudgeContext, loss: MetricSeries) -> list[Signal]:
        """A start-holding log (≥ ``start_min_points``) of a run with a known total, at ≥ ``stuck_min_run_fraction``
        of it, whose loss is still within ``stuck_drop_fraction`` of its start (its best rolling median of 3 against
        the median of its first ``chance_min_points``) and whose Theil–Sen band (``confidence_z``, log loss) rules
        out a fall of ``stuck_drop_fraction`` even when projected from its first step to the run's total: at its
        fastest plausible rate the loss ends its run where it began. Critical when the previous check, with points
        since, found it too. Not while an eval improves over the same steps, nor for a trained start. It takes the
        place of the weaker flags of the same stall (a flat window, a start never left)."""
        steps, values = finite_xy(loss.steps, loss.values)
        total = ctx.config.total_steps
        progress = ctx.config.progress(int(steps[-1])) if steps.size else None
        if not total or progress is None or progress < self.stuck_min_run_fraction or not holds_start(steps):
            return []
        if values.size < self.start_min_points or (values <= 0).any():
            return []
        y = np.log(values)
        start = float(np.median(y[: self.chance_min_points]))
        drop = float(-np.expm1(float(np.min(rolling_median(y, 3))) - start))
        if drop >= self.stuck_drop_fraction:
            return []  # it learned: most runs leave here, before the trend is fitted
        trend = theil_sen(steps, y, confidence_z=self.confidence_z)
        if trend is None:
            return []
        fall_ruled_out = float(-np.expm1(min(trend.low, 0.0) * (total - float(steps[0]))))
        if fall_ruled_out >= self.stuck_drop_fraction:
            return []
        if self._eval_improving(ctx, int(steps[0])) or self._trained_start(ctx):
            return []
        critical = ctx.not_learning_before(loss.name, int(steps[-1]), new_points=True)
        again = "still so at a second check, so critical" if critical else "critical if the next check still sees it"
        msg = (
            f"{loss.name} is not learning from its start: over its {values.size} points up to step "
            f"{fmt_step(int(steps[-1]))}, {fmt_pct(progress)} of its {fmt_step(total)} steps, its best is "
            f"{fmt_pct(drop)} below its first points' {fmt(float(np.exp(start)))}, and its slope's band rules out a "
            f"fall of {fmt_pct(self.stuck_drop_fraction)} by the end of the run (at most {fmt_pct(fall_ruled_out)}): "
            f"the rest of its steps will not make it learn; {again}."
        )
        severity = Severity.CRITICAL if critical else Severity.WARNING
        return [
            signal(SignalKind.FLAT, severity, msg, metric=loss.name, step=int(steps[-1]), drop=drop,
                   fall_bound=fall_ruled_out, points=values.size, since_step=int(steps[0]))
        ]  # fmt: skip

    def _blown_from_start(self, loss: MetricSeries, steps: np.ndarray, values: np.ndarray) -> list[Signal]:
        """A start-holding log (≥ ``start_min_points``) whose loss sits ≥ ``start_blowup_ratio`` × its first point at
        the median of every later point and of its last ``chance_min_points``, never back below that first point: its
        first updates blew the model up and it has not come back. A warning, never a stop: the first point is the only
        anchor, and it may be a running mean's first batch (a house-price regressor's running mean 2.75 → 23 → 6-12,
        single batches exploding over a flat median, log-tl-0xonaroll-1, ambiguous); as a stop, anchored on a first
        point at ln N, it stopped the one bad run it was written for 7-11 checks late and flickering."""
        if values.size < self.start_min_points:
            return []
        first, later, recent = float(values[0]), values[1:], values[-self.chance_min_points :]
        if first <= 0 or float(np.min(later)) < first:
            return []
        if min(np.median(later), np.median(recent)) < self.start_blowup_ratio * first:
            return []
        msg = (
            f"{loss.name} blew up at its first updates and has not come back: {fmt(first)} at step "
            f"{fmt_step(int(steps[0]))}, a median {fmt(float(np.median(later)))} over its {later.size} points since "
            f"and {fmt(float(np.median(recent)))} over its last {recent.size} (≥ {fmt_ratio(self.start_blowup_ratio)} "
            "its first, never back below it): worth a look (a flag, not a stop: its first point is its only anchor)."
        )
        return [
            signal(SignalKind.FLAT, Severity.WARNING, msg, metric=loss.name, step=int(steps[-1]),
                   level=float(np.median(later)), points=values.size, since_step=int(steps[0]))
        ]  # fmt: skip

    def _lr_spent(self, ctx: JudgeContext, last_step: int) -> tuple[str, float] | None:
        """The LR series and its value at ``last_step`` as a share of its highest value up to there, when that
        share is ≤ ``stuck_lr_spent_fraction`` (the schedule has decayed past its learning phase)."""
        lr = ctx.learning_rate
        if lr is None:
            return None
        steps, values = finite_xy(lr.steps, lr.values)
        values = values[steps <= last_step]
        if values.size < 2 or float(np.max(values)) <= 0:
            return None
        share = float(values[-1]) / float(np.max(values))
        return (lr.name, share) if share <= self.stuck_lr_spent_fraction else None

    def _zero_accuracy(self, ctx: JudgeContext) -> str | None:
        """The name of an accuracy logged with the train loss that is ≤ ``zero_accuracy_fraction`` at every point, or
        of a quality eval (`is_quality_eval`: a Dice, an mAP, an F1) that is, when every quality eval of the run is
        (one head of two at 0 beside a box mAP that scores says nothing of the train loss)."""
        quality = [s for s, d in ctx.evals if d is Direction.HIGHER and is_quality_eval(s.name)]
        all_zero = bool(quality) and all(self._at_zero(s) for s in quality)
        for name, info in ctx.roles.items():
            series = ctx.history.metrics.get(name)
            if info.direction is not Direction.HIGHER or series is None:
                continue
            if info.role is MetricRole.OTHER and names_accuracy(name) and self._at_zero(series):
                return name
            if all_zero and info.role is MetricRole.EVAL and is_quality_eval(name):
                return name
        return None

    def _at_zero(self, series: MetricSeries) -> bool:
        """≥ ``chance_min_points`` finite values, each ≤ ``zero_accuracy_fraction``."""
        _, values = finite_xy(series.steps, series.values)
        return values.size >= self.chance_min_points and float(np.max(np.abs(values))) <= self.zero_accuracy_fraction

    @staticmethod
    def _eval_drop(ctx: JudgeContext) -> float | None:
        """The largest relative improvement of any lower-is-better eval from its first value to its best."""
        drops = []
        for series, direction in ctx.evals:
            if direction is not Direction.LOWER:
                continue  # accuracies near chance gain large relative amounts from tiny absolute ones
            _, values = finite_xy(series.steps, series.values)
            if values.size >= 2 and values[0] > 0:
                drops.append(1 - float(values.min()) / float(values[0]))
        return max(drops) if drops else None
