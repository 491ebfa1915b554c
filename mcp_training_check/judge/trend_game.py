"""A GAN's adversarial game that is not being played: a discriminator loss holding one value at every print, or
one that has won (its loss near zero while its generator's adversarial loss does not fall)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..models import Direction, MetricRole, Severity, Signal, SignalKind
from ..roles import DISCRIMINATOR_TOKENS, is_discriminator, tokenize
from .context import PLATEAU_EVIDENCE, JudgeContext, signal
from .stats import finite_xy, fmt, fmt_move, fmt_pct, fmt_step
from .trend_base import LossTrendBase

GENERATOR_TOKENS = frozenset({"g", "gen", "generator"})
"""The word that names a GAN generator's metric where a discriminator's has ``d`` (``G_A`` beside ``D_A``,
``g_loss`` beside ``d_loss``)."""
GENERATOR_ADVERSARIAL_TOKENS = frozenset({"gan", "adv", "adversarial"})
"""With a generator word, the generator's adversarial term when no metric mirrors the discriminator's name
(pix2pix logs ``D_real`` and ``D_fake`` beside ``G_GAN``)."""

FROZEN_GAME = "frozen_game"
"""Evidence key of a frozen-discriminator signal: the next check reads it to confirm the game is still frozen."""

GAME_SPREAD_PERCENTILES = (10.0, 90.0)
"""A discriminator loss's spread is read between these percentiles of its prints: one outlier print (a
checkpoint's reload, a first batch) does not widen it."""


class GameTests(LossTrendBase):
    """A discriminator loss frozen at one value (`_frozen_game`) or won (`_won_game`); thresholds in
    ``LossTrendBase``."""

    def _frozen_game(self, ctx: JudgeContext) -> list[Signal]:
        """In a GAN, a discriminator metric (`roles.is_discriminator`: ``disc``, ``D_A``, ``loss_D``) whose prints,
        ≥ ``game_min_points`` of them, all sit within ``game_spread_fraction`` of its median level (the 10th to
        90th percentile over the median's size) is a warning, never a stop: a discriminator whose output does not
        depend on its input has a fixed loss (an LSGAN's outputs held at one value, a BCE's at 0.5: 2 ln 2), and
        gives the generator no adversarial signal, whatever its other terms do. In a healthy GAN the
        discriminator's loss swings from batch to batch as the two players trade. The first such metric only. A
        doubt for a reviewer (`PLATEAU_EVIDENCE`), not a not-learning finding: it confirms no stop of a train loss
        that is the discriminator's. Critical (`_dead_game`) when the previous check found it frozen too and no
        other metric of the run has moved ``stuck_drop_fraction`` from its start: a game that never started in a
        run where nothing else learns either."""
        if self.game_spread_fraction is None:
            return []
        for name, steps, values in _discriminators(ctx, self.game_min_points):
            level = float(np.median(values))
            low, high = (float(v) for v in np.percentile(values, GAME_SPREAD_PERCENTILES))
            spread = (high - low) / abs(level) if level != 0 else np.inf
            if spread > self.game_spread_fraction:
                continue
            msg = (
                f"{name} holds one value over its {values.size} prints (steps {fmt_step(int(steps[0]))}–"
                f"{fmt_step(int(steps[-1]))}): they sit at {fmt(level)}, 10th to 90th percentile {fmt(low)}–"
                f"{fmt(high)}, a spread of {fmt_pct(spread)} of its level (threshold "
                f"{fmt_pct(self.game_spread_fraction)}): a discriminator whose output does not depend on its input "
                "gives the generator no adversarial signal; the game is not being played"
            )
            evidence = {"spread": spread, "points": values.size, "since_step": int(steps[0]), FROZEN_GAME: spread}
            dead = self._dead_game(ctx, name, int(steps[-1]))
            if dead:
                return [signal(SignalKind.FLAT, Severity.CRITICAL, f"{msg}, {dead}.", metric=name,
                               step=int(steps[-1]), **evidence)]  # fmt: skip
            return [
                signal(SignalKind.FLAT, Severity.WARNING, f"{msg}, worth a look.", metric=name, step=int(steps[-1]),
                       **evidence, **{PLATEAU_EVIDENCE: spread})
            ]  # fmt: skip
        return []

    def _dead_game(self, ctx: JudgeContext, name: str, last: int) -> str:
        """Why a frozen discriminator is a stop, or "": the previous check (with prints since) found it frozen
        too, and no other metric of the run (`_learning_metric`) has moved ``stuck_drop_fraction`` from its
        start. A frozen discriminator alone is a flag, since the rest of a GAN can still learn on its
        reconstruction terms (log-conditional-style-transfer-1, ambiguous: its adversarial pair at 1.00 for 1.2M
        iterations while its identity loss falls 2.4 → 0.4); with nothing else moving, no part of the run is
        training, the run the issue's "stuck at its initial loss, then stopped when it persists" names
        (log-lz-aloilor-1, bad: a wavelet diffusion GAN's discriminator at 1.384–1.390, 2 ln 2, for all 448
        prints while its generator's loss stays within 3 % of its first value: unsure at every check)."""
        prev = ctx.previous_signal(SignalKind.FLAT, name)
        if prev is None or FROZEN_GAME not in prev.evidence or prev.step is None or prev.step >= last:
            return ""
        if _learning_metric(ctx, name, self.game_min_points, self.stuck_drop_fraction):
            return ""
        return (
            f"as at the previous check, and no other metric of the run has moved {fmt_pct(self.stuck_drop_fraction)} "
            "from its start (medians of its first and last prints): nothing in this run is training"
        )

    def _won_game(self, ctx: JudgeContext) -> list[Signal]:
        """In a GAN, a discriminator loss (never below zero: a WGAN critic's signed estimate is no such loss)
        whose last ``game_min_points`` prints have a median ≤ ``game_won_loss``, while its generator's adversarial
        loss (`_generator_of`, never below zero) is no lower over its last as many prints than over its first, is
        a warning, never a stop: the discriminator tells real from fake almost every time and the generator,
        whose adversarial loss does not fall, learns nothing from it (ganhacks, "D loss goes to 0: failure
        mode"). A generator whose whole loss still falls (an L1 term's) is read by the trend detector as usual,
        unless the discriminator has won outright (a median ≤ ``game_won_outright_loss``): then its falling total
        is its reconstruction terms alone. The first such metric only; a doubt for a reviewer
        (`PLATEAU_EVIDENCE`)."""
        if self.game_won_loss is None:
            return []
        window = self.game_min_points
        for name, steps, values in _discriminators(ctx, window):
            if values.min() < 0:
                continue
            level = float(np.median(values[-window:]))
            if level > self.game_won_loss:
                continue
            generator = _generator_of(name, ctx)
            rise = None if generator is None else _not_falling(ctx, generator, window)
            if generator is not None and rise is not None:
                return [_won_signal(name, steps, level, self.game_won_loss, generator, rise, window)]
            if self.game_won_outright_loss is not None and level <= self.game_won_outright_loss:
                return [_won_outright_signal(name, steps, level, self.game_won_outright_loss, window)]
        return []


