"""The in-memory view of a run's stored metrics that the judge and the snapshot work on.

`state.StateStore.load_history` builds these; nothing here touches the disk. Old history is kept
downsampled (bucket means) and recent points at full resolution, so a run of any length fits in a
bounded size: ``steps[:raw_from]`` are bucket means, ``steps[raw_from:]`` are the values as logged.

A long run's first check reads only an overview (a sample) of its older history; until later checks
have re-read it exactly, ``RunHistory.exact_from`` is the first step whose points are exact. Points
before it are real values, but not all of them: counts and extremes there are the sample's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..models import RunInfo


@dataclass
class MetricSeries:
    name: str
    steps: np.ndarray  # int64, strictly increasing
    values: np.ndarray  # float64; NaN/Inf kept in the full-resolution part
    raw_from: int = 0  # index where full-resolution points begin
    total_points: int = 0  # every value ever read for this metric, including downsampled ones
    non_finite: int = 0  # NaN/Inf values ever read
    new_points: int = 0  # how many values arrived in the latest read
    first_step: int | None = None
    # all-time finite extremes (kept exactly even when old points are downsampled)
    min_value: float | None = None
    min_step: int | None = None
    max_value: float | None = None
    max_step: int | None = None

    @property
    def raw_steps(self) -> np.ndarray:
        return self.steps[self.raw_from :]

    @property
    def raw_values(self) -> np.ndarray:
        return self.values[self.raw_from :]

    @property
    def last_step(self) -> int | None:
        return int(self.steps[-1]) if self.steps.size else None

    @property
    def last_value(self) -> float | None:
        return float(self.values[-1]) if self.values.size else None


@dataclass
class RunHistory:
    run_key: str
    metrics: dict[str, MetricSeries] = field(default_factory=dict)
    info: RunInfo = field(default_factory=RunInfo)
    exact_from: int | None = None  # steps before it are an overview (sampled); None: all history is exact

    def is_exact(self, step: int | None) -> bool:
        """Whether the history at ``step`` was read exactly (not only sampled)."""
        return self.exact_from is None or (step is not None and step >= self.exact_from)

    @property
    def last_step(self) -> int | None:
        steps = [s.last_step for s in self.metrics.values() if s.last_step is not None]
        return max(steps) if steps else None
