"""From signals to a decision: confirmed critical → stop, any warning → unsure, otherwise continue.

A ``watch`` signal (an anomaly the next checks will settle: a spike not back yet, a loss episode seen
on fewer than ``confirm_checks`` checks) keeps the decision at continue and only shortens the interval.
Asking a reviewer about it would cost a call whose only sound answer is WAIT; the next check, 10
minutes later, either sees it recover or confirms it.

Detectors only emit ``critical`` for confirmed evidence (NaN at once; divergence over several points
or a second consecutive check; evals over ``confirm_evals``). The policy adds what needs two
detectors: an unexpected LR jump or exploding grad norm followed by a rising loss, or by a collapsed
eval, becomes critical.
"""

from __future__ import annotations

import numpy as np

from ..models import Decision, Direction, MetricRole, RunStatus, Severity, Signal, SignalKind, Verdict
from ..roles import tokenize
from ..state import RunHistory
from .context import STARTED_AT_BEST, UNCHANGED_EVIDENCE, JudgeContext, restated, signal
from .settings import PolicySettings
from .stats import finite_xy, fmt, fmt_pct, fmt_step

_SEVERITY_RANK = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.WATCH: 2, Severity.INFO: 3}
_KIND_RANK = {
    kind: i
    for i, kind in enumerate(
        [
            SignalKind.NON_FINITE,
            SignalKind.DIVERGENCE,
            SignalKind.EVAL_DEGRADING,
            SignalKind.EVAL_BELOW_BASELINE,
            SignalKind.GRAD_EXPLODING,
            SignalKind.LR_ANOMALY,
            SignalKind.SPIKE,
            SignalKind.NO_NEW_DATA,
            SignalKind.FLAT,
            SignalKind.GRAD_VANISHING,
            SignalKind.RUN_ENDED,
            SignalKind.TOO_FEW_POINTS,
            SignalKind.IMPROVING,
            SignalKind.SPIKE_RECOVERED,
        ]
    )
}
_WAITING_STATUSES = {RunStatus.RUNNING, RunStatus.UNKNOWN}


def data_signals(ctx: JudgeContext) -> list[Signal]:
    """Signals about the data itself: nothing read, nothing new, no judged metric, run ended.

    A run has ended when its source says so (W&B state, a log's own final line) or when it has reached
    the total steps of its config. A log that stopped growing is information, not a warning: whether
    its process is alive is the launcher's job; the schedule keeps the interval (`schedule`).
    """
    history = ctx.history
    status = history.info.status
    out: list[Signal] = []
    ended = _ended(ctx)
    if ended is not None:
        out.append(signal(SignalKind.RUN_ENDED, Severity.INFO, ended, step=history.last_step))
    if all(s.values.size == 0 for s in history.metrics.values()):
        out.append(signal(SignalKind.TOO_FEW_POINTS, Severity.INFO, "no metrics logged yet: too early to judge."))
        return out
    new = sum(max(s.new_points, 0) for s in history.metrics.values())
    if new == 0 and ended is None and status in _WAITING_STATUSES:
        msg = (
            f"no new points since the last check (last step {fmt_step(history.last_step)}, status "
            f"{status.value}); whether the training process is alive is its launcher's job, so the "
            f"interval is kept."
        )
        out.append(signal(SignalKind.NO_NEW_DATA, Severity.INFO, msg, step=history.last_step))
    if ctx.train_loss is None and not ctx.evals:
        names = ", ".join(sorted(history.metrics)[:6])
        msg = (
            f"no train-loss or eval metric among {len(history.metrics)} metrics ({names}); "
            f"set one with a role override."
        )
        out.append(signal(SignalKind.TOO_FEW_POINTS, Severity.WARNING, msg))
    return out


def _ended(ctx: JudgeContext) -> str | None:
    """Why the run has ended, by its own facts, or None while it may still be training."""
    status = ctx.history.info.status
    if status.has_ended:
        return f"the run has ended (status {status.value})."
    # a W&B server that says running watches the process, and its _step counts log calls, which can outrun
    # the optimizer steps of total_steps; a file or log cannot tell, so there the total is the best fact
    if status is RunStatus.RUNNING and ctx.history.info.status_watched:
        return None
    total, last = ctx.config.total_steps, ctx.history.last_step
    if total and last is not None and last >= total:
        return f"the run has ended: step {fmt_step(last)} reached its total of {fmt_step(total)} steps."
    return None


