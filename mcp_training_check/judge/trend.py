"""Where the train loss is heading, on log(loss): diverging, blown up, rising, not learning, improving.

Loss noise is multiplicative, so every comparison is a ratio (a difference of logs), and every level is
a median of many points compared against the noise of log(loss) itself (MAD of first differences), so
a run logged per step with tiny batches is held to the same false-alarm rate as a smooth one. The
divergence tests look only at points after warmup and after the latest LR restart the schedule explains.

The tests live by kind: `trend_rise` (going up), `trend_climb` (climbing back too slowly for the divergence
rules: after its warmup, from its minimum), `trend_stall` (not going down), `trend_game` (a GAN's
discriminator holding one value, or one that has won), their thresholds and shared levels
in `trend_base`; this module combines them per check.
"""

from __future__ import annotations

import numpy as np

from ..models import Severity, Signal, SignalKind
from ..roles import adversarial_run, is_discriminator, reconstruction_term, tokenize
from ..state import MetricSeries
from .context import JudgeContext, finite_after, restated, signal, train_start
from .evalkinds import train_accuracy_series
from .stats import end_thirds, finite_xy, fmt, fmt_move, fmt_pct, fmt_step, positive_log, theil_sen
from .trend_climb import LossClimbTests
from .trend_game import GENERATOR_TOKENS, GameTests
from .trend_stall import PERSISTED_START, LossStallTests


