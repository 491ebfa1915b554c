"""The rules people use today, as baselines for the replay benchmark (written from their published
descriptions, not copied).

Each baseline turns a corpus run and its check cut steps into one decision per check.

- Per-step rules (the seed's, Lightning's callbacks, llm-foundry's callback) run inside the training
  loop and look at every logged point. A check decides ``stop`` when the rule fired at any logged step
  since the previous check (in the new data), else ``continue``: the most favourable reading for them,
  since a rule that fired once counts once and not at every later check.
- The W&B MCP server's trend rule is asked at each check about the series so far; its "stable" answer
  is its notion of unsure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from benchmarks.corpus_runs import Run, Series
from mcp_training_check.models import Decision, Direction
from mcp_training_check.roles import infer_role

SEED_INCREASING_STEPS = 10  # "loss increasing for N consecutive steps": N = 10 logged steps
SEED_SPIKE_VARIANCES = 10.0  # "spike > 10× normal variance": (x − mean)² > 10 × variance
SEED_WINDOW_STEPS = 100  # "normal" = mean and variance of the previous 100 logged steps
LIGHTNING_SPIKE_WINDOW = 10  # SpikeDetection(window=10): running mean of the previous 10 losses
LIGHTNING_SPIKE_RTOL = 2.0  # SpikeDetection(rtol=2.0): (loss − mean) / mean > 2 is a spike
LIGHTNING_PATIENCE_EVALS = 3  # EarlyStopping's default patience, counted in validation runs
FOUNDRY_MIN_WINDOW = 100  # KillLossSpike: window = max(100, 5 % of the run)
FOUNDRY_WINDOW_SHARE = 0.05
FOUNDRY_MULTIPLIER = 2.0  # an outlier is ≥ 2 × the window's mean
FOUNDRY_PATIENCE = 4  # killed after more than 4 consecutive outliers
WANDB_TREND_CHANGE = 0.05  # W&B MCP server: second half ±5 % of the first half → increasing / decreasing

Rule = Callable[[Run, list[int]], list[Decision]]


def _train_loss(run: Run) -> Series:
    """The run's train loss; empty for a run that logs only evals (corpus_real/), where per-step loss
    rules have nothing to fire on."""
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0))
    return run.metrics.get("train/loss", empty)


def _monitored_eval(run: Run) -> Series:
    """What an early-stopping rule monitors: ``eval/loss``, else the first eval metric, turned so that
    lower is better (EarlyStopping's ``mode="max"`` for accuracy-like metrics)."""
    if "eval/loss" in run.metrics:
        return run.metrics["eval/loss"]
    for name, (steps, values) in run.metrics.items():
        if name.startswith("eval/"):
            return steps, (-values if infer_role(name).direction is Direction.HIGHER else values)
    return np.zeros(0, dtype=np.int64), np.zeros(0)


def _per_check(steps: np.ndarray, fired: np.ndarray, cuts: Sequence[int]) -> list[Decision]:
    """``stop`` at a check when the rule fired at a step after the previous cut and up to this one."""
    fired_steps = steps[fired]
    out, prev = [], -np.inf
    for cut in cuts:
        hit = bool(np.any((fired_steps > prev) & (fired_steps <= cut)))
        out.append(Decision.STOP if hit else Decision.CONTINUE)
        prev = cut
    return out


def _rolling_previous(x: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of the ``window`` points before each point (NaN before a full window)."""
    mean = np.full(x.size, np.nan)
    var = np.full(x.size, np.nan)
    if x.size > window:
        views = sliding_window_view(x[:-1], window)
        with np.errstate(invalid="ignore", over="ignore"):
            mean[window:] = views.mean(axis=1)
            var[window:] = views.var(axis=1)
    return mean, var


def _consecutive(mask: np.ndarray) -> np.ndarray:
    """Length of the run of True ending at each index."""
    out = np.zeros(mask.size, dtype=np.int64)
    count = 0
    for i, m in enumerate(mask.tolist()):
        count = count + 1 if m else 0
        out[i] = count
    return out


def seed_rules(run: Run, cuts: list[int]) -> list[Decision]:
    """The seed's table taken literally: NaN/Inf loss; loss increasing for N consecutive logged steps;
    a point whose squared deviation from the recent mean exceeds 10 × the recent variance."""
    steps, loss = _train_loss(run)
    with np.errstate(invalid="ignore"):
        increasing = _consecutive(np.diff(loss, prepend=np.nan) > 0) >= SEED_INCREASING_STEPS
        mean, var = _rolling_previous(loss, SEED_WINDOW_STEPS)
        spike = (loss - mean) ** 2 > SEED_SPIKE_VARIANCES * var
    fired = ~np.isfinite(loss) | increasing | spike
    return _per_check(steps, fired, cuts)


def lightning(run: Run, cuts: list[int]) -> list[Decision]:
    """``EarlyStopping(monitor="eval/loss", check_finite=True, divergence_threshold=<first eval loss>,
    patience=3)`` checked after every evaluation, plus ``SpikeDetection(window=10, rtol=2.0)`` on every
    train loss (a non-finite loss is a spike too, ``finite_only=True``)."""
    steps, loss = _train_loss(run)
    mean = np.full(loss.size, np.nan)
    w = LIGHTNING_SPIKE_WINDOW
    if loss.size > w:
        mean[w:] = sliding_window_view(loss[:-1], w).mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):  # a mean of 0 (a loss logged as 0.0): inf, a spike
        spike = ((loss - mean) / mean > LIGHTNING_SPIKE_RTOL) | ~np.isfinite(loss)
    eval_steps, eval_loss = _monitored_eval(run)
    early = _early_stopping(eval_loss)
    all_steps = np.concatenate((steps, eval_steps))
    fired = np.concatenate((spike, early))
    order = np.argsort(all_steps, kind="stable")
    return _per_check(all_steps[order], fired[order], cuts)


def _early_stopping(values: np.ndarray) -> np.ndarray:
    """Lightning EarlyStopping in mode "min" with min_delta 0, at each evaluation."""
    fired = np.zeros(values.size, dtype=bool)
    if values.size == 0:
        return fired
    threshold = float(values[0])  # divergence: worse than the untrained model's eval loss
    best, wait = np.inf, 0
    for i, v in enumerate(values.tolist()):
        if not np.isfinite(v) or (i > 0 and v > threshold):
            fired[i] = True
            continue
        if v < best:
            best, wait = v, 0
        else:
            wait += 1
            fired[i] = wait >= LIGHTNING_PATIENCE_EVALS
    return fired


def llm_foundry(run: Run, cuts: list[int]) -> list[Decision]:
    """llm-foundry ``KillLossSpike``: window max(100, 5 % of the run's steps); a loss ≥ 2 × the window's
    mean is an outlier; more than 4 consecutive outliers kill the run."""
    steps, loss = _train_loss(run)
    total = int(run.config.get("total_steps") or run.last_step)
    window = max(FOUNDRY_MIN_WINDOW, int(FOUNDRY_WINDOW_SHARE * total))
    mean, _ = _rolling_previous(loss, window)
    with np.errstate(invalid="ignore"):
        outlier = loss >= FOUNDRY_MULTIPLIER * mean
    fired = _consecutive(outlier) > FOUNDRY_PATIENCE
    return _per_check(steps, fired, cuts)


def wandb_trend(run: Run, cuts: list[int]) -> list[Decision]:
    """W&B MCP server's trend: mean of the second half vs the first half of the loss so far;
    +5 % → increasing (stop), −5 % → decreasing (continue), else stable (unsure). A run without train
    loss is asked about its monitored eval metric (turned so that lower is better)."""
    steps, loss = run.metrics["train/loss"] if "train/loss" in run.metrics else _monitored_eval(run)
    out = []
    for cut in cuts:
        y = loss[: int(np.searchsorted(steps, cut, side="right"))]
        if y.size < 2:
            out.append(Decision.CONTINUE)
            continue
        half = y.size // 2
        first, second = float(np.mean(y[:half])), float(np.mean(y[half:]))
        if second > first * (1 + WANDB_TREND_CHANGE):
            out.append(Decision.STOP)
        elif second < first * (1 - WANDB_TREND_CHANGE):
            out.append(Decision.CONTINUE)
        else:
            out.append(Decision.UNSURE)
    return out


BASELINES: dict[str, Rule] = {
    "seed rules (literal)": seed_rules,
    "Lightning EarlyStopping + SpikeDetection": lightning,
    "llm-foundry KillLossSpike": llm_foundry,
    "W&B MCP trend (±5 % halves)": wandb_trend,
}
