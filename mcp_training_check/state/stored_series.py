"""Bounded per-metric history, as ``state`` stores it: recent points at full resolution, older ones in buckets.

Per metric: the newest ``recent_points`` values at full resolution (NaN/Inf kept), older ones folded into
at most ``max_buckets`` buckets. A bucket holds a run of consecutive points: its step is the last step in
it, its value the mean of its *finite* values (NaN when it had none), and it keeps exact counts (points,
finite) and its finite min and max with their steps, so counts and the all-time extremes stay exact however
far the history is downsampled. Buckets start one point wide; when full, adjacent pairs merge and the width
doubles. Pure numpy, no SQL: ``StateStore`` writes each metric as one row of these arrays' bytes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["BUCKET_DTYPE", "SeriesStats", "StoredSeries"]

BUCKET_DTYPE = np.dtype(
    [
        ("step", "<i8"),  # last step in the bucket
        ("sum", "<f8"),  # sum of its finite values (a sum, not a mean, so merging is exact addition)
        ("points", "<i8"),  # values in it, finite or not
        ("finite", "<i8"),  # finite values in it
        ("lo", "<f8"),  # smallest finite value (+inf when none) ...
        ("lo_step", "<i8"),  # ... and its earliest step
        ("hi", "<f8"),  # largest finite value (-inf when none) ...
        ("hi_step", "<i8"),  # ... and its earliest step
    ]
)


class SeriesStats(NamedTuple):
    total_points: int
    non_finite: int
    min_value: float | None
    min_step: int | None
    max_value: float | None
    max_step: int | None


def _last_write_wins(steps: np.ndarray) -> np.ndarray:
    """Mask of points no later point overrides: a later point at the same or an earlier step
    means the run re-logged that step or resumed from before it, so the earlier one is stale."""
    if steps.size == 0:
        return np.zeros(0, dtype=bool)
    later_min = np.minimum.accumulate(steps[::-1])[::-1]
    after = np.append(later_min[1:], np.iinfo(np.int64).max)
    return np.asarray(steps < after)


def _padded(array: np.ndarray, pad: int, fill: Any) -> np.ndarray:
    """``array`` followed by ``pad`` copies of ``fill`` (np.pad costs 50 µs a call, this 2)."""
    return np.concatenate([array, np.full(pad, fill, dtype=array.dtype)]) if pad else array


def _make_buckets(steps: np.ndarray, values: np.ndarray, width: int) -> np.ndarray:
    """Consecutive groups of ``width`` points (the last may be shorter) → buckets."""
    n = steps.size
    groups = -(-n // width)
    pad = groups * width - n
    finite = _padded(np.isfinite(values), pad, False).reshape(groups, width)
    vals = _padded(values, pad, 0.0).reshape(groups, width)
    stps = _padded(steps, pad, steps[-1]).reshape(groups, width)
    ends = np.minimum(np.arange(1, groups + 1) * width, n)
    rows = np.arange(groups)
    lo_src = np.where(finite, vals, np.inf)
    hi_src = np.where(finite, vals, -np.inf)
    lo_at, hi_at = lo_src.argmin(axis=1), hi_src.argmax(axis=1)
    out = np.empty(groups, dtype=BUCKET_DTYPE)
    out["step"] = steps[ends - 1]
    out["sum"] = np.where(finite, vals, 0.0).sum(axis=1)
    out["points"] = np.diff(np.append(0, ends))
    out["finite"] = finite.sum(axis=1)
    out["lo"], out["lo_step"] = lo_src[rows, lo_at], stps[rows, lo_at]
    out["hi"], out["hi_step"] = hi_src[rows, hi_at], stps[rows, hi_at]
    return out


def _combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bucket-wise union of equally long bucket arrays ``a`` (earlier) and ``b`` (later)."""
    out = np.empty(a.size, dtype=BUCKET_DTYPE)
    out["step"] = b["step"]
    for field in ("sum", "points", "finite"):
        out[field] = a[field] + b[field]
    take_a = a["lo"] <= b["lo"]  # ties keep the earlier step
    out["lo"], out["lo_step"] = (
        np.where(take_a, a["lo"], b["lo"]),
        np.where(take_a, a["lo_step"], b["lo_step"]),
    )
    take_a = a["hi"] >= b["hi"]
    out["hi"], out["hi_step"] = (
        np.where(take_a, a["hi"], b["hi"]),
        np.where(take_a, a["hi_step"], b["hi_step"]),
    )
    return out


def _merge_pairs(buckets: np.ndarray) -> np.ndarray:
    """Halve the bucket count: (0,1), (2,3), ... merge; an odd last bucket stays alone."""
    even = buckets.size - buckets.size % 2
    merged = _combine(buckets[0:even:2], buckets[1:even:2])
    return np.concatenate([merged, buckets[even:]])


