"""An eval showing the model's output has not changed, in a run with a train loss: frozen from its first eval
while the train loss does not fall, an eval loss at ln N, an accuracy repeated beside a frozen train accuracy,
a frozen tail."""

from __future__ import annotations

import numpy as np

from ..models import Direction, Severity, Signal, SignalKind
from ..roles import EVAL_SPLIT_TOKENS, TRAIN_SPLIT_TOKENS, tokenize
from ..state import MetricSeries
from .chance import implied_class_count, names_accuracy
from .context import UNCHANGED_EVIDENCE, JudgeContext, signal
from .evalkinds import is_quality_eval, train_accuracy, unit_scaled
from .evaltrend_base import EvalTrendBase, ceiling_room
from .stats import finite_xy, fmt, fmt_pct, fmt_step, is_frozen, positive_log, rolling_median, trailing_run


def repeats_across_one_eval(values: np.ndarray) -> int:
    """How many evals at the end repeat the last one, counted across one eval between that differs when the eval
    before it is the same value again: the span they cover. A continuous loss that comes back to the identical
    value after one odd eval is still the same dead output (a Keras regressor's val loss at 0.030659 from its 3rd
    epoch on but 0.314 at epoch 386, corpus_real log-Tweet-Popularity-1, bad, lost its frozen tail for a check
    and waited for a second one). One eval only: two or more between are a model that moved."""
    tail = trailing_run(values == values[-1])
    if tail == 0 or tail >= values.size - 1:
        return tail
    before = values[: values.size - tail - 1]
    if before[-1] != values[-1]:
        return tail
    return tail + 1 + trailing_run(before == values[-1])


def _without_split(name: str) -> tuple[str, ...]:
    """A metric's name tokens without its split words: ``train/k_accuracy`` and ``val_k_accuracy`` are one."""
    return tuple(t for t in tokenize(name) if t not in TRAIN_SPLIT_TOKENS and t not in EVAL_SPLIT_TOKENS)


