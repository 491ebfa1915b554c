"""A GAN's adversarial game that is not being played: a discriminator loss holding one value at every print."""

from __future__ import annotations

import numpy as np

from ..models import Severity, Signal, SignalKind
from ..roles import is_discriminator
from .context import PLATEAU_EVIDENCE, JudgeContext, signal
from .stats import finite_xy, fmt, fmt_pct, fmt_step
from .trend_base import LossTrendBase

GAME_SPREAD_PERCENTILES = (10.0, 90.0)
"""A discriminator loss's spread is read between these percentiles of its prints: one outlier print (a
checkpoint's reload, a first batch) does not widen it."""


class GameTests(LossTrendBase):
    """A discriminator loss frozen at one value (`_frozen_game`); thresholds in ``LossTrendBase``."""

    def _frozen_game(self, ctx: JudgeContext) -> list[Signal]:
        """In a GAN, a discriminator metric (`roles.is_discriminator`: ``disc``, ``D_A``, ``loss_D``) whose prints,
        ≥ ``game_min_points`` of them, all sit within ``game_spread_fraction`` of its median level (the 10th to
        90th percentile over the median's size) is a warning, never a stop: a discriminator whose output does not
        depend on its input has a fixed loss (an LSGAN's outputs held at one value, a BCE's at 0.5: 2 ln 2), and
        gives the generator no adversarial signal, whatever its other terms do. In a healthy GAN the
        discriminator's loss swings from batch to batch as the two players trade. The first such metric only. A
        doubt for a reviewer (`PLATEAU_EVIDENCE`), not a not-learning finding: it confirms no stop of a train loss
        that is the discriminator's."""
        if self.game_spread_fraction is None:
            return []
        for name in ctx.roles:
            series = ctx.history.metrics.get(name)
            if series is None or not is_discriminator(name):
                continue
            steps, values = finite_xy(series.steps, series.values)
            if values.size < self.game_min_points:
                continue
            level = float(np.median(values))
            low, high = (float(v) for v in np.percentile(values, GAME_SPREAD_PERCENTILES))
            spread = (high - low) / abs(level) if level != 0 else np.inf
            if spread > self.game_spread_fraction:
                continue
            msg = (
                f"{name} holds one value: its {values.size} prints (steps {fmt_step(int(steps[0]))}–"
                f"{fmt_step(int(steps[-1]))}) sit at {fmt(level)}, 10th to 90th percentile {fmt(low)}–{fmt(high)}, "
                f"a spread of {fmt_pct(spread)} of its level (threshold {fmt_pct(self.game_spread_fraction)}): a "
                "discriminator whose output does not depend on its input gives the generator no adversarial "
                "signal; the game is not being played, worth a look."
            )
            return [
                signal(SignalKind.FLAT, Severity.WARNING, msg, metric=name, step=int(steps[-1]), spread=spread,
                       points=values.size, since_step=int(steps[0]), **{PLATEAU_EVIDENCE: spread})
            ]  # fmt: skip
        return []
