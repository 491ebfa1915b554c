"""Robust statistics: rolling windows against naive loops, Theil–Sen against known slopes."""

from __future__ import annotations

import numpy as np
import pytest

from mcp_training_check.judge.stats import (
    falling_pairs_share,
    fmt,
    fmt_move,
    fmt_step,
    previous_median_mad,
    rolling_median,
    runs,
    strictly_falling,
    strictly_rising,
    theil_sen,
    trailing_run,
)
from tests.test_judge_helpers import ar1, make_series, run_judge


@pytest.mark.parametrize(
    ("mask", "expected"),
    [([], 0), ([False], 0), ([True], 1), ([True, False, True, True], 2), ([True] * 5, 5), ([True, False], 0)],
)
def test_trailing_run(mask, expected):
    assert trailing_run(np.array(mask, dtype=bool)) == expected


@pytest.mark.parametrize(
    ("mask", "expected"),
    [([], []), ([True, True, False, True], [(0, 2), (3, 4)]), ([False, True, True, True, False], [(1, 4)])],
)
def test_runs(mask, expected):
    assert runs(np.array(mask, dtype=bool)) == expected


@pytest.mark.parametrize(
    ("values", "falling", "rising"),
    [
        ([], True, True),  # vacuous below 2 points: callers ask for the count they need
        ([3.0], True, True),
        ([3.0, 2.0, 1.0], True, False),
        ([1.0, 2.0, 3.0], False, True),
        ([3.0, 3.0, 1.0], False, False),  # a repeat is neither
        ([3.0, float("nan"), 1.0], False, False),
    ],
)
def test_strictly_falling_and_rising(values, falling, rising):
    x = np.array(values, dtype=np.float64)
    assert (strictly_falling(x), strictly_rising(x)) == (falling, rising)


@pytest.mark.parametrize("window", [1, 4, 5, 20])
def test_rolling_median_matches_a_naive_loop_after_the_head(window):
    x = np.random.default_rng(1).normal(size=60)
    got = rolling_median(x, window)
    naive = [np.median(x[i - window + 1 : i + 1]) for i in range(window - 1, x.size)]
    np.testing.assert_allclose(got[window - 1 :], naive)
    assert np.all(got[: window - 1] == got[window - 1])


def test_previous_median_mad_uses_only_earlier_points():
    x = np.random.default_rng(2).normal(size=40)
    med, mad, start = previous_median_mad(x, 10)
    assert start == 10 and med.size == 30
    for k in (0, 7, 29):
        before = x[k : k + 10]
        assert med[k] == pytest.approx(np.median(before))
        assert mad[k] == pytest.approx(np.median(np.abs(before - np.median(before))))


def test_previous_median_mad_with_a_min_window_scores_a_short_series_from_there():
    """A series shorter than the window is scored from ``min_window`` on, each point against all before it."""
    x = np.array([5.0, 1.0, 1.1, 6.0, 1.2, 0.9, 1.0, 7.0])
    med, mad, start = previous_median_mad(x, 50, min_window=3)
    assert start == 3 and med.size == 5
    for k, i in enumerate(range(3, 8)):
        assert med[k] == pytest.approx(np.median(x[:i]))
        assert mad[k] == pytest.approx(np.median(np.abs(x[:i] - np.median(x[:i]))))
    assert previous_median_mad(x, 50)[2] == 7  # without it: the last point only


@pytest.mark.parametrize(("true_slope", "direction"), [(-0.01, "falling"), (0.0, "none"), (0.01, "rising")])
def test_theil_sen_finds_the_slope_and_its_sign(true_slope, direction):
    x = np.arange(200.0)
    y = true_slope * x + np.random.default_rng(3).normal(0, 0.2, 200)
    trend = theil_sen(x, y)
    assert trend is not None
    assert trend.low <= true_slope <= trend.high
    assert trend.slope == pytest.approx(true_slope, abs=0.003)
    assert (trend.rising, trend.falling) == (direction == "rising", direction == "falling")


