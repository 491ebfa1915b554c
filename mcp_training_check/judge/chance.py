"""The chance level of a classifier's loss when its config does not state the class count.

A model that predicts the uniform distribution over N classes logs a cross-entropy of ln N and an accuracy
of 1/N. When both sit there together, N is told by the run itself: ``round(e^loss)`` names it and the
accuracy confirms it (a loss at 2.30 with an accuracy at 0.09: ten classes, none learned).
"""

from __future__ import annotations

import numpy as np

from ..models import Direction, MetricRole
from ..roles import tokenize
from .context import JudgeContext
from .stats import finite_xy

ACCURACY_TOKENS = frozenset({"acc", "accuracy"})  # an accuracy logged beside the loss (``train/accuracy``)


def names_accuracy(name: str) -> bool:
    """Whether the metric's name says it is an accuracy (``val/acc``, ``metrics/accuracy_top1``)."""
    return bool(ACCURACY_TOKENS.intersection(tokenize(name)))

CHANCE_MIN_POINTS = 3
"""An accuracy is read from its 3rd point on, as the loss at chance is (the trend detector's
``chance_min_points``)."""

CHANCE_ACCURACY_TOLERANCE = 0.25
"""An accuracy whose median is within 25 % (relative) of 1/N is at chance among N classes: an accuracy at
chance measured on a few hundred examples has a sampling σ of √(p(1−p)/n) ≈ 0.024 at p = 0.1, n = 160,
a quarter of 1/10 (a fine-tuned classifier's first logged accuracies over 1,600 examples: 0.106 → 0.090)."""


def implied_class_count(ctx: JudgeContext, loss_level: float) -> int | None:
    """N when a loss at ``loss_level`` rounds to ln N (N ≥ 2) and an accuracy logged with it sits at 1/N."""
    count = round(float(np.exp(loss_level))) if np.isfinite(loss_level) and loss_level < 30 else 0
    if count < 2:
        return None
    for name, info in ctx.roles.items():
        if info.direction is not Direction.HIGHER or info.role not in (MetricRole.OTHER, MetricRole.EVAL):
            continue
        if not names_accuracy(name) or name not in ctx.history.metrics:
            continue
        series = ctx.history.metrics[name]
        _, values = finite_xy(series.steps, series.values)
        if values.size < CHANCE_MIN_POINTS:
            continue
        if abs(float(np.median(values)) * count - 1) <= CHANCE_ACCURACY_TOLERANCE:
            return count
    return None