class StoredSeries:
    """One metric's stored history: ``buckets`` (old, downsampled) then ``raw_*`` (recent, as logged)."""

    def __init__(
        self,
        raw_steps: np.ndarray,
        raw_values: np.ndarray,
        buckets: np.ndarray,
        bucket_width: int = 1,
        first_step: int | None = None,
    ) -> None:
        self.raw_steps = raw_steps
        self.raw_values = raw_values
        self.buckets = buckets
        self.bucket_width = bucket_width  # points a bucket may hold now; doubles on each pair merge
        self.first_step = first_step

    @classmethod
    def empty(cls) -> StoredSeries:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.float64), np.zeros(0, BUCKET_DTYPE))

    @staticmethod
    def bucket_means(buckets: np.ndarray) -> np.ndarray:
        """Mean of each bucket's finite values; NaN for a bucket that held only NaN/Inf."""
        means = np.full(buckets.size, np.nan)
        np.divide(buckets["sum"], buckets["finite"], out=means, where=buckets["finite"] > 0)
        return means

    def last_step(self) -> int | None:
        if self.raw_steps.size:
            return int(self.raw_steps[-1])
        return int(self.buckets["step"][-1]) if self.buckets.size else None

    def append(self, steps: np.ndarray, values: np.ndarray) -> None:
        """Append logged points; a step at or before the stored end first drops history from there."""
        steps = np.asarray(steps, dtype=np.int64)
        values = np.asarray(values, dtype=np.float64)
        if steps.ndim != 1 or steps.shape != values.shape:
            raise ValueError(f"a chunk needs 1-D steps and values of one length, got {steps.shape}, {values.shape}")
        keep = _last_write_wins(steps)
        steps, values = steps[keep], values[keep]
        if not steps.size:
            return
        last = self.last_step()
        if last is not None and steps[0] <= last:
            self.rewind(int(steps[0]))
        self.raw_steps = np.concatenate([self.raw_steps, steps])
        self.raw_values = np.concatenate([self.raw_values, values])
        if self.first_step is None:
            self.first_step = int(self.buckets["step"][0] if self.buckets.size else self.raw_steps[0])

    def rewind(self, step: int) -> None:
        """Drop every point at or after ``step``; a bucket reaching past ``step`` goes whole."""
        self.buckets = self.buckets[self.buckets["step"] < step]
        keep = self.raw_steps < step
        self.raw_steps, self.raw_values = self.raw_steps[keep], self.raw_values[keep]
        if not self.buckets.size and not self.raw_steps.size:
            self.first_step = None

    def evict(self, recent_points: int, max_buckets: int) -> None:
        """Fold points older than the newest ``recent_points`` into at most ``max_buckets`` buckets."""
        excess = self.raw_steps.size - recent_points
        if excess > 0:
            self._add_to_buckets(self.raw_steps[:excess], self.raw_values[:excess], max_buckets)
            self.raw_steps, self.raw_values = self.raw_steps[excess:], self.raw_values[excess:]

    def _open_room(self) -> int:
        """How many more points the last bucket takes at the current width."""
        if not self.buckets.size:
            return 0
        return max(self.bucket_width - int(self.buckets["points"][-1]), 0)

    def _add_to_buckets(self, steps: np.ndarray, values: np.ndarray, max_buckets: int) -> None:
        while True:  # widen first, so the new points land in buckets of the final width
            room = min(self._open_room(), steps.size)
            needed = self.buckets.size + -(-(steps.size - room) // self.bucket_width)
            if needed <= max_buckets:
                break
            self.buckets = _merge_pairs(self.buckets)
            self.bucket_width *= 2
        if room:
            head = _make_buckets(steps[:room], values[:room], room)
            self.buckets = np.concatenate([self.buckets[:-1], _combine(self.buckets[-1:], head)])
            steps, values = steps[room:], values[room:]
        if steps.size:
            self.buckets = np.concatenate([self.buckets, _make_buckets(steps, values, self.bucket_width)])

    def stats(self) -> SeriesStats:
        """Exact counts and all-time finite extremes (earliest step on ties) over buckets and raw."""
        b, finite = self.buckets, np.isfinite(self.raw_values)
        has = b["finite"] > 0
        lo_vals = np.concatenate([b["lo"][has], self.raw_values[finite]])
        lo_steps = np.concatenate([b["lo_step"][has], self.raw_steps[finite]])
        hi_vals = np.concatenate([b["hi"][has], self.raw_values[finite]])
        hi_steps = np.concatenate([b["hi_step"][has], self.raw_steps[finite]])
        total = int(b["points"].sum()) + self.raw_values.size
        non_finite = int((b["points"] - b["finite"]).sum()) + int((~finite).sum())
        if not lo_vals.size:
            return SeriesStats(total, non_finite, None, None, None, None)
        i, j = int(lo_vals.argmin()), int(hi_vals.argmax())
        return SeriesStats(total, non_finite, float(lo_vals[i]), int(lo_steps[i]), float(hi_vals[j]), int(hi_steps[j]))
