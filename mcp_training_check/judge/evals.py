"""Evaluation metrics, each in its own direction: below a baseline, degrading (overfitting), collapsed.

The eval kinds (quality vs secondary) are in `evalkinds`, the degrading tests in `evals_degrading`, the
thresholds in `evals_base`.
"""

from __future__ import annotations

import numpy as np

from ..models import Direction, Severity, Signal, SignalKind
from ..roles import is_loss_like, tokenize
from ..state import MetricSeries
from .chance import names_accuracy
from .context import STARTED_AT_BEST, JudgeContext, restated, signal, warming_up_at
from .evalkinds import (
    has_quality_eval,
    is_quality_eval,
    is_secondary_eval,
    outvoted,
    percent_scale,
    secondary_at_most_warning,
    train_accuracy,
    unit_scaled,
    worse_by,
)
from .evals_degrading import EvalDegradingTests
from .evaltrend_base import hopeless_progress, progress
from .stats import (
    eval_set_size,
    finite_xy,
    fisher_fewer,
    fmt,
    fmt_pct,
    fmt_ratio,
    fmt_step,
    robust_sigma,
    rolling_median,
    strictly_rising,
    theil_sen,
    trailing_run,
)
from .trend_base import holds_start


def mild_overfit_outweighed(s: Signal, at_best: str) -> Signal:
    """A mild overfit (`_mild_overfit`) of an eval while every quality eval of the run is at or near its best
    (``at_best``): information, and no cause for another detector's finding."""
    if "mild_overfit" not in s.evidence or s.severity is not Severity.WARNING:
        return s
    note = (
        f"but the quality eval is at its best ({at_best}): a loss that worsens while the model's quality holds is "
        "over-confidence, information, not a flag."
    )
    return restated(s, note, Severity.INFO, outvoted=1.0)


def loss_collapse_outweighed(s: Signal, d: Direction, at_best: str) -> Signal:
    """A loss-type eval's confirmed collapse (≥ ``collapse_loss_ratio`` × its best) while every quality eval of
    the run is within ``quality_near_best_margin`` of its best (``at_best``, the strict margin: no widening by
    the eval's noise): a warning, not a stop. Two YOLO classifiers at a top-1 of 0.98-1.0 had val losses noisy
    around a tiny best (0.021, 0.0019) read ≥ 3× it at two evals and were stopped (corpus_real
    log-nf-tony2408-1, log-nf-luispaludo-1, healthy). The noise-widened margin would also spare an InceptionV3
    whose val accuracy fell 0.77 → 0.51 beside its collapsed loss (issue-keras-9214, bad); the strict one
    does not. Its cost on the train split: a federated run's loss rising ×6 while its accuracy still held
    (log-lm-umarfh-1, bad) is stopped two checks later, when the accuracy falls."""
    if d is not Direction.LOWER or "collapsed_evals" not in s.evidence or s.severity is not Severity.CRITICAL:
        return s
    note = (
        f"but the quality eval is at its best ({at_best}): a loss that multiplies while the model's quality "
        "holds is over-confidence on a few samples, a warning, not a stop."
    )
    return restated(s, note, Severity.WARNING, outweighed=1.0)


def quality_sliding(found: dict[str, list[Signal]]) -> bool:
    """Every quality eval of the run (`is_quality_eval`) is mildly overfitting itself (`_mild_overfit`: a
    significant slide from its best while the train loss fell): the model's quality is not holding, however
    near its best the noise margin of `_quality_at_best` puts it, so nothing is outweighed by it. A
    next-location model's Acc@1, MRR and NDCG sliding 2-3 % below their best at Mann–Kendall z −3.7 to −4.5
    over 14 evals while its train loss falls (log-ly-aetandrianwr-1, ambiguous) was watched only, never flagged;
    one quality eval that holds (a YOLO's mAP50 beside its easing mAP50-95) still speaks for the model. Its cost
    on corpus_real/'s train split: a cat-vs-dog ResNet whose held-out accuracy drifts 0.728 → 0.718 (block
    medians) over 700 epochs on a memorised train set (log-lt-haisu7025-1, healthy) is unsure at 8 more checks."""
    quality = [name for name in found if is_quality_eval(name)]
    return bool(quality) and all(any("mild_overfit" in s.evidence for s in found[name]) for name in quality)


