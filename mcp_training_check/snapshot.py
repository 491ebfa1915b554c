"""Stored history → the compact `MetricSnapshot` an agent reads.

A snapshot must stay small whatever the run's length (well under 1,500 tokens for a whole check):
a few recent checkpoints per metric, numbers rounded to 4 significant digits, at most
`MAX_METRICS_SHOWN` metrics with the ones the judge uses first.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np

from .models import (
    DataSource,
    Direction,
    MetricRole,
    MetricSnapshot,
    MetricSummary,
    RunInfo,
)
from .roles import RoleInfo
from .state import MetricSeries, RunHistory

RECENT_CHECKPOINTS = 5
"""Checkpoints shown per metric: enough to see a trend, few enough to stay compact."""

MAX_METRICS_SHOWN = 12
"""Metrics listed in a snapshot; the rest are counted in a warning (they are still stored and judged)."""

SIGNIFICANT_DIGITS = 4

_ROLE_ORDER = {
    MetricRole.TRAIN_LOSS: 0,
    MetricRole.EVAL: 1,
    MetricRole.GRAD_NORM: 2,
    MetricRole.LEARNING_RATE: 3,
    MetricRole.OTHER: 4,
}


def round_sig(value: float | None, digits: int = SIGNIFICANT_DIGITS) -> float | None:
    """Round to ``digits`` significant digits; NaN/Inf become None (JSON has no NaN)."""
    if value is None or not math.isfinite(value):
        return None
    if value == 0:
        return 0.0
    return float(f"{value:.{digits}g}")


_ROLES_WITH_BEST = {MetricRole.TRAIN_LOSS, MetricRole.EVAL}
"""A 'best' learning rate or grad norm means nothing: only losses and eval metrics get one."""


def summarize_metric(series: MetricSeries, info: RoleInfo) -> MetricSummary:
    best, best_step = _best(series, info.direction) if info.role in _ROLES_WITH_BEST else (None, None)
    return MetricSummary(
        name=series.name,
        role=info.role,
        direction=info.direction,
        last=round_sig(series.last_value),
        best=round_sig(best),
        best_step=best_step,
        recent=_recent_checkpoints(series) if info.role is not MetricRole.OTHER else [],
        non_finite=series.non_finite,
        last_step=series.last_step,
        points=series.total_points,
    )


def _best(series: MetricSeries, direction: Direction) -> tuple[float | None, int | None]:
    if direction is Direction.HIGHER:
        return series.max_value, series.max_step
    return series.min_value, series.min_step


def _recent_checkpoints(series: MetricSeries) -> list[tuple[int, float | None]]:
    """Evenly spaced points over the full-resolution tail, always ending with the last one."""
    steps, values = series.raw_steps, series.raw_values
    if steps.size == 0:
        steps, values = series.steps, series.values
    if steps.size == 0:
        return []
    count = min(RECENT_CHECKPOINTS, int(steps.size))
    picks = np.unique(np.linspace(0, steps.size - 1, count).round().astype(np.int64))
    return [(int(steps[i]), round_sig(float(values[i]))) for i in picks]


def _unlisted_note(hidden: list[MetricRole]) -> str:
    """How many metrics the snapshot leaves out, by role: ``8 more metrics stored but not listed (4 eval, 4
    learning_rate).``"""
    counts = Counter(hidden)
    by_role = ", ".join(f"{counts[role]} {role.value}" for role in sorted(counts, key=_ROLE_ORDER.__getitem__))
    return f"{len(hidden)} more metrics stored but not listed ({by_role}); each is still judged."


def build_snapshot(
    *,
    run: str,
    history: RunHistory,
    roles: dict[str, RoleInfo],
    data_source: DataSource,
    info: RunInfo,
    new_points: int,
    skipped_chunks: int = 0,
    restarted: bool = False,
    warnings: list[str] | None = None,
) -> MetricSnapshot:
    """``info`` is shown as given: pass its config reduced to what the judge uses (`judge.judged_facts`)."""
    # within a role, a metric that ever read NaN/Inf first: it is what a stop on it points at
    names = sorted(
        (name for name in history.metrics if name in roles),
        key=lambda name: (_ROLE_ORDER[roles[name].role], not history.metrics[name].non_finite, natural_key(name)),
    )
    shown = names[:MAX_METRICS_SHOWN]
    notes = list(warnings or [])
    if history.exact_from is not None:
        notes.append(overview_note(history.exact_from))
    if len(names) > len(shown):
        notes.append(_unlisted_note([roles[name].role for name in names[len(shown) :]]))
    metrics = [summarize_metric(history.metrics[name], roles[name]) for name in shown]
    return MetricSnapshot(
        run=run,
        summary=_summary_line(metrics, info, new_points, history.last_step),
        data_source=data_source,
        run_info=info,
        metrics=metrics,
        new_points=new_points,
        last_step=history.last_step,
        skipped_chunks=skipped_chunks,
        restarted=restarted,
        overview_before_step=history.exact_from,
        warnings=notes,
    )


def natural_key(name: str) -> list[str | int]:
    """``task2`` before ``task10``: the digit runs of a name compare as numbers (text order put ``task10``
    first). Text and numbers alternate from a text part on, so two keys always compare like with like."""
    return [int(part) if index % 2 else part for index, part in enumerate(re.split(r"(\d+)", name))]


MAX_NAMES_LISTED = 12
"""Metric names an unmatched-override warning lists: enough to spot the spelling, short in a tool result."""


def unmatched_overrides_note(
    names: Iterable[str], roles: Mapping[str, str], baselines: Mapping[str, float]
) -> list[str]:
    """A warning naming the roles and baselines (tool arguments or training-check.toml) whose metric the run
    has not logged: a typo would otherwise be dropped without a word. Not an error, since a metric may appear
    later in a run; nothing is said before any metric was read."""
    known = sorted(names)
    unmatched = [f"baseline {n!r}" for n in baselines if n not in known]
    unmatched += [f"role {n!r}" for n in roles if n not in known]
    if not known or not unmatched:
        return []
    listed = ", ".join(known[:MAX_NAMES_LISTED]) + (", …" if len(known) > MAX_NAMES_LISTED else "")
    return [
        f"{' and '.join(unmatched)} name{'s' if len(unmatched) == 1 else ''} no metric of this run (metrics read: "
        f"{listed}): check the spelling (names are case-sensitive); it applies once such a metric is logged"
    ]


def overview_note(exact_from: int) -> str:
    return (
        f"history before step {exact_from:,} is an overview (sampled blocks) until the next checks re-read it "
        "exactly; its point and NaN counts cover the sample only"
    )


def _summary_line(metrics: list[MetricSummary], info: RunInfo, new_points: int, last_step: int | None) -> str:
    if not metrics:
        return "no metrics read yet"
    head = metrics[0]
    parts = [f"step {last_step:,}" if last_step is not None else "no step yet"]
    parts.append(f"{head.name} {_fmt(head.last)}")
    if head.best is not None:
        parts.append(f"best {_fmt(head.best)} at step {head.best_step:,}" if head.best_step is not None else "")
    parts.append(f"{new_points:,} new values")
    parts.append(f"status {info.status.value}")  # "run unknown" read as a run that was not found
    return ", ".join(part for part in parts if part)


def _fmt(value: float | None) -> str:
    return "NaN/Inf" if value is None else f"{value:.4g}"