def _upgrade(div: Signal, cause: Signal, why: str) -> Signal:
    return restated(div, f"{why}: {cause.message}", Severity.CRITICAL)


def _votes(s: Signal) -> bool:
    """Not a secondary eval's finding that the run's quality eval at its best outvoted (information)."""
    return "outvoted" not in s.evidence


def _is_cause(s: Signal) -> bool:
    """A signal that explains a rising train loss: an LR jump or an LR above its configured peak, an
    exploding grad norm, or a collapsed eval (another detector seeing the same failure). A collapse seen at one
    eval is watched, not warned of, yet still a witness: the train loss diverging with it is one failure seen
    twice. Not so when the eval began at its best (`STARTED_AT_BEST`): a fine-tune's warm-up knocks a trained
    model's train loss and its eval at once, one cause seen twice, and they recover (corpus_real
    log-rt-qinggangwu-2, healthy: a YOLOv7 keypoint fine-tune whose box loss climbs 0.0136 → 0.0221 over its
    first 6 epochs while its mAP@0.5, 0.92 from its first epoch, dips to 0.46 at epoch 5 alone and is back to 0.90
    at epoch 6, was stopped at its first check). The climb alone is a warning, and the next check sees whether
    it keeps growing; a second collapsed eval is a witness again."""
    if s.step is None or s.severity is Severity.INFO or not _votes(s):
        return False
    if s.kind is SignalKind.EVAL_DEGRADING:
        knocked_start = s.severity is Severity.WATCH and bool(s.evidence.get(STARTED_AT_BEST))
        return "collapsed_evals" in s.evidence and not knocked_start
    if s.severity is Severity.WATCH:
        return False
    if s.kind is SignalKind.LR_ANOMALY:
        return "jump_ratio" in s.evidence or "ratio" in s.evidence
    return s.kind is SignalKind.GRAD_EXPLODING


_WHY = {
    SignalKind.LR_ANOMALY: "the LR left its schedule before it",
    SignalKind.GRAD_EXPLODING: "with the grad norm",
    SignalKind.EVAL_DEGRADING: "the eval collapsed too",
}
_AFTER = {
    SignalKind.LR_ANOMALY: "right after the LR left its schedule",
    SignalKind.GRAD_EXPLODING: "with the grad norm exploding",
}


def _is_optimizer_cause(s: Signal) -> bool:
    """A cause inside the optimizer (LR off its schedule, exploding grad norm), not another symptom."""
    return _is_cause(s) and s.kind is not SignalKind.EVAL_DEGRADING


def _first_cause(effect: Signal, causes: list[Signal]) -> Signal | None:
    """The first cause that began at or before ``effect``'s step."""
    for cause in causes:
        cause_step = cause.evidence.get("since_step", cause.step)
        if effect.step is not None and cause_step is not None and cause_step <= effect.step:
            return cause
    return None


def combine(signals: list[Signal], train_loss: str | None) -> list[Signal]:
    """An effect with a cause behind it is critical: two detectors seeing one failure.

    - A rising or diverging train loss after any `_is_cause`. The trend detector reports a modest rise
      (Mann–Kendall z below its warning level) as info: alone it is noise on an autocorrelated curve,
      after an LR jump it is the start of the divergence.
    - A collapsed eval seen on fewer than ``confirm_evals`` evals after an optimizer cause (the LR off
      its schedule, an exploding grad norm) at or before it. One collapsed eval alone may be a bad eval
      batch, so the eval detector waits for a second; one right after the LR left its schedule is that
      LR's damage, and waiting an eval period only lets it continue.
    """
    causes = [s for s in signals if _is_cause(s)]
    optimizer = [s for s in causes if _is_optimizer_cause(s)]
    out = []
    for s in signals:
        if s.severity is not Severity.CRITICAL:
            cause = None
            if s.kind is SignalKind.DIVERGENCE and s.metric == train_loss:
                cause = _first_cause(s, causes)
            elif s.kind is SignalKind.EVAL_DEGRADING and "collapsed_evals" in s.evidence and _votes(s):
                cause = _first_cause(s, optimizer)
            if cause is not None:
                s = _upgrade(s, cause, _WHY[cause.kind] if s.kind is SignalKind.DIVERGENCE else _AFTER[cause.kind])
        out.append(s)
    return out