class TrendDetector(LossClimbTests, LossStallTests, GameTests):
    """Divergence, blow-up, rising, not learning (flat) and improving train loss; thresholds in
    ``LossTrendBase``."""

    def check(self, ctx: JudgeContext) -> list[Signal]:
        loss = self._loss_signals(ctx)
        if _in_play(ctx):
            loss = [_in_a_game(s) if s.kind is SignalKind.FLAT else s for s in loss]
        elif _a_side_of_the_game(ctx):
            loss = [_game_moving(s) if s.kind is SignalKind.DIVERGENCE else _game_level(s) for s in loss]
        return loss + self._train_accuracy_falling(ctx) + (self._frozen_game(ctx) or self._won_game(ctx))

    def _train_accuracy_falling(self, ctx: JudgeContext) -> list[Signal]:
        """An accuracy on the training set (`train_accuracy_series`) falling over all its ≥ ``plateau_min_points``
        points: a significant Theil–Sen trend down (Mann–Kendall z ≤ −``confidence_z``) and its last third's
        median ≥ ``accuracy_fall_fraction`` below its first third's. A warning (a reviewer's look, never a
        stop): the model gets worse on the very batches it trains on."""
        series = train_accuracy_series(ctx)
        if series is None:
            return []
        steps, values = finite_xy(series.steps, series.values)
        if values.size < self.plateau_min_points:
            return []
        trend = theil_sen(steps, values, confidence_z=self.confidence_z)
        if trend is None or trend.z > -self.confidence_z:
            return []
        first, last = end_thirds(values)
        if first <= 0 or last > (1 - self.accuracy_fall_fraction) * first:
            return []
        msg = (
            f"{series.name} falling: {fmt_move(first, last)} (medians of the first and last thirds, "
            f"{fmt_pct(1 - last / first)} down; threshold {fmt_pct(self.accuracy_fall_fraction)}), Mann–Kendall z "
            f"{trend.z:.1f} over its {values.size} points (steps {fmt_step(int(steps[0]))}–"
            f"{fmt_step(int(steps[-1]))}): the model gets worse on the batches it trains on; worth a look."
        )
        return [
            signal(SignalKind.DIVERGENCE, Severity.WARNING, msg, metric=series.name, step=int(steps[-1]),
                   drop=1 - last / first, mk_z=trend.z, points=values.size, since_step=int(steps[0]))
        ]  # fmt: skip

    def _loss_signals(self, ctx: JudgeContext) -> list[Signal]:
        loss = ctx.train_loss
        if loss is None:
            return []
        _, warm_values = finite_after(loss, ctx.lr_events.warmup_end)
        steps, values = finite_after(loss, train_start(ctx))
        if (values < 0).any():
            return self._signed_loss(loss, steps, values)
        at_chance = self._at_chance(ctx, loss, steps, values)
        raw = self._raw_blowup(ctx, loss, steps, values)
        if values.size < self.min_points:
            short = at_chance or raw or self._raw_divergence(ctx, loss, steps, values)
            short = short or self._warmup_undone(ctx, loss, steps, positive_log(values))
            return short or self._no_progress(ctx, loss, steps, values) or [self._too_few(loss, values.size, ctx)]
        y = positive_log(values)
        window = self._smooth_points(y)
        smooth = self._smooth_tail(y, window)
        best = self._best_before(y, smooth.size)
        out = self._blowup(ctx, loss, steps, y, smooth, best, warm_values) + raw  # the policy keeps the worse
        early = self._early_log(warm_values)
        if not out:
            out = self._divergence(ctx, loss, steps, y, smooth, best, window, early)
        if not out:
            out = self._slow_divergence(ctx, loss, steps, y, smooth, best, window, early)
        if not out:
            out = self._warmup_undone(ctx, loss, steps, y)
        found = at_chance + (self._witnessed(ctx, out, steps, y, window) or self._slope(ctx, loss, steps, y))
        flagged = (Severity.WARNING, Severity.CRITICAL)
        if not any(s.kind is SignalKind.DIVERGENCE and s.severity in flagged for s in found):
            found += self._climb_back(ctx, loss, steps, y)
        if all(s.severity is Severity.INFO and not self._real_improvement(s) for s in found):
            found += self._no_progress(ctx, loss, steps, values)
        return found

    def _signed_loss(self, loss: MetricSeries, steps: np.ndarray, values: np.ndarray) -> list[Signal]:
        """A loss that goes below zero (a log-likelihood, a log-scale distance, a WGAN critic's Wasserstein
        estimate) has no ratios: every test above reads log(loss), where its negative points would all clamp
        to one floor and a loss falling from -3.8 to -6.5 would read as frozen. It is read on its own scale
        instead, by its Theil–Sen trend over all its points: falling (Mann–Kendall z ≤ −``confidence_z``), or
        no significant trend with its last third's median below its first third's (a fall early in the run, then a
        slow floor), is information; from ``plateau_min_points`` points, a loss neither falling nor lower is a
        warning, never a stop (its untrained level and its floor are unknown). A NaN or Inf in it is the
        non-finite detector's."""
        trend = theil_sen(steps, values, confidence_z=self.confidence_z)
        if trend is None or values.size < self.plateau_min_points:
            msg = (
                f"only {values.size} finite {loss.name} points, a loss that goes below zero (need "
                f"{self.plateau_min_points} to judge its trend on its own scale)."
            )
            return [signal(SignalKind.TOO_FEW_POINTS, Severity.INFO, msg, metric=loss.name, points=values.size)]
        first, last = end_thirds(values)
        span = f"over its {values.size} points (steps {fmt_step(int(steps[0]))}–{fmt_step(int(steps[-1]))})"
        moved = f"{fmt_move(first, last)} (medians of the first and last thirds)"
        ev = {"slope_per_step": trend.slope, "mk_z": trend.z, "points": values.size}
        step = int(steps[-1])
        if trend.z <= -self.confidence_z or (trend.z < self.confidence_z and last < first):
            msg = (
                f"{loss.name} improving: {moved} {span}, Mann–Kendall z {trend.z:.1f}; it goes below zero, so it is "
                "judged on its own scale, not by ratios."
            )
            return [signal(SignalKind.IMPROVING, Severity.INFO, msg, metric=loss.name, step=step, **ev)]
        word = "rising" if trend.z >= self.confidence_z else "not falling"
        msg = (
            f"{loss.name} {word}: {moved} {span}, Mann–Kendall z {trend.z:.1f} (a fall needs ≤ "
            f"-{self.confidence_z:g}); it goes below zero, so its ratios mean nothing and its untrained level is "
            "unknown: a plateau, a stuck run or a balanced adversarial game, worth a look."
        )
        kind = SignalKind.DIVERGENCE if word == "rising" else SignalKind.FLAT
        return [signal(kind, Severity.WARNING, msg, metric=loss.name, step=step, since_step=int(steps[0]), **ev)]

    def _real_improvement(self, s: Signal) -> bool:
        """An improving signal worth the name: learning slowly (a steady fall over the whole run) or a fall of ≥
        ``stuck_drop_fraction`` by the slope of its window, not a significant drift of a tenth of a per cent."""
        if s.kind is not SignalKind.IMPROVING:
            return False
        return "drop" in s.evidence or (s.evidence.get("change") or 0.0) <= -self.stuck_drop_fraction

    def _too_few(self, loss: MetricSeries, n: int, ctx: JudgeContext) -> Signal:
        since = ctx.lr_events.warmup_end
        after = f" after warmup (step {fmt_step(since)})" if since is not None else ""
        msg = f"only {n} finite {loss.name} points{after} (need {self.min_points} to judge the trend)."
        return signal(SignalKind.TOO_FEW_POINTS, Severity.INFO, msg, metric=loss.name, points=n)

    def _slope(self, ctx: JudgeContext, loss: MetricSeries, steps: np.ndarray, y: np.ndarray) -> list[Signal]:
        """Improving or rising over the last ``trend_window_points``; else the not-learning test."""
        xs, ys = steps[-self.trend_window_points :], y[-self.trend_window_points :]
        trend = theil_sen(xs, ys, confidence_z=self.confidence_z)
        if trend is None:
            return []
        change = float(np.expm1(trend.slope * (xs[-1] - xs[0])))
        span = f"over the last {xs.size} points (steps {fmt_step(int(xs[0]))}–{fmt_step(int(xs[-1]))})"
        first, last = (float(np.exp(level)) for level in end_thirds(ys))
        moved = f"{fmt_move(first, last)} (medians of the first and last thirds)"
        ev = {"change": change, "slope_per_step": trend.slope, "mk_z": trend.z, "points": trend.n}
        name, step = loss.name, int(xs[-1])
        not_learning = self._not_learning(ctx, loss)
        if trend.falling:
            msg = f"{name} improving: {moved}, {fmt_pct(change)} by the slope {span}."
            found = [signal(SignalKind.IMPROVING, Severity.INFO, msg, metric=name, step=step, **ev)]
            return not_learning + found
        if trend.rising and min(change, last / first - 1) >= self.rising_min_change:
            best = float(np.exp(self._best_before(y, 1)[-1]))
            above_best = last / best - 1 if np.isfinite(best) else 0.0
            above = above_best >= self.rising_min_change
            strong = trend.z >= self.rising_z and above
            before = self._rising_before(ctx, name)
            word = "rising" if strong else "possibly rising"
            msg = (
                f"{name} {word}: {moved}, +{fmt_pct(change)} by the slope (threshold "
                f"+{fmt_pct(self.rising_min_change)}) {span}, Mann–Kendall z {trend.z:.1f} (warning at "
                f"{self.rising_z:g}), {fmt_pct(above_best)} above the best median {fmt(best)}."
            )
            if strong and before:
                severity, msg = Severity.WARNING, msg[:-1] + "; rising at the previous check too."
            elif above and before:
                severity, msg = Severity.WARNING, msg[:-1] + "; still rising after the previous check saw it rise."
            elif not strong:
                severity = Severity.INFO
            else:
                seen = "first seen at this check, " if loss.new_points > 0 else ""  # else the last check's evidence
                severity, msg = Severity.WATCH, msg[:-1] + f"; {seen}watched."
            rising = signal(SignalKind.DIVERGENCE, severity, msg, metric=name, step=step, since_step=int(xs[0]), **ev)
            return [rising, *not_learning]
        if not_learning:
            return not_learning
        return self._plateau(name, steps[-self.plateau_window_points :], y[-self.plateau_window_points :])


