"""An eval getting worse than its own best: overfitting (an eval loss rising while the train loss
falls), a steady decay of a quality eval, and whether such a slide persists across checks."""

from __future__ import annotations

import numpy as np

from ..models import Direction, Severity, Signal, SignalKind
from ..roles import is_loss_like, tokenize
from ..state import MetricSeries
from .context import JudgeContext, finite_after, restated, signal
from .evalkinds import SinceBest, has_quality_eval, is_quality_eval, relative_noise, worse_by
from .evals_base import EvalBase
from .stats import (
    falling_pairs_share,
    finite_xy,
    fmt,
    fmt_pct,
    fmt_ratio,
    fmt_step,
    positive_log,
    robust_sigma,
    rolling_median,
    theil_sen,
)


def only_eval_losses(ctx: JudgeContext) -> bool:
    """Every eval of the run is a loss or a perplexity: no eval score of any kind (not even a retrieval recall@k,
    which `is_quality_eval` does not name) can say the model still improves. A text-to-motion retriever's
    composite val loss rose 8 % over its best at z 7-8 for half its 500 epochs while its recall@10 crept to its
    best (corpus_real log-tu-mukundshankar-dev-1, healthy)."""
    return all(is_loss_like(series.name) for series, _ in ctx.evals)


class EvalDegradingTests(EvalBase):
    """The degrading-eval tests of ``EvalDetector`` (its thresholds: ``EvalBase``)."""

    def _degrading(self, ctx: JudgeContext, series: MetricSeries, d: Direction) -> list[Signal]:
        """The eval's degrading findings; inside a final phase of other training data (`_final_phase_start`)
        a critical one stays critical only when the evals since the phase began show it too, else a warning."""
        found = self._degrading_since(ctx, series, d, None)
        if not any(s.severity is Severity.CRITICAL for s in found):
            return found
        shift = self._final_phase_start(ctx)
        if shift is None or any(s.severity is Severity.CRITICAL for s in self._degrading_since(ctx, series, d, shift)):
            return found
        note = (
            f"but the last {self.close_mosaic_steps} steps, from step {fmt_step(shift)}, train on other data (a "
            "train loss stepped there: Ultralytics' close_mosaic) and the evals since do not show it: a warning."
        )
        return [
            restated(s, note, Severity.WARNING)
            if s.severity is Severity.CRITICAL
            else s
            for s in found
        ]

    def _degrading_since(
        self, ctx: JudgeContext, series: MetricSeries, d: Direction, phase: int | None
    ) -> list[Signal]:
        steps, values = finite_xy(series.steps, series.values)
        restart = ctx.lr_events.restarts[-1] if ctx.lr_events.restarts else None
        if restart is not None:  # an SGDR restart worsens evals on purpose: judge only the evals since
            keep = steps > restart
            steps, values = steps[keep], values[keep]
        if phase is not None:
            keep = steps >= phase
            steps, values = steps[keep], values[keep]
        if values.size <= self.patience_evals:
            return []
        # best and latest level as medians of 3 evals, so one lucky or unlucky eval decides nothing
        level = rolling_median(values, 3)
        i = int(np.argmin(level) if d is Direction.LOWER else np.argmax(level))
        best, best_step = float(level[i]), int(steps[i])
        since_best = int(values.size - 1 - i)
        gap = float(worse_by(level[-1], best, d))
        recent = worse_by(values[-self.patience_evals :], best, d)
        margin = max(self.degrade_margin, self.degrade_noise_z * relative_noise(values, best))
        if since_best < self.patience_evals or float(recent.min()) <= 0:
            return []
        train = self._train_change(ctx, best_step)
        with_train = train is not None and train >= self.degrade_margin
        still_down = not with_train and self._still_down(ctx, series.name, gap, int(steps[-1]))
        held = ""  # another quality eval at its best, sparing a steady slide beyond the noise margin
        since = SinceBest(series, d, steps[i:], values[i:], gap, best, best_step)
        if gap < margin and not still_down:
            decay = self._steady_decay(ctx, since, steps)
            if decay and decay[0].severity is not Severity.WATCH:
                return decay
            return self._mild_overfit(ctx, since) or decay  # a watched slide the train loss's fall makes a mild overfit
        if train is not None and train < 0:
            why = f" while the train loss fell {fmt_pct(-train)} (overfitting)"
        elif train is not None and with_train:
            why = f"; the train loss rose {fmt_pct(train)} since then too, so the train-loss trend judges it"
        else:
            why = ""
        msg = (
            f"{series.name} at step {fmt_step(int(steps[-1]))}: median of the last 3 evals "
            f"{fmt(float(level[-1]))} is {fmt_pct(gap)} worse than its best {fmt(best)} at step "
            f"{fmt_step(best_step)}, "
            f"{since_best} evals ago (thresholds "
            f"{fmt_pct(margin)}, {self.patience_evals} evals){why}."
        )
        severity = Severity.WATCH if with_train else Severity.WARNING
        falling = (
            not with_train
            and self._falling_since(steps[i:], values[i:])
            and self._long_steady(steps, best_step, falling_pairs_share(values[i:]))
        )
        if not with_train and falling and self._decaying(ctx, series.name, d, gap, int(steps[-1])):
            severity = Severity.CRITICAL
            msg = msg[:-1] + (
                f"; still decaying since the previous check, {fmt_pct(gap)} below its best (critical from "
                f"{fmt_pct(self.decay_stop_margin)} for a higher-is-better eval)."
            )
        elif (
            not with_train
            and falling
            and self._steady_beyond_noise(ctx, series.name, d, since_best, steps)
            and not (held := self._other_quality_at_best(ctx, series.name))
        ):
            severity = Severity.CRITICAL
            msg = msg[:-1] + (
                f"; falling steadily over the {since_best} evals since (a significant trend, "
                f"≥ {fmt_pct(self.decay_falling_share)} of its pairs falling) and degrading at the previous check "
                "too: critical, as a steady decay within its noise margin is."
            )
        elif self._eval_only_loss_rising(ctx, since, steps):
            severity = Severity.CRITICAL
            msg = msg[:-1] + (
                "; the run logs no train loss and no eval score, so this loss is its only measure, and it has risen "
                f"steadily since its best (a significant trend, ≥ {fmt_pct(self.decay_falling_share)} of its pairs "
                f"rising) over a real share of the run, ≥ {fmt_pct(self.sole_overfit_stop_margin)} above it and "
                "further than at the previous check: critical, as a higher-is-better eval's steady decay is."
            )
        elif self._large_overfit(ctx, series.name, d, gap, since_best, train, int(steps[-1])):
            severity = Severity.CRITICAL
            msg = msg[:-1] + (
                f"; a large overfit: ≥ {fmt_ratio(1 + self.overfit_stop_margin)} its best over ≥ "
                f"{self.decay_min_evals} evals since, degrading at the previous check too, so critical."
            )
        elif sole := self._sole_overfit(ctx, since, steps, train):
            severity = Severity.CRITICAL
            msg = msg[:-1] + (
                "; the run logs no quality eval, so this is its only measure of generalisation, and it has risen "
                f"{sole}: a long overfit, critical."
            )
        elif seen := self._sustained_overfit(ctx, series.name, gap, train, int(steps[-1])):
            severity = Severity.CRITICAL
            msg = msg[:-1] + (
                f"; overfitting at each of the last {seen} checks, with evals between them, and never nearer its "
                "best than at the check before: a sustained overfit, critical."
            )
        elif still_down:
            severity = Severity.CRITICAL
            msg = msg[:-1] + (
                f"; the previous check found it critical and it is still ≥ {fmt_pct(self.degrade_margin)} below "
                "its best with none of its last evals back at it, so still critical."
            )
        if held and severity is Severity.WARNING:
            msg = msg[:-1] + (
                f"; falling steadily over the {since_best} evals since and at the previous check too, but another "
                f"quality eval is at or near its best ({held}), so a warning while it is."
            )
        return [
            signal(
                SignalKind.EVAL_DEGRADING,
                severity,
                msg,
                metric=series.name,
                step=int(steps[-1]),
                gap=gap,
                best=best,
                evals_since_best=since_best,
                train_change=train,
            )
        ]

    def _quality_at_best(self, ctx: JudgeContext, *, strict: bool = False) -> str:
        """The run's quality evals (`is_quality_eval`) when every one of them is at or near its best
        (`_near_best`, ``strict`` as there); else ""."""
        parts = [self._near_best(s, d, strict=strict) for s, d in ctx.evals if is_quality_eval(s.name)]
        return ", ".join(parts) if all(parts) else ""

    def _other_quality_at_best(self, ctx: JudgeContext, name: str) -> str:
        """Another quality eval of the run than ``name`` at or near its best (`_near_best`), or ""."""
        others = (self._near_best(s, d) for s, d in ctx.evals if s.name != name and is_quality_eval(s.name))
        return next((part for part in others if part), "")

    def _near_best(self, series: MetricSeries, d: Direction, *, strict: bool = False) -> str:
        """``series`` at or near its best, as "name level, best best": the median of its last 3 evals within
        ``quality_near_best_margin`` of its best eval, or (not ``strict``) within ``degrade_noise_z`` × its
        noise (over ≥ ``patience_evals`` + 1 evals); else ""."""
        _, values = finite_xy(series.steps, series.values)
        if values.size <= self.patience_evals:
            return ""
        level = float(np.median(values[-3:]))
        best = float(values.min() if d is Direction.LOWER else values.max())
        noise = 0.0 if strict else self.degrade_noise_z * relative_noise(values, best)
        margin = max(self.quality_near_best_margin, noise)
        return "" if float(worse_by(level, best, d)) >= margin else f"{series.name} {fmt(level)}, best {fmt(best)}"

    def _final_phase_start(self, ctx: JudgeContext) -> int | None:
        """The first step of a final phase of ``close_mosaic_steps`` before a known total (Ultralytics turns
        mosaic augmentation off there), when one of the run's train losses shows it: a step of ≥
        ``phase_shift_change`` (ln) at its first point, ≥ ``phase_shift_z`` × the robust σ of the loss's last
        ≤ 20 point-to-point changes before it; else None."""
        total, last = ctx.config.total_steps, ctx.last_step
        if self.close_mosaic_steps is None or not total or last is None:
            return None
        start = total - self.close_mosaic_steps + 1
        if start <= 1 or last < start:
            return None
        return start if any(self._shifted_at(series, start) for series in ctx.train_losses) else None

    def _shifted_at(self, series: MetricSeries, start: int) -> bool:
        """A positive loss steps at ``start`` from its point just before (see `_final_phase_start`)."""
        steps, values = finite_xy(series.steps, series.values)
        i = int(np.searchsorted(steps, start))
        if i < 7 or i >= steps.size or steps[i] != start or steps[i - 1] != start - 1 or values[: i + 1].min() <= 0:
            return False
        changes = np.diff(np.log(values[: i + 1]))
        jump, sigma = abs(float(changes[-1])), robust_sigma(changes[:-1][-20:])
        return jump >= self.phase_shift_change and jump >= self.phase_shift_z * sigma

    def _mild_overfit(self, ctx: JudgeContext, since: SinceBest) -> list[Signal]:
        """An eval worsening too little for the degrade margin but steadily (a significant trend since its
        best over ≥ ``mild_overfit_evals`` evals, ≥ ``mild_overfit_margin`` below it) while the train loss
        fell: mild overfitting, a warning."""
        series, d, steps, values, gap, best, best_step = since
        if gap < self.mild_overfit_margin or values.size < self.mild_overfit_evals:
            return []
        trend = theil_sen(steps, values)
        worsening = trend is not None and (trend.rising if d is Direction.LOWER else trend.falling)
        train = self._train_change(ctx, best_step)
        if not worsening or train is None or train >= 0:
            return []
        since_best, last = values.size - 1, int(steps[-1])
        large = self._large_overfit(ctx, series.name, d, gap, since_best, train, last)
        kind = "a large overfit" if large else "mildly overfitting"
        msg = (
            f"{series.name} at step {fmt_step(last)} is {kind}: {fmt_pct(gap)} worse than "
            f"its best {fmt(best)} at step {fmt_step(best_step)} and worsening over the {since_best} evals "
            f"since (significant trend; thresholds {fmt_pct(self.mild_overfit_margin)}, {self.mild_overfit_evals} "
            f"evals) while the train loss fell {fmt_pct(-train)}"
        )
        if large:
            msg += (
                f"; ≥ {fmt_ratio(1 + self.overfit_stop_margin)} its best over ≥ {self.decay_min_evals} evals "
                "since, seen worsening at the previous check too: critical, though within the eval's noise margin."
            )
        severity = Severity.CRITICAL if large else Severity.WARNING
        return [
            signal(SignalKind.EVAL_DEGRADING, severity, msg + ("" if large else "."), metric=series.name,
                   step=last, gap=gap, best=best, evals_since_best=since_best, train_change=train,
                   **({} if large else {"mild_overfit": 1.0}))
        ]  # fmt: skip

    def _long_overfit(self, ctx: JudgeContext, series: MetricSeries, d: Direction) -> float | None:
        """The Mann–Kendall z of an eval loss rising since its best (median of 3) when that rise is a long,
        steady overfit: ≥ ``mild_overfit_evals`` evals since the best spanning ≥ ``overfit_long_fraction`` of
        the steps the eval covers, z ≥ ``overfit_long_z``, the train loss lower than at the best; else None."""
        if d is not Direction.LOWER or "loss" not in tokenize(series.name):
            return None
        steps, values = finite_xy(series.steps, series.values)
        if values.size <= self.mild_overfit_evals:
            return None
        i = int(np.argmin(rolling_median(values, 3)))
        covered = float(steps[-1] - steps[0])
        if values.size - 1 - i < self.mild_overfit_evals or covered <= 0:
            return None
        if float(steps[-1] - steps[i]) < self.overfit_long_fraction * covered:
            return None
        trend = theil_sen(steps[i:], values[i:])
        if trend is None or trend.z < self.overfit_long_z:
            return None
        train = self._train_change(ctx, int(steps[i]))
        return trend.z if train is not None and train < 0 else None

    def _long_steady(
        self, steps: np.ndarray, best_step: int, falling_share: float, fraction: float | None = None
    ) -> bool:
        """A decay confirmed over a real share of the run: the evals since the best fall steadily
        (``falling_share``, their `falling_pairs_share`, ≥ ``decay_falling_share``) and span ≥ ``fraction``
        (``decay_min_run_fraction`` unless given) of the steps the eval covers (``steps``, all of them)."""
        fraction = self.decay_min_run_fraction if fraction is None else fraction
        covered = float(steps[-1] - steps[0])
        long = covered > 0 and float(steps[-1]) - best_step >= fraction * covered
        return long and falling_share >= self.decay_falling_share

    def _steady_decay(self, ctx: JudgeContext, since: SinceBest, all_steps: np.ndarray) -> list[Signal]:
        """A higher-is-better eval sliding from its best within its noise margin, the train loss not rising:
        ``watch`` while it only leans down (≥ ``mild_overfit_margin`` below its best, a negative Theil–Sen
        slope over the evals since); decaying steadily once the slope is significant over ≥
        ``decay_min_evals`` evals and the gap ≥ ``degrade_margin`` — a warning; critical when the previous check
        (with evals since) saw it leaning or decaying already and the decay is steady over a real share of the
        run (`_long_steady`)."""
        series, d, steps, values, gap, best, best_step = since
        if d is not Direction.HIGHER or gap < self.mild_overfit_margin:
            return []
        train = self._train_change(ctx, best_step)
        trend = theil_sen(steps, values)
        if (train is not None and train >= self.degrade_margin) or trend is None or trend.slope >= 0:
            return []
        steady = trend.falling and gap >= self.degrade_margin and values.size - 1 >= self.decay_min_evals
        share = falling_pairs_share(values)
        head = (
            f"{series.name} at step {fmt_step(int(steps[-1]))} is {fmt_pct(gap)} below its best {fmt(best)} at "
            f"step {fmt_step(best_step)} (median of 3) and falling over the {values.size - 1} evals since "
            f"(Mann–Kendall z {trend.z:.1f}, {fmt_pct(share)} of its pairs falling)"
        )
        if not steady:
            severity, tail = Severity.WATCH, f"{'significant' if trend.falling else 'not significant'} yet: watched"
        elif self._long_steady(all_steps, best_step, share) and self._leaning_before(
            ctx, series.name, int(steps[-1])
        ):
            severity, tail = Severity.CRITICAL, "decaying steadily, and the previous check saw it already: critical"
        else:
            severity, tail = Severity.WARNING, (
                f"decaying: critical if the next check sees it steady (≥ {fmt_pct(self.decay_falling_share)} of "
                f"its pairs of evals falling) over ≥ {fmt_pct(self.decay_min_run_fraction)} of the run"
            )
        msg = (
            f"{head}; {tail} (thresholds {fmt_pct(self.degrade_margin)} below the best, a significant trend over "
            f"≥ {self.decay_min_evals} evals)."
        )
        return [
            signal(SignalKind.EVAL_DEGRADING, severity, msg, metric=series.name, step=int(steps[-1]), gap=gap,
                   best=best, evals_since_best=values.size - 1, train_change=train, mk_z=trend.z,
                   falling_share=share)
        ]  # fmt: skip

    def _steady_beyond_noise(
        self, ctx: JudgeContext, name: str, d: Direction, since_best: int, steps: np.ndarray
    ) -> bool:
        """A higher-is-better eval beyond its noise margin whose evals since the best fall steadily over a real
        share of the run (the caller's `_long_steady`), over ≥ ``decay_min_evals`` of them, degrading or leaning at
        the previous check (with evals since) too: the steady decay of `_steady_decay`, which stops a slide
        within the eval's noise margin, must not spare one that left it (issue 9: a YOLOv3 mAP@0.5 falling at
        every eval, 0.647 → 0.575, 7.5 % below its best, was a warning to the end: over the noise margin,
        under ``decay_stop_margin``). The caller spares it while another quality eval of the run is at or near
        its best (`_other_quality_at_best`, ``quality_near_best_margin``): a YOLO fine-tune's mAP50 eased 7.3 % from its
        first evals (noise margin 6.9 %) while its stricter mAP50-95 set new bests and every val loss fell, and
        was stopped at 15 checks (log-nu-deven2011-1, healthy); the slide stays a warning, the caller says
        which eval holds its best."""
        if d is not Direction.HIGHER or since_best < self.decay_min_evals:
            return False
        prev = ctx.previous_signal(SignalKind.EVAL_DEGRADING, name)
        return (
            prev is not None
            and "collapsed_evals" not in prev.evidence
            and (prev.severity is not Severity.WATCH or "mk_z" in prev.evidence)
            and prev.step is not None
            and prev.step < int(steps[-1])
        )

    @staticmethod
    def _leaning_before(ctx: JudgeContext, name: str, last_step: int) -> bool:
        """The previous check, with evals since, found this eval below its best and falling."""
        prev = ctx.previous_signal(SignalKind.EVAL_DEGRADING, name)
        return (
            prev is not None
            and "collapsed_evals" not in prev.evidence
            and "mk_z" in prev.evidence
            and prev.step is not None
            and prev.step < last_step
        )

    def _still_down(self, ctx: JudgeContext, name: str, gap: float, last_step: int) -> bool:
        """The previous check found this eval degrading critically (a large overfit or a steady decay, not a
        collapse, which has its own confirmation), and it is still ≥ ``degrade_margin`` from its best."""
        prev = ctx.previous_signal(SignalKind.EVAL_DEGRADING, name)
        return (
            gap >= self.degrade_margin
            and prev is not None
            and prev.severity is Severity.CRITICAL
            and "collapsed_evals" not in prev.evidence
            and prev.step is not None
            and prev.step <= last_step
        )

    def _sustained_overfit(
        self, ctx: JudgeContext, name: str, gap: float, train: float | None, last_step: int
    ) -> int:
        """The number of checks, this one included, that found ``name`` overfitting (its degrading finding with the
        train loss falling, not a mild overfit, a steady decay or a collapse) when that reaches
        ``overfit_confirm_checks`` in a row, each with evals since the one before and its gap never narrower than
        at the check before; else 0. Never while every quality eval of the run is at or near its best
        (`_quality_at_best`: a loss that worsens while the model's quality holds is over-confidence)."""
        if train is None or train >= 0:
            return 0
        seen, later_gap = 1, gap
        checks = self.overfit_confirm_checks - 1
        for prev, _ in ctx.earlier_findings(SignalKind.EVAL_DEGRADING, name, last_step, checks):
            if not self._overfit_finding(prev) or prev.evidence["gap"] > later_gap:
                break
            seen, later_gap = seen + 1, prev.evidence["gap"]
        if seen < self.overfit_confirm_checks or (has_quality_eval(ctx) and self._quality_at_best(ctx)):
            return 0
        return seen

    @staticmethod
    def _overfit_finding(s: Signal) -> bool:
        """``s`` is a degrading finding of `_degrading_since`'s own (not a mild overfit, a steady decay or a
        collapse) made while the train loss fell, at warning or above."""
        other = ("mild_overfit", "mk_z", "collapsed_evals")
        if s.severity not in (Severity.WARNING, Severity.CRITICAL) or any(key in s.evidence for key in other):
            return False
        return "gap" in s.evidence and s.evidence.get("train_change", 0.0) < 0

    def _large_overfit(
        self, ctx: JudgeContext, name: str, d: Direction, gap: float, since_best: int, train: float | None, last: int
    ) -> bool:
        """A lower-is-better eval ≥ ``overfit_stop_margin`` above its best, ≥ ``decay_min_evals`` evals after it,
        while the train loss fell, and degrading at the previous check (with evals since) too."""
        if d is not Direction.LOWER or train is None or train >= 0:
            return False
        if gap < self.overfit_stop_margin or since_best < self.decay_min_evals:
            return False
        return self._degrading_before(ctx, name, last) and not self._eval_loss_holds(ctx, name)

    def _eval_loss_holds(self, ctx: JudgeContext, name: str) -> bool:
        """``name`` is an error metric, not a loss (an MAE, an MSE), and the run's eval loss — its objective on
        the same held-out set — reached its best (medians of 3) after the metric's own best: the model has
        improved on its objective since, so the metric's rise from a lucky best is no overfit to stop on. A
        Keras streamflow forecaster's val MAE and MSE dipped to 0.36 and 0.15 at epoch 20 and swung back to
        0.56 and 0.39 while its val loss, which carries an extra term, fell to the end with new bests
        (log-tc-andreyprado-1, round 34, healthy): stopped as a large overfit at its last 15 checks."""
        metric = next((s for s, _ in ctx.evals if s.name == name), None)
        if metric is None or "loss" in tokenize(name):
            return False
        steps, values = finite_xy(metric.steps, metric.values)
        if values.size == 0:
            return False
        best_step = int(steps[int(np.argmin(rolling_median(values, 3)))])
        for series, d in ctx.evals:
            if series.name == name or d is not Direction.LOWER or "loss" not in tokenize(series.name):
                continue
            loss_steps, losses = finite_xy(series.steps, series.values)
            if losses.size and int(loss_steps[int(np.argmin(rolling_median(losses, 3)))]) > best_step:
                return True
        return False

    def _sole_overfit(
        self, ctx: JudgeContext, since: SinceBest, all_steps: np.ndarray, train: float | None
    ) -> str:
        """Why an eval loss of a run without a quality eval is in a long overfit worth a stop, as a phrase, or
        "": ≥ ``decay_min_evals`` evals after its best, the train loss lower than at it, and either ≥
        ``sole_overfit_stop_margin`` above its best, rising steadily (``decay_falling_share`` of the pairs of
        evals since) over ≥ ``overfit_long_fraction`` of the steps the eval covers and degrading at the previous
        check too, or — when every eval of the run is a loss (`only_eval_losses`) — a long, steady overfit
        (`_long_overfit`, Mann–Kendall z ≥ ``overfit_long_z``) that the previous check, with evals since, found
        too, and that still rises (`_still_rising`: a rise that levelled off is left to the margin)."""
        series, d, _, values, gap, _, best_step = since
        if d is not Direction.LOWER or has_quality_eval(ctx) or train is None or train >= 0:
            return ""
        if values.size - 1 < self.decay_min_evals:
            return ""
        last = int(all_steps[-1])
        z = self._long_overfit(ctx, series, d) if only_eval_losses(ctx) else None
        if z is not None and self._long_overfit_before(ctx, series.name, last) and self._still_rising(since):
            return (
                f"steadily since its best over half the run and more (Mann–Kendall z {z:.1f} ≥ "
                f"{fmt(self.overfit_long_z)}), as at the previous check, and still rises over the later half of "
                "the evals since (a significant trend)"
            )
        if gap < self.sole_overfit_stop_margin:
            return ""
        long = self._long_steady(all_steps, best_step, falling_pairs_share(-values), self.overfit_long_fraction)
        if not (long and self._degrading_before(ctx, series.name, last)):
            return ""
        return (
            f"steadily since its best over ≥ {fmt_pct(self.overfit_long_fraction)} of the run, "
            f"≥ {fmt_pct(self.sole_overfit_stop_margin)} above it and degrading at the previous check too"
        )

    @staticmethod
    def _long_overfit_before(ctx: JudgeContext, name: str, last: int) -> bool:
        """The previous check, with evals since, found this eval loss in a long, steady overfit."""
        prev = ctx.previous_signal(SignalKind.EVAL_DEGRADING, name)
        return prev is not None and "long_overfit" in prev.evidence and prev.step is not None and prev.step < last

    @staticmethod
    def _still_rising(since: SinceBest) -> bool:
        """The later half of the evals since the best still rise (a significant Theil–Sen trend): a long overfit
        still under way, not one that rose and then levelled off, which a plateau's noise cannot tell apart
        from its best-to-now rise."""
        steps, values = since.steps, since.values
        half = values.size // 2
        trend = theil_sen(steps[half:], values[half:])
        return trend is not None and trend.rising

    @staticmethod
    def _degrading_before(ctx: JudgeContext, name: str, last: int) -> bool:
        """The previous check, with evals since, found this eval degrading (a warning or critical, no collapse)."""
        prev = ctx.previous_signal(SignalKind.EVAL_DEGRADING, name)
        return (
            prev is not None
            and "collapsed_evals" not in prev.evidence
            and prev.severity is not Severity.WATCH
            and prev.step is not None
            and prev.step < last
        )

    def _eval_only_loss_rising(self, ctx: JudgeContext, since: SinceBest, all_steps: np.ndarray) -> bool:
        """An eval loss of a run with no train loss whose every eval is a loss (`only_eval_losses`), judged in its
        own direction as a higher-is-better eval's steady decay is (`_decaying`): rising since its best (a
        significant Theil–Sen trend, `_long_steady` over a real share of the run), ≥ ``sole_overfit_stop_margin``
        above it (the margin of a run's only loss-type eval) and further above it than at the previous check,
        with evals since (`_further_than_before`). Nothing else of such a run can say the model still improves
        (corpus_real log-lz-cagatayogretmen-1, bad: an age regressor's val MSE 167 at epoch 41, then 190, 212,
        219, 231 … 259 by block, unsure from its ninth check to its end)."""
        if since.direction is not Direction.LOWER or ctx.train_loss is not None or not only_eval_losses(ctx):
            return False
        if since.gap < self.sole_overfit_stop_margin or not self._rising_since(since.steps, since.values):
            return False
        if not self._long_steady(all_steps, since.best_step, falling_pairs_share(-since.values)):
            return False
        return self._further_than_before(ctx, since.series.name, since.gap, int(all_steps[-1]))

    @staticmethod
    def _rising_since(steps: np.ndarray, values: np.ndarray) -> bool:
        """The evals since the best rise: a significant Theil–Sen trend."""
        trend = theil_sen(steps, values)
        return trend is not None and trend.rising

    @staticmethod
    def _falling_since(steps: np.ndarray, values: np.ndarray) -> bool:
        """The evals since the best fall: a significant Theil–Sen trend (a steady one is `_long_steady`'s)."""
        trend = theil_sen(steps, values)
        return trend is not None and trend.falling

    def _decaying(self, ctx: JudgeContext, name: str, d: Direction, gap: float, last_step: int) -> bool:
        """A higher-is-better eval ≥ ``decay_stop_margin`` below its best that is further below it than at
        the previous check (with evals since): a steady decay, not an eval's noise."""
        if d is not Direction.HIGHER or gap < self.decay_stop_margin:
            return False
        return self._further_than_before(ctx, name, gap, last_step)

    @staticmethod
    def _further_than_before(ctx: JudgeContext, name: str, gap: float, last_step: int) -> bool:
        """The previous check (with evals since) found this eval degrading, not collapsed, and less far from its
        best than ``gap`` now."""
        prev = ctx.previous_signal(SignalKind.EVAL_DEGRADING, name)
        if prev is None or "collapsed_evals" in prev.evidence or prev.step is None or prev.step >= last_step:
            return False
        return gap > prev.evidence.get("gap", np.inf)

    @staticmethod
    def _train_change(ctx: JudgeContext, since_step: int) -> float | None:
        """Relative change of the train loss (median of 5 points) from ``since_step`` to now; the level at
        ``since_step`` is that of the points up to it, which the eval there had seen."""
        loss = ctx.train_loss
        if loss is None:
            return None
        steps, values = finite_after(loss, None)
        if values.size < 10:
            return None
        y = positive_log(values)
        i = int(np.searchsorted(steps, since_step, side="right"))
        if i >= values.size - 5:
            return None
        before = float(np.median(y[max(0, i - 5) : max(i, 1)]))
        return float(np.expm1(float(np.median(y[-5:])) - before))
