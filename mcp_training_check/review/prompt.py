"""The reviewer's prompt: the stored facts about one unsure check, compact and plain, nothing invented.

Facts only — the run, the verdict and each signal with its message and evidence, each metric's last,
best and recent values, earlier decisions, the owner's baselines and schedule facts — so the reviewer
weighs the same numbers the judge saw. A few hundred tokens for a typical run: the snapshot already
keeps only a handful of recent points per metric.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..models import MetricRole, MetricSnapshot, MetricSummary, ReviewResult, Signal, Verdict
from ..roles import RoleInfo, primary_train_loss
from ..state import CheckRecord, MetricSeries, RunHistory

__all__ = [
    "AGENT_PREAMBLE",
    "LOSS_CHECKPOINTS",
    "MAX_METRICS_IN_PROMPT",
    "RECENT_EVALS",
    "SYSTEM_PROMPT",
    "AnswerForm",
    "ReviewFacts",
    "build_prompt",
    "system_prompt",
]

AnswerForm = Literal["tool", "json", "word"]
"""How the reviewer must answer: the forced record_review tool call, one JSON object as the whole text
(an endpoint without tool calls), or the bare decision word first (the agent backend)."""

MAX_METRICS_IN_PROMPT = 12  # judged metrics come first in a snapshot; the rest rarely decide anything
EARLIER_CHECKS_IN_PROMPT = 5
LOSS_CHECKPOINTS = 10
"""The training loss at this many evenly spaced steps over the run (the seed's "last 10 loss checkpoints"):
each the mean of the stored values since the previous one, so the curve's shape shows, not its noise."""
RECENT_EVALS = 3
"""The last values of each eval metric shown (the seed's "last 3 evals")."""
_RANKED_ROLES = {MetricRole.TRAIN_LOSS, MetricRole.EVAL}  # "better" means nothing for an LR or a grad norm

SYSTEM_PROMPT = """\
You review machine-learning training runs that an automatic judge could not decide. You get the judge's \
signals and the run's metrics. A false STOP kills a healthy run and wastes the compute already spent; a \
missed STOP wastes compute from now on. Stop only when the numbers show the run is bad. Answer only by \
calling the record_review tool."""

JSON_SYSTEM_PROMPT = SYSTEM_PROMPT.replace(
    "Answer only by calling the record_review tool.",
    "Answer with one JSON object and nothing else, no code fence.",
)

AGENT_PREAMBLE = """\
You are a strict, high-rigour reviewer of a machine-learning training run that an automatic judge could \
not decide. Give critical feedback, not reassurance. A false STOP kills a healthy run and wastes the \
compute already spent; a missed STOP wastes compute from now on. Stop only when the numbers show the run \
is bad."""

DECISIONS = """\
Decide for this run now:
- STOP: the numbers show the run is bad and will not recover (diverging, collapsed, not learning for long \
with nothing suggesting it will start).
- CONTINUE: the warning is benign (ordinary noise, an expected schedule effect, a run still early).
- WAIT: not enough evidence yet; the next check should look again."""

ANSWER_FORMS: dict[AnswerForm, str] = {
    "tool": "Call record_review with the decision and one or two sentences citing the numbers that decided.",
    "json": 'Answer with exactly this JSON object and nothing else: {"decision": "STOP" | "CONTINUE" | "WAIT", '
    '"reason": "one or two sentences citing the numbers that decided"}',
    "word": "Respond with exactly one of STOP / CONTINUE / WAIT as the first word of your reply, then one or "
    "two sentences citing the numbers that decided. Write no other of the three words in capitals.",
}


@dataclass(frozen=True)
class ReviewFacts:
    """What the reviewer is told: the unsure check, the stored metrics and the owner's facts."""

    run: str
    check: CheckRecord
    snapshot: MetricSnapshot
    earlier: Sequence[CheckRecord]  # earlier checks with a verdict, most recent first
    previous_review: ReviewResult | None  # the latest review of an earlier check, if any
    baselines: dict[str, float]
    hints: dict[str, int | float | str]
    history: RunHistory | None = None  # the stored history: loss checkpoints, evals and the chart
    roles: Mapping[str, RoleInfo] = field(default_factory=dict)

    @property
    def verdict(self) -> Verdict:
        assert self.check.verdict is not None, "only a check with a verdict is reviewed"
        return self.check.verdict


def system_prompt(form: AnswerForm) -> str:
    return JSON_SYSTEM_PROMPT if form == "json" else SYSTEM_PROMPT


def build_prompt(facts: ReviewFacts, form: AnswerForm = "tool") -> str:
    """The facts and the question, asking for an answer in ``form`` (the agent's prompt stands alone:
    it carries the reviewer's instructions that an API call sends as the system prompt)."""
    sections = [
        AGENT_PREAMBLE if form == "word" else "",
        _run_section(facts),
        _verdict_section(facts.verdict),
        _curve_section(facts),
        _metrics_section(facts.snapshot.metrics),
        _owner_section(facts),
        _history_section(facts),
        DECISIONS,
        ANSWER_FORMS[form],
    ]
    return "\n\n".join(section for section in sections if section)


def _run_section(facts: ReviewFacts) -> str:
    snap = facts.snapshot
    total = _total_steps(facts)
    of = f" of {total:,}" if total else ""
    step = f"step {snap.last_step:,}{of}" if snap.last_step is not None else "no step yet"
    at = f"{facts.check.at:%Y-%m-%d %H:%M} UTC"
    status = snap.run_info.status.value
    return f"Run: {facts.run}\nStatus: {status}; latest {step}; checked at {at} (check #{facts.check.id})."


def _verdict_section(verdict: Verdict) -> str:
    said = verdict.summary
    head = f"{verdict.decision.value.upper()}:"
    lines = [f"The judge said {said if said.startswith(head) else f'{head} {said}'}", "Signals:"]
    lines += [_signal_line(signal) for signal in verdict.signals] or ["- none"]
    return "\n".join(lines)


def _signal_line(signal: Signal) -> str:
    on = f" on {signal.metric}" if signal.metric else ""
    at = f" at step {signal.step:,}" if signal.step is not None else ""
    evidence = ", ".join(f"{key}={_num(value)}" for key, value in signal.evidence.items())
    return f"- {signal.severity.value} {signal.kind.value}{on}{at}: {signal.message}" + (
        f" [evidence: {evidence}]" if evidence else ""
    )


def _total_steps(facts: ReviewFacts) -> int | None:
    total = facts.hints.get("total_steps", facts.snapshot.run_info.config.get("total_steps"))
    return int(total) if isinstance(total, int | float) and total > 0 else None


def _curve_section(facts: ReviewFacts) -> str:
    """The loss at LOSS_CHECKPOINTS steps over the run and the last RECENT_EVALS values of each eval."""
    history = facts.history
    if history is None:
        return ""
    lines = []
    loss = primary_train_loss(facts.roles)
    if loss is not None and loss in history.metrics:
        shown = ", ".join(f"{step:,}: {_num(value)}" for step, value in _checkpoints(history.metrics[loss]))
        head = f"Training loss ({loss}) at {LOSS_CHECKPOINTS} checkpoints (step: mean since the previous)"
        lines.append(f"{head}: {shown}")
    for name, series in history.metrics.items():
        info = facts.roles.get(name)
        if info is not None and info.role is MetricRole.EVAL and series.steps.size:
            last = zip(series.steps[-RECENT_EVALS:].tolist(), series.values[-RECENT_EVALS:].tolist(), strict=True)
            lines.append(f"Last evals of {name}: " + ", ".join(f"{s:,}: {_num(_finite(v))}" for s, v in last))
    return "\n".join(lines)


def _checkpoints(series: MetricSeries) -> list[tuple[int, float | None]]:
    """(step, mean of the window ending at step; NaN if the window holds one) at LOSS_CHECKPOINTS steps
    spread evenly over the stored points."""
    steps, values = series.steps, series.values
    if not steps.size:
        return []
    edges = np.linspace(0, steps.size, min(LOSS_CHECKPOINTS, steps.size) + 1).astype(int)
    points = []
    for start, end in itertools.pairwise(edges.tolist()):
        window = values[start:end]
        finite = window[np.isfinite(window)]
        points.append((int(steps[end - 1]), float(finite.mean()) if finite.size == window.size else None))
    return points


def _finite(value: float) -> float | None:
    return value if np.isfinite(value) else None


def _metrics_section(metrics: Sequence[MetricSummary]) -> str:
    if not metrics:
        return "Metrics: none stored."
    lines = ["Metrics (NaN/Inf shown as NaN):"]
    lines += [_metric_line(metric) for metric in metrics[:MAX_METRICS_IN_PROMPT]]
    if len(metrics) > MAX_METRICS_IN_PROMPT:
        lines.append(f"- ... and {len(metrics) - MAX_METRICS_IN_PROMPT} more metric(s) not shown")
    return "\n".join(lines)


def _metric_line(metric: MetricSummary) -> str:
    best = f", best {_num(metric.best)} at step {metric.best_step:,}" if metric.best_step is not None else ""
    recent = ", ".join(f"{step:,}: {_num(value)}" for step, value in metric.recent)
    better = f", {metric.direction.value} is better" if metric.role in _RANKED_ROLES else ""
    return (
        f"- {metric.name} ({metric.role.value}{better}): last {_num(metric.last)}"
        f"{best}; {metric.non_finite} NaN/Inf in {metric.points:,} values"
        + (f"; recent (step: value) {recent}" if recent else "")
    )


def _owner_section(facts: ReviewFacts) -> str:
    lines = []
    if facts.baselines:
        shown = ", ".join(f"{name} {_num(value)}" for name, value in facts.baselines.items())
        lines.append(f"Baselines set by the run's owner (the metric should reach them): {shown}.")
    if facts.hints:
        shown = ", ".join(f"{name}={value}" for name, value in facts.hints.items())
        lines.append(f"Facts about the run from its owner's config: {shown}.")
    return "\n".join(lines)


def _history_section(facts: ReviewFacts) -> str:
    lines = ["Earlier decisions (most recent first):"]
    for check in facts.earlier[:EARLIER_CHECKS_IN_PROMPT]:
        if check.verdict is not None:
            lines.append(f"- check #{check.id} at {check.at:%Y-%m-%d %H:%M} UTC: {check.verdict.summary}")
    review = facts.previous_review
    if review is not None:
        lines.append(f"- earlier review of check #{review.check_id}: {review.decision}: {review.reason}")
    return "\n".join(lines) if len(lines) > 1 else "Earlier decisions: none; this is the first judged check."


def _num(value: float | None) -> str:
    return "NaN" if value is None else f"{value:.4g}"
