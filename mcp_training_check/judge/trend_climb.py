"""A train loss getting worse too slowly for the divergence rules: back above what it reached during its
warmup, or climbing back from its minimum steadily for long; stopped when an eval got worse with it."""

from __future__ import annotations

import numpy as np

from ..models import Direction, Severity, Signal, SignalKind
from ..roles import tokenize
from ..state import MetricSeries
from .context import JudgeContext, signal, train_start
from .stats import falling_pairs_share, finite_xy, fmt, fmt_pct, fmt_ratio, fmt_step, positive_log, rolling_median
from .trend_rise import LossRiseTests


class LossClimbTests(LossRiseTests):
    """The slow-climb tests of ``TrendDetector`` (its thresholds: ``LossTrendBase``; the way-back floor of
    `LossRiseTests`)."""

    def _warmup_undone(self, ctx: JudgeContext, loss: MetricSeries, steps: np.ndarray, y: np.ndarray) -> list[Signal]:
        """A loss that never came back after its warmup to the level it reached during it: the lowest median of
        3 points after the warmup ≥ ``divergence_ratio`` × the lowest during it (and ≥ ``floor_min_share`` of
        the way back to the run's first points), beside an eval worse after its best, which came at or before
        the warmup's end, by ≥ ``warmup_eval_worse_fraction`` (the median of its evals since). The LR's climb to
        its peak undid what the first steps learned (an LR too high for a fine-tune): watched at the first check
        that sees both, critical at the next (with points since). The trend rules judge only the points after
        the warmup, whose best is already the damaged level, so they call it a plateau or an improvement. Judged
        from ``sustain_points`` points after the warmup (a median of 3), also in a log still too short for them."""
        end = ctx.lr_events.warmup_end
        if end is None or train_start(ctx) != end or y.size < self.sustain_points:
            return []
        all_steps, all_values = finite_xy(loss.steps, loss.values)
        warm = positive_log(all_values[all_steps < end])
        if warm.size < self.sustain_points:
            return []
        low = float(rolling_median(warm, self.sustain_points).min())
        after = float(rolling_median(y, self.sustain_points).min())
        start = float(np.median(warm[: self.sustain_points]))
        if after - low < np.log(self.divergence_ratio) or self._way_back(after, low, start) < self.floor_min_share:
            return []
        witness = self._eval_worse_since_warmup(ctx, end)
        if witness is None:
            return []
        prev = ctx.previous_signal(SignalKind.DIVERGENCE, loss.name)
        again = (
            prev is not None and "warmup_undone" in prev.evidence and prev.step is not None
            and prev.step < int(steps[-1])
        )  # fmt: skip
        ratio = float(np.exp(after - low))
        msg = (
            f"{loss.name} never came back after its warmup (ended at step {fmt_step(end)}) to the level it reached "
            f"during it: its lowest median of {self.sustain_points} since is {fmt(float(np.exp(after)))}, "
            f"{fmt_ratio(ratio)} the {fmt(float(np.exp(low)))} of the warmup (threshold "
            f"{fmt_ratio(self.divergence_ratio)}); {witness}: the LR's climb undid what the first steps learned"
        )
        msg += ", seen at the previous check too: critical." if again else "; critical if the next check still sees it."
        return [
            signal(SignalKind.DIVERGENCE, Severity.CRITICAL if again else Severity.WATCH, msg, metric=loss.name,
                   step=int(steps[-1]), ratio=ratio, since_step=int(end), warmup_undone=1.0)
        ]  # fmt: skip

    def _eval_worse_since_warmup(self, ctx: JudgeContext, end: int) -> str | None:
        """An eval whose best eval came at or before the warmup's ``end`` and whose evals since that best have a
        median ≥ ``warmup_eval_worse_fraction`` worse than it, in the eval's own direction: as a phrase."""
        for series, direction in ctx.evals:
            steps, values = finite_xy(series.steps, series.values)
            if values.size < 2:
                continue
            i = int(np.argmin(values) if direction is Direction.LOWER else np.argmax(values))
            best = float(values[i])
            if steps[i] > end or i == values.size - 1 or best <= 0:
                continue
            level = float(np.median(values[i + 1 :]))
            worse = level / best - 1 if direction is Direction.LOWER else 1 - level / best
            if worse >= self.warmup_eval_worse_fraction:
                return (
                    f"{series.name} got worse with it: {fmt(level)} since its best {fmt(best)} at step "
                    f"{fmt_step(int(steps[i]))} (median, {fmt_pct(worse)} worse; threshold "
                    f"{fmt_pct(self.warmup_eval_worse_fraction)})"
                )
        return None

    def _climb_back(self, ctx: JudgeContext, loss: MetricSeries, steps: np.ndarray, y: np.ndarray) -> list[Signal]:
        """A loss climbing back from its minimum, steadily and for long: ≥ ``climb_min_points`` points after its
        lowest point, over ≥ ``confirm_share`` of the steps judged, ≥ ``climb_rising_share`` of their pairs in
        rising order and the median of its last 3 points ≥ ``climb_min_change`` above the minimum. Watched; a
        warning over ≥ ``climb_flag_share`` of the steps by ≥ ``climb_flag_change``, seen at the previous check too;
        critical when an eval loss of the run climbs back too (`_eval_loss_climb`) and the previous check (with
        points since) saw the climb: both losses getting worse for a quarter of the run is a slow divergence,
        not noise. The smoothed divergence rules need ≥ 10 % over the best, which a per-epoch loss climbing
        a few per cent a dozen epochs in a row never reaches."""
        i = int(np.argmin(y))
        tail = y[i:]
        if tail.size - 1 < self.climb_min_points:
            return []
        share = (float(steps[-1]) - float(steps[i])) / max(float(steps[-1]) - float(steps[0]), 1.0)
        rising = falling_pairs_share(-tail)
        change = float(np.expm1(float(np.median(tail[-3:])) - float(tail[0])))
        if share < self.confirm_share or rising < self.climb_rising_share or change < self.climb_min_change:
            return []
        head = (
            f"{loss.name} is climbing back from its minimum {fmt(float(np.exp(tail[0])))} at step "
            f"{fmt_step(int(steps[i]))}: +{fmt_pct(change)} by the median of its last 3 points over the "
            f"{tail.size - 1} points since, {fmt_pct(rising)} of their pairs rising, over {fmt_pct(share)} of the "
            f"judged steps (thresholds {self.climb_min_points} points, {fmt_pct(self.climb_rising_share)}, "
            f"+{fmt_pct(self.climb_min_change)}, {fmt_pct(self.confirm_share)})"
        )
        witness = self._eval_loss_climb(ctx)
        prev = ctx.previous_signal(SignalKind.DIVERGENCE, loss.name)
        again = (
            prev is not None and ("climb_back" in prev.evidence or "undone" in prev.evidence)
            and prev.step is not None and prev.step < int(steps[-1])
        )  # fmt: skip
        if witness is not None and again:
            severity, tail_msg = Severity.CRITICAL, f"; {witness}, and the previous check saw the climb: critical."
        elif witness is not None:
            severity, tail_msg = Severity.WATCH, f"; {witness}: critical if the next check still sees both."
        elif again and share >= self.climb_flag_share and change >= self.climb_flag_change:
            severity, tail_msg = Severity.WARNING, (
                f"; no eval loss climbs with it, but it has risen for ≥ {fmt_pct(self.climb_flag_share)} of the judged "
                f"steps by ≥ {fmt_pct(self.climb_flag_change)}, and the previous check saw it: a slow divergence "
                "unless a schedule lifts it (a growing regulariser weight), worth a look."
            )
        else:
            severity, tail_msg = Severity.WATCH, "; no eval loss climbs with it: watched, a schedule can do this."
        return [
            signal(SignalKind.DIVERGENCE, severity, head + tail_msg, metric=loss.name, step=int(steps[-1]),
                   ratio=1 + change, since_step=int(steps[i]), climb_back=1.0)
        ]  # fmt: skip

    def _eval_loss_climb(self, ctx: JudgeContext) -> str | None:
        """An eval loss of the run (lower is better, "loss" in its name) whose last 3 evals' median is ≥
        ``climb_min_change`` above its best eval, ≥ 3 evals before its last: as a phrase, or None."""
        for series, direction in ctx.evals:
            if direction is not Direction.LOWER or "loss" not in tokenize(series.name):
                continue
            _, values = finite_xy(series.steps, series.values)
            if values.size < 4 or values.size - 1 - int(np.argmin(values)) < 3 or float(values.min()) <= 0:
                continue
            worse = float(np.median(values[-3:])) / float(values.min()) - 1
            if worse >= self.climb_min_change:
                return f"{series.name} climbs back too, +{fmt_pct(worse)} over its best {fmt(float(values.min()))}"
        return None