def witnessed_stall(signals: list[Signal], train_loss: str | None) -> list[Signal]:
    """A train loss at ln N (a not-learning warning with its ``class_count``) and, at the same check, an eval
    whose output does not change (`context.UNCHANGED_EVIDENCE`: identical to the last digit from its first
    eval) are one stall read on both sides of the model: critical at once, not at the next check. Each alone
    waits a check (a loss near ln N over a log's first 3 points may yet fall), and so does a train loss at ln
    N beside an eval loss near ln N that still moves (an AdamW at LR 1e-6, corpus/ a02). An R2C on 4-way VCR: train loss
    1.386393, 1.386381, 1.386379 = ln 4 and a val loss 1.386 at every epoch from its first, val accuracy 0.249
    (issue-r2c-43, bad, was stopped two checks after its fault showed)."""
    flat = [s for s in signals if s.kind is SignalKind.FLAT]
    chance = [s for s in flat if s.metric == train_loss and "class_count" in s.evidence]
    held = [s for s in flat if UNCHANGED_EVIDENCE in s.evidence]
    if not chance or not held or all(s.severity is Severity.CRITICAL for s in chance + held):
        return signals
    why = f"both sides say so ({chance[0].metric} at ln N, {held[0].metric} frozen from its first eval)"
    return [
        restated(s, f"{why}: critical.", Severity.CRITICAL)
        if (s in chance or s in held) and s.severity is Severity.WARNING
        else s
        for s in signals
    ]


_FLOOR_KINDS = frozenset({SignalKind.DIVERGENCE, SignalKind.SPIKE, SignalKind.EVAL_DEGRADING})


def converged_floor(signals: list[Signal], ctx: JudgeContext, settings: PolicySettings) -> list[Signal]:
    """A loss's divergence, spike or eval-degrading finding while the loss sits at its floor
    (`PolicySettings.converged_floor_fraction`): information, not a flag. Losses only: a train loss, or an eval
    named a loss; an accuracy or an error rate near 0 is read as it is."""
    return [_floored(s, ctx, settings) for s in signals]


def _floored(s: Signal, ctx: JudgeContext, settings: PolicySettings) -> Signal:
    flagged = s.kind in _FLOOR_KINDS and s.severity is not Severity.INFO
    floor = _at_floor(ctx, s, settings) if flagged else None
    if floor is None:
        return s
    level, first = floor
    note = (
        f"but {s.metric} is at {fmt(level)}, {first / level:,.0f}× below its first level {fmt(first)}, and nothing "
        f"in this finding reached {fmt_pct(settings.converged_floor_peak_fraction)} of it: converged to its floor, "
        "where ratios are float rounding and single samples, not a divergence: information."
    )
    return restated(s, note, Severity.INFO)


def _at_floor(ctx: JudgeContext, s: Signal, settings: PolicySettings) -> tuple[float, float] | None:
    """(recent level, first level) of the loss ``s`` is about when the median of its last 3 points is ≤
    ``converged_floor_fraction`` × the median of its first 3 and its peak over the finding's points (from its
    ``since_step``, else its last ``collapsed_evals`` or 3 points) ≤ ``converged_floor_peak_fraction`` × it;
    else None."""
    name = s.metric
    if name is None:
        return None
    info, series = ctx.roles.get(name), ctx.history.metrics.get(name)
    if info is None or series is None:
        return None
    is_loss = info.role is MetricRole.TRAIN_LOSS or (
        info.role is MetricRole.EVAL and info.direction is Direction.LOWER and "loss" in tokenize(name)
    )
    steps, values = finite_xy(series.steps, series.values)
    if not is_loss or values.size < 6:
        return None
    first, level = float(np.median(values[:3])), float(np.median(values[-3:]))
    if first <= 0 or level <= 0 or level > settings.converged_floor_fraction * first:
        return None
    since = s.evidence.get("since_step")
    window = values[steps >= since] if since is not None else values[-int(s.evidence.get("collapsed_evals", 3)) :]
    if window.size == 0 or float(np.max(window)) > settings.converged_floor_peak_fraction * first:
        return None
    return level, first


def exact_evidence_only(signals: list[Signal], history: RunHistory) -> list[Signal]:
    """No stop on an overview: a critical signal whose evidence reaches before ``history.exact_from`` (the
    older history a long run's first check only sampled) is a warning until that history is re-read.

    Its evidence lies where it starts: ``since_step`` when the signal has one, else its ``step``.
    """
    if history.exact_from is None:
        return signals
    out = []
    for s in signals:
        start = s.evidence.get("since_step", s.step)
        if s.severity is Severity.CRITICAL and not history.is_exact(None if start is None else int(start)):
            note = (
                f"its evidence reaches before step {history.exact_from:,}, read so far only as an overview: not "
                "enough to stop until the next checks re-read it exactly."
            )
            s = restated(s, note, Severity.WARNING)
        out.append(s)
    return out