GAME_NOTE = (
    "in a GAN (the run logs a discriminator) the generator's reconstruction terms trade against its "
    "adversarial game and hold flat for long stretches of healthy runs: information, not a stall"
)


def _in_play(ctx: JudgeContext) -> bool:
    """The train loss is a GAN's reconstruction term that moves (`_in_a_game`): one repeated at every point
    is a dead branch, not a game, and is judged as any loss."""
    loss = ctx.train_loss
    if loss is None or not reconstruction_term(loss.name) or not adversarial_run(ctx.roles):
        return False
    _, values = finite_xy(loss.steps, loss.values)
    return values.size > 1 and bool(np.ptp(values) > 0)


def _in_a_game(s: Signal) -> Signal:
    """A flat reconstruction term judged as a GAN's train loss is information. A GAN's generator
    terms (pix2pix's ``G_L1``, CycleGAN's ``cycle_A``, pix2pixHD's ``G_VGG``) are minimised against a
    discriminator that keeps moving the target, so their level is not the model's progress
    (pytorch-CycleGAN-and-pix2pix's FAQ: the GAN losses do not say whether training is going well):
    pix2pixHD's ``G_VGG`` sits at 5.8 for the first 60 % of a healthy 580k-iteration run before it falls to
    4.6 (corpus_real log-pix2pixHD-Owain-1), and a resumed CycleGAN's ``cycle_A`` moves 0.26 → 0.23 over 350k
    iterations late in a healthy run (log-CycleGAN-akamob-1). The not-learning and plateau tests, which stop
    or flag a plain loss that holds its level, would stop the first and flag both. A blow-up, a divergence
    or a NaN of the same term is still judged as for any loss. A GAN judged on a loss named as such
    (``loss_G``, ``d_loss``) is judged as any loss: no run of the tuning split shows one flat while healthy."""
    if s.severity is Severity.INFO:
        return s
    return restated(s, GAME_NOTE + ".", Severity.INFO)


