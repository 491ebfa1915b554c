"""Evals as the judge of progress: a run logging only evals, by its primary eval's trend; a hopeless eval.

A validation loss every few hundred steps, or a top-1 accuracy once an epoch, is all some runs log
(MLPerf results, many papers' training logs). Without a train loss nothing else judges their progress,
so this detector stands in for the trend detector: improving (accuracy up, loss/WER down) → information
(continue); no progress at all from the first evals on → not learning (warning, then critical when the
next check still sees it). In a run with a train loss, an eval stuck at a hopeless value from the start
(accuracy near 0, WER near 1) is not learning too. Worsening evals are the eval detector's (degrading,
collapse).

The tests live by kind: `evaltrend_stuck` (how far an eval got), `evaltrend_unchanged` (an output that
does not change), their thresholds and shared measures in `evaltrend_base`; this module combines them
per check, with the primary eval's trend and the judging eval's plateau.
"""

from __future__ import annotations

import numpy as np

from ..models import Direction, Severity, Signal, SignalKind
from ..state import MetricSeries
from .context import PLATEAU_EVIDENCE, JudgeContext, signal
from .evalkinds import percent_scale, secondary_at_most_warning
from .evaltrend_base import ceiling_room, judging_eval, primary_eval
from .evaltrend_stuck import EvalStuckTests
from .evaltrend_unchanged import EvalUnchangedTests
from .stats import end_thirds, finite_xy, fmt_move, fmt_pct, fmt_step, positive_log, theil_sen


