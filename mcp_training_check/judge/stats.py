"""Robust statistics the detectors share, vectorised with numpy (no Python loops over points).

Everything here works on plain arrays: rolling medians and MADs over the *previous* points,
robust z-scores, trailing run lengths, and a Theil–Sen slope with a Mann–Kendall confidence band
whose variance is inflated for autocorrelation (training losses are strongly autocorrelated,
so the naive band is far too narrow; Hamed–Rao's effective sample size widens it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

MAD_TO_SIGMA = 1.4826  # MAD × this estimates σ for normal noise
MAX_TREND_POINTS = 128  # Theil–Sen is O(n²): longer windows are thinned evenly to this many points


def finite_xy(steps: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Steps and values where the value is finite."""
    mask = np.isfinite(values)
    return steps[mask], values[mask].astype(np.float64)


def positive_log(values: np.ndarray) -> np.ndarray:
    """log(values) with non-positive values clamped to the smallest positive value (losses ≥ 0)."""
    pos = values[values > 0]
    floor = float(pos.min()) if pos.size else 1e-12
    return np.log(np.maximum(values, floor))


def median_rows(a: np.ndarray) -> np.ndarray:
    """Median of each row of a 2-D array (partition-based: cheaper than ``np.median`` for small rows)."""
    w = a.shape[1]
    lo, hi = (w - 1) // 2, w // 2
    part = np.partition(a, [lo, hi], axis=1)
    return part[:, lo] if lo == hi else 0.5 * (part[:, lo] + part[:, hi])


def rolling_median(x: np.ndarray, window: int) -> np.ndarray:
    """Median of ``x[i-window+1 : i+1]``; the first ``window-1`` entries repeat the first full window's."""
    n = x.size
    if n == 0:
        return x.astype(np.float64)
    w = max(1, min(window, n))
    full = median_rows(sliding_window_view(x, w))
    return np.concatenate((np.full(w - 1, full[0]), full))