def long_overfit_kept(s: Signal, z: float) -> Signal:
    """An overfit warning (an eval loss worse than its best while the train loss fell) of an eval whose rise
    is a long, steady overfit (`_long_overfit`, Mann–Kendall ``z``): kept a warning, which neither a quality
    eval at its best nor one not degrading outvotes (``long_overfit`` in its evidence)."""
    if s.kind is not SignalKind.EVAL_DEGRADING or s.severity is not Severity.WARNING:
        return s
    if (s.evidence.get("train_change") or 0.0) >= 0:
        return s
    note = (
        f"rising steadily since its best over half the run and more (Mann–Kendall z {z:.1f}): a long overfit, a "
        "flag whatever the quality eval says, never a stop."
    )
    return restated(s, note, long_overfit=z)


def long_overfit_outvoted(s: Signal, z: float) -> Signal:
    """A secondary eval loss's critical finding — a collapse (≥ ``collapse_loss_ratio``× its best) or a large
    overfit — in a long, steady overfit (`_long_overfit`, Mann–Kendall ``z``): the quality eval outvotes its
    stop, not its flag, so it is a warning as a smaller long overfit is (`long_overfit_kept`), not information.
    (corpus_real log-rt-thigiacmaytinh-1, ambiguous: a YOLOv7 val obj loss 0.09 → 0.35 over 250 epochs while its
    mAP holds its best was information at every check, while another run's +29 % was flagged.)"""
    overfit = "collapsed_evals" in s.evidence or (s.evidence.get("train_change") or 0.0) < 0
    if s.kind is not SignalKind.EVAL_DEGRADING or s.severity is not Severity.CRITICAL or not overfit:
        return s
    message = (
        f"{s.message.rstrip('.')}; rising steadily since its best over half the run and more (Mann–Kendall z "
        f"{z:.1f}): a long overfit, a flag whatever the quality eval says, never a stop."
    )
    return s.model_copy(
        update={"severity": Severity.WARNING, "message": message, "evidence": s.evidence | {"long_overfit": z}}
    )


def _under_floor(name: str, values: np.ndarray, best: float, fraction: float) -> bool:
    """An eval bounded in [0, 1] on its own scale (`percent_scale`) whose ``best`` (as logged) is under
    ``fraction`` of that scale: a model that has not left its floor."""
    scale = percent_scale(name, values)
    unit = values / scale
    return bool(unit.min() >= 0 and unit.max() <= 1 and best / scale < fraction)


