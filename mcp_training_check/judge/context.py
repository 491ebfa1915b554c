"""What every detector looks at: the history split by role, the parsed config, earlier verdicts."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..models import Direction, MetricRole, Severity, Signal, SignalKind, Verdict
from ..roles import RoleInfo, primary_train_loss
from ..state import MetricSeries, RunHistory
from .runconfig import RunConfig
from .stats import finite_xy


class Detector(BaseModel):
    """A detector: its thresholds are the fields (keyword arguments with defaults), ``check`` is pure.

    Being a pydantic model, a detector doubles as its own section of ``JudgeSettings``, so the
    defaults live in one place and a project config can override any of them by name.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    def check(self, ctx: JudgeContext) -> list[Signal]:
        raise NotImplementedError


@dataclass(frozen=True)
class LrEvents:
    """What the learning-rate series says about the schedule (filled by ``lr.analyse_lr``)."""

    warmup_end: int | None = None  # step where warmup ends (config or inferred)
    peak: float | None = None  # peak learning rate (config or observed)
    restarts: tuple[int, ...] = ()  # steps of rises that fit the schedule (SGDR restarts)
    # (step, ratio, LR before, LR after) of rises that do not fit it
    jumps: tuple[tuple[int, float, float, float], ...] = ()


@dataclass
class JudgeContext:
    history: RunHistory
    roles: Mapping[str, RoleInfo]
    config: RunConfig
    baselines: Mapping[str, float] = field(default_factory=dict)
    previous: Sequence[Verdict] = ()
    lr_events: LrEvents = field(default_factory=LrEvents)

    def _first(self, role: MetricRole) -> MetricSeries | None:
        for name, info in self.roles.items():
            if info.role is role and name in self.history.metrics:
                return self.history.metrics[name]
        return None

    @property
    def train_loss(self) -> MetricSeries | None:
        name = primary_train_loss(self.roles)
        return self.history.metrics.get(name) if name else None

    @property
    def train_losses(self) -> list[MetricSeries]:
        """Every train loss of the run: its primary one and its other terms (a detector's cls and dfl losses, a
        second head's loss)."""
        return [
            self.history.metrics[name]
            for name, info in self.roles.items()
            if info.role is MetricRole.TRAIN_LOSS and name in self.history.metrics
        ]

    @property
    def grad_norm(self) -> MetricSeries | None:
        return self._first(MetricRole.GRAD_NORM)

    @property
    def learning_rate(self) -> MetricSeries | None:
        return self._first(MetricRole.LEARNING_RATE)

    @property
    def evals(self) -> list[tuple[MetricSeries, Direction]]:
        return [
            (self.history.metrics[name], info.direction)
            for name, info in self.roles.items()
            if info.role is MetricRole.EVAL and name in self.history.metrics
        ]

    @property
    def last_step(self) -> int | None:
        return self.history.last_step

    def previous_signal(self, kind: SignalKind, metric: str | None) -> Signal | None:
        """The matching signal of the most recent earlier check, if it had one."""
        return _signal_of(self.previous[0], kind, metric) if self.previous else None

    def earlier_findings(
        self, kind: SignalKind, metric: str | None, last_step: int | None, checks: int
    ) -> Iterator[tuple[Signal, int]]:
        """The matching signal of each of up to ``checks`` earlier checks and its step (``signal.step``, yielded
        beside it as a plain ``int`` since a finding without a step ends the walk), newest first, for as long as
        each check found it at a step before the one after it (the first before ``last_step``): one finding seen at
        consecutive checks with new points between them. It ends at the first check without it, or without a point
        since."""
        later = last_step
        for verdict in self.previous[:checks]:
            prev = _signal_of(verdict, kind, metric)
            if prev is None or prev.step is None or later is None or prev.step >= later:
                return
            yield prev, prev.step
            later = prev.step

    def not_learning_before(self, metric: str, last_step: int, *, new_points: bool) -> bool:
        """The previous check already found ``metric`` not learning (a FLAT warning or critical): at an
        earlier step when ``new_points`` (a critical finding with no point since is the same evidence, still
        critical), else at this step or an earlier one. A finding at a later step belongs to a log that has
        since been rewound (a relaunch), not to this one. A plateau flag (`PLATEAU_EVIDENCE`: flat over the
        window seen, which a converged run shows too) is no such finding."""
        prev = self.previous_signal(SignalKind.FLAT, metric)
        if prev is None or prev.step is None or prev.severity not in (Severity.WARNING, Severity.CRITICAL):
            return False
        if PLATEAU_EVIDENCE in prev.evidence:
            return False
        if new_points:
            return prev.step < last_step or prev.severity is Severity.CRITICAL
        return prev.step <= last_step


def _signal_of(verdict: Verdict, kind: SignalKind, metric: str | None) -> Signal | None:
    """The first signal of ``verdict`` of this kind on this metric, if it has one."""
    return next((s for s in verdict.signals if s.kind is kind and s.metric == metric), None)


PLATEAU_EVIDENCE = "plateau_fall_bound"
"""The evidence key of a plateau flag (a metric flat over the whole window seen): a doubt for a reviewer, not
a finding that the metric does not learn, so it confirms no not-learning stop (`not_learning_before`)."""


STARTED_AT_BEST = "started_at_best"
"""The evidence key of an eval collapse whose eval began within a margin of its best (1.0) or not (0.0): a
fine-tune's trained start, which its warm-up may knock for an eval without anything being broken
(`policy._is_cause`)."""


UNCHANGED_EVIDENCE = "unchanged_output"
"""The evidence key of an eval's not-learning finding that the model's output does not change: identical to the
last digit at every eval from its first (4+ significant digits): a witness, beside a train loss at ln N, of the
same stall (`policy.witnessed_stall`)."""


def train_start(ctx: JudgeContext) -> int | None:
    """First step the trend detectors look at: after warmup and after the latest expected LR restart."""
    starts = [s for s in (ctx.lr_events.warmup_end, *ctx.lr_events.restarts[-1:]) if s is not None]
    return max(starts) if starts else None


def finite_after(series: MetricSeries, start: int | None) -> tuple[np.ndarray, np.ndarray]:
    steps, values = finite_xy(series.steps, series.values)
    if start is None:
        return steps, values
    keep = steps >= start
    return steps[keep], values[keep]


def signal(
    kind: SignalKind,
    severity: Severity,
    message: str,
    *,
    metric: str | None = None,
    step: int | None = None,
    **evidence: float | None,
) -> Signal:
    """A Signal whose evidence keeps only finite numbers (None and NaN are dropped)."""
    clean = {k: float(v) for k, v in evidence.items() if v is not None and np.isfinite(v)}
    return Signal(kind=kind, severity=severity, metric=metric, step=step, message=message, evidence=clean)


def restated(s: Signal, note: str, severity: Severity | None = None, **evidence: float) -> Signal:
    """``s`` at ``severity`` (None: its own), its message continued by ``note`` (a clause saying why it is read
    so) and ``evidence`` added to its own."""
    update: dict[str, object] = {"message": f"{s.message.rstrip('.')}; {note}"}
    if severity is not None:
        update["severity"] = severity
    if evidence:
        update["evidence"] = s.evidence | evidence
    return s.model_copy(update=update)


def warming_up_at(ctx: JudgeContext, step: int | None) -> bool:
    """The LR's warmup is still under way at ``step``: the step is at or before the warmup's end, configured
    (``warmup_steps``) or inferred (`lr._inferred_warmup_end`: an LR rising from its start, at least doubled;
    its last point when it rose at every logged point)."""
    end = ctx.lr_events.warmup_end
    return step is not None and end is not None and step <= end

