"""Draw a run's stored metrics as one PNG: a panel per role, the judge's flagged points marked.

Panels, top to bottom, for the roles the run has: training loss (log scale when every value is
positive), evals, learning rate, grad norm (log scale when positive). Non-finite values are red crosses
along the panel's top edge at their step. Each signal of the verdict that names a step draws a dashed
vertical line across every panel (red: critical, orange: warning, blue: watch), and a ring on its own
metric's line at the nearest stored point.

Uses `matplotlib.figure.Figure` with the Agg canvas directly: no pyplot, no global state, safe in the
server's worker threads.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import MetricMissing
from ..models import MetricRole, Severity, Signal
from ..roles import RoleInfo
from ..state import MetricSeries, RunHistory

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["DEFAULT_DPI", "MAX_LINES_PER_PANEL", "MIN_DPI", "Chart", "render_chart", "render_within"]

FIGURE_WIDTH_INCHES = 8.0
PANEL_HEIGHT_INCHES = 2.1
DEFAULT_DPI = 100
"""8 × 2.1 in per panel at 100 dpi: 800 px wide, ~840 px tall for four panels — readable, and under the
~1.15 megapixels above which the Anthropic API scales an image down."""
TITLE_INCHES = 0.4
PANEL_GAP = 0.12  # of a panel's height
MIN_DPI = 50
"""The smallest resolution tried to fit a size cap; below it the labels are unreadable."""
MAX_NON_FINITE_MARKS = 40
"""Crosses drawn for NaN/Inf values at most: a run that went NaN for good would draw a solid bar."""
MAX_LINES_PER_PANEL = 4
"""Evals beyond the first four (in stored order) are left out of the eval panel, and the legend says so."""

PANELS: tuple[tuple[MetricRole, str], ...] = (
    (MetricRole.TRAIN_LOSS, "training loss"),
    (MetricRole.EVAL, "eval"),
    (MetricRole.LEARNING_RATE, "learning rate"),
    (MetricRole.GRAD_NORM, "grad norm"),
)
LOG_SCALE_ROLES = frozenset({MetricRole.TRAIN_LOSS, MetricRole.GRAD_NORM})
SEVERITY_COLOURS = {Severity.CRITICAL: "#d62728", Severity.WARNING: "#ff7f0e", Severity.WATCH: "#1f77b4"}
NON_FINITE_COLOUR = "#d62728"
MINOR_LABEL_DECADES = 2.0
LABELLED_MANTISSAS = (2.0, 3.0, 5.0)


@dataclass(frozen=True)
class Chart:
    """One rendered picture and what is in it."""

    png: bytes
    panels: list[str]
    metrics: list[str]
    flagged_steps: list[int] = field(default_factory=list)
    episodes: list[tuple[int, int]] = field(default_factory=list)  # shaded (first step, flagged step) spans
    log_scale: list[str] = field(default_factory=list)  # panels drawn on a log axis
    dpi: int = DEFAULT_DPI


def render_within(
    history: RunHistory,
    roles: Mapping[str, RoleInfo],
    signals: Sequence[Signal],
    *,
    title: str,
    max_bytes: int,
) -> Chart | None:
    """The chart at the highest resolution (from DEFAULT_DPI down to MIN_DPI) whose PNG fits ``max_bytes``;
    None when even the smallest does not fit."""
    dpi = DEFAULT_DPI
    while dpi >= MIN_DPI:
        chart = render_chart(history, roles, signals, title=title, dpi=dpi)
        if len(chart.png) <= max_bytes:
            return chart
        dpi = int(dpi * 0.75)
    return None


def render_chart(
    history: RunHistory,
    roles: Mapping[str, RoleInfo],
    signals: Sequence[Signal],
    *,
    title: str,
    dpi: int = DEFAULT_DPI,
) -> Chart:
    """The run's panels as a PNG; MetricMissing when it has no stored loss, eval, LR or grad norm."""
    groups = _panel_groups(history, roles)
    if not groups:
        raise MetricMissing(
            f"nothing to draw for {title!r}: no stored training loss, eval, learning rate or grad norm. "
            "Call `check` first, or name the metrics' roles (the `roles` argument, --role KEY=ROLE on the "
            "command line, or [runs.NAME.roles] in training-check.toml)."
        )
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    height = PANEL_HEIGHT_INCHES * len(groups) + TITLE_INCHES
    figure = Figure(figsize=(FIGURE_WIDTH_INCHES, height), dpi=dpi)
    FigureCanvasAgg(figure)
    figure.subplots_adjust(
        left=0.12, right=0.98, bottom=0.5 / height, top=1 - TITLE_INCHES / height, hspace=PANEL_GAP
    )  # fixed margins: matplotlib's constrained layout doubles the drawing time
    axes = figure.subplots(len(groups), 1, sharex=True, squeeze=False)[:, 0]
    flagged = _flagged(signals)
    log_scale = [label for ax, (role, label, series) in zip(axes, groups, strict=True)
                 if _draw_panel(ax, role, label, series, flagged)]  # fmt: skip
    axes[-1].set_xlabel(_step_label([s for _, _, group in groups for s in group]), fontsize=8)
    axes[-1].xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:,.0f}"))
    figure.suptitle(_title(title, history, flagged), fontsize=10)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return Chart(
        png=buffer.getvalue(),
        panels=[label for _, label, _ in groups],
        metrics=[s.name for _, _, group in groups for s in group],
        flagged_steps=sorted({signal.step for signal in flagged if signal.step is not None}),
        episodes=sorted({(since, signal.step) for signal in flagged
                         if signal.step is not None and (since := episode_start(signal)) is not None}),
        log_scale=log_scale,
        dpi=dpi,
    )