class EvalDetector(EvalDegradingTests):
    """Each eval against a baseline, its own best (overfitting, decay) and a collapse; thresholds in
    ``EvalBase``."""

    def check(self, ctx: JudgeContext) -> list[Signal]:
        names = [s.name for s, _ in ctx.evals]
        found = {series.name: self._eval_signals(ctx, series, d) for series, d in ctx.evals}
        why = self._quality_outvotes(ctx, found)
        holding = has_quality_eval(ctx) and not quality_sliding(found)
        at_best = self._quality_at_best(ctx) if holding else ""
        # the strict margin is the wider one's floor, so only a run at its best by the wider one can be by it
        strictly_at_best = self._quality_at_best(ctx, strict=True) if at_best else ""
        out: list[Signal] = []
        for series, d in ctx.evals:
            z = self._long_overfit(ctx, series, d)
            kept = found[series.name] if z is None else [long_overfit_kept(s, z) for s in found[series.name]]
            if why and is_secondary_eval(series.name, names):
                kept = [long_overfit_outvoted(s, z) for s in kept] if z is not None else kept
                kept = [s if "long_overfit" in s.evidence else outvoted(s, why) for s in kept]
            if at_best:
                kept = [s if "long_overfit" in s.evidence else mild_overfit_outweighed(s, at_best) for s in kept]
            if strictly_at_best:
                kept = [loss_collapse_outweighed(s, d, strictly_at_best) for s in kept]
            out += kept
        return secondary_at_most_warning(out, ctx)

    def _quality_outvotes(self, ctx: JudgeContext, found: dict[str, list[Signal]]) -> str:
        """Why the run's quality evals outvote its secondary evals, as a phrase, or "": every quality eval at
        or near its best (`_quality_at_best`), or none of them flagged (a warning or critical) by this detector."""
        if not has_quality_eval(ctx):
            return ""
        at_best = self._quality_at_best(ctx)
        if at_best:
            return f"the quality eval is at its best ({at_best})"
        quality = [name for name in found if is_quality_eval(name) and not is_secondary_eval(name, list(found))]
        flagged = any(s.severity in (Severity.WARNING, Severity.CRITICAL) for name in quality for s in found[name])
        return "" if flagged else f"the quality eval ({', '.join(quality)}) is not degrading"

    def _eval_signals(self, ctx: JudgeContext, series: MetricSeries, direction: Direction) -> list[Signal]:
        return [self._floor_noise(ctx, series, direction, s) for s in self._eval_findings(ctx, series, direction)]

    def _floor_noise(self, ctx: JudgeContext, series: MetricSeries, d: Direction, s: Signal) -> Signal:
        """A critical slide of a bounded higher-is-better quality eval whose best is under
        ``floor_learning_fraction`` of its scale while the train loss fell since that best, and no eval loss
        of the run is far above its best (`_eval_loss_far_above_best`): a warning."""
        if s.kind is not SignalKind.EVAL_DEGRADING or s.severity is not Severity.CRITICAL or d is not Direction.HIGHER:
            return s
        if not is_quality_eval(series.name) or not np.isfinite(series.values[-1]):
            return s  # a NaN eval is the evaluation broken, at any level
        steps, values = finite_xy(series.steps, series.values)
        if values.size == 0:
            return s
        best_i = int(np.argmax(values))
        if not _under_floor(series.name, values, float(values[best_i]), self.floor_learning_fraction):
            return s
        train = self._train_change(ctx, int(steps[best_i]))
        if train is None or train > -self.degrade_margin or self._eval_loss_far_above_best(ctx):
            return s
        note = (
            f"but its best {fmt(float(values[best_i]))} is under {fmt_pct(self.floor_learning_fraction)} of its "
            f"scale and the train loss fell {fmt_pct(-train)} since: a model that has not left its floor has "
            "learned nothing to lose yet, and whether it learns is the not-learning rule's question (a warning)"
        )
        return restated(s, note, Severity.WARNING, on_floor=1.0)

    def _eval_loss_far_above_best(self, ctx: JudgeContext) -> bool:
        """An eval loss of the run whose last 3 evals' median is ≥ (1 + ``overfit_stop_margin``) × its best
        median of 3: the model fits its training set and not the held-out one, a large overfit at any level."""
        for series, d in ctx.evals:
            if d is not Direction.LOWER or not is_loss_like(series.name):
                continue
            _, values = finite_xy(series.steps, series.values)
            if values.size <= self.patience_evals or values.min() <= 0:
                continue
            level = rolling_median(values, 3)
            if float(level[-1]) >= (1 + self.overfit_stop_margin) * float(level.min()):
                return True
        return False

    def _eval_findings(self, ctx: JudgeContext, series: MetricSeries, direction: Direction) -> list[Signal]:
        collapse = self._collapse(ctx, series, direction)
        if collapse is not None:
            return self._stronger_than(collapse, self._degrading(ctx, series, direction))
        out = self._baseline(ctx, series, direction)
        _, values = finite_xy(series.steps, series.values)
        if values.size and self._on_floor(ctx, series.name, values, float(values.max()), direction):
            return out  # a head that never left its floor has no best to degrade from (``collapse_floor_fraction``)
        degrading = self._degrading(ctx, series, direction)
        flagged = any(sig.severity in (Severity.WARNING, Severity.CRITICAL) for sig in degrading)
        out += degrading if flagged else degrading + self._memorised(ctx, series, direction)
        out += [] if flagged else self._far_above_train(ctx, series, direction)
        return out

    def _far_above_train(self, ctx: JudgeContext, series: MetricSeries, d: Direction) -> list[Signal]:
        """An eval loss ≥ ``overfit_gap_ratio`` × the train loss and worse than at the eval before at each of
        its last ``overfit_rising_evals`` evals, while the train loss fell between the last two: a deep, growing
        overfit (a warning)."""
        if d is not Direction.LOWER or "loss" not in tokenize(series.name) or ctx.train_loss is None:
            return []
        steps, values = finite_xy(series.steps, series.values)
        rises = min(self.overfit_rising_evals, values.size - 1)  # a run with 2 evals shows one rise at most
        if rises < 1 or not strictly_rising(values[-rises - 1 :]):
            return []
        train_steps, train = finite_xy(ctx.train_loss.steps, ctx.train_loss.values)
        before, now = (self._train_level(train_steps, train, int(s)) for s in steps[-2:])
        start = self._start_gap(train_steps, train, int(steps[0]), float(values[0]))
        if now is None or before is None or now >= before or values[-1] < self.overfit_gap_ratio * start * now:
            return []
        started = f" the {fmt_ratio(start)} it started with at its first eval" if start > 1 else ""
        msg = (
            f"{series.name} {fmt(float(values[-1]))} at step {fmt_step(int(steps[-1]))} is "
            f"{fmt_ratio(float(values[-1]) / now)} the train loss there ({fmt(now)}, median of 5; threshold "
            f"{fmt_ratio(self.overfit_gap_ratio)}{started}) and worse than the eval before at each of its last {rises} "
            f"evals (from {fmt(float(values[-rises - 1]))}) while the train loss fell from {fmt(before)}: a deep, "
            "growing overfit"
        )
        last = int(steps[-1])
        if not self._far_above_before(ctx, series.name, last):
            msg += " (a flag; critical if a check with new evals still sees it growing)."
            severity = Severity.WARNING
        elif improving := self._quality_improving(ctx):
            msg += f"; growing since the previous check, but {improving} still improves: a flag."
            severity = Severity.WARNING
        else:
            msg += ", as at the previous check: still growing eval after eval, critical."
            severity = Severity.CRITICAL
        return [
            signal(SignalKind.EVAL_DEGRADING, severity, msg, metric=series.name, step=last,
                   train_ratio=float(values[-1]) / now)
        ]  # fmt: skip

    def _quality_improving(self, ctx: JudgeContext) -> str:
        """The first eval score of the run (an eval that is no loss nor perplexity: an accuracy, a WER, an F1)
        whose last eval is within ``quality_near_best_margin`` of its best and whose best has gained ≥
        ``degrade_margin`` of what there was to gain since its first eval (`progress`, on its [0, 1] scale): the
        model still gets better where it counts, however few its evals (a Whisper fine-tune's eval loss 0.307 →
        0.421 at 140× its train loss while its WER improves 0.346 → 0.326, log-Whisper_small_hi-1; a RoBERTa's
        accuracy 0.953 → 0.971, log-roberta-sentiment-1; both ambiguous). Else ""."""
        for series, d in ctx.evals:
            if is_loss_like(series.name):
                continue
            _, values = finite_xy(series.steps, series.values)
            if values.size < 2:
                continue
            best = float(values.min() if d is Direction.LOWER else values.max())
            near = float(worse_by(float(values[-1]), best, d)) <= self.quality_near_best_margin
            if near and progress(unit_scaled(series.name, values), d) >= self.degrade_margin:
                return series.name
        return ""

    @staticmethod
    def _far_above_before(ctx: JudgeContext, name: str, last_step: int) -> bool:
        """The previous check found this eval loss deeply and growingly overfit (`_far_above_train`) at an
        earlier eval, or critically so at this one (no eval since: the same evidence, still critical)."""
        earlier = ctx.previous[0].signals if ctx.previous else []
        return any(
            s.kind is SignalKind.EVAL_DEGRADING and s.metric == name and "train_ratio" in s.evidence
            and s.step is not None
            and (s.step < last_step or (s.step == last_step and s.severity is Severity.CRITICAL))
            for s in earlier
        )  # fmt: skip

    def _start_gap(self, train_steps: np.ndarray, train: np.ndarray, at: int, first_eval: float) -> float:
        """The eval loss's ratio to the train loss at its first eval when above 1, in a log holding the run's start;
        else 1. A gap there is a difference of scale (a loss summed over a test set beside a per-sample train loss),
        not an overfit, which the deep-overfit test measures from (`overfit_gap_ratio`); an excerpt's first eval
        may already be an overfit's."""
        level = self._train_level(train_steps, train, at)
        if level is None or not holds_start(train_steps):
            return 1.0
        return max(1.0, first_eval / level)

    @staticmethod
    def _train_level(steps: np.ndarray, values: np.ndarray, at: int) -> float | None:
        """The train loss's level at an eval: the median of its last 5 finite points up to that step (> 0)."""
        k = int(np.searchsorted(steps, at, side="right"))
        level = float(np.median(values[max(0, k - 5) : k])) if k else 0.0
        return level if level > 0 else None

    def _memorised(self, ctx: JudgeContext, series: MetricSeries, d: Direction) -> list[Signal]:
        """An eval accuracy far below a memorised train accuracy, and not rising: overfitting (a warning); not one
        that has learned ``memorised_learned_fraction`` of its headroom since its first eval (a plateau). Both
        accuracies are compared on their [0, 1] scale (`unit_scaled`): a train accuracy printed at 93.4 (%) is not
        memorised."""
        if d is not Direction.HIGHER or not names_accuracy(series.name):
            return []
        steps, values = finite_xy(series.steps, series.values)
        train = train_accuracy(ctx)
        if values.size < self.memorised_min_evals or train is None or train[1].size < 3:
            return []
        unit, train_unit = unit_scaled(series.name, values), unit_scaled(train[0], train[1])
        train_level, level = float(np.median(train_unit[-3:])), float(np.median(unit[-3:]))
        if train_level < self.memorised_accuracy_fraction or train_level - level < self.memorised_gap_fraction:
            return []
        trend = theil_sen(steps, values)
        if trend is None or trend.rising or hopeless_progress(unit, d) >= self.memorised_learned_fraction:
            return []
        msg = (
            f"{series.name} {fmt(level)} (median of the last 3 evals, step {fmt_step(int(steps[-1]))}, on a 0-1 "
            f"scale) is {fmt(train_level - level)} below {train[0]} {fmt(train_level)} and not rising over "
            f"{values.size} evals: the training set is memorised (≥ {fmt(self.memorised_accuracy_fraction)}) while "
            f"held-out accuracy stays ≥ {fmt(self.memorised_gap_fraction)} below it (overfitting; a flag, not a stop)."
        )
        return [
            signal(SignalKind.EVAL_DEGRADING, Severity.WARNING, msg, metric=series.name, step=int(steps[-1]),
                   gap=train_level - level, train_accuracy=train_level)
        ]  # fmt: skip

    @staticmethod
    def _stronger_than(collapse: Signal, degrading: list[Signal]) -> list[Signal]:
        """A collapse seen on one eval is a warning; a large overfit or decay already confirmed on the same
        eval stays critical rather than falling back to that warning."""
        critical = [s for s in degrading if s.severity is Severity.CRITICAL]
        return critical if critical and collapse.severity is not Severity.CRITICAL else [collapse]

    def _best(self, series: MetricSeries, values: np.ndarray, steps: np.ndarray, d: Direction) -> tuple[float, int]:
        if d is Direction.LOWER and series.min_value is not None and series.min_step is not None:
            return series.min_value, series.min_step
        if d is Direction.HIGHER and series.max_value is not None and series.max_step is not None:
            return series.max_value, series.max_step
        return _best_of(values, steps, d)

    def _collapsed(self, values: np.ndarray, best: float, d: Direction) -> np.ndarray:
        if d is Direction.LOWER:
            return values >= self.collapse_loss_ratio * best
        return values <= (1 - self.collapse_drop_fraction) * best

    def _held_level(self, values: np.ndarray, steps: np.ndarray, d: Direction) -> tuple[float, int]:
        """The best level the eval held before the evals in question: its best median of
        ``collapse_level_evals`` consecutive evals."""
        level = rolling_median(values, self.collapse_level_evals)
        i = int(np.argmin(level) if d is Direction.LOWER else np.argmax(level))
        return float(level[i]), int(steps[i])

    def _on_floor(self, ctx: JudgeContext, name: str, values: np.ndarray, best: float, d: Direction) -> bool:
        """A higher-is-better eval bounded in [0, 1] (`unit_scaled`) whose best level is under
        ``collapse_floor_fraction`` while another quality eval of the run is above it (`_off_floor`): one head
        of the model that has not left its floor beside one that has, so it has nothing to collapse from."""
        on_floor = d is Direction.HIGHER and _under_floor(name, values, best, self.collapse_floor_fraction)
        return on_floor and any(
            self._off_floor(series) for series, dd in ctx.evals
            if series.name != name and dd is Direction.HIGHER and is_quality_eval(series.name)
        )  # fmt: skip

    def _off_floor(self, series: MetricSeries) -> bool:
        """The median of the eval's last ``collapse_level_evals`` evals is ≥ ``collapse_floor_fraction``."""
        _, values = finite_xy(series.steps, series.values)
        values = unit_scaled(series.name, values)
        level = float(np.median(values[-self.collapse_level_evals :])) if values.size else 0.0
        return level >= self.collapse_floor_fraction

    def _zero_is_broken(self, best: float, n: int | None) -> bool:
        """A zero no sampling reaches: the eval's values are no fractions of a small eval set (``n`` None,
        `eval_set_size` on the [0, 1] scale), or on the ``n`` samples they reveal, a model as good as ``best`` (on
        that scale) would score 0 by chance less often than ``collapse_zero_chance_fraction``."""
        return n is None or (1 - best) ** n < self.collapse_zero_chance_fraction

    def _beyond_sampling(self, values: np.ndarray, best: float, count: int, n: int | None) -> bool:
        """Whether the last ``count`` evals score fewer right than a model as good as ``best`` could by sampling
        alone, when the eval's values (on the [0, 1] scale, as ``best``) are fractions k/n of a small eval set of
        ``n`` (`eval_set_size`): Fisher's exact test of the best's k of n against the evals' pooled k of
        count·n, one-sided, under ``collapse_zero_chance_fraction``. On no such set (``n`` None): always."""
        if n is None:
            return True
        right, right_after = round(best * n), round(float(values[-count:].sum()) * n)
        return fisher_fewer(right, n, right_after, n * count) < self.collapse_zero_chance_fraction

    def _beyond_noise(self, values: np.ndarray, best: float, count: int) -> np.ndarray:
        """Which evals lie ≥ ``collapse_noise_z`` × the eval's own noise from its best: the robust σ of the
        eval-to-eval differences before the ``count`` evals in question (a collapse must not inflate it)."""
        before = values[: values.size - count]
        sigma = robust_sigma(before[-self.collapse_noise_evals :])
        return np.abs(values - best) >= self.collapse_noise_z * sigma

    def _collapse(self, ctx: JudgeContext, series: MetricSeries, d: Direction) -> Signal | None:
        if series.values.size and not np.isfinite(series.values[-1]):
            step = fmt_step(series.last_step)
            msg = f"{series.name} is {series.values[-1]} at step {step}: the evaluation broke."
            return signal(SignalKind.EVAL_DEGRADING, Severity.CRITICAL, msg, metric=series.name, step=series.last_step)
        steps, values = finite_xy(series.steps, series.values)
        if values.size < 2:
            return None
        best, best_step = self._best(series, values, steps, d)
        knocked = self._knocked_by_warmup(ctx, steps, best_step)
        if knocked and not warming_up_at(ctx, int(steps[-1])):
            keep = steps > (ctx.lr_events.warmup_end or 0)  # judged from the evals since the warmup
            steps, values = steps[keep], values[keep]
            if values.size < 2:
                return None
            (best, best_step), knocked = _best_of(values, steps, d), False
        if best <= 0:
            return None
        held = values.size - trailing_run(self._collapsed(values, best, d))
        if held >= self.collapse_level_evals:
            best, best_step = self._held_level(values[:held], steps[:held], d)
        if best <= 0 or self._on_floor(ctx, series.name, values, best, d):
            return None
        collapsed = self._collapsed(values, best, d)
        if d is Direction.LOWER:
            rule = f"≥ {self.collapse_loss_ratio:g}× its best {fmt(best)}"
        else:
            rule = f"≤ {fmt_pct(1 - self.collapse_drop_fraction)} of its best {fmt(best)}"
        count = trailing_run(collapsed & self._beyond_noise(values, best, trailing_run(collapsed)))
        at_zero = d is Direction.HIGHER and values[-1] <= self.collapse_zero_fraction * best
        if count == 0:
            return None
        if d is Direction.HIGHER:
            scale = percent_scale(series.name, values)  # a percent accuracy's samples are read on [0, 1]
            unit, unit_best = values / scale, best / scale
            n = eval_set_size(unit, self.collapse_zero_max_samples)
            broken = at_zero and self._zero_is_broken(unit_best, n)
            if not broken and not self._beyond_sampling(unit, unit_best, count, n):
                return None
        else:
            broken = False
        seen_before = self._collapsed_before(ctx, series.name, int(steps[-1]))
        confirmed = count >= self.collapse_sustain_evals or (count >= self.confirm_evals and seen_before)
        rule_text = f"{self.confirm_evals} evals over two checks, or {self.collapse_sustain_evals} in a row"
        how = f"confirmed ({rule_text})" if confirmed else f"critical at {rule_text}"
        if broken and not warming_up_at(ctx, int(steps[-1])):
            confirmed, how = (
                True,
                (f"at zero (≤ {self.collapse_zero_fraction:g}× its best): the model is broken, critical at once"),
            )
        msg = (
            f"{series.name} collapsed: {fmt(float(values[-1]))} at step {fmt_step(int(steps[-1]))} is {rule} "
            f"(step {fmt_step(best_step)}) for {count} eval(s); {how}."
        )
        severity = self._collapse_severity(ctx, confirmed, count)
        if knocked and severity is Severity.CRITICAL:
            severity = Severity.WARNING
            msg = msg[:-1] + "; but its best is its first eval and the LR still warms up: a warning."
        return signal(
            SignalKind.EVAL_DEGRADING,
            severity,
            msg,
            metric=series.name,
            step=int(steps[-1]),
            value=float(values[-1]),
            best=best,
            collapsed_evals=count,
            **{STARTED_AT_BEST: float(self._started_at_best(values, best, d))},
        )

    def _started_at_best(self, values: np.ndarray, best: float, d: Direction) -> bool:
        """The eval's first value is within ``quality_near_best_margin`` of its best: the run started from a
        trained model (a fine-tune), with nothing yet learned past its start."""
        return bool(worse_by(float(values[0]), best, d) <= self.quality_near_best_margin)

    @staticmethod
    def _knocked_by_warmup(ctx: JudgeContext, steps: np.ndarray, best_step: int) -> bool:
        """The eval's best is its first eval, inside the LR's warmup: a fine-tune's pretrained level, which the
        warmup's climbing LR knocks down on purpose (see ``collapse_zero_fraction``'s note in `EvalBase`)."""
        return best_step == int(steps[0]) and warming_up_at(ctx, best_step)

    def _collapse_severity(self, ctx: JudgeContext, confirmed: bool, count: int) -> Severity:
        """Critical when confirmed; a single collapsed eval (fewer than ``confirm_evals``) in a run still going is
        watched, as a train-loss episode seen once is: a reviewer could only answer WAIT, and the next check
        (with an eval since) confirms it, critical, or sees it recover (issue 9: healthy YOLOv5 mAPs dipping
        to a third of their best for one epoch and back at the next; an MLP's val loss 3× its best at one eval
        of 96). More collapsed evals in a row, or a run that has ended (no next check), are a warning."""
        if confirmed:
            return Severity.CRITICAL
        if count < self.confirm_evals and not ctx.history.info.status.has_ended:
            return Severity.WATCH
        return Severity.WARNING

    @staticmethod
    def _collapsed_before(ctx: JudgeContext, name: str, last_step: int) -> bool:
        """The previous check saw this eval collapsed, and evals came since (else it confirms nothing, unless it
        was already critical: the same evidence stays critical)."""
        prev = ctx.previous_signal(SignalKind.EVAL_DEGRADING, name)
        if prev is None or "collapsed_evals" not in prev.evidence or prev.step is None:
            return False
        return prev.step < last_step or (prev.step == last_step and prev.severity is Severity.CRITICAL)

    def _far_before(self, ctx: JudgeContext, name: str, last_step: int) -> bool:
        """The previous check already found this eval far below its baseline, late (a critical one with no
        eval since stays critical: the same evidence)."""
        prev = ctx.previous_signal(SignalKind.EVAL_BELOW_BASELINE, name)
        if prev is None or prev.step is None or prev.severity is Severity.INFO:
            return False
        if prev.step == last_step:
            return prev.severity is Severity.CRITICAL
        return prev.step < last_step and prev.evidence.get("gap", 0.0) >= self.far_margin

    def _is_late(self, ctx: JudgeContext, values: np.ndarray, d: Direction) -> tuple[bool, str]:
        if ctx.history.info.status.has_ended:
            return True, f"and the run has ended ({ctx.history.info.status.value})"
        progress = ctx.config.progress(ctx.last_step)
        if progress is not None:
            return progress >= self.late_fraction, f"at {fmt_pct(progress)} of the run"
        if values.size < self.late_min_evals:
            return False, f"after {values.size} evals, total steps unknown"
        head, tail = values[:-3], values[-3:]
        stalled = (tail.min() >= head.min()) if d is Direction.LOWER else (tail.max() <= head.max())
        return bool(stalled), f"after {values.size} evals{', no longer improving' if stalled else ''}"

    def _baseline(self, ctx: JudgeContext, series: MetricSeries, d: Direction) -> list[Signal]:
        baseline = ctx.baselines.get(series.name)
        steps, values = finite_xy(series.steps, series.values)
        if baseline is None or values.size == 0:
            return []
        gaps = worse_by(values[-self.confirm_evals :], baseline, d)
        gap = float(gaps[-1])
        ended = ctx.history.info.status.has_ended  # it will not get there any more: any shortfall counts
        level = float(np.median(values[-self.baseline_level_evals :]))  # one unlucky eval decides nothing
        short = gap > 0.0 if ended else float(worse_by(level, baseline, d)) > self.baseline_margin
        if not short:
            return []
        late, when = self._is_late(ctx, values, d)
        far = gaps.size >= self.confirm_evals and bool((gaps >= self.far_margin).all())
        if not late:
            severity, tail = Severity.INFO, "still on its way there"
        elif far and self._far_before(ctx, series.name, int(steps[-1])):
            severity, tail = Severity.CRITICAL, "late, and so at the previous check too: enough to stop"
        elif far:
            severity, tail = Severity.WARNING, "late: critical if the next check still sees it so far below"
        elif ctx.config.progress(ctx.last_step) is None and not ended:
            severity, tail = Severity.INFO, "near it with its total steps unknown: it may still get there"
        else:
            severity, tail = Severity.WARNING, "late, not conclusive yet"
        rule = f"far margin {fmt_pct(self.far_margin)}" if far else f"margin {fmt_pct(self.baseline_margin)}"
        median = "" if ended else f", median of its last {self.baseline_level_evals} evals {fmt(level)},"
        msg = (
            f"{series.name} {fmt(float(values[-1]))} at step {fmt_step(int(steps[-1]))}{median} is "
            f"{fmt_pct(gap)} worse than the baseline {fmt(baseline)} ({rule}) {when}: {tail}."
        )
        return [
            signal(
                SignalKind.EVAL_BELOW_BASELINE,
                severity,
                msg,
                metric=series.name,
                step=int(steps[-1]),
                gap=gap,
                baseline=baseline,
                value=float(values[-1]),
            )
        ]


def _best_of(values: np.ndarray, steps: np.ndarray, d: Direction) -> tuple[float, int]:
    """The best of ``values`` (finite) and its step."""
    i = int(np.argmin(values) if d is Direction.LOWER else np.argmax(values))
    return float(values[i]), int(steps[i])
