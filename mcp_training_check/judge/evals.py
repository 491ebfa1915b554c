"""Evaluation metrics, each in its own direction: below a baseline, degrading (overfitting), collapsed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from pydantic import Field

from ..models import Direction, MetricRole, Severity, Signal, SignalKind
from ..roles import EVAL_SPLIT_TOKENS, TRAIN_SPLIT_TOKENS, tokenize
from ..state import MetricSeries
from .chance import ACCURACY_TOKENS
from .context import Detector, JudgeContext, finite_after, signal
from .stats import (
    falling_pairs_share,
    finite_xy,
    fmt,
    fmt_pct,
    fmt_ratio,
    fmt_step,
    positive_log,
    robust_sigma,
    rolling_median,
    theil_sen,
    trailing_run,
)


def worse_by(value: np.ndarray | float, reference: float, direction: Direction) -> np.ndarray:
    """Relative gap by which ``value`` is worse than ``reference`` (negative when better)."""
    scale = abs(reference) if reference != 0 else 1.0
    diff = np.asarray(value, dtype=np.float64) - reference
    return (diff if direction is Direction.LOWER else -diff) / scale


def _train_accuracy(ctx: JudgeContext) -> tuple[str, np.ndarray] | None:
    """The name and finite values of an accuracy logged on the training set (``train/accuracy``)."""
    for name, info in ctx.roles.items():
        if info.role is not MetricRole.OTHER or info.direction is not Direction.HIGHER:
            continue
        tokens = tokenize(name)
        on_train = ACCURACY_TOKENS.intersection(tokens) and TRAIN_SPLIT_TOKENS.intersection(tokens)
        if on_train and name in ctx.history.metrics:
            series = ctx.history.metrics[name]
            return name, finite_xy(series.steps, series.values)[1]
    return None


def _relative_noise(values: np.ndarray, reference: float) -> float:
    """Robust σ of the evals' point-to-point noise, as a fraction of ``reference``."""
    scale = abs(reference) if reference != 0 else 1.0
    return robust_sigma(values) / scale


QUALITY_TOKENS = frozenset(
    {"map", "acc", "accuracy", "top", "f1", "auc", "auroc", "iou", "miou", "dice", "bleu", "rouge", "ndcg", "mrr"}
)
"""Words of an eval that sums up the model's quality as a whole (mAP integrates precision over every recall;
accuracy, F1, AUC, BLEU). Precision and recall are each one side of a trade-off a confidence threshold sets,
and a component loss (YOLO's val cls_loss) one term of the objective: secondary evals, which a quality eval
at its best outvotes (`EvalDetector`'s ``quality_near_best_margin``)."""


def is_quality_eval(name: str) -> bool:
    """Whether an eval's name says it sums up the model's quality (``mAP50-95``, ``val_acc``, ``top1``)."""
    return any(token.rstrip("0123456789") in QUALITY_TOKENS for token in tokenize(name))


TRADE_OFF_TOKENS = frozenset({"precision", "recall"})
"""One side each of the trade-off a detector's or classifier's confidence threshold sets: one rises as the
other falls while the quality eval (mAP, F1) holds."""


def is_secondary_eval(name: str, eval_names: Sequence[str]) -> bool:
    """Precision or recall (`TRADE_OFF_TOKENS`), or a component loss: an eval loss named for one term of the
    objective (``val/cls_loss``) beside other eval losses (YOLO's box, obj and cls). A run's one eval loss,
    or its plain total (``val/loss``), is no component: it rising while the accuracy holds is overfitting."""
    tokens = set(tokenize(name))
    if TRADE_OFF_TOKENS & tokens:
        return True
    losses = [other for other in eval_names if "loss" in tokenize(other)]
    qualified = tokens - EVAL_SPLIT_TOKENS - {"loss"}
    return "loss" in tokens and len(losses) >= 2 and bool(qualified)


def _outvoted(s: Signal, why: str) -> Signal:
    """A secondary eval's finding while the run's quality evals say otherwise (``why``: at their best, or not
    degrading): information, and no cause for another detector's finding (``outvoted`` in its evidence)."""
    if s.severity not in (Severity.WARNING, Severity.CRITICAL):
        return s
    message = f"{s.message.rstrip('.')}; but {why}, which outvotes a secondary eval: information, not a flag."
    evidence = s.evidence | {"outvoted": 1.0}
    return s.model_copy(update={"severity": Severity.INFO, "message": message, "evidence": evidence})


def has_quality_eval(ctx: JudgeContext) -> bool:
    """Whether the run logs an eval that sums up its quality (`is_quality_eval`: mAP, accuracy, F1)."""
    return any(is_quality_eval(series.name) for series, _ in ctx.evals)


def secondary_at_most_warning(signals: list[Signal], ctx: JudgeContext) -> list[Signal]:
    """A secondary eval's (`is_secondary_eval`) critical finding, in a run that logs a quality eval, is a
    warning: precision, recall or one component loss alone never stops a run whose quality eval judges it
    (the quality eval's own rules stop it when the model is worse). A YOLOv5's precision sliding from an
    early 0.97 spike to 0.6 while its mAP holds (log-Plane-OR-Ship-1), a val cls_loss of a few-class set
    from 0.002 to 0.04 beside box and obj losses (log-the-Garbage-Projeckt-1), a YOLOv8 precision(B) at 0.008
    for 16 evals while its mAP learns (log-mouse-keyboard-detector-1): healthy runs all three, each stopped."""
    names = [series.name for series, _ in ctx.evals]
    if not has_quality_eval(ctx):
        return signals
    out = []
    for s in signals:
        if s.severity is Severity.CRITICAL and s.metric and s.metric in names and is_secondary_eval(s.metric, names):
            message = (
                f"{s.message.rstrip('.')}; but it is a secondary eval and the run's quality eval judges it: "
                "a warning, not a stop."
            )
            s = s.model_copy(update={"severity": Severity.WARNING, "message": message,
                                     "evidence": s.evidence | {"secondary": 1.0}})  # fmt: skip
        out.append(s)
    return out


class SinceBest(NamedTuple):
    """An eval from its best on (median of 3), as the rules for a slow worsening read it."""

    series: MetricSeries
    direction: Direction
    steps: np.ndarray
    values: np.ndarray
    gap: float  # how far the latest level is from the best, relative to it
    best: float
    best_step: int