def _panel_groups(
    history: RunHistory, roles: Mapping[str, RoleInfo]
) -> list[tuple[MetricRole, str, list[MetricSeries]]]:
    groups = []
    for role, label in PANELS:
        series = [s for name, s in history.metrics.items() if _role(roles, name) is role and s.steps.size]
        if series:
            groups.append((role, label, series))
    return groups


def _role(roles: Mapping[str, RoleInfo], name: str) -> MetricRole:
    info = roles.get(name)
    return info.role if info is not None else MetricRole.OTHER


def _flagged(signals: Sequence[Signal]) -> list[Signal]:
    """The signals worth marking: those at a step with a severity above info, each (metric, step) once."""
    seen: set[tuple[str | None, int]] = set()
    marked = []
    for signal in signals:
        if signal.step is None or signal.severity not in SEVERITY_COLOURS:
            continue
        if (signal.metric, signal.step) not in seen:
            seen.add((signal.metric, signal.step))
            marked.append(signal)
    return marked


def episode_start(signal: Signal) -> int | None:
    """The first step of the episode a signal judged (its ``since_step``), when it began before its step."""
    since = signal.evidence.get("since_step")
    if isinstance(since, int | float) and not isinstance(since, bool) and signal.step is not None:
        return int(since) if since < signal.step else None
    return None


def _draw_panel(ax: Axes, role: MetricRole, label: str, series: list[MetricSeries], flagged: list[Signal]) -> bool:
    """One panel; True if drawn on a log axis."""
    shown = series[:MAX_LINES_PER_PANEL]
    non_finite = False
    for s in shown:
        finite = np.isfinite(s.values)
        ax.plot(s.steps[finite], s.values[finite], linewidth=1.0, label=s.name)
        non_finite |= _mark_non_finite(ax, s.steps[~finite])
    if role in LOG_SCALE_ROLES and _all_positive(shown):
        _log_scale(ax)
    for signal in flagged:
        if signal.step is None:
            continue
        colour = SEVERITY_COLOURS[signal.severity]
        ax.axvline(signal.step, color=colour, linestyle="--", linewidth=0.9, alpha=0.8)
        since = episode_start(signal)
        if since is not None:  # where the episode began: a marker at its last step alone hides that
            ax.axvspan(since, signal.step, color=colour, alpha=0.12, linewidth=0)
        _ring(ax, next((s for s in shown if s.name == signal.metric), None), signal, colour)
    ax.set_ylabel(label + (" (log)" if ax.get_yscale() == "log" else ""), fontsize=8)
    ax.tick_params(which="both", labelsize=7)
    ax.grid(True, which="major", alpha=0.3)
    hidden = len(series) - len(shown)
    if len(shown) > 1 or hidden or non_finite or role is MetricRole.EVAL:
        ax.legend(fontsize=7, loc="best", title=f"+{hidden} more" if hidden else None, title_fontsize=7)
    return ax.get_yscale() == "log"