UNCHANGED_NOTE = "unchanged since the last check (no new points): not a new finding"


def unchanged_evidence(signals: list[Signal]) -> list[Signal]:
    """A check that read no new points judges the evidence the check before it judged: its warnings and watches
    are not new findings, and none grows more severe for it (the detectors confirm an episode only when the
    previous check saw it at an earlier step: `_rising_before`, `_collapsed_before`, ...). Each says so
    (`UNCHANGED_NOTE`): a warning announced as "critical if the next check still sees it" was repeated as if
    seen anew at every check of a log that stopped growing (a reviewer asked again reads that it is the same
    evidence). The hopeless-stall stops ("stopped at the next check, new points or not") are critical, and
    unchanged."""
    if not any(s.kind is SignalKind.NO_NEW_DATA for s in signals):
        return signals
    return [
        restated(s, f"{UNCHANGED_NOTE}.")
        if s.severity in (Severity.WARNING, Severity.WATCH)
        else s
        for s in signals
    ]


def compact(signals: list[Signal], limit: int) -> list[Signal]:
    """Most severe first; one signal per (kind, metric); at most ``limit``, the run-ended fact always kept
    (the schedule ends monitoring on it)."""
    ordered = sorted(signals, key=lambda s: (_SEVERITY_RANK[s.severity], _KIND_RANK.get(s.kind, 99)))
    seen: set[tuple[SignalKind, str | None]] = set()
    out = []
    for s in ordered:
        key = (s.kind, s.metric)
        if key in seen:
            continue
        seen.add(key)
        out.append(s)
    ended = [s for s in out[limit:] if s.kind is SignalKind.RUN_ENDED]
    return out[: limit - len(ended)] + ended


def decide(signals: list[Signal], ctx: JudgeContext, settings: PolicySettings) -> Verdict:
    severities = {s.severity for s in signals}
    ended = any(s.kind is SignalKind.RUN_ENDED for s in signals)
    if Severity.CRITICAL in severities:
        decision = Decision.STOP
    elif Severity.WARNING in severities:
        decision = Decision.UNSURE
    else:
        decision = Decision.CONTINUE
    return Verdict(decision=decision, summary=_summary(decision, signals, ended), signals=signals)


_FINDING_KINDS = frozenset(
    {SignalKind.NON_FINITE, SignalKind.DIVERGENCE, SignalKind.EVAL_DEGRADING, SignalKind.EVAL_BELOW_BASELINE,
     SignalKind.GRAD_EXPLODING, SignalKind.LR_ANOMALY, SignalKind.SPIKE}
)  # fmt: skip
"""Kinds whose signal names a problem: at ``info`` in a continue verdict it is one found harmless (outvoted, at a
loss's floor), which the verdict's one-line summary should not lead with ("CONTINUE: train/loss exploded")."""


def _summary(decision: Decision, signals: list[Signal], ended: bool) -> str:
    """The decision, the main signal's first clause and how many more signals share its severity: the
    sentence with the numbers is the signal's ``message``, in the same result, so it is not said twice. A continue
    verdict leads with an improvement, else with a signal that names no problem (`_FINDING_KINDS`)."""
    head = decision.value.upper()
    if not signals:
        return f"{head}: no problems found."
    main = signals[0]
    if decision is Decision.CONTINUE:
        if main.severity is Severity.WATCH:
            head = f"{head} (watching)"
        else:
            early = next((s for s in signals if s.kind is SignalKind.TOO_FEW_POINTS), None)
            if early is not None:
                return f"{head}: too early to judge ({early.gist()})"
            main = next((s for s in signals if s.kind is SignalKind.IMPROVING), None) or next(
                (s for s in signals if s.kind not in _FINDING_KINDS), main
            )
            if main.kind in _FINDING_KINDS and main.severity is Severity.INFO:
                return f"{head}: no problem to act on (information: {main.gist()})."
    others = sum(1 for s in signals[1:] if s.severity is main.severity and main.severity is not Severity.INFO)
    more = f" (+{others} more {main.severity.value})" if others else ""
    note = (
        "; the run has already ended: nothing left to stop, end monitoring"
        if ended and decision is not Decision.CONTINUE
        else ""
    )
    return f"{head}: {main.gist()}{more}{note}."