class EvalTrendDetector(EvalStuckTests, EvalUnchangedTests):
    """The primary eval of a run without a train loss: improving, or not learning; in any run, an eval
    stuck, hopeless or unchanged, and the judging eval's plateau. Thresholds in ``EvalTrendBase``."""

    def check(self, ctx: JudgeContext) -> list[Signal]:
        primary = primary_eval(ctx) if ctx.train_loss is None else None
        out: list[Signal] = []
        for series, direction in ctx.evals:
            steps, values = finite_xy(series.steps, series.values)
            if primary is not None and series.name == primary[0].name:
                out += self._primary(ctx, series, direction, steps, values)
            elif (
                self._hopeless(series.name, values, direction)
                or self._beyond_empty(series, values, direction)
                or series.name in ctx.baselines
            ):
                out += self._stuck(ctx, series, direction, steps, values)
            elif ctx.train_loss is not None:
                out += self._unchanged(ctx, series, direction, steps, values)
        if not any(s.severity is not Severity.INFO for s in out):
            out += self._plateau(ctx)
        return secondary_at_most_warning(out, ctx)

    def _plateau(self, ctx: JudgeContext) -> list[Signal]:
        """The run's judging eval (`judging_eval`) flat over all its evals: no significant trend either way
        over ≥ ``plateau_min_evals`` evals, and a slope band (``slope_confidence_z``) ruling out a gain of
        ``plateau_gain_fraction`` of its level over them. A warning, never a stop (`PLATEAU_EVIDENCE`)."""
        judged = judging_eval(ctx)
        if judged is None or ctx.train_loss is None:
            return []
        series, d = judged
        steps, values = finite_xy(series.steps, series.values)
        if values.size < self.plateau_min_evals:
            return []
        room_share = ceiling_room(series.name, values, d)
        if room_share <= 1 - self.plateau_ceiling_fraction:
            return []  # an accuracy-like eval at its ceiling has nothing left to gain
        room = room_share * percent_scale(series.name, values)  # in the eval's units
        loss_steps, loss = finite_xy(ctx.train_loss.steps, ctx.train_loss.values)
        since = loss_steps >= steps[0]
        if not self._falling(loss_steps[since], positive_log(loss[since])):
            return []  # the train loss flat too is the trend detector's plateau
        trend = theil_sen(steps, values, confidence_z=self.slope_confidence_z)
        if trend is None or trend.rising or trend.falling:
            return []
        span = float(steps[-1] - steps[0])
        gain_bound = (trend.high if d is Direction.HIGHER else -trend.low) * span / room
        if gain_bound >= self.plateau_gain_fraction:
            return []
        first, last = end_thirds(values)
        msg = (
            f"{series.name} is flat over all {values.size} evals (steps {fmt_step(int(steps[0]))}–"
            f"{fmt_step(int(steps[-1]))}): {fmt_move(first, last)} (medians of the first and last thirds, "
            f"{d.value} is better), no significant trend, and its slope's band rules out a gain of "
            f"{fmt_pct(self.plateau_gain_fraction)} of its headroom over them (at most "
            f"{fmt_pct(max(gain_bound, 0.0))}) while {ctx.train_loss.name} falls: converged below its ceiling, "
            "or no longer generalising: worth a look."
        )
        return [
            signal(SignalKind.FLAT, Severity.WARNING, msg, metric=series.name, step=int(steps[-1]),
                   points=values.size, since_step=int(steps[0]), **{PLATEAU_EVIDENCE: gain_bound})
        ]  # fmt: skip

    def _primary(
        self, ctx: JudgeContext, series: MetricSeries, d: Direction, steps: np.ndarray, values: np.ndarray
    ) -> list[Signal]:
        """The eval that stands in for the missing train loss: stuck, too few for a trend, or its trend."""
        stuck = self._stuck(ctx, series, d, steps, values)
        if stuck:
            return stuck
        if values.size < self.min_evals:
            noun = "eval" if values.size == 1 else "evals"
            msg = f"only {values.size} finite {series.name} {noun} (need {self.min_evals} to judge its trend)."
            return [signal(SignalKind.TOO_FEW_POINTS, Severity.INFO, msg, metric=series.name, points=values.size)]
        return self._frozen_primary(ctx, series, d, steps, values) or self._trend(series, d, steps, values)

    def _frozen_primary(
        self, ctx: JudgeContext, series: MetricSeries, d: Direction, steps: np.ndarray, values: np.ndarray
    ) -> list[Signal]:
        """The primary eval of a run without a train loss, lower-is-better and repeated to the last digit
        (`is_frozen`, ≥ 4 significant digits) over its last ≥ ``frozen_tail_evals`` evals (counted across one
        odd eval, `repeats_across_one_eval`), with no other eval loss moving over them (`_moving_eval`): the
        model's held-out output no longer changes. A flag, never a stop: with no train loss a schedule decayed
        to nothing (the rest of the run is spent for nothing) and a dead network look the same. A Keras MNIST
        classifier's val loss, 0.5737 to four decimals from epoch 81 to 200 and 0.5736554 to seven from 141
        (corpus_real log-lh-agronowski-1, ambiguous: converged or starved), was continue at every check, its
        "no clear trend" information only."""
        tail = self._frozen_loss_tail(ctx, series, d, steps, values)
        if tail is None:
            return []
        span, repeats, frozen = tail
        msg = (
            f"{series.name} {frozen}: the model's held-out output no longer changes. The run logs no train loss, so "
            "a learning rate decayed to nothing (training is over and the rest of the run is spent for nothing) and "
            "a dead network look the same: worth a look."
        )
        return [
            signal(SignalKind.FLAT, Severity.WARNING, msg, metric=series.name, step=int(steps[-1]), points=repeats,
                   since_step=int(steps[-span]), **{PLATEAU_EVIDENCE: float(repeats)})
        ]  # fmt: skip

    def _trend(self, series: MetricSeries, d: Direction, steps: np.ndarray, values: np.ndarray) -> list[Signal]:
        xs, ys = steps[-self.trend_window_evals :], values[-self.trend_window_evals :]
        trend = theil_sen(xs, ys, confidence_z=self.slope_confidence_z)
        if trend is None:
            return []
        better = trend.rising if d is Direction.HIGHER else trend.falling
        first, last = end_thirds(ys)
        span = f"over the last {xs.size} evals (steps {fmt_step(int(xs[0]))}–{fmt_step(int(xs[-1]))})"
        moved = f"{fmt_move(first, last)} (medians of the first and last thirds)"
        if better:
            kind, msg = SignalKind.IMPROVING, f"{series.name} improving ({d.value} is better): {moved} {span}."
        else:
            kind, msg = SignalKind.FLAT, f"{series.name} no clear trend ({d.value} is better): {moved} {span}."
        return [signal(kind, Severity.INFO, msg, metric=series.name, step=int(xs[-1]), mk_z=trend.z, points=trend.n)]