def _mark_non_finite(ax: Axes, steps: np.ndarray) -> bool:
    """Red crosses on the top edge at the NaN/Inf steps (at most MAX_NON_FINITE_MARKS, spread evenly);
    the legend gives the full count. True if any."""
    if not steps.size:
        return False
    shown = steps[np.linspace(0, steps.size - 1, min(steps.size, MAX_NON_FINITE_MARKS)).astype(int)]
    ax.plot(
        shown, np.full(shown.size, 0.97), linestyle="none", marker="x", color=NON_FINITE_COLOUR,
        markersize=5, transform=ax.get_xaxis_transform(), label=f"NaN/Inf ({steps.size:,})",
    )  # fmt: skip
    return True


def _log_scale(ax: Axes) -> None:
    """Log scale with plain numbers (0.3, 2, 100) rather than 3×10⁻¹; the minor ticks at 2, 3 and 5 × 10ᵏ
    get a label too while the axis spans at most MINOR_LABEL_DECADES (a flat loss spans less than one)."""
    from matplotlib.ticker import FuncFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda value, _pos: _minor_label(ax, value)))


def _minor_label(ax: Axes, value: float) -> str:
    low, high = ax.get_ylim()
    if value <= 0 or low <= 0 or math.log10(high / low) > MINOR_LABEL_DECADES:
        return ""
    mantissa = value / 10 ** math.floor(math.log10(value))
    return f"{value:g}" if any(math.isclose(mantissa, m, rel_tol=1e-6) for m in LABELLED_MANTISSAS) else ""


def _ring(ax: Axes, series: MetricSeries | None, signal: Signal, colour: str) -> None:
    """A ring on ``series`` at the stored point nearest the signal's step (finite points only)."""
    if series is None or signal.step is None:
        return
    finite = np.isfinite(series.values)
    steps, values = series.steps[finite], series.values[finite]
    if not steps.size:
        return
    at = int(np.argmin(np.abs(steps - signal.step)))
    ax.plot(
        [steps[at]], [values[at]], marker="o", markersize=9, markerfacecolor="none",
        markeredgecolor=colour, markeredgewidth=1.8, linestyle="none",
    )  # fmt: skip


def _step_label(series: list[MetricSeries]) -> str:
    """"step", saying from where every line shows logged values (the stored history keeps older points only
    as bucket means, which smooth noise away)."""
    exact_from = [int(s.steps[s.raw_from]) for s in series if 0 < s.raw_from < s.steps.size]
    return f"step (values as logged from step {max(exact_from):,}; earlier: bucket means)" if exact_from else "step"


def _all_positive(series: list[MetricSeries]) -> bool:
    values = [s.values[np.isfinite(s.values)] for s in series]
    return all(v.size == 0 or float(v.min()) > 0 for v in values) and any(v.size for v in values)


def _title(title: str, history: RunHistory, flagged: list[Signal]) -> str:
    step = history.last_step
    at = f" — step {step:,}" if step is not None else ""
    steps = {signal.step for signal in flagged}
    marks = f" — judge flagged {len(steps)} step(s)" if steps else ""
    return f"{title}{at}{marks}"