def previous_median_mad(
    x: np.ndarray, window: int, min_window: int | None = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """Median and MAD of the ``window`` points *before* each point, for points ``start`` onwards.

    Returns ``(median, mad, start)`` where ``median[k]`` belongs to ``x[start + k]``. With ``min_window``,
    the points from ``min_window`` on that have fewer than ``window`` points before them are scored too,
    each against all the points before it (else a series shorter than the window is scored at its last
    point only).
    """
    w = max(1, min(window, x.size - 1))
    if x.size <= w:
        empty = np.empty(0)
        return empty, empty, x.size
    windows = sliding_window_view(x[:-1], w)  # windows[k] = x[k : k+w], the points before x[k+w]
    med = median_rows(windows)
    mad = median_rows(np.abs(windows - med[:, None]))
    if min_window is None or min_window >= w:
        return med, mad, w
    start = max(1, min_window)
    head_med = np.array([np.median(x[:i]) for i in range(start, w)])  # at most ``window`` short windows
    head_mad = np.array([np.median(np.abs(x[:i] - m)) for i, m in zip(range(start, w), head_med, strict=True)])
    return np.concatenate((head_med, med)), np.concatenate((head_mad, mad)), start


def robust_sigma(x: np.ndarray) -> float:
    """σ estimated from the MAD of first differences / √2 (insensitive to slow trends)."""
    if x.size < 3:
        return 0.0
    d = np.diff(x)
    return float(MAD_TO_SIGMA * np.median(np.abs(d - np.median(d))) / np.sqrt(2.0))


def strictly_falling(x: np.ndarray) -> bool:
    """Every point lower than the one before (NaN breaks it); vacuously true below 2 points, so callers that
    need a fall say how many points they ask for."""
    return bool(np.all(np.diff(x) < 0))


def strictly_rising(x: np.ndarray) -> bool:
    """Every point higher than the one before (NaN breaks it); vacuously true below 2 points, as
    `strictly_falling`."""
    return bool(np.all(np.diff(x) > 0))


def trailing_run(mask: np.ndarray) -> int:
    """How many entries at the end of ``mask`` are True in a row."""
    if mask.size == 0 or not mask[-1]:
        return 0
    false_idx = np.flatnonzero(~mask)
    return int(mask.size - 1 - false_idx[-1]) if false_idx.size else int(mask.size)


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """Half-open ``(start, end)`` index ranges where ``mask`` is True."""
    padded = np.concatenate(([False], mask.astype(bool), [False]))
    edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


@dataclass(frozen=True)
class Trend:
    """Theil–Sen slope of y against x with a confidence band, plus the Mann–Kendall z."""

    slope: float  # per unit of x
    low: float  # lower end of the confidence band
    high: float  # upper end
    z: float  # Mann–Kendall z after the autocorrelation correction
    n: int  # points used
    n_effective: float  # points after the autocorrelation correction

    @property
    def rising(self) -> bool:
        return self.low > 0

    @property
    def falling(self) -> bool:
        return self.high < 0


@lru_cache(maxsize=8)
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(n, k=1)


def _thin(x: np.ndarray, y: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    if x.size <= limit:
        return x, y
    idx = np.linspace(0, x.size - 1, limit).round().astype(np.int64)
    return x[idx], y[idx]


def _variance_inflation(residuals: np.ndarray, z_significant: float = 1.96) -> float:
    """Hamed–Rao (1998) factor n/n* from the significant autocorrelations of the residuals' ranks.

    n/n* = 1 + 2 / (n(n−1)(n−2)) · Σ_k (n−k)(n−k−1)(n−k−2) ρ_k over lags k whose ρ_k lies outside
    ±z/√n. Floored at 1: negative autocorrelation never makes the band narrower than the iid one.
    """
    n = residuals.size
    if n < 8:
        return 1.0
    ranks = np.argsort(np.argsort(residuals)).astype(np.float64)
    r = ranks - ranks.mean()
    full = np.correlate(r, r, mode="full")[n - 1 :]
    rho = full[1:] / full[0]
    k = np.arange(1, n, dtype=np.float64)
    weights = (n - k) * (n - k - 1) * (n - k - 2)
    significant = np.abs(rho) > z_significant / np.sqrt(n)
    significant[n // 3 :] = False  # long lags are estimated from too few pairs
    factor = 1 + 2 / (n * (n - 1) * (n - 2)) * float(np.sum(weights * rho * significant))
    # Short windows underestimate ρ (bias ≈ −(1+3ρ)/n), and Hamed–Rao drops lags it cannot prove:
    # an AR(1) factor from the bias-corrected lag-1 ρ is a floor under it.
    rho1 = min(max(float(rho[0]) + (1 + 3 * float(rho[0])) / n, 0.0), 0.95)
    return max(factor, (1 + rho1) / (1 - rho1), 1.0)


def theil_sen(x: np.ndarray, y: np.ndarray, *, confidence_z: float = 1.96) -> Trend | None:
    """Theil–Sen slope with Sen's rank-based band; Mann–Kendall variance corrected à la Hamed–Rao.

    ``confidence_z`` is the two-sided normal quantile of the band (1.96 → 95 %).
    Returns None with fewer than 4 points or no spread in x.
    """
    x, y = _thin(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64), MAX_TREND_POINTS)
    n = x.size
    if n < 4 or x[-1] == x[0]:
        return None
    i, j = _pairs(n)
    dx = x[j] - x[i]
    keep = dx != 0
    slopes = (y[j] - y[i])[keep] / dx[keep]
    m = slopes.size
    inflation = _variance_inflation(y - float(np.median(slopes)) * x)
    var_s = n * (n - 1) * (2 * n + 5) / 18.0 * inflation
    s = float(np.sign(y[j] - y[i]).sum())
    z = (s - np.sign(s)) / np.sqrt(var_s) if s != 0 else 0.0
    c = confidence_z * np.sqrt(var_s)
    lo_idx = int(np.clip(np.floor((m - c) / 2.0), 0, m - 1))
    hi_idx = int(np.clip(np.ceil((m + c) / 2.0), 0, m - 1))
    mid_lo, mid_hi = (m - 1) // 2, m // 2
    part = np.partition(slopes, sorted({lo_idx, mid_lo, mid_hi, hi_idx}))
    slope = 0.5 * float(part[mid_lo] + part[mid_hi])
    return Trend(slope, float(part[lo_idx]), float(part[hi_idx]), float(z), n, n / inflation)


def fmt(value: float | None) -> str:
    """A number for a message: three significant figures, scientific when tiny or huge."""
    if value is None:
        return "n/a"
    if not np.isfinite(value):
        return str(value).lower()
    a = abs(value)
    if a != 0 and (a < 1e-3 or a >= 1e6):
        return f"{value:.2e}"
    return f"{value:.3g}" if a < 1000 else f"{value:,.0f}"


def fmt_move(first: float, last: float) -> str:
    """"first → last" with the figures it takes to tell them apart (up to six): a loss at 10.194 that fell to
    10.108 reads "10.19 → 10.11", not "10.1 → 10.1" beside the word "improving"."""
    a, b = fmt(first), fmt(last)
    if a != b or first == last or not (np.isfinite(first) and np.isfinite(last)):
        return f"{a} → {b}"
    for digits in range(4, 7):
        a, b = f"{first:.{digits}g}", f"{last:.{digits}g}"
        if a != b:
            break
    return f"{a} → {b}"


def fmt_step(step: int | None) -> str:
    return "n/a" if step is None else f"{int(step):,}"


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:.1f}×" if ratio < 100 else f"{ratio:,.0f}×"


def fmt_pct(fraction: float) -> str:
    """0.0123 → "1.2%", 0.5 → "50%", 12.3 → "1,230%"; from 10,000× on in powers of ten ("1.1e+08%"), as a blow-up
    of a tiny loss would otherwise print nine digits."""
    if abs(fraction) >= 1e4:
        return f"{100 * fraction:.2g}%"
    return f"{100 * fraction:,.0f}%" if abs(fraction) >= 0.1 else f"{100 * fraction:.1f}%"


FROZEN_MIN_DIGITS = 4
"""A value repeated exactly says "frozen" only when it carries this many significant digits: an accuracy of
0.001 or a WER of 1.0 or 0.977 repeats whenever the model outputs the same nothing, an FID of 646.082 or a
loss of 14.5063 does not."""


def significant_digits(value: float) -> int:
    """The fewest significant digits that write ``value`` exactly (0.001 → 1, 646.082 → 6)."""
    for digits in range(1, 17):
        if float(f"{value:.{digits}g}") == value:
            return digits
    return 17


def eval_set_size(values: np.ndarray, max_samples: int) -> int | None:
    """The fewest samples ``n`` ≤ ``max_samples`` whose every fraction k/n gives ``values`` exactly (an accuracy on
    5 samples logs only 0, 0.2, 0.4, …), or None when ``values`` are no such fractions (a larger eval set, or
    not a fraction at all)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0 or not np.all((x >= 0) & (x <= 1)):
        return None
    for n in range(1, max_samples + 1):
        if np.all(np.abs(x * n - np.round(x * n)) <= 1e-6 * n):
            return n
    return None


def fisher_fewer(right: int, n: int, right_after: int, n_after: int) -> float:
    """One-sided Fisher exact test: the chance that ``n_after`` samples score as few right as ``right_after`` (or
    fewer) when they and the ``n`` that scored ``right`` share one success rate (hypergeometric: of the
    ``right + right_after`` right answers, ≥ ``right`` fall among the first ``n``)."""
    total_right, total = right + right_after, n + n_after
    ways = math.comb(total, total_right)
    tail = sum(math.comb(n, k) * math.comb(n_after, total_right - k) for k in range(right, min(n, total_right) + 1))
    return tail / ways if ways else 1.0


def is_frozen(values: np.ndarray) -> bool:
    """Every value identical to the last digit, and carrying ``FROZEN_MIN_DIGITS`` digits: what a metric of
    a model whose output does not change logs (a learning model's loss or eval never repeats itself exactly)."""
    repeated = values.size > 1 and bool(np.all(values == values[0]))
    return repeated and significant_digits(float(values[0])) >= FROZEN_MIN_DIGITS


def end_thirds(values: np.ndarray) -> tuple[float, float]:
    """The medians of the first and of the last third of ``values`` (one value each at least): where a series
    started and where it is now, each robust to a point's noise."""
    third = max(values.size // 3, 1)
    return float(np.median(values[:third])), float(np.median(values[-third:]))


def falling_pairs_share(values: np.ndarray) -> float:
    """The share of pairs of ``values`` (each earlier one against each later one) in falling order: 1 when every
    value is below every earlier one; Kendall's τ against their order is 1 − 2 × it, without ties."""
    y = np.asarray(values, dtype=np.float64)
    if y.size < 2:
        return 0.0
    later_below = np.triu(y[None, :] < y[:, None], k=1)  # [i, j]: y[j] < y[i] for j > i, one byte a pair
    return float(later_below.sum()) / (y.size * (y.size - 1) / 2)