ADVERSARIAL_NOTE = (
    "but it is one side of a GAN's game (the run logs a discriminator, and this is the discriminator's or a "
    "generator's adversarial loss): it rises when the other side learns, so a rise is a flag, never a stop; "
    "the game is judged by its discriminator (one that holds one value, or has won)"
)


def _a_side_of_the_game(ctx: JudgeContext) -> bool:
    """The train loss is an adversarial term of a GAN (`_game_moving`): a generator's (``g_loss``, ``gen_loss``,
    ``G_loss``) in a run that logs a discriminator metric, or a discriminator's in a run that logs a generator's;
    never a reconstruction term (`roles.reconstruction_term`: those fall as the generator learns and are judged as
    any loss). A discriminator's loss with no other side logged is judged as any loss: nothing says a game is
    played."""
    loss = ctx.train_loss
    if loss is None or reconstruction_term(loss.name):
        return False
    others = [name for name in ctx.roles if name != loss.name]
    if is_discriminator(loss.name):
        return any(GENERATOR_TOKENS.intersection(tokenize(name)) for name in others)
    return bool(GENERATOR_TOKENS.intersection(tokenize(loss.name))) and adversarial_run(others)


def _game_moving(s: Signal) -> Signal:
    """A divergence of a GAN's adversarial loss judged as its train loss is a warning, never a stop. A DCGAN's
    generator loss is the discriminator's cross-entropy on the fakes: it starts low while the discriminator is
    untrained and climbs as the discriminator learns to tell them apart, then swings with the game
    (pytorch-CycleGAN-and-pix2pix's FAQ: the GAN losses do not say whether training is going well). A DCGAN on
    anime faces whose ``g_loss`` goes 0.38 → 3-7 in its first prints while both discriminator losses stay at
    0.3-1.0 (corpus_real log-tt-plxiv-1, healthy) was "blew up" and stopped at 7 checks. The failure this reading
    would hide is the discriminator winning, which `GameTests._won_game` judges on the discriminator; a NaN is the
    non-finite detector's, as for any loss."""
    if s.severity is not Severity.CRITICAL:
        return s
    return restated(s, ADVERSARIAL_NOTE + ".", Severity.WARNING)


def _game_level(s: Signal) -> Signal:
    """A GAN's adversarial loss still at its first level after many points is a warning, not the persisted stall
    that stops a plain loss (`LossStallTests._persisted`): its level is set by the other side of the game, and a
    balanced game holds it. A CycleGAN-style generator at 2.3-2.6 for 100 prints while its discriminator pulls
    away (corpus_real log-lz-sb3908-1, ambiguous) is the discriminator's failure, which `GameTests._won_game`
    judges."""
    if PERSISTED_START not in s.evidence or s.severity is not Severity.CRITICAL:
        return s
    note = "but it is one side of a GAN's game, whose level the other side sets: a flag, never a stop."
    return restated(s, note, Severity.WARNING)