class EvalDetector(Detector):
    """Eval metrics against a baseline, against their own best, and for collapse.

    Thresholds:
    - ``baseline_margin``: worse than the baseline by more than 2 % (relative), late in the run (below) →
      warning; below that is eval noise on typical eval-set sizes. Before that it is information: a
      baseline is what comparable runs *reach*, and every run is below it on its way there (the MLPerf
      runs of issue 9 were unsure at every check until they hit their quality target). A run that has
      ended below its baseline by any amount never reached it: warning (a BERT that stopped at 0.7193 of
      its 0.72 target).
    - ``baseline_level_evals``: while the run goes on, its level against the baseline margin is the median of
      its last 3 evals (as the degrade rules read a level: one unlucky eval decides nothing); once it has
      ended, its last eval. A U-Net3D Dice climbing through 0.89-0.90 with eval-to-eval swings of ±0.01 dips
      2-4 % under its 0.908 target at single evals and is back at the next (healthy MLPerf runs of
      corpus_real/'s train split were unsure at 1-3 checks each on such a dip); the far margin's two evals
      ≥ 25 % worse are two of those three, so a real shortfall is read as before.
    - Near the baseline (within ``far_margin``), with the run's total steps unknown and the run not ended,
      a shortfall is information however many evals it has: "12 evals and no new best in the last 3"
      (``late_min_evals``) does not make a run late when its eval is noisy, as its best is then its luckiest
      eval, which a slow climb takes many evals to beat. U-Net3D Dices at 0.87-0.90 against their 0.908
      target after 13-40 evals, on their way there, made seven healthy MLPerf runs of corpus_real/'s train
      split unsure at 1-3 checks each (and three bad ones before their fault at 5-7 checks), while no
      ambiguous or bad run of either train split was flagged by it alone. Far below (≥ 25 %) it is still a
      warning from 12 evals; past half a known total, or once ended, any shortfall is, as before.
    - ``far_margin``: worse by ≥ 25 % on the last ``confirm_evals`` evals, late in the run, and so at the
      previous check too → critical; a gap that size is not closed by the rest of a schedule. (One check
      alone is a warning: MLPerf's RNN-T sits at a WER of 1 for 12 epochs before it learns.)
    - ``late_fraction``: "late" = the run has ended (an eval that ended below its baseline never reached
      it), or past 50 % of the configured total steps; without a total, after
      ``late_min_evals`` (12) evals of which the last 3 did not beat the earlier best. 12, not 8: MLPerf's
      RNN-T sits at a WER of 1 for its first 10 epochs (evals) before it learns, and is healthy.
    - ``confirm_evals``: evals in a row needed for a critical finding (2: one eval can be a bad batch).
    - ``degrade_margin`` / ``patience_evals``: the median of the last 3 evals ≥ 5 % worse than the best
      median of 3, which is ≥ 3 evals old, with none of the last 3 evals back at it → warning
      (Lightning EarlyStopping's patience counts evals too); overfitting when the train loss kept
      falling meanwhile. When the train loss rose by ``degrade_margin`` or more since that best, the
      eval only mirrors a train-loss episode (a noisy shard, a divergence): ``watch``, and the trend
      detector, which sees it on every step instead of every eval, decides.
    - ``degrade_noise_z``: and the gap must be ≥ 4 × the eval's own noise (robust σ of consecutive
      differences, relative to the best; the median of 3 still carries ~0.7 σ of it): on a dense eval
      series of a small eval set, 5 % is within reach of noise alone. Evals before the latest SGDR
      restart are not compared: a restart worsens the eval on purpose for a while.
    - ``mild_overfit_margin`` / ``mild_overfit_evals``: below the degrade margin, an eval ≥ 2 % (the
      baseline margin: eval noise on typical eval sets) worse than its best, with a significant Theil–Sen
      trend the wrong way over the ≥ 6 evals since it, while the train loss fell, is mild overfitting →
      warning (a flag, never a stop): the trend, not the gap, tells it from noise.
    - ``decay_stop_margin``: a higher-is-better eval (accuracy, BLEU, F1) degrading as above, ≥ 15 % below its
      best and further below it than at the previous check, with the train loss not rising, is decaying
      steadily → critical (a validation accuracy sliding from 0.5 towards 0 while the train loss looks
      healthy: labels misaligned, a broken eval pipeline, severe overfitting). Three times
      ``degrade_margin``, and confirmed across two checks. A lower-is-better eval (a loss) may rise while
      the model still improves (an over-confident classifier), so it stops only when it collapses.
    - ``decay_min_evals``: below that noise margin, a higher-is-better eval ≥ ``mild_overfit_margin`` (2 %)
      below its best (median of 3) with a negative Theil–Sen slope over the evals since, the train loss not
      rising, is ``watch`` (leaning down: continue, next check sooner); with the slope significant over ≥ 6
      evals since the best (two ``patience_evals``: a single dip and its recovery never make a significant
      trend that long) and the gap ≥ ``degrade_margin`` (5 %) it is decaying steadily — a warning at the
      first check that sees it, critical when the previous check (with evals since) saw it leaning or
      decaying already. The noise margin is measured on the whole series, so a top-1 sliding 1–2 points an
      epoch (an Inception-BN from 0.461 to 0.27, issue 9 class 4) stays inside it for five checks; the
      trend since the best tells a steady slide from noise sooner. The deepest dips of healthy MLPerf evals
      (a U-Net3D Dice at 70 % of its best) are back at the next eval and never make such a trend.
    - ``decay_falling_share`` / ``decay_min_run_fraction``: and either stop (the steady decay above, or the decay
      ≥ ``decay_stop_margin`` below) needs the decay steady over a real share of the run: ≥ 80 % of the pairs of
      evals since the best in falling order (Kendall's τ ≤ −0.6: the trend's strength, which its significance
      does not give, as that grows with the number of evals), spanning ≥ 25 % of the steps the eval covers (a
      quarter, as the train loss's ``stuck_min_run_fraction``). Below that it is a warning. Healthy YOLOv5 runs
      dip 7–11 % below a noisy best mAP for 12–18 epochs of 150 at z −2.4 to −2.5 (75–85 % of pairs falling,
      8–30 % of the run: log-CelloBowHoldApp-1, log-FaceCar-YOLOv5-1), or sit 27 % below a one-eval spike that
      made their best (log-Plane-OR-Ship-1, 12 % of the run), and learn on: all three were stopped. An
      Inception-BN top-1 sliding 0.46 → 0.27 (issue-mxnet-1144, bad) has 95 % of its pairs falling over 40 %
      of its run at the check that stops it, as before.
    - ``overfit_stop_margin``: a lower-is-better eval degrading as above while the train loss fell
      (overfitting), ≥ 50 % above its best (median of 3: 1.5× it) ≥ ``decay_min_evals`` evals after it, and
      degrading at the previous check (with evals since) too, is a large overfit → critical. An
      over-confident classifier's val loss creeps up by tens of percent while its accuracy holds (the mild
      overfit of corpus_real: 1.25× its best by the median of 3, 3 evals after it: flagged only); a val loss
      doubling while the train loss falls 70 % (an AlexNet memorising 1,224 images) is the model learning
      its training set instead of the task, which the rest of the schedule will not undo. corpus/'s
      ambiguous overfits (an MLP on 800 examples) end at 1.40× their best: flagged, not stopped (at 1.25×
      they would be).
    - Once critical (a large overfit, a steady decay), an eval stays critical at later checks while it is
      still ≥ ``degrade_margin`` worse than its best with none of its last ``patience_evals`` evals back at
      it, even when the stop rule's own margin (1.5× the best, 15 % below it) or the noise margin is no
      longer met: the degradation itself drives the noise margin up (a timm fine-tune's eval loss jumping
      0.30 → 0.42–0.51 makes its robust σ a third of the best), so one eval a little better would otherwise
      turn a stopped run's next check back to continue while the eval is still 35 % above its best.
    - ``collapse_loss_ratio``: a lower-is-better eval ≥ 3× its best has exploded (Megatron-style
      multiple of the best, not a relative margin).
    - ``collapse_drop_fraction``: a higher-is-better eval that lost ≥ 50 % of its best has collapsed
      (accuracy falling towards chance). A non-finite eval collapses at once.
    - A collapse is a warning first and critical once confirmed: ``confirm_evals`` collapsed evals in a row
      that a previous check (with evals since) saw collapsing too, or ``collapse_sustain_evals`` (4) in a
      row within one check, or an optimizer cause before it (the policy). Real runs have eval excursions
      that recover: a CTC validation loss 7× its best for two evals mid-run, back on its trend by the next
      check. Four evals in a row are far longer than such an episode and still within a check of a real
      collapse seen from its start.
    - ``collapse_noise_z`` / ``collapse_noise_evals``: and only evals ≥ 4 × the eval's own noise from its best
      collapse (robust σ of the eval-to-eval differences over the last 10 evals before the ones in question,
      so the collapse does not inflate it, nor a quiet phase long past deflate it; 4 as for
      ``degrade_noise_z``). A YOLO mAP of 0.008 falling to 0.002 in
      the first epochs of a slow start (log-thesis-1, which ends at 0.99) is eval noise around zero, not a
      collapse; an eval from a quiet plateau to a third of it, or from its first evals (σ 0 before 3),
      still is.
    - ``collapse_zero_fraction``: a higher-is-better eval at ≤ 0.1 % of its best is at zero (a Dice of
      1e-10, an mAP of 0: the model outputs nothing), which no eval noise reaches — critical at once, as a
      NaN is. The deepest healthy dip among the MLPerf runs of issue 9 is to 40 % of the best.
    - ``quality_near_best_margin``: while every quality eval of the run (`is_quality_eval`: mAP, accuracy, F1)
      is at or near its best — the median of its last 3 evals within 5 % (the degrade margin) of its best
      eval, or within ``degrade_noise_z`` × its own noise when that is wider — a secondary eval's finding
      (`is_secondary_eval`: precision, recall, a component loss) is information, neither a stop nor a flag,
      and no cause for another's: the quality eval it feeds says the model is as good as it has been. A
      YOLOv5 run at mAP 0.94 trades precision 0.94 → 0.86 for recall 0.87 → 0.97, and its val cls_loss
      (0.002–0.01 on a few-class set) swings 3× its best between evals (log-4105project-yolov5-1, healthy,
      was stopped); another's val cls_loss creeps up 16–30 % while its mAP still rises
      (log-1802284174-test-1, healthy, was unsure at its last 5 checks). A YOLOv3 whose mAP@0.5 falls at
      every eval, 6 % under its best by the median of 3 (issue-yolov3-1211, bad), is not at its best, so
      its cls_loss still warns. The total eval loss is no secondary: an AlexNet whose val loss doubles while
      its accuracy holds near 0.67 is overfitting (issue-dli-alexnet-15, bad).
      Nor is a secondary eval's finding a flag while no quality eval of the run is flagged by this detector
      (degrading, decaying, collapsed, below its baseline): the quality eval's own rules say whether the
      model got worse, and the secondary eval is one side of a trade-off or one term of it. A YOLOv5's
      precision falling from an early 0.97 (at recall 0.41) to 0.55-0.7 while its noisy mAP holds 0.5-0.79
      (log-Plane-OR-Ship-1, healthy, unsure at its last 12 checks, now only at the 5 where its mAP itself is
      flagged); an obj_loss creeping up in a 20-epoch run whose mAPs end at 0.5 and 0.99
      (log-yolov5_model-1). With the quality eval flagged too, the secondary eval still warns beside it
      (issue-yolov3-1211's cls_loss, the check before its mAP's decay stops it).
    - ``memorised_accuracy_fraction`` / ``memorised_gap_fraction`` / ``memorised_min_evals``: an eval accuracy whose
      median of its last 3 evals is ≥ 0.2 (absolute) below the train accuracy's, that train accuracy at ≥ 0.95
      (the training set memorised), with no significant rise (Theil–Sen, 95 %) over ≥ 4 evals, is overfitting
      with nothing left to learn from the training set → warning (a flag for review, never a stop: whether
      0.70 held-out is the task's ceiling is not in the log). Healthy runs of both corpora that log both
      accuracies end within 0.01 of each other; a CIFAR ResNet ends at 1.00 against 0.95, an ImageNet one
      at 0.80 against 0.76: 0.2 is four times those gaps. (An RNN text classifier at 0.99 train and 0.64–0.70
      held-out for ten epochs.)
    - ``overfit_gap_ratio``: an eval loss ≥ 3× the train loss at its step (median of the train loss's last 5
      points up to it) and worse than the eval before, while that train level fell between the two evals, is a
      deep, growing overfit → warning (a flag, never a stop; it needs only two evals, so it sees a run that
      evaluates rarely). Of the train-split runs of both corpora that log an eval loss beside a train loss,
      the healthy ones peak at 2.0× (a MatConvNet ImageNet run) and 2.4× (a corpus/ MLP whose noisy per-step
      train loss dips at an eval 2 % worse than the one before: the closest a healthy run comes); a GPT-2 XL
      fine-tuned on Shakespeare has its val loss at 3.75 then 3.90 while its train loss falls 0.93 → 0.65 (6×).
    - ``overfit_rising_evals``: "growing" is the eval loss worse than the eval before at each of its last 2
      evals (a run with only 2 evals shows its one rise). One rise is an eval's noise: a classifier's val loss
      swinging 0.7-1.5 between evals, or one 0.004 → 0.00414 at its floor, rises at every other eval while
      the train loss falls to 1e-4 (log-topnmusic-1, log-VisLungTransformer-1, log-Cmamba_reconstruct-1,
      log-OSCCC-Detection-1, log-irrigation-classification-1: healthy, unsure at 1-4 checks each on it). An
      overfit grows eval after eval: a RoBERTa's val loss 0.111 → 0.114 → 0.142, a sentiment classifier's
      0.279 → 0.282 → 0.284 (ambiguous, still flagged).
    """

    baseline_margin: float = Field(default=0.02, ge=0)
    baseline_level_evals: int = Field(default=3, ge=1)
    far_margin: float = Field(default=0.25, gt=0)
    late_fraction: float = Field(default=0.5, gt=0, le=1)
    late_min_evals: int = Field(default=12, ge=2)
    confirm_evals: int = Field(default=2, ge=1)
    degrade_margin: float = Field(default=0.05, gt=0)
    patience_evals: int = Field(default=3, ge=1)
    degrade_noise_z: float = Field(default=4.0, ge=0)
    collapse_loss_ratio: float = Field(default=3.0, gt=1)
    collapse_drop_fraction: float = Field(default=0.5, gt=0, lt=1)
    collapse_sustain_evals: int = Field(default=4, ge=1)
    collapse_zero_fraction: float = Field(default=1e-3, ge=0, lt=1)
    collapse_noise_z: float = Field(default=4.0, ge=0)
    quality_near_best_margin: float = Field(default=0.05, ge=0)
    collapse_noise_evals: int = Field(default=10, ge=3)
    decay_stop_margin: float = Field(default=0.15, gt=0)
    mild_overfit_margin: float = Field(default=0.02, gt=0)
    mild_overfit_evals: int = Field(default=6, ge=4)
    decay_min_evals: int = Field(default=6, ge=4)
    decay_falling_share: float = Field(default=0.8, gt=0.5, le=1)
    decay_min_run_fraction: float = Field(default=0.25, ge=0, lt=1)
    overfit_stop_margin: float = Field(default=0.5, gt=0)
    memorised_accuracy_fraction: float = Field(default=0.95, gt=0, le=1)
    memorised_gap_fraction: float = Field(default=0.2, gt=0, le=1)
    memorised_min_evals: int = Field(default=4, ge=4)
    overfit_gap_ratio: float = Field(default=3.0, gt=1)
    overfit_rising_evals: int = Field(default=2, ge=1)

    def check(self, ctx: JudgeContext) -> list[Signal]:
        names = [s.name for s, _ in ctx.evals]
        found = {series.name: self._eval_signals(ctx, series, d) for series, d in ctx.evals}
        why = self._quality_outvotes(ctx, found)
        out: list[Signal] = []
        for name, signals in found.items():
            if why and is_secondary_eval(name, names):
                signals = [_outvoted(s, why) for s in signals]
            out += signals
        return secondary_at_most_warning(out, ctx)

    def _quality_outvotes(self, ctx: JudgeContext, found: dict[str, list[Signal]]) -> str:
        """Why the run's quality evals outvote its secondary evals, as a phrase, or "": every quality eval at
        or near its best (`_quality_at_best`), or none of them flagged (a warning or critical) by this detector."""
        if not has_quality_eval(ctx):
            return ""
        at_best = self._quality_at_best(ctx)
        if at_best:
            return f"the quality eval is at its best ({at_best})"
        quality = [name for name in found if is_quality_eval(name) and not is_secondary_eval(name, list(found))]
        flagged = any(s.severity in (Severity.WARNING, Severity.CRITICAL) for name in quality for s in found[name])
        return "" if flagged else f"the quality eval ({', '.join(quality)}) is not degrading"

    def _eval_signals(self, ctx: JudgeContext, series: MetricSeries, direction: Direction) -> list[Signal]:
        collapse = self._collapse(ctx, series, direction)
        if collapse is not None:
            return self._stronger_than(collapse, self._degrading(ctx, series, direction))
        out = self._baseline(ctx, series, direction)
        degrading = self._degrading(ctx, series, direction)
        flagged = any(sig.severity in (Severity.WARNING, Severity.CRITICAL) for sig in degrading)
        out += degrading if flagged else degrading + self._memorised(ctx, series, direction)
        out += [] if flagged else self._far_above_train(ctx, series, direction)
        return out

    def _quality_at_best(self, ctx: JudgeContext) -> str:
        """The run's quality evals (`is_quality_eval`) when every one of them is at or near its best: the
        median of its last 3 evals within ``quality_near_best_margin`` of its best eval, or within
        ``degrade_noise_z`` × its noise (over ≥ ``patience_evals`` + 1 evals); else ""."""
        quality = [(s, d) for s, d in ctx.evals if is_quality_eval(s.name)]
        parts = []
        for series, d in quality:
            _, values = finite_xy(series.steps, series.values)
            if values.size <= self.patience_evals:
                return ""
            level = float(np.median(values[-3:]))
            best = float(values.min() if d is Direction.LOWER else values.max())
            margin = max(self.quality_near_best_margin, self.degrade_noise_z * _relative_noise(values, best))
            if float(worse_by(level, best, d)) >= margin:
                return ""
            parts.append(f"{series.name} {fmt(level)}, best {fmt(best)}")
        return ", ".join(parts)

    def _far_above_train(self, ctx: JudgeContext, series: MetricSeries, d: Direction) -> list[Signal]:
        """An eval loss ≥ ``overfit_gap_ratio`` × the train loss and worse than at the eval before at each of
        its last ``overfit_rising_evals`` evals, while the train loss fell between the last two: a deep, growing
        overfit (a warning)."""
        if d is not Direction.LOWER or "loss" not in tokenize(series.name) or ctx.train_loss is None:
            return []
        steps, values = finite_xy(series.steps, series.values)
        rises = min(self.overfit_rising_evals, values.size - 1)  # a run with 2 evals shows one rise at most
        if rises < 1 or not np.all(np.diff(values[-rises - 1 :]) > 0):
            return []
        train_steps, train = finite_xy(ctx.train_loss.steps, ctx.train_loss.values)
        before, now = (self._train_level(train_steps, train, int(s)) for s in steps[-2:])
        if now is None or before is None or now >= before or values[-1] < self.overfit_gap_ratio * now:
            return []
        msg = (
            f"{series.name} {fmt(float(values[-1]))} at step {fmt_step(int(steps[-1]))} is "
            f"{fmt_ratio(float(values[-1]) / now)} the train loss there ({fmt(now)}, median of 5; threshold "
            f"{fmt_ratio(self.overfit_gap_ratio)}) and worse than the eval before at each of its last {rises} "
            f"evals (from {fmt(float(values[-rises - 1]))}) while "
            f"the train loss fell from {fmt(before)}: a deep, growing overfit (a flag, not a stop)."
        )
        return [
            signal(SignalKind.EVAL_DEGRADING, Severity.WARNING, msg, metric=series.name, step=int(steps[-1]),
                   train_ratio=float(values[-1]) / now)
        ]  # fmt: skip

    @staticmethod
    def _train_level(steps: np.ndarray, values: np.ndarray, at: int) -> float | None:
        """The train loss's level at an eval: the median of its last 5 finite points up to that step (> 0)."""
        k = int(np.searchsorted(steps, at, side="right"))
        level = float(np.median(values[max(0, k - 5) : k])) if k else 0.0
        return level if level > 0 else None

    def _memorised(self, ctx: JudgeContext, series: MetricSeries, d: Direction) -> list[Signal]:
        """An eval accuracy far below a memorised train accuracy, and not rising: overfitting (a warning)."""
        if d is not Direction.HIGHER or not ACCURACY_TOKENS.intersection(tokenize(series.name)):
            return []
        steps, values = finite_xy(series.steps, series.values)
        train = _train_accuracy(ctx)
        if values.size < self.memorised_min_evals or train is None or train[1].size < 3:
            return []
        train_level, level = float(np.median(train[1][-3:])), float(np.median(values[-3:]))
        if train_level < self.memorised_accuracy_fraction or train_level - level < self.memorised_gap_fraction:
            return []
        trend = theil_sen(steps, values)
        if trend is None or trend.rising:
            return []
        msg = (
            f"{series.name} {fmt(level)} (median of the last 3 evals, step {fmt_step(int(steps[-1]))}) is "
            f"{fmt(train_level - level)} below {train[0]} {fmt(train_level)} and not rising over {values.size} evals: "
            f"the training set is memorised (≥ {fmt(self.memorised_accuracy_fraction)}) while held-out accuracy "
            f"stays ≥ {fmt(self.memorised_gap_fraction)} below it (overfitting; a flag, not a stop)."
        )
        return [
            signal(SignalKind.EVAL_DEGRADING, Severity.WARNING, msg, metric=series.name, step=int(steps[-1]),
                   gap=train_level - level, train_accuracy=train_level)
        ]  # fmt: skip

    @staticmethod
    def _stronger_than(collapse: Signal, degrading: list[Signal]) -> list[Signal]:
        """A collapse seen on one eval is a warning; a large overfit or decay already confirmed on the same
        eval stays critical rather than falling back to that warning."""
        critical = [s for s in degrading if s.severity is Severity.CRITICAL]
        return critical if critical and collapse.severity is not Severity.CRITICAL else [collapse]

    def _best(self, series: MetricSeries, values: np.ndarray, steps: np.ndarray, d: Direction) -> tuple[float, int]:
        if d is Direction.LOWER and series.min_value is not None and series.min_step is not None:
            return series.min_value, series.min_step
        if d is Direction.HIGHER and series.max_value is not None and series.max_step is not None:
            return series.max_value, series.max_step
        i = int(np.argmin(values) if d is Direction.LOWER else np.argmax(values))
        return float(values[i]), int(steps[i])

    def _beyond_noise(self, values: np.ndarray, best: float, count: int) -> np.ndarray:
        """Which evals lie ≥ ``collapse_noise_z`` × the eval's own noise from its best: the robust σ of the
        eval-to-eval differences before the ``count`` evals in question (a collapse must not inflate it)."""
        before = values[: values.size - count]
        sigma = robust_sigma(before[-self.collapse_noise_evals :])
        return np.abs(values - best) >= self.collapse_noise_z * sigma

    def _collapse(self, ctx: JudgeContext, series: MetricSeries, d: Direction) -> Signal | None:
        if series.values.size and not np.isfinite(series.values[-1]):
            step = fmt_step(series.last_step)
            msg = f"{series.name} is {series.values[-1]} at step {step}: the evaluation broke."
            return signal(SignalKind.EVAL_DEGRADING, Severity.CRITICAL, msg, metric=series.name, step=series.last_step)
        steps, values = finite_xy(series.steps, series.values)
        if values.size < 2:
            return None
        best, best_step = self._best(series, values, steps, d)
        if best <= 0:
            return None
        if d is Direction.LOWER:
            collapsed = values >= self.collapse_loss_ratio * best
            rule = f"≥ {self.collapse_loss_ratio:g}× its best {fmt(best)}"
        else:
            collapsed = values <= (1 - self.collapse_drop_fraction) * best
            rule = f"≤ {fmt_pct(1 - self.collapse_drop_fraction)} of its best {fmt(best)}"
        count = trailing_run(collapsed & self._beyond_noise(values, best, trailing_run(collapsed)))
        if count == 0:
            return None
        seen_before = self._collapsed_before(ctx, series.name, int(steps[-1]))
        confirmed = count >= self.collapse_sustain_evals or (count >= self.confirm_evals and seen_before)
        rule_text = f"{self.confirm_evals} evals over two checks, or {self.collapse_sustain_evals} in a row"
        how = f"confirmed ({rule_text})" if confirmed else f"critical at {rule_text}"
        if d is Direction.HIGHER and values[-1] <= self.collapse_zero_fraction * best:
            confirmed, how = (
                True,
                (f"at zero (≤ {self.collapse_zero_fraction:g}× its best): the model is broken, critical at once"),
            )
        msg = (
            f"{series.name} collapsed: {fmt(float(values[-1]))} at step {fmt_step(int(steps[-1]))} is {rule} "
            f"(step {fmt_step(best_step)}) for {count} eval(s); {how}."
        )
        severity = Severity.CRITICAL if confirmed else Severity.WARNING
        return signal(
            SignalKind.EVAL_DEGRADING,
            severity,
            msg,
            metric=series.name,
            step=int(steps[-1]),
            value=float(values[-1]),
            best=best,
            collapsed_evals=count,
        )

    @staticmethod
    def _collapsed_before(ctx: JudgeContext, name: str, last_step: int) -> bool:
        """The previous check saw this eval collapsed, and evals came since (else it confirms nothing, unless it
        was already critical: the same evidence stays critical)."""
        prev = ctx.previous_signal(SignalKind.EVAL_DEGRADING, name)
        if prev is None or "collapsed_evals" not in prev.evidence or prev.step is None:
            return False
        return prev.step < last_step or (prev.step == last_step and prev.severity is Severity.CRITICAL)

    def _far_before(self, ctx: JudgeContext, name: str, last_step: int) -> bool:
        """The previous check already found this eval far below its baseline, late (a critical one with no
        eval since stays critical: the same evidence)."""
        prev = ctx.previous_signal(SignalKind.EVAL_BELOW_BASELINE, name)
        if prev is None or prev.step is None or prev.severity is Severity.INFO:
            return False
        if prev.step == last_step:
            return prev.severity is Severity.CRITICAL
        return prev.step < last_step and prev.evidence.get("gap", 0.0) >= self.far_margin

    def _is_late(self, ctx: JudgeContext, values: np.ndarray, d: Direction) -> tuple[bool, str]:
        if ctx.history.info.status.has_ended:
            return True, f"and the run has ended ({ctx.history.info.status.value})"
        progress = ctx.config.progress(ctx.last_step)
        if progress is not None:
            return progress >= self.late_fraction, f"at {fmt_pct(progress)} of the run"
        if values.size < self.late_min_evals:
            return False, f"after {values.size} evals, total steps unknown"
        head, tail = values[:-3], values[-3:]
        stalled = (tail.min() >= head.min()) if d is Direction.LOWER else (tail.max() <= head.max())
        return bool(stalled), f"after {values.size} evals{', no longer improving' if stalled else ''}"

    def _baseline(self, ctx: JudgeContext, series: MetricSeries, d: Direction) -> list[Signal]:
        baseline = ctx.baselines.get(series.name)
        steps, values = finite_xy(series.steps, series.values)
        if baseline is None or values.size == 0:
            return []
        gaps = worse_by(values[-self.confirm_evals :], baseline, d)
        gap = float(gaps[-1])
        ended = ctx.history.info.status.has_ended  # it will not get there any more: any shortfall counts
        level = float(np.median(values[-self.baseline_level_evals :]))  # one unlucky eval decides nothing
        short = gap > 0.0 if ended else float(worse_by(level, baseline, d)) > self.baseline_margin
        if not short:
            return []
        late, when = self._is_late(ctx, values, d)
        far = gaps.size >= self.confirm_evals and bool((gaps >= self.far_margin).all())
        if not late:
            severity, tail = Severity.INFO, "still on its way there"
        elif far and self._far_before(ctx, series.name, int(steps[-1])):
            severity, tail = Severity.CRITICAL, "late, and so at the previous check too: enough to stop"
        elif far:
            severity, tail = Severity.WARNING, "late: critical if the next check still sees it so far below"
        elif ctx.config.progress(ctx.last_step) is None and not ended:
            severity, tail = Severity.INFO, "near it with its total steps unknown: it may still get there"
        else:
            severity, tail = Severity.WARNING, "late, not conclusive yet"
        rule = f"far margin {fmt_pct(self.far_margin)}" if far else f"margin {fmt_pct(self.baseline_margin)}"
        median = "" if ended else f", median of its last {self.baseline_level_evals} evals {fmt(level)},"
        msg = (
            f"{series.name} {fmt(float(values[-1]))} at step {fmt_step(int(steps[-1]))}{median} is "
            f"{fmt_pct(gap)} worse than the baseline {fmt(baseline)} ({rule}) {when}: {tail}."
        )
        return [
            signal(
                SignalKind.EVAL_BELOW_BASELINE,
                severity,
                msg,
                metric=series.name,
                step=int(steps[-1]),
                gap=gap,
                baseline=baseline,
                value=float(values[-1]),
            )
        ]

    def _degrading(self, ctx: JudgeContext, series: MetricSeries, d: Direction) -> list[Signal]:
        steps, values = finite_xy(series.steps, series.values)
        restart = ctx.lr_events.restarts[-1] if ctx.lr_events.restarts else None
        if restart is not None:  # an SGDR restart worsens evals on purpose: judge only the evals since
            keep = steps > restart
            steps, values = steps[keep], values[keep]
        if values.size <= self.patience_evals:
            return []
        # best and latest level as medians of 3 evals, so one lucky or unlucky eval decides nothing
        level = rolling_median(values, 3)
        i = int(np.argmin(level) if d is Direction.LOWER else np.argmax(level))
        best, best_step = float(level[i]), int(steps[i])
        since_best = int(values.size - 1 - i)
        gap = float(worse_by(level[-1], best, d))
        recent = worse_by(values[-self.patience_evals :], best, d)
        margin = max(self.degrade_margin, self.degrade_noise_z * _relative_noise(values, best))
        if since_best < self.patience_evals or float(recent.min()) <= 0:
            return []
        train = self._train_change(ctx, best_step)
        with_train = train is not None and train >= self.degrade_margin
        still_down = not with_train and self._still_down(ctx, series.name, gap, int(steps[-1]))
        if gap < margin and not still_down:
            since = SinceBest(series, d, steps[i:], values[i:], gap, best, best_step)
            return self._steady_decay(ctx, since, steps) or self._mild_overfit(ctx, since)
        if train is not None and train < 0:
            why = f" while the train loss fell {fmt_pct(-train)} (overfitting)"
        elif train is not None and with_train:
            why = f"; the train loss rose {fmt_pct(train)} since then too, so the train-loss trend judges it"
        else:
            why = ""
        msg = (
            f"{series.name} at step {fmt_step(int(steps[-1]))}: median of the last 3 evals "
            f"{fmt(float(level[-1]))} is {fmt_pct(gap)} worse than its best {fmt(best)} at step "
            f"{fmt_step(best_step)}, "
            f"{since_best} evals ago (thresholds "
            f"{fmt_pct(margin)}, {self.patience_evals} evals){why}."
        )
        severity = Severity.WATCH if with_train else Severity.WARNING
        falling = (
            not with_train
            and self._falling_since(steps[i:], values[i:])
            and self._long_steady(steps, best_step, falling_pairs_share(values[i:]))
        )
        if not with_train and falling and self._decaying(ctx, series.name, d, gap, int(steps[-1])):
            severity = Severity.CRITICAL
            msg = msg[:-1] + (
                f"; still decaying since the previous check, {fmt_pct(gap)} below its best (critical from "
                f"{fmt_pct(self.decay_stop_margin)} for a higher-is-better eval)."
            )
        elif not with_train and falling and self._steady_beyond_noise(ctx, series.name, d, since_best, steps):
            severity = Severity.CRITICAL
            msg = msg[:-1] + (
                f"; falling steadily over the {since_best} evals since (a significant trend, "
                f"≥ {fmt_pct(self.decay_falling_share)} of its pairs falling) and degrading at the previous check "
                "too: critical, as a steady decay within its noise margin is."
            )
        elif self._large_overfit(ctx, series.name, d, gap, since_best, train, int(steps[-1])):
            severity = Severity.CRITICAL
            msg = msg[:-1] + (
                f"; a large overfit: ≥ {fmt_ratio(1 + self.overfit_stop_margin)} its best over ≥ "
                f"{self.decay_min_evals} evals since, degrading at the previous check too, so critical."
            )
        elif still_down:
            severity = Severity.CRITICAL
            msg = msg[:-1] + (
                f"; the previous check found it critical and it is still ≥ {fmt_pct(self.degrade_margin)} below "
                "its best with none of its last evals back at it, so still critical."
            )
        return [
            signal(
                SignalKind.EVAL_DEGRADING,
                severity,
                msg,
                metric=series.name,
                step=int(steps[-1]),
                gap=gap,
                best=best,
                evals_since_best=since_best,
                train_change=train,
            )
        ]

    def _mild_overfit(self, ctx: JudgeContext, since: SinceBest) -> list[Signal]:
        """An eval worsening too little for the degrade margin but steadily (a significant trend since its
        best over ≥ ``mild_overfit_evals`` evals, ≥ ``mild_overfit_margin`` below it) while the train loss
        fell: mild overfitting, a warning."""
        series, d, steps, values, gap, best, best_step = since
        if gap < self.mild_overfit_margin or values.size < self.mild_overfit_evals:
            return []
        trend = theil_sen(steps, values)
        worsening = trend is not None and (trend.rising if d is Direction.LOWER else trend.falling)
        train = self._train_change(ctx, best_step)
        if not worsening or train is None or train >= 0:
            return []
        msg = (
            f"{series.name} at step {fmt_step(int(steps[-1]))} is mildly overfitting: {fmt_pct(gap)} worse than "
            f"its best {fmt(best)} at step {fmt_step(best_step)} and worsening over the {values.size - 1} evals "
            f"since (significant trend; thresholds {fmt_pct(self.mild_overfit_margin)}, {self.mild_overfit_evals} "
            f"evals) while the train loss fell {fmt_pct(-train)}."
        )
        return [
            signal(SignalKind.EVAL_DEGRADING, Severity.WARNING, msg, metric=series.name, step=int(steps[-1]),
                   gap=gap, best=best, evals_since_best=values.size - 1, train_change=train)
        ]  # fmt: skip

    def _long_steady(self, steps: np.ndarray, best_step: int, falling_share: float) -> bool:
        """A decay confirmed over a real share of the run: the evals since the best fall steadily
        (``falling_share``, their `falling_pairs_share`, ≥ ``decay_falling_share``) and span ≥
        ``decay_min_run_fraction`` of the steps the eval covers (``steps``, all of them)."""
        covered = float(steps[-1] - steps[0])
        long = covered > 0 and float(steps[-1]) - best_step >= self.decay_min_run_fraction * covered
        return long and falling_share >= self.decay_falling_share

    def _steady_decay(self, ctx: JudgeContext, since: SinceBest, all_steps: np.ndarray) -> list[Signal]:
        """A higher-is-better eval sliding from its best within its noise margin, the train loss not rising:
        ``watch`` while it only leans down (≥ ``mild_overfit_margin`` below its best, a negative Theil–Sen
        slope over the evals since); decaying steadily once the slope is significant over ≥
        ``decay_min_evals`` evals and the gap ≥ ``degrade_margin`` — a warning; critical when the previous check
        (with evals since) saw it leaning or decaying already and the decay is steady over a real share of the
        run (`_long_steady`)."""
        series, d, steps, values, gap, best, best_step = since
        if d is not Direction.HIGHER or gap < self.mild_overfit_margin:
            return []
        train = self._train_change(ctx, best_step)
        trend = theil_sen(steps, values)
        if (train is not None and train >= self.degrade_margin) or trend is None or trend.slope >= 0:
            return []
        steady = trend.falling and gap >= self.degrade_margin and values.size - 1 >= self.decay_min_evals
        share = falling_pairs_share(values)
        head = (
            f"{series.name} at step {fmt_step(int(steps[-1]))} is {fmt_pct(gap)} below its best {fmt(best)} at "
            f"step {fmt_step(best_step)} (median of 3) and falling over the {values.size - 1} evals since "
            f"(Mann–Kendall z {trend.z:.1f}, {fmt_pct(share)} of its pairs falling)"
        )
        if not steady:
            severity, tail = Severity.WATCH, f"{'significant' if trend.falling else 'not significant'} yet: watched"
        elif self._long_steady(all_steps, best_step, share) and self._leaning_before(
            ctx, series.name, int(steps[-1])
        ):
            severity, tail = Severity.CRITICAL, "decaying steadily, and the previous check saw it already: critical"
        else:
            severity, tail = Severity.WARNING, (
                f"decaying: critical if the next check sees it steady (≥ {fmt_pct(self.decay_falling_share)} of "
                f"its pairs of evals falling) over ≥ {fmt_pct(self.decay_min_run_fraction)} of the run"
            )
        msg = (
            f"{head}; {tail} (thresholds {fmt_pct(self.degrade_margin)} below the best, a significant trend over "
            f"≥ {self.decay_min_evals} evals)."
        )
        return [
            signal(SignalKind.EVAL_DEGRADING, severity, msg, metric=series.name, step=int(steps[-1]), gap=gap,
                   best=best, evals_since_best=values.size - 1, train_change=train, mk_z=trend.z,
                   falling_share=share)
        ]  # fmt: skip

    def _steady_beyond_noise(
        self, ctx: JudgeContext, name: str, d: Direction, since_best: int, steps: np.ndarray
    ) -> bool:
        """A higher-is-better eval beyond its noise margin whose evals since the best fall steadily over a real
        share of the run (the caller's `_long_steady`), over ≥ ``decay_min_evals`` of them, degrading or leaning at
        the previous check (with evals since) too: the steady decay of `_steady_decay`, which stops a slide
        within the eval's noise margin, must not spare one that left it (issue 9: a YOLOv3 mAP@0.5 falling at
        every eval, 0.647 → 0.575, 7.5 % below its best, was a warning to the end: over the noise margin,
        under ``decay_stop_margin``)."""
        if d is not Direction.HIGHER or since_best < self.decay_min_evals:
            return False
        prev = ctx.previous_signal(SignalKind.EVAL_DEGRADING, name)
        return (
            prev is not None
            and "collapsed_evals" not in prev.evidence
            and (prev.severity is not Severity.WATCH or "mk_z" in prev.evidence)
            and prev.step is not None
            and prev.step < int(steps[-1])
        )

    @staticmethod
    def _leaning_before(ctx: JudgeContext, name: str, last_step: int) -> bool:
        """The previous check, with evals since, found this eval below its best and falling."""
        prev = ctx.previous_signal(SignalKind.EVAL_DEGRADING, name)
        return (
            prev is not None
            and "collapsed_evals" not in prev.evidence
            and "mk_z" in prev.evidence
            and prev.step is not None
            and prev.step < last_step
        )

    def _still_down(self, ctx: JudgeContext, name: str, gap: float, last_step: int) -> bool:
        """The previous check found this eval degrading critically (a large overfit or a steady decay, not a
        collapse, which has its own confirmation), and it is still ≥ ``degrade_margin`` from its best."""
        prev = ctx.previous_signal(SignalKind.EVAL_DEGRADING, name)
        return (
            gap >= self.degrade_margin
            and prev is not None
            and prev.severity is Severity.CRITICAL
            and "collapsed_evals" not in prev.evidence
            and prev.step is not None
            and prev.step <= last_step
        )

    def _large_overfit(
        self, ctx: JudgeContext, name: str, d: Direction, gap: float, since_best: int, train: float | None, last: int
    ) -> bool:
        """A lower-is-better eval ≥ ``overfit_stop_margin`` above its best, ≥ ``decay_min_evals`` evals after it,
        while the train loss fell, and degrading at the previous check (with evals since) too."""
        if d is not Direction.LOWER or train is None or train >= 0:
            return False
        if gap < self.overfit_stop_margin or since_best < self.decay_min_evals:
            return False
        prev = ctx.previous_signal(SignalKind.EVAL_DEGRADING, name)
        return (
            prev is not None
            and "collapsed_evals" not in prev.evidence
            and prev.severity is not Severity.WATCH
            and prev.step is not None
            and prev.step < last
        )

    @staticmethod
    def _falling_since(steps: np.ndarray, values: np.ndarray) -> bool:
        """The evals since the best fall: a significant Theil–Sen trend (a steady one is `_long_steady`'s)."""
        trend = theil_sen(steps, values)
        return trend is not None and trend.falling

    def _decaying(self, ctx: JudgeContext, name: str, d: Direction, gap: float, last_step: int) -> bool:
        """A higher-is-better eval ≥ ``decay_stop_margin`` below its best that is further below it than at
        the previous check (with evals since): a steady decay, not an eval's noise."""
        if d is not Direction.HIGHER or gap < self.decay_stop_margin:
            return False
        prev = ctx.previous_signal(SignalKind.EVAL_DEGRADING, name)
        if prev is None or "collapsed_evals" in prev.evidence or prev.step is None or prev.step >= last_step:
            return False
        return gap > prev.evidence.get("gap", np.inf)

    @staticmethod
    def _train_change(ctx: JudgeContext, since_step: int) -> float | None:
        """Relative change of the train loss (median of 5 points) from ``since_step`` to now; the level at
        ``since_step`` is that of the points up to it, which the eval there had seen."""
        loss = ctx.train_loss
        if loss is None:
            return None
        steps, values = finite_after(loss, None)
        if values.size < 10:
            return None
        y = positive_log(values)
        i = int(np.searchsorted(steps, since_step, side="right"))
        if i >= values.size - 5:
            return None
        before = float(np.median(y[max(0, i - 5) : max(i, 1)]))
        return float(np.expm1(float(np.median(y[-5:])) - before))