def _learning_metric(ctx: JudgeContext, frozen: str, window: int, fraction: float) -> str | None:
    """The first metric of the run other than ``frozen`` (a train-side loss or score, or an eval; no LR or
    gradient norm) whose median over its last ``window`` prints is better than over its first by more than
    ``fraction`` of the first, in its own direction (at most a third of its prints a window), or that has too
    few prints to tell (< 3): the run can still be learning through it. None when nothing moves."""
    for name, info in ctx.roles.items():
        if name == frozen or info.role in (MetricRole.LEARNING_RATE, MetricRole.GRAD_NORM):
            continue
        series = ctx.history.metrics.get(name)
        if series is None:
            continue
        _, values = finite_xy(series.steps, series.values)
        if values.size < 3:
            return name
        w = max(1, min(window, values.size // 3))
        first, last = float(np.median(values[:w])), float(np.median(values[-w:]))
        gain = first - last if info.direction is Direction.LOWER else last - first
        if gain > fraction * abs(first):
            return name
    return None


def _discriminators(ctx: JudgeContext, min_points: int) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """Each discriminator metric of the run (`roles.is_discriminator`) with ≥ ``min_points`` finite prints: its
    name, steps and values."""
    for name in ctx.roles:
        series = ctx.history.metrics.get(name)
        if series is None or not is_discriminator(name):
            continue
        steps, values = finite_xy(series.steps, series.values)
        if values.size >= min_points:
            yield name, steps, values


def _generator_of(discriminator: str, ctx: JudgeContext) -> str | None:
    """The generator metric that mirrors ``discriminator``'s name with a generator word in place of the
    discriminator one (``G_A`` for ``D_A``), else the first named by a generator and an adversarial word."""
    tokens = tokenize(discriminator)
    mirrored = [tuple(g if t in DISCRIMINATOR_TOKENS else t for t in tokens) for g in sorted(GENERATOR_TOKENS)]
    names = list(ctx.roles)
    for name in names:
        if tokenize(name) in mirrored:
            return name
    for name in names:
        words = set(tokenize(name))
        if GENERATOR_TOKENS & words and GENERATOR_ADVERSARIAL_TOKENS & words:
            return name
    return None


def _not_falling(ctx: JudgeContext, name: str, window: int) -> tuple[float, float] | None:
    """A generator loss's medians over its first and last ``window`` prints (apart: ≥ 2 × ``window`` of them)
    when it is never below zero and the last is no lower than the first, else None."""
    series = ctx.history.metrics.get(name)
    if series is None:
        return None
    _, values = finite_xy(series.steps, series.values)
    if values.size < 2 * window or values.min() < 0:
        return None
    first, last = float(np.median(values[:window])), float(np.median(values[-window:]))
    return (first, last) if last >= first else None


def _won_signal(
    name: str, steps: np.ndarray, level: float, threshold: float, generator: str, rise: tuple[float, float],
    window: int,
) -> Signal:
    first, last = rise
    msg = (
        f"{name} has won its game: the median of its last {window} prints (to step {fmt_step(int(steps[-1]))}) "
        f"is {fmt(level)} (threshold {fmt(threshold)}), so the discriminator tells real from fake almost every "
        f"time, while {generator} does not fall ({fmt_move(first, last)}, medians of its first and last "
        f"{window} prints): the generator gets little to learn from; worth a look."
    )
    return signal(SignalKind.FLAT, Severity.WARNING, msg, metric=name, step=int(steps[-1]), level=level,
                  generator_first=first, generator_last=last, **{PLATEAU_EVIDENCE: level})  # fmt: skip


def _won_outright_signal(name: str, steps: np.ndarray, level: float, threshold: float, window: int) -> Signal:
    msg = (
        f"{name} has won its game outright: the median of its last {window} prints (to step "
        f"{fmt_step(int(steps[-1]))}) is {fmt(level)} (threshold {fmt(threshold)}), so the discriminator tells real "
        "from fake every time and the adversarial term carries nothing to the generator, whatever its total loss "
        "does (its reconstruction terms can still fall); worth a look."
    )
    return signal(SignalKind.FLAT, Severity.WARNING, msg, metric=name, step=int(steps[-1]), level=level,
                  **{PLATEAU_EVIDENCE: level})  # fmt: skip
