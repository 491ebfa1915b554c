"""An eval not learning by its progress: stuck near its first value, far below its baseline, hopeless (an
accuracy near 0, a WER near 1 or above it), unless another quality eval of the run shows the model learns."""

from __future__ import annotations

import numpy as np

from ..models import Direction, Severity, Signal, SignalKind
from ..roles import tokenize
from ..state import MetricSeries
from .chance import names_accuracy
from .context import JudgeContext, signal
from .evalkinds import is_quality_eval, names_average_precision, percent_scale, unit_scaled
from .evaltrend_base import EDIT_RATE_TOKENS, EMPTY_OUTPUT_RATE, EvalTrendBase, hopeless_progress, progress
from .stats import finite_xy, fmt, fmt_pct, fmt_ratio, fmt_step, is_frozen


class EvalStuckTests(EvalTrendBase):
    """Evals judged by how far they got: stuck (`_stuck`), outvoted by a quality eval that learns; thresholds in
    ``EvalTrendBase``."""

    def _beyond_empty(self, series: MetricSeries, values: np.ndarray, d: Direction) -> bool:
        """A word or character error rate above `EMPTY_OUTPUT_RATE` at every eval, for at least
        ``stuck_baseline_min_evals`` evals: worse than an empty output, judged stuck from its 3rd eval."""
        return (
            d is Direction.LOWER
            and bool(EDIT_RATE_TOKENS.intersection(tokenize(series.name)))
            and values.size >= self.stuck_baseline_min_evals
            and float(values.min()) > EMPTY_OUTPUT_RATE
        )

    def _judged_as_hopeless(self, ctx: JudgeContext, series: MetricSeries, values: np.ndarray, d: Direction) -> bool:
        """An eval of a run with a train loss, without a baseline, judged stuck because it is hopeless (not
        the primary eval of an eval-only run, whose first evals are its steepest progress), over ≥ 3 evals."""
        return (
            ctx.train_loss is not None
            and series.name not in ctx.baselines
            and values.size >= 3
            and self._hopeless(series.name, values, d)
        )

    def _frozen_hopeless(self, name: str, values: np.ndarray, d: Direction) -> bool:
        """Without a baseline: hopeless and identical to the last digit at every eval from the first, for
        ``stuck_baseline_min_evals`` evals (a classifier predicting one class, eval after eval)."""
        return values.size >= self.stuck_baseline_min_evals and is_frozen(values) and self._hopeless(name, values, d)

    def _accuracy_zero_from_first(self, series: MetricSeries, values: np.ndarray, d: Direction) -> bool:
        """Without a baseline: an accuracy (`chance.names_accuracy`, not an mAP, whose slow starts sit at 0)
        exactly 0 at every eval from the first, for ``stuck_baseline_min_evals`` evals: below chance (1/N for N
        classes) at every eval, so no prediction on the held-out set is ever right; judged stuck from its 3rd
        eval, as a frozen hopeless eval is (`_frozen_hopeless`: a 0 carries no digits to be frozen to)."""
        return values.size >= self.stuck_baseline_min_evals and self._accuracy_all_zero(series, values, d)

    def _accuracy_all_zero(self, series: MetricSeries, values: np.ndarray, d: Direction) -> bool:
        """An accuracy (`chance.names_accuracy`) exactly 0 at every one of its ≥ ``zero_accuracy_flag_evals``
        evals: flagged from its first (a warning), judged stuck from its 3rd (`_accuracy_zero_from_first`)."""
        return (
            d is Direction.HIGHER
            and names_accuracy(series.name)
            and values.size >= self.zero_accuracy_flag_evals
            and not bool(np.any(values))
        )

    def _finds_nothing(self, ctx: JudgeContext, series: MetricSeries, values: np.ndarray, d: Direction) -> bool:
        """An average precision (`names_average_precision`) exactly 0 at every one of its ≥ ``zero_ap_flag_evals``
        evals, as is every other average precision of the run: the detector finds nothing yet. Flagged (a
        warning) before it is judged stuck at ``stuck_min_evals``, never stopped sooner (a detector's slow start
        sits at 0 for up to 27 evals). Not while another head's average precision has left 0: a pose or mask head
        starts later than the boxes it sits on."""
        if d is not Direction.HIGHER or not names_average_precision(series.name):
            return False
        if values.size < self.zero_ap_flag_evals or bool(np.any(values)):
            return False
        others = (s for s, _ in ctx.evals if s.name != series.name and names_average_precision(s.name))
        return not any(bool(np.any(finite_xy(s.steps, s.values)[1])) for s in others)

    def _moving_early(
        self, ctx: JudgeContext, series: MetricSeries, values: np.ndarray, d: Direction, last: int
    ) -> bool:
        """An eval judged without a baseline that moves (not one value repeated at every eval: a frozen or an
        all-zero eval is the model's output not changing) and is not worse than an empty output, before
        ``stuck_min_run_fraction`` of a known total: a slow start the stop waits on. Not once the run has ended
        (its status says so): it will never reach that share, and its record is judged as it stands (a run
        ended at step 62 of a long total was unsure at every check after its stop, not stopped)."""
        done = ctx.config.progress(last)
        if done is None or done >= self.stuck_min_run_fraction or ctx.history.info.status.has_ended:
            return False
        return bool(np.ptp(values) > 0) and not self._beyond_empty(series, values, d)

    def _far_below(self, values: np.ndarray, d: Direction, baseline: float) -> bool:
        """The best eval is ≥ ``stuck_far_fraction`` worse than the baseline (relative to it)."""
        best = float(values.max() if d is Direction.HIGHER else values.min())
        scale = abs(baseline) if baseline != 0 else 1.0
        worse = (baseline - best if d is Direction.HIGHER else best - baseline) / scale
        return worse >= self.stuck_far_fraction

    def _leaving_floor(self, values: np.ndarray, d: Direction) -> float | None:
        """A higher-is-better eval's level (median of its last 3 evals) over its first level (median of its first
        3) when that is ≥ ``stuck_growth_ratio``: it has multiplied since its start; else None."""
        if d is not Direction.HIGHER or values.size < 6:
            return None
        first, level = float(np.median(values[:3])), float(np.median(values[-3:]))
        if first <= 0 or level < self.stuck_growth_ratio * first:
            return None
        return level / first

    def _detector_finds_objects(self, name: str, values: np.ndarray) -> float | None:
        """An average precision (`names_average_precision`) whose best is ≥ ``stuck_ap_floor_fraction``, its values
        not one number repeated at every eval: its best; else None. A detector without skill scores 0, so one
        that got there finds objects, however little of the scale that is."""
        values = unit_scaled(name, values)
        if not names_average_precision(name) or is_frozen(values):
            return None
        best = float(values.max())
        return best if best >= self.stuck_ap_floor_fraction else None

    def _learning_quality_eval(self, ctx: JudgeContext, name: str) -> str | None:
        """Another quality eval of the run (`is_quality_eval`) that has gained ≥ ``stuck_progress_fraction`` of
        its headroom by medians of 3 evals (`hopeless_progress`), or rises significantly over all its evals
        (`_improving`: learning, however slowly), or sits near the top of its scale (the median
        of its last 3 evals ≥ 1 − ``hopeless_fraction``: a fine-tune's box mAP50 at 0.995 from its first eval
        has no headroom to gain; not one that has never moved: an accuracy exactly 1.0 at every eval is a degenerate
        test set, no sign of learning), said as a phrase; else None."""
        for series, d in ctx.evals:
            if series.name == name or not is_quality_eval(series.name):
                continue
            steps, values = finite_xy(series.steps, series.values)
            values = unit_scaled(series.name, values)
            if values.size < 3 or values.min() < 0 or values.max() > 1:
                continue
            gained = hopeless_progress(values, d)
            if gained >= self.stuck_progress_fraction:
                return f"{series.name} has gained {fmt_pct(gained)} of its headroom by medians of 3 evals"
            if self._improving(steps, values, d):
                return f"{series.name} rises significantly over its {values.size} evals"
            level = float(np.median(values[-3:]))
            if d is Direction.HIGHER and level >= 1 - self.hopeless_fraction and np.ptp(values) > 0:
                return f"{series.name} is near the top of its scale ({fmt(level)}, median of its last 3 evals)"
        return None

    def _overfit_witness(self, ctx: JudgeContext, name: str) -> str | None:
        """An eval loss of the run (lower is better, positive) whose median of its last 3 evals is
        ≥ ``overfit_witness_margin`` worse than its best eval, ≥ 3 evals before its last, while the train loss
        (median of its last 5 points) fell ≥ ``memorised_train_fall_fraction`` since that best: a memorised
        training set, said as a phrase; else None. Beside a hopeless eval that gained under
        ``stuck_progress_fraction`` it is the same failure read twice: the held-out side never learned and is
        losing what little it had."""
        if ctx.train_loss is None:
            return None
        loss_steps, loss = finite_xy(ctx.train_loss.steps, ctx.train_loss.values)
        for series, d in ctx.evals:
            steps, values = finite_xy(series.steps, series.values)
            if series.name == name or d is not Direction.LOWER or values.size < 6 or values.min() <= 0:
                continue
            at = int(np.argmin(values))
            level, best = float(np.median(values[-3:])), float(values[at])
            if at > values.size - 4 or level < best * (1 + self.overfit_witness_margin):
                continue
            before = loss[loss_steps <= steps[at]][-5:]
            then = float(np.median(before)) if before.size else 0.0
            now = float(np.median(loss[-5:]))
            if then <= 0 or now > then * (1 - self.memorised_train_fall_fraction):
                continue
            return (
                f"{series.name} is {fmt_pct(level / best - 1)} worse than its best {fmt(best)} at step "
                f"{fmt_step(int(steps[at]))} (median of its last 3 evals) and {ctx.train_loss.name} fell "
                f"{fmt_pct(1 - now / then)} since"
            )
        return None

    def _zero_head_why(self, ctx: JudgeContext, steps: np.ndarray, values: np.ndarray) -> str | None:
        """An eval exactly 0 at every one of ≥ ``zero_head_min_evals`` evals up to ≥ ``zero_head_run_fraction`` of
        a known total, said as a phrase; else None (an unknown total: never)."""
        progress = ctx.config.progress(int(steps[-1]))
        if progress is None or progress < self.zero_head_run_fraction or values.size < self.zero_head_min_evals:
            return None
        if float(np.max(np.abs(values))) != 0:
            return None
        total = fmt_step(ctx.config.total_steps or 0)
        return f"it has been exactly 0 at every eval for {fmt_pct(progress)} of the run's {total} steps"

    def _stuck(
        self, ctx: JudgeContext, series: MetricSeries, d: Direction, steps: np.ndarray, values: np.ndarray
    ) -> list[Signal]:
        baseline = ctx.baselines.get(series.name)
        early_zero = False  # an accuracy exactly 0 at too few evals to be judged stuck yet: a warning only
        if baseline is not None:
            frozen = values.size >= self.frozen_min_evals and is_frozen(values)
            enough = values.size >= self.stuck_baseline_min_evals or frozen
            if not enough or not self._far_below(values, d, baseline):
                return []
        elif values.size < self.stuck_min_evals:
            established = self._frozen_hopeless(series.name, values, d) or self._beyond_empty(series, values, d)
            zero_ap = self._finds_nothing(ctx, series, values, d)
            if not (established or zero_ap or self._accuracy_all_zero(series, values, d)):
                return []
            early_zero = not established and (zero_ap or not self._accuracy_zero_from_first(series, values, d))
        scale = percent_scale(series.name, values)
        gained = progress(values / scale, d, None if baseline is None else baseline / scale)
        # against a baseline the way is known: only a run that has not started on it is stuck (a BERT MLM
        # accuracy climbing 0.37 → 0.40 in its first 3 evals is 9 % of the way to 0.72, and healthy)
        limit = self.stuck_stop_fraction if baseline is not None else self.stuck_progress_fraction
        if gained >= limit or self._improving(steps, values, d):
            return []
        # seen at the previous check too, new evals or not: evals can be hours apart, a stuck run is not transient
        persists = ctx.not_learning_before(series.name, int(steps[-1]), new_points=False)
        hopeless = self._judged_as_hopeless(ctx, series, values, d)
        robust = hopeless_progress(values / scale, d) if hopeless else None
        overfit = self._overfit_witness(ctx, series.name) if persists and robust is not None else None
        unmoved = (gained if robust is None else robust) < self.stuck_stop_fraction
        critical = persists and (unmoved or overfit is not None) and not early_zero
        waiting = critical and baseline is None and self._moving_early(ctx, series, values, d, int(steps[-1]))
        growth = self._leaving_floor(values, d) if critical and baseline is None and not waiting else None
        critical = critical and not waiting and growth is None
        judged = critical and baseline is None and overfit is None
        found = self._detector_finds_objects(series.name, values) if judged else None
        critical = critical and found is None
        sibling = self._learning_quality_eval(ctx, series.name) if baseline is None else None
        zero_head = self._zero_head_why(ctx, steps, values) if sibling is not None else None
        outvoted = sibling is not None and zero_head is None
        if zero_head is not None:
            tail = f"{sibling}, but {zero_head}: that head scores nothing"
            tail += "; still so at a second check" if critical else "; critical if the next check still sees it"
        elif outvoted:
            critical, tail = False, f"but {sibling}: the run is learning, which outvotes this eval: information"
        elif critical and overfit is not None:
            tail = f"still so at a second check, while {overfit}: the training set is memorised, nothing generalises"
        elif critical:
            tail = f"still so at a second check (critical below {fmt_pct(self.stuck_stop_fraction)})"
        elif growth is not None:
            tail = (
                f"still so at a second check, but its level is {fmt_ratio(growth)} its first evals' (from "
                f"{fmt_ratio(self.stuck_growth_ratio)} it is leaving its floor): a slow start, a flag"
            )
        elif found is not None:
            tail = (
                f"still so at a second check, but a detector without skill holds an average precision at 0 and "
                f"its best is {fmt(found)} (from {fmt(self.stuck_ap_floor_fraction)} it finds objects): a low "
                f"plateau, a flag"
            )
        elif waiting:
            tail = (
                f"still so at a second check, but it moves and the run is short of "
                f"{fmt_pct(self.stuck_min_run_fraction)} of its total: a slow start, critical from then"
            )
        elif early_zero and names_average_precision(series.name):
            tail = f"the detector finds nothing yet; judged stuck from its {self.stuck_min_evals}th eval"
        elif early_zero:
            tail = f"no held-out prediction is right; judged stuck from its {self.stuck_baseline_min_evals}rd eval"
        else:
            tail = f"critical below {fmt_pct(self.stuck_stop_fraction)} when the next check still sees it"
        best = float(values.max() if d is Direction.HIGHER else values.min())
        medians = "" if robust is None else f", {fmt_pct(robust)} by medians of 3 evals"
        msg = (
            f"{series.name} is not learning: its best {fmt(best)} over {values.size} evals up to step "
            f"{fmt_step(int(steps[-1]))} has gained only {fmt_pct(gained)} of what there was to gain since the "
            f"first eval {fmt(float(values[0]))}{medians} ({d.value} is better; threshold "
            f"{fmt_pct(self.stuck_progress_fraction)}); {tail}."
        )
        severity = Severity.INFO if outvoted else Severity.CRITICAL if critical else Severity.WARNING
        evidence = {"outvoted": 1.0} if outvoted else {}
        return [
            signal(SignalKind.FLAT, severity, msg, metric=series.name, step=int(steps[-1]), progress=gained,
                   points=values.size, since_step=int(steps[0]), **evidence)
        ]  # fmt: skip