class EvalUnchangedTests(EvalTrendBase):
    """Evals whose repeated or untrained values say the model's output does not change (`_unchanged`);
    thresholds in ``EvalTrendBase``."""

    def _unchanged(
        self, ctx: JudgeContext, series: MetricSeries, d: Direction, steps: np.ndarray, values: np.ndarray
    ) -> list[Signal]:
        """An eval showing the model's output has not changed: frozen while the train loss does not fall
        either, or an eval loss at ln N not falling."""
        if values.size < self.stuck_baseline_min_evals or ctx.train_loss is None:
            return []
        loss_steps, loss = finite_xy(ctx.train_loss.steps, ctx.train_loss.values)
        loss_still = loss.size > 0 and not self._falling(loss_steps, positive_log(loss))
        why = self._frozen_why(values) if loss_still else None
        frozen = why is not None
        moving = self._moving_eval(ctx, series, steps) if why else None
        if why and moving:
            why += f", though {moving}"
        why = why or self._chance_why(ctx, series, d, steps, values)
        why = why or self._frozen_loss_tail_why(ctx, series, d, steps, values, loss_steps, loss)
        flag_only = why is None or moving is not None
        if why is None and (same := self._same_predictions(ctx, series, values)) is not None:
            why, points, paired = same
            below_ceiling = ceiling_room(series.name, values, d) > 1 - self.plateau_ceiling_fraction
            flag_only = points < self.same_predictions_stop_evals or not (below_ceiling and paired)
        why = why or self._frozen_tail_why(ctx, series, d, steps, values, loss_steps, loss)
        if why is None:
            return []
        also = f", and {ctx.train_loss.name} is not falling either" if loss_still and not flag_only else ""
        critical = not flag_only and ctx.not_learning_before(series.name, int(steps[-1]), new_points=False)
        if flag_only:
            tail = "a flag, not a stop (the losses may still move the predictions)"
        else:
            tail = "still so at a second check, so critical" if critical else "critical if the next check still sees it"
        msg = (
            f"{series.name} is not learning: over {values.size} evals up to step {fmt_step(int(steps[-1]))} it "
            f"{why}{also}; {tail}."
        )
        severity = Severity.CRITICAL if critical else Severity.WARNING
        return [
            signal(SignalKind.FLAT, severity, msg, metric=series.name, step=int(steps[-1]), points=values.size,
                   since_step=int(steps[0]), **({UNCHANGED_EVIDENCE: 1.0} if frozen and not flag_only else {}))
        ]  # fmt: skip

    def _moving_eval(self, ctx: JudgeContext, series: MetricSeries, steps: np.ndarray) -> str | None:
        """Another lower-is-better eval of the run (an eval loss on the same held-out set) falling over the frozen
        eval's steps, from 4 evals: Theil–Sen falling (``slope_confidence_z``, log scale) with a fitted fall of
        at least ``chance_min_fall_fraction``. The model's outputs then change (their probabilities move) though
        its argmax has not flipped yet: a frozen accuracy is a flag, not proof the model does not learn."""
        for other, direction in ctx.evals:
            if other.name == series.name or direction is not Direction.LOWER:
                continue
            o_steps, o_values = finite_xy(other.steps, other.values)
            keep = (o_steps >= steps[0]) & (o_steps <= steps[-1]) & (o_values > 0)
            if int(keep.sum()) < 4:
                continue
            fall = self._real_fall(o_steps[keep], np.log(o_values[keep]))
            if fall is not None:
                return (
                    f"{other.name} falls {fmt_pct(float(-np.expm1(-fall)))} over the same evals (the outputs "
                    "change; the predicted class has not flipped yet)"
                )
        return None

    @staticmethod
    def _frozen_why(values: np.ndarray) -> str | None:
        if not is_frozen(values):
            return None
        return f"is {float(values[0]):.8g} to the last digit at every eval from its first (the output does not change)"

    def _frozen_tail_why(
        self,
        ctx: JudgeContext,
        series: MetricSeries,
        d: Direction,
        steps: np.ndarray,
        values: np.ndarray,
        loss_steps: np.ndarray,
        loss: np.ndarray,
    ) -> str | None:
        """A quality eval below its ceiling repeated exactly over its last ≥ ``frozen_tail_evals`` evals while
        the train loss does not fall over their steps (≥ 4 points): the model's predictions on the held-out
        set have stopped changing with nothing else moving. A flag, never a stop, and none while another eval of
        the run improves over the same evals (`_other_eval_improves`)."""
        repeats = trailing_run(values == values[-1])
        if d is not Direction.HIGHER or not is_quality_eval(series.name) or repeats < self.frozen_tail_evals:
            return None
        if ceiling_room(series.name, values[-repeats:], d) <= 1 - self.plateau_ceiling_fraction:
            return None
        if self._train_loss_moves_since(int(steps[-repeats]), loss_steps, loss):
            return None
        if self._other_eval_improves(ctx, series, steps[-repeats:]):
            return None
        return (
            f"repeats {fmt(float(values[-1]))} exactly over its last {repeats} evals (threshold "
            f"{self.frozen_tail_evals}, from step {fmt_step(int(steps[-repeats]))}) while the train loss does not "
            "fall over them either (the held-out predictions stopped changing and nothing else moves)"
        )

    def _other_eval_improves(self, ctx: JudgeContext, series: MetricSeries, steps: np.ndarray) -> bool:
        """Whether another eval of the run improves in its own direction over ``steps`` (≥ 4 of its evals there,
        `_significant`: Theil–Sen at ``slope_confidence_z``): the held-out predictions then still get better,
        whatever one score of them repeats. A detector's mAP50 at the 11-point VOC AP's ceiling 10/11 = 0.909 for
        33 epochs while its mAP75 climbs 0.87 → 0.89 (corpus_real log-th-marlonselvi-1, healthy) is a score that
        cannot rise, not a frozen model. An eval that only wobbles (an eval loss at 1.10-1.23 beside a top-1
        repeated for 17 evals) does not count: that run keeps its flag."""
        for other, direction in ctx.evals:
            if other.name == series.name:
                continue
            o_steps, o_values = finite_xy(other.steps, other.values)
            keep = (o_steps >= steps[0]) & (o_steps <= steps[-1])
            if int(keep.sum()) >= 4 and self._significant(o_steps[keep], o_values[keep], direction):
                return True
        return False

    def _frozen_loss_tail_why(
        self,
        ctx: JudgeContext,
        series: MetricSeries,
        d: Direction,
        steps: np.ndarray,
        values: np.ndarray,
        loss_steps: np.ndarray,
        loss: np.ndarray,
    ) -> str | None:
        """A frozen loss tail (`_frozen_loss_tail`) while the train loss does not fall over its steps (≥ 4
        points): a continuous loss repeats itself exactly only when the model's outputs on the held-out set no
        longer change at all (a dead network). Unlike a repeated accuracy (a count on a small set repeats by
        chance) it is a finding to stop on, at the next check."""
        tail = self._frozen_loss_tail(ctx, series, d, steps, values)
        if tail is None:
            return None
        span, _, frozen = tail
        if self._train_loss_moves_since(int(steps[-span]), loss_steps, loss) or self._lr_dead_since(ctx, steps[-span]):
            return None
        if self._quality_eval_perfect(ctx, steps[-span:]):
            return None
        return (
            f"{frozen} while the train loss does not fall over them either (the model's held-out output no longer "
            "changes)"
        )

    @staticmethod
    def _quality_eval_perfect(ctx: JudgeContext, steps: np.ndarray) -> bool:
        """Whether a quality eval of the run (`is_quality_eval`, higher is better) sits at the top of its scale at
        every one of its ≥ 2 evals over ``steps``, having been below it before: a held-out set the model has learned
        to get all right (not a top-5 of five classes, right from its first eval). Its eval loss then
        repeats because the predictions no longer change, which is where a converged classifier rests, not a dead
        network. Ultralytics classifiers at top-1 1.0 over their last 13-19 epochs, their val loss 2.2484 and
        2.3223 to the last digit while the train loss sits at its floor of 0.002-0.004 (corpus_real
        log-nf-hsbi-lerngruppe-bres-1, log-nf-luis-ntonio-1, round 75, healthy), were stopped for the frozen loss."""
        for other, direction in ctx.evals:
            if direction is not Direction.HIGHER or not is_quality_eval(other.name):
                continue
            o_steps, o_values = finite_xy(other.steps, other.values)
            scaled = unit_scaled(other.name, o_values)
            inside = scaled[(o_steps >= steps[0]) & (o_steps <= steps[-1])]
            climbed = bool(np.any(scaled < 1.0))  # one at 1.0 from its first eval is a degenerate test (top-5 of 5)
            if climbed and inside.size >= 2 and bool(np.all(inside >= 1.0)):
                return True
        return False

    def _frozen_loss_tail(
        self, ctx: JudgeContext, series: MetricSeries, d: Direction, steps: np.ndarray, values: np.ndarray
    ) -> tuple[int, int, str] | None:
        """A lower-is-better eval identical to the last digit (`is_frozen`, ≥ 4 significant digits) over its last
        ≥ ``frozen_tail_evals`` evals (counted across one odd eval, `repeats_across_one_eval`), with no other eval
        loss falling over them (`_moving_eval`): the span of evals it covers, how many of them repeat the value, and the
        phrase that says so; else None."""
        span = repeats_across_one_eval(values)
        same = values[-span:] == values[-1]
        repeats = int(same.sum())
        if d is not Direction.LOWER or repeats < self.frozen_tail_evals or not is_frozen(values[-span:][same]):
            return None
        if self._moving_eval(ctx, series, steps[-span:]) is not None:
            return None
        at = f"its last {repeats}" if repeats == span else f"{repeats} of its last {span}"
        return span, repeats, (
            f"is {float(values[-1]):.8g} to the last digit at {at} evals (threshold {self.frozen_tail_evals}, from "
            f"step {fmt_step(int(steps[-span]))})"
        )

    def _train_loss_moves_since(self, start: int, loss_steps: np.ndarray, loss: np.ndarray) -> bool:
        """Fewer than 4 train-loss points from ``start`` on, or a train loss falling over them: something still
        moves, so a repeated eval tail is not a model that stopped changing."""
        since = loss_steps >= start
        return int(since.sum()) < 4 or self._falling(loss_steps[since], positive_log(loss[since]))

    def _lr_dead_since(self, ctx: JudgeContext, start: float) -> bool:
        """The LR at every logged point from ``start`` on is ≤ ``frozen_dead_lr_ratio`` × its peak: a model that
        no longer changes because its schedule stopped it is the LR detector's dead-LR finding (a flag for a
        reviewer: a schedule decayed too early, or meant to end there), not a dead network to stop."""
        lr = ctx.learning_rate
        if lr is None:
            return False
        steps, values = finite_xy(lr.steps, lr.values)
        peak = ctx.lr_events.peak or (float(values.max()) if values.size else 0.0)
        since = values[steps >= start]
        return peak > 0 and since.size > 0 and float(since.max()) <= self.frozen_dead_lr_ratio * peak

    def _same_predictions(
        self, ctx: JudgeContext, series: MetricSeries, values: np.ndarray
    ) -> tuple[str, int, bool] | None:
        """An eval accuracy repeated exactly from its first eval beside a train accuracy frozen to the last digit
        (`is_frozen`) from its first point, both over ≥ ``stuck_baseline_min_evals`` points: the model predicts
        the same on both sets however its losses move. The phrase, over how many points of the shorter of the
        two (a flag below ``same_predictions_stop_evals``, a stop at a second check from there), and whether the
        two are one accuracy on two sets (``train/k_accuracy`` and ``val/k_accuracy``; not another head's)."""
        train = train_accuracy(ctx)
        if not names_accuracy(series.name) or train is None:
            return None
        name, train_values = train
        values, train_values = self._settled(values), self._settled(train_values)
        enough = min(values.size, train_values.size) >= self.stuck_baseline_min_evals
        if not enough or not np.all(values == values[0]) or not is_frozen(train_values):
            return None
        return (
            f"repeats {fmt(float(values[0]))} exactly over its last {values.size} evals while {name} is "
            f"{float(train_values[0]):.8g} to the last digit at each of its last {train_values.size} points "
            "(the predictions do not change on either set)"
        ), min(values.size, train_values.size), _without_split(name) == _without_split(series.name)

    def _settled(self, values: np.ndarray) -> np.ndarray:
        """The values from the first on, or when those are not all the same, from the one after the first
        ``settle_evals`` points: a model collapsing to one class shows it from its second epoch."""
        if values.size == 0 or np.all(values == values[0]):
            return values
        return values[self.settle_evals :]

    def _chance_why(
        self, ctx: JudgeContext, series: MetricSeries, d: Direction, steps: np.ndarray, values: np.ndarray
    ) -> str | None:
        if d is not Direction.LOWER or "loss" not in tokenize(series.name):
            return None
        level = float(np.median(values))
        count = ctx.config.class_count or implied_class_count(ctx, level)  # from an accuracy at 1/N (chance.py)
        if count is None:
            return None
        chance = float(np.log(count))
        y = positive_log(values)
        drop = -np.expm1(float(np.min(rolling_median(y, 3))) - float(y[0]))
        if level < (1 - self.chance_drop_fraction) * chance or drop >= self.chance_drop_fraction:
            return None
        if self._real_fall(steps, y) is not None:
            return None
        implied = f"the {count} classes its accuracy at 1/{count} implies"
        whose = "its class count" if ctx.config.class_count else implied
        return (
            f"sits at a median {fmt(level)}, at or above ln {count:,} = {fmt(chance)}, the untrained model's loss for "
            f"{whose}, not falling"
        )
