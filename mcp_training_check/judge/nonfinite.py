"""NaN/Inf in the train loss or the grad norm, including the ways Hugging Face's Trainer hides them."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from ..models import Severity, Signal, SignalKind
from ..state import MetricSeries
from .context import Detector, JudgeContext, signal
from .stats import fmt, fmt_step, trailing_run


def _kind_word(value: float) -> str:
    return "NaN" if np.isnan(value) else "Inf"


def _loss_at(loss: MetricSeries | None, steps: np.ndarray) -> np.ndarray | None:
    """The train loss logged at exactly ``steps``, or None when it was not logged at every one of them."""
    if loss is None or steps.size == 0:
        return None
    idx = np.searchsorted(loss.raw_steps, steps)
    if (idx >= loss.raw_steps.size).any() or not np.array_equal(loss.raw_steps[idx], steps):
        return None
    return loss.raw_values[idx]


def _lr_moves(lr: MetricSeries | None, steps: np.ndarray) -> list[bool | None]:
    """At each of ``steps``: whether the LR, logged there and at the step just before, moved (the scheduler
    stepped, so the optimizer did too: the Trainer holds the scheduler on a step the scaler skipped), held
    (False), or cannot be told (None)."""
    if lr is None:
        return [None] * steps.size
    out: list[bool | None] = []
    idx = np.searchsorted(lr.raw_steps, steps)
    for step, i in zip(steps.tolist(), idx.tolist(), strict=True):
        move = None
        if 0 < i < lr.raw_steps.size and lr.raw_steps[i] == step and lr.raw_steps[i - 1] == step - 1:
            now, before = float(lr.raw_values[i]), float(lr.raw_values[i - 1])
            if np.isfinite(now) and np.isfinite(before):
                move = not np.isclose(now, before, rtol=1e-9, atol=0.0)
        out.append(move)
    return out


def _streak(series: MetricSeries, run: int) -> str:
    """Where the non-finite streak at the end of ``series`` began, for a user choosing the checkpoint to resume
    from: its first non-finite step and the last finite one before it (``run`` ≥ 1 trailing points)."""
    steps = series.raw_steps
    first = fmt_step(int(steps[-run]))
    if run < steps.size:
        last_finite = fmt_step(int(steps[-run - 1]))
        return f"non-finite at every point since step {first} (the last finite one at step {last_finite})"
    if series.raw_from == 0:
        return f"non-finite at every point since step {first}, its first"
    return f"non-finite at every point since step {first} or earlier"


def _logged_units(value: float) -> float:
    """``value`` in units of its own last decimal as logged (0.0001 → 1, 0.0563 → 563, 0.1 + 0.2 → 3e16); a
    whole number shows no rounding (inf)."""
    decimals = np.format_float_positional(value, trim="-").partition(".")[2]
    return value * 10.0 ** len(decimals) if decimals else float("inf")


class NonFiniteDetector(Detector):
    """Non-finite train loss / grad norm; the HF Trainer trap (0.0 or NaN losses under NaN grad norms).

    A non-finite grad norm under a finite, non-zero loss is what a dynamic loss scaler does on purpose:
    AMP's GradScaler (and DeepSpeed's "OVERFLOW! Skipping step") skips the optimizer step whose
    gradients are not finite and lowers the scale, the Trainer logs that step's grad norm as NaN or Inf
    and holds the LR, and training carries on. Such a skipped step is information once finite grad
    norms follow it. A fault is a non-finite grad norm that stays (every step skipped: the scale cannot
    recover, or the weights are NaN and HF's ``logging_nan_inf_filter`` keeps the logged loss finite);
    one whose logged loss is exactly 0.0 or NaN (the Trainer's trap); or one the optimizer stepped on,
    seen when the LR, logged every step, moved from the step before (a skipped step holds it). The last
    two are critical at once.

    Thresholds:
    - ``recovered_points``: a non-finite loss followed by at least this many finite values is a warning
      instead of critical. fp16 loss scalers skip overflowed steps and carry on; 50 logged points is
      far past that early churn.
    - ``overflow_points``: this many non-finite grad norms in a row at the latest point (under a finite,
      non-zero loss) is critical: a scaler skips one step and halves its scale, so 3 skipped in a row
      at the end is a scale that cannot recover or weights gone NaN ("loss scale already at minimum" is
      fatal in DeepSpeed); fewer is a warning until the next points show whether they stay.
    - ``scaler_skip_points``: when the LR, logged every step, held at every one of those non-finite grad
      norms, each step is seen skipped by the scaler (nothing reached the weights), and the streak is the
      scaler searching for its scale: AMP's GradScaler and DeepSpeed start at 2^16 and halve it on each
      skip, so 16 skipped in a row bring it to 1, past which the overflow is in the gradients themselves.
      fp16 runs often skip their first few steps in a row (issue 9: a LoRA fine-tune's first two).
    - ``zero_loss_points``: this many train-loss values of exactly 0.0 among the last
      ``recovered_points`` → warning. No real loss is exactly zero; HF logs 0.0 when every label is
      masked or the loss is dropped. 3 so that one odd batch does not count. None turns it off.
      A loss exactly 0.0 at every one of its points from its first, new points included, when the previous
      check already warned about it, is critical: it never once held a real value, so the objective it
      stands for is not being trained (issue 9: a YOLOv8's box and DFL losses at 0.0 for all 50 epochs,
      no box target ever matched, mAP never above 0.04). A loss that fell to 0.0 from real values (a
      hinge or triplet loss at its margin) stays a warning.
    - ``rounded_units_points``: zeros that come after a loss within this many units of its own last logged
      decimal are a converged loss rounded away, not a dropped one: the Trainer logs ``round(loss, 4)``, so
      0.0001 is one unit and any smaller loss is logged as 0.0. A dropped or masked loss falls to 0.0 from
      hundreds of units (0.0563) or from a value logged at full precision (nothing is rounded there); 3
      units leave room for a loss still halving between two logs (0.0002, 0.0001, 0.0). So are zeros among
      recent values that reach that resolution themselves, before or after them: a memorised face classifier's
      per-batch loss printed to 4 decimals (0.0004, 0.0, 0.0, 0.0001, 0.0, 0.0017, …; log-lw-seuncoker-1,
      round 31, healthy) was "a dropped or fully masked loss" at its last 9 checks.
    - ``recurring_overflow_episodes``: non-finite grad norms, each followed by finite ones (recovered), in
      this many separate episodes → warning (a flag, never a stop). A scaler's search for its scale skips a
      few steps at the start and an odd one later: the healthy runs of corpus_real/'s train split that log a
      non-finite grad norm show one or two episodes (a LoRA fine-tune at steps 1-2 and 6, log-KG-LLM-1;
      one NaN in 1,000 logged steps, log-DAT55-Project4-1; one Inf in 70, log-FT-Llama2-HRChatbot-1). A GPT-2
      124M reproduction logs an Inf grad norm five times between steps 6,325 and 15,209, long after its
      warmup, each time with the loss still falling (log-logbob0401-build-nanogpt-2, ambiguous; build-nanogpt
      trains in bf16 by default, which needs no scaler): gradients overflowing again and again. An fp16
      GradScaler also overflows about once per growth interval (2,000 steps in PyTorch, 1,000 in DeepSpeed)
      when it tries a larger scale, and a log that records every step's grad norm shows those too: hence a
      flag for review, not a stop.
    - ``lone_level_ratio``: a train loss non-finite at one point only, ever, with finite values after it whose
      median is at most this many times the median of the (up to) 5 finite values before it, is a warning, not
      a stop: one overflowed batch (an epoch mean that took an Inf from one batch), which the loss scaler
      skipped, leaves the weights as they were, so the loss carries on at its level. A YOLOv8's train box loss
      read Inf at epoch 62 of 100, between 0.750 and 0.742, falling to 0.69 by the end with every eval at its
      best (corpus_real log-pe-marcusayay-1, healthy) was stopped at its last eight checks. 1.5 leaves room
      for the noise of a per-step loss; a run whose weights took the Inf logs NaN after it, or a loss far
      above its level. A second non-finite value is critical as before, as is one at the latest point.

    Every train loss of the run is read so, its other terms while the primary one is finite (`_other_terms`): a
    CUB-200 classifier whose regression head's loss was NaN at all 26 logged rows, beside a classification loss
    sitting at ln 200, was never stopped (corpus_real log-ps-bmsacchi-1, bad): only the primary was read. No
    healthy train run of corpus_real/ logs a non-finite train-loss term.
    """

    recovered_points: int = Field(default=50, ge=1)
    lone_level_ratio: float = Field(default=1.5, gt=1)
    overflow_points: int = Field(default=3, ge=1)
    zero_loss_points: int | None = Field(default=3, ge=1)
    rounded_units_points: int = Field(default=3, ge=0)
    scaler_skip_points: int = Field(default=16, ge=1)
    recurring_overflow_episodes: int = Field(default=3, ge=2)

    def check(self, ctx: JudgeContext) -> list[Signal]:
        out: list[Signal] = []
        loss, grad = ctx.train_loss, ctx.grad_norm
        if loss is not None:
            own = self._series(loss)
            out += own + self._zeros(loss, ctx)
            if not any(s.severity is not Severity.INFO for s in own):
                out += self._other_terms(ctx, loss)
        if grad is not None:
            out += self._grad(grad, loss, ctx.learning_rate)
        if loss is None and not ctx.evals:
            out += self._nothing_finite(ctx)
        return out

    def _other_terms(self, ctx: JudgeContext, primary: MetricSeries) -> list[Signal]:
        """The run's other train losses (`JudgeContext.train_losses` but its primary), read as the primary one is
        while it is finite: a term NaN at every point beside a finite primary is the same fault (the summed
        objective is NaN, or that head is not trained). Only their findings (warning or critical): a term's
        recovered past is no news beside its primary."""
        found: list[Signal] = []
        for series in ctx.train_losses:
            if series.name != primary.name:
                found += [s for s in self._series(series) if s.severity is not Severity.INFO]
        return found

    def _nothing_finite(self, ctx: JudgeContext) -> list[Signal]:
        """A run with no train loss or eval to judge whose every metric has been non-finite at each of its
        ≥ ``overflow_points`` values ever read: nothing it logs is a number, critical as a NaN loss is (a Torch7
        logger's train-set class accuracy, NaN at all 1,679 rows and the file's only metric,
        log-rl-robotsorcerer-1, bad, was 'no train-loss or eval metric' at every check). Beside a train loss or
        an eval, a non-finite metric of another role is no verdict on the run (a U-Net's train Dice NaN at
        every epoch while its loss falls, log-th-dextergomez-1, ambiguous): that is `check`'s train-loss test."""
        series = list(ctx.history.metrics.values())
        if not series or any(s.total_points < self.overflow_points or s.non_finite < s.total_points for s in series):
            return []
        names = ", ".join(sorted(s.name for s in series)[:6])
        last = ctx.history.last_step
        count = sum(s.total_points for s in series)
        msg = (
            f"every value the run has logged is NaN/Inf ({names}: {count} values, up to step "
            f"{fmt_step(last or 0)}), and it logs no train loss or eval: nothing it reports is a number."
        )
        return [signal(SignalKind.NON_FINITE, Severity.CRITICAL, msg, step=last, non_finite_points=count)]

    def _series(self, series: MetricSeries) -> list[Signal]:
        raw, steps = series.raw_values, series.raw_steps
        bad = ~np.isfinite(raw)
        if not bad.any():
            return self._old(series)
        last_bad = int(np.flatnonzero(bad)[-1])
        value, step = float(raw[last_bad]), int(steps[last_bad])
        finite_after = int(raw.size - 1 - last_bad)
        count = int(bad.sum())
        name = series.name
        where = f"{count} non-finite value(s) of {name} in the last {raw.size} points"
        evidence = {"non_finite_points": count, "finite_after": finite_after}
        if finite_after >= self.recovered_points:
            msg = (
                f"{where}, the latest ({_kind_word(value)}) at step {fmt_step(step)}; finite for the "
                f"{finite_after} points since (recovered)."
            )
            return [signal(SignalKind.NON_FINITE, Severity.WARNING, msg, metric=name, step=step, **evidence)]
        if count == 1 and series.non_finite <= 1 and finite_after and (level := self._lone_level(raw, last_bad)):
            msg = (
                f"{name} was {_kind_word(value)} at step {fmt_step(step)}, its one non-finite value, and is finite "
                f"for the {finite_after} point(s) since, at its level ({level}; threshold "
                f"{self.lone_level_ratio:g}×): one overflowed batch a loss scaler skips, a warning; critical if "
                "another follows."
            )
            return [signal(SignalKind.NON_FINITE, Severity.WARNING, msg, metric=name, step=step, **evidence)]
        is_new = last_bad >= raw.size - max(series.new_points, 0) and series.new_points > 0
        if finite_after == 0:
            tail = _streak(series, trailing_run(bad))
        else:
            tail = "in this check" if is_new else f"and only {finite_after} finite point(s) since"
        msg = f"{name} is {_kind_word(value)} at step {fmt_step(step)}: {where}, {tail}."
        return [signal(SignalKind.NON_FINITE, Severity.CRITICAL, msg, metric=name, step=step, **evidence)]

    def _lone_level(self, raw: np.ndarray, at: int) -> str:
        """The finite values after the non-finite one at ``at`` against the (up to) 5 before it, as "median
        after vs before", when the first's median is ≤ ``lone_level_ratio`` × the second's; else ""."""
        before, after = raw[max(at - 5, 0) : at], raw[at + 1 :]
        if before.size == 0 or not np.isfinite(before).all():
            return ""
        level_before, level_after = float(np.median(before)), float(np.median(after))
        if level_before <= 0 or level_after > self.lone_level_ratio * level_before:
            return ""
        return f"median {fmt(level_after)} since against {fmt(level_before)} before"

    def _grad(self, grad: MetricSeries, loss: MetricSeries | None, lr: MetricSeries | None) -> list[Signal]:
        raw, steps = grad.raw_values, grad.raw_steps
        bad = ~np.isfinite(raw)
        if not bad.any():
            return self._old(grad)
        run = trailing_run(bad)
        last_bad = int(np.flatnonzero(bad)[-1])
        value, step = float(raw[last_bad]), int(steps[last_bad])
        count = int(bad.sum())
        evidence = {"non_finite_points": count, "finite_after": int(raw.size - 1 - last_bad), "trailing": run}
        where = f"{count} non-finite value(s) of {grad.name} in the last {raw.size} points"
        head = f"{grad.name} is {_kind_word(value)} at step {fmt_step(step)}"
        streak = _streak(grad, run) if run else ""
        under = _loss_at(loss, steps[raw.size - run :]) if run else None
        if under is not None and (~np.isfinite(under)).any():
            msg = f"{head} with the logged loss non-finite there too: {where}, {streak}."
            return [signal(SignalKind.NON_FINITE, Severity.CRITICAL, msg, metric=grad.name, step=step, **evidence)]
        if under is not None and (under == 0.0).any():
            msg = (
                f"{head} with the logged loss exactly 0.0 there (the weights are NaN; HF Trainer's NaN filter "
                f"drops their losses and logs 0.0): {where}, {streak}."
            )
            return [signal(SignalKind.NON_FINITE, Severity.CRITICAL, msg, metric=grad.name, step=step, **evidence)]
        trailing_steps = steps[raw.size - run :]
        moves = _lr_moves(lr, trailing_steps)
        if any(moves):
            stepped = int(trailing_steps[moves.index(True)])
            msg = (
                f"{head}: the LR moved at step {fmt_step(stepped)} under a non-finite grad norm, so the step was "
                f"not skipped and the weights took a non-finite update: {where}, {streak}."
            )
            return [signal(SignalKind.NON_FINITE, Severity.CRITICAL, msg, metric=grad.name, step=step, **evidence)]
        skipping = bool(moves) and all(m is False for m in moves)  # every one of them seen skipped (LR held)
        limit = self.scaler_skip_points if skipping else self.overflow_points
        if run >= limit:
            filtered = "" if under is None else " while the logged loss stays finite (HF Trainer's NaN filter hides it)"
            msg = (
                f"{head}{filtered}: non-finite for the last {run} points (threshold {limit}), "
                f"{where}: every step is skipped, so the loss scale cannot recover or the weights are NaN."
            )
            return [signal(SignalKind.NON_FINITE, Severity.CRITICAL, msg, metric=grad.name, step=step, **evidence)]
        if run:
            held = " with the LR held (skipped)" if skipping else ""
            msg = (
                f"{head}, the latest point, under a finite loss{held}: {where}. A loss scaler skips such a step; "
                f"critical if it stays {limit} points in a row or the loss turns 0.0 or NaN."
            )
            return [signal(SignalKind.NON_FINITE, Severity.WARNING, msg, metric=grad.name, step=step, **evidence)]
        episodes = int(bad[0]) + int(np.count_nonzero(bad[1:] & ~bad[:-1]))
        if episodes >= self.recurring_overflow_episodes:
            msg = (
                f"{where} in {episodes} separate episodes, the latest ({_kind_word(value)}) at step "
                f"{fmt_step(step)}, each followed by finite grad norms (threshold {self.recurring_overflow_episodes} "
                "episodes): a loss scaler skips a step now and then, but gradients overflowing again and again "
                "while the loss looks fine are worth a look."
            )
            evidence["episodes"] = episodes
            return [signal(SignalKind.NON_FINITE, Severity.WARNING, msg, metric=grad.name, step=step, **evidence)]
        msg = (
            f"{where}, the latest ({_kind_word(value)}) at step {fmt_step(step)}, each followed by finite grad "
            f"norms: steps skipped by the loss scaler (AMP skips a step whose gradients are not finite)."
        )
        return [signal(SignalKind.NON_FINITE, Severity.INFO, msg, metric=grad.name, step=step, **evidence)]

    def _old(self, series: MetricSeries) -> list[Signal]:
        if series.non_finite <= 0:
            return []
        msg = (
            f"{series.non_finite} non-finite value(s) of {series.name} earlier in the run, none in the "
            f"last {series.raw_values.size} points (recovered)."
        )
        return [
            signal(
                SignalKind.NON_FINITE,
                Severity.INFO,
                msg,
                metric=series.name,
                non_finite_points=series.non_finite,
            )
        ]

    def _zeros(self, series: MetricSeries, ctx: JudgeContext) -> list[Signal]:
        if self.zero_loss_points is None:
            return []
        recent = series.raw_values[-self.recovered_points :]
        zeros = np.flatnonzero(recent == 0.0)
        if zeros.size < self.zero_loss_points or self._rounded_away(series, recent.size - int(zeros[0])):
            return []
        if self._at_resolution(recent):
            return []
        step = int(series.raw_steps[-recent.size + int(zeros[-1])])
        msg = (
            f"{series.name} is exactly 0.0 in {zeros.size} of the last {recent.size} points "
            f"(threshold {self.zero_loss_points}), latest at step {fmt_step(step)}: a dropped or "
            f"fully masked loss, not a real value"
        )
        confirmed = self._never_real(series, ctx)
        if confirmed:
            msg += "; 0.0 at every point from its first, as at the previous check: its objective is not trained"
        return [
            signal(
                SignalKind.NON_FINITE,
                Severity.CRITICAL if confirmed else Severity.WARNING,
                msg + ".",
                metric=series.name,
                step=step,
                zero_points=zeros.size,
            )
        ]

    @staticmethod
    def _never_real(series: MetricSeries, ctx: JudgeContext) -> bool:
        """0.0 at every point ever read (its all-time extremes, kept exactly when old points are downsampled),
        with new points since a previous check that warned of zeros."""
        if series.new_points <= 0 or series.non_finite or not series.min_value == series.max_value == 0.0:
            return False
        prev = ctx.previous_signal(SignalKind.NON_FINITE, series.name)
        return prev is not None and "zero_points" in prev.evidence

    def _at_resolution(self, recent: np.ndarray) -> bool:
        """Whether some positive value among ``recent`` is within ``rounded_units_points`` units of its own last
        logged decimal: the log prints this loss down to the resolution where a smaller one is 0.0."""
        positive = recent[np.isfinite(recent) & (recent > 0.0)]
        return any(_logged_units(float(v)) <= self.rounded_units_points for v in positive)

    def _rounded_away(self, series: MetricSeries, from_end: int) -> bool:
        """Whether the last non-zero loss before the zero ``from_end`` points from the end was within
        ``rounded_units_points`` units of its last logged decimal: a converged loss logged as 0.0."""
        before = series.raw_values[: series.raw_values.size - from_end]
        positive = before[np.isfinite(before) & (before > 0.0)]
        return positive.size > 0 and _logged_units(float(positive[-1])) <= self.rounded_units_points