def test_theil_sen_ignores_outliers():
    x = np.arange(100.0)
    y = 0.05 * x
    y[[10, 40, 70]] += 100.0
    trend = theil_sen(x, y)
    assert trend is not None and trend.slope == pytest.approx(0.05, rel=1e-6)


def test_autocorrelation_shrinks_the_effective_sample():
    x = np.arange(128.0)
    rng = np.random.default_rng(4)
    iid = theil_sen(x, rng.normal(0, 0.1, 128))
    correlated = theil_sen(x, ar1(128, 0.1, 0.9, rng))
    assert iid is not None and correlated is not None
    assert iid.n_effective > 0.6 * iid.n
    assert correlated.n_effective < 0.25 * correlated.n


def test_autocorrelated_noise_is_rarely_called_a_trend():
    """Pure AR(1) noise with ρ=0.8: a nominal 5 % test stays under 20 % (uncorrected it is ~50 %)."""
    rng = np.random.default_rng(5)
    x = np.arange(100.0)
    flagged = sum(
        1 for _ in range(100) if (t := theil_sen(x, ar1(100, 0.1, 0.8, rng))) and (t.rising or t.falling)
    )
    assert flagged < 20


def test_theil_sen_needs_four_points():
    assert theil_sen(np.arange(3.0), np.arange(3.0)) is None
    assert theil_sen(np.zeros(10), np.arange(10.0)) is None


@pytest.mark.parametrize(
    ("value", "text"),
    [(2.2912, "2.29"), (12340.0, "12,340"), (3e-5, "3.00e-05"), (float("nan"), "nan"), (None, "n/a")],
)
def test_fmt(value, text):
    assert fmt(value) == text


def test_fmt_step():
    assert fmt_step(12340) == "12,340"


def test_falling_pairs_share_counts_pairs_in_falling_order():
    assert falling_pairs_share(np.array([4.0, 3.0, 2.0, 1.0])) == pytest.approx(1.0)
    assert falling_pairs_share(np.array([1.0, 2.0, 3.0])) == pytest.approx(0.0)
    assert falling_pairs_share(np.array([3.0, 1.0, 2.0])) == pytest.approx(2 / 3)  # (3,1), (3,2) fall; (1,2) rises
    assert falling_pairs_share(np.array([2.0, 2.0])) == pytest.approx(0.0)  # a tie is not falling
    assert falling_pairs_share(np.array([1.0])) == pytest.approx(0.0)


def test_percentages_stay_readable_at_any_size() -> None:
    """A blow-up of a tiny loss printed "+111509099%" (issue found by trying the CLI as a new user)."""
    from mcp_training_check.judge.stats import fmt_pct

    assert [fmt_pct(x) for x in (0.0123, -0.05, 0.5, 12.3, 250.0, 1115090.99)] == [
        "1.2%", "-5.0%", "50%", "1,230%", "25,000%", "1.1e+08%",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("first", "last", "text"),
    [
        (10.14, 10.11, "10.14 → 10.11"),
        (2.2912, 1.1, "2.29 → 1.1"),
        (1.3551, 1.3552, "1.3551 → 1.3552"),
        (0.5, 0.5, "0.5 → 0.5"),
        (2.0, float("nan"), "2 → nan"),
    ],
)
def test_fmt_move_shows_the_figures_that_tell_the_ends_apart(first, last, text):
    assert fmt_move(first, last) == text


def test_a_loss_improving_by_little_never_reads_as_the_same_number_twice():
    """A recommender's loss at ln 26,744 = 10.194 falling under 1 % over a run (corpus_real log-tl-connrlin-1) was
    "train/loss improving: 10.1 → 10.1"."""
    rng = np.random.default_rng(5)
    loss = 10.10 + 0.094 * np.exp(-np.arange(135) / 40) + rng.normal(0, 0.003, 135)
    verdict = run_judge(make_series("train/loss", loss, np.arange(135) * 100))
    moved = [s.message for s in verdict.signals if "→" in s.message and s.metric == "train/loss"]
    assert moved, verdict.signals
    for message in moved:
        before, after = message.split(" → ", 1)
        assert before.split()[-1] != after.split()[0], message
