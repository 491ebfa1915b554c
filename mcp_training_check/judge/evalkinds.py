"""Which evals a run's verdict rests on: quality evals (mAP, accuracy, F1) outvote secondary ones
(precision, recall, one component loss of several); how far a value is worse than a reference in its
metric's direction; the train accuracy logged beside an eval; an eval's level since its best."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..models import Direction, MetricRole, Severity, Signal
from ..roles import EVAL_ONLY_QUALITY, EVAL_SPLIT_TOKENS, TRAIN_SPLIT_TOKENS, tokenize
from ..state import MetricSeries
from .chance import ACCURACY_TOKENS
from .context import JudgeContext, restated
from .stats import finite_xy, robust_sigma


def worse_by(value: np.ndarray | float, reference: float, direction: Direction) -> np.ndarray:
    """Relative gap by which ``value`` is worse than ``reference`` (negative when better)."""
    scale = abs(reference) if reference != 0 else 1.0
    diff = np.asarray(value, dtype=np.float64) - reference
    return (diff if direction is Direction.LOWER else -diff) / scale


def train_accuracy_series(ctx: JudgeContext) -> MetricSeries | None:
    """An accuracy logged on the training set (``train/accuracy``), if the run logs one."""
    for name, info in ctx.roles.items():
        if info.role is not MetricRole.OTHER or info.direction is not Direction.HIGHER:
            continue
        tokens = tokenize(name)
        on_train = ACCURACY_TOKENS.intersection(tokens) and TRAIN_SPLIT_TOKENS.intersection(tokens)
        if on_train and name in ctx.history.metrics:
            return ctx.history.metrics[name]
    return None


def train_accuracy(ctx: JudgeContext) -> tuple[str, np.ndarray] | None:
    """The name and finite values of an accuracy logged on the training set (``train/accuracy``)."""
    series = train_accuracy_series(ctx)
    return None if series is None else (series.name, finite_xy(series.steps, series.values)[1])


def relative_noise(values: np.ndarray, reference: float) -> float:
    """Robust σ of the evals' point-to-point noise, as a fraction of ``reference``."""
    scale = abs(reference) if reference != 0 else 1.0
    return robust_sigma(values) / scale


QUALITY_TOKENS = frozenset(
    {"map", "acc", "accuracy", "top", "f1", "auc", "auroc", "iou", "miou", "dice", "bleu", "rouge", "ndcg", "mrr",
     "pearson", "spearman"}
)
"""Words of an eval that sums up the model's quality as a whole (mAP integrates precision over every recall;
accuracy, F1, AUC, BLEU; a sentence-embedding model's Pearson or Spearman correlation with the gold
similarities). Precision and recall are each one side of a trade-off a confidence threshold sets,
and a component loss (YOLO's val cls_loss) one term of the objective: secondary evals, which a quality eval
at its best outvotes (`EvalDetector`'s ``quality_near_best_margin``)."""


RANKING_AT_K = re.compile(r"(?:^|[^a-z])(?:recall|hits?|hit_?rate|hr|r)(?:@|_at_|-at-)\d+", re.IGNORECASE)
"""A recall or hit rate at a cut-off k (``recall@10``, ``t2m_recall_at_10``, ``HR@10``, ``R@1``): a retrieval or
recommendation model's ranking score over its whole catalogue, as NDCG and MRR are, not one side of a threshold's
precision / recall trade-off."""


def is_quality_eval(name: str) -> bool:
    """Whether an eval's name says it sums up the model's quality (``mAP50-95``, ``val_acc``, ``top1``,
    ``recall@10``)."""
    return is_ranking_at_k(name) or any(token.rstrip("0123456789") in QUALITY_TOKENS for token in tokenize(name))


def names_average_precision(name: str) -> bool:
    """Whether an eval is a detector's average precision (``mAP50-95(B)``, ``bbox/AP50``, ``val/mAP_0.5``): a
    score a detector without skill holds at 0, whatever its class count."""
    return any(token.rstrip("0123456789") in EVAL_ONLY_QUALITY for token in tokenize(name))


def is_ranking_at_k(name: str) -> bool:
    """Whether an eval is a recall or hit rate at a cut-off k (`RANKING_AT_K`)."""
    return RANKING_AT_K.search(name) is not None


def percent_scale(name: str, values: np.ndarray) -> float:
    """100 for a quality eval printed in percent (`is_quality_eval`, every finite value within [0, 100] and some
    above 1: a NER dev accuracy at 98.7, a BLEU of 59.8), else 1: what its values are divided by to be read on
    the [0, 1] scale that the tests of a bounded metric (its headroom, its floor, its ceiling) assume. Read as
    they are, 98.7 has "98.7 left to gain" and a train accuracy of 93.4 counts as memorised (≥ 0.95)."""
    finite = values[np.isfinite(values)]
    percent = is_quality_eval(name) and finite.size > 0 and finite.min() >= 0 and 1 < finite.max() <= 100
    return 100.0 if percent else 1.0


def unit_scaled(name: str, values: np.ndarray) -> np.ndarray:
    """An eval's values on the [0, 1] scale (`percent_scale`)."""
    scale = percent_scale(name, values)
    return values / scale if scale != 1 else values


TRADE_OFF_TOKENS = frozenset({"precision", "recall"})
"""One side each of the trade-off a detector's or classifier's confidence threshold sets: one rises as the
other falls while the quality eval (mAP, F1) holds."""


def is_secondary_eval(name: str, eval_names: Sequence[str]) -> bool:
    """Precision or recall (`TRADE_OFF_TOKENS`), a component loss: an eval loss named for one term of the
    objective (``val/cls_loss``) beside other eval losses (YOLO's box, obj and cls), or a per-class score
    (`is_per_class_score`). A run's one eval loss, or its plain total (``val/loss``), is no component: it rising
    while the accuracy holds is overfitting."""
    tokens = set(tokenize(name))
    if TRADE_OFF_TOKENS & tokens and not is_ranking_at_k(name):
        return True
    if is_per_class_score(name, eval_names):
        return True
    losses = [other for other in eval_names if "loss" in tokenize(other)]
    qualified = tokens - EVAL_SPLIT_TOKENS - {"loss"}
    return "loss" in tokens and len(losses) >= 2 and bool(qualified)


def _quality_words(name: str) -> tuple[set[str], set[str]]:
    """The quality words of an eval's name (`QUALITY_TOKENS`) and its other words, digits stripped (no split word,
    no number)."""
    stems = {t.rstrip("0123456789") for t in tokenize(name) if t not in EVAL_SPLIT_TOKENS and not t.isdigit()}
    return stems & QUALITY_TOKENS, stems - QUALITY_TOKENS


def is_per_class_score(name: str, eval_names: Sequence[str]) -> bool:
    """A quality eval named for one class or subset (``val/egg_carton_mAP``, ``val/acc_cat``, ``val/dice_aug``) beside
    the run's plain eval of the same kind (``val/mAP_0.5``, ``val/acc``, ``val/dice``: its quality word and numbers
    only): one term or variant of the plain one, as a component loss is of the total, and as noisy as its subset is
    small; the plain one judges the run. A YOLOv5 run logging an mAP per grocery class was stopped for its
    egg-carton mAP sliding 0.044 -> 0.019 at epoch 25 while its overall mAP rose (log-ni-jordana-gc-1, round 77,
    healthy); a federated segmenter's Dice on augmented data stopped it at 6 checks before its plain Dice began
    its decay (log-nd-haoqingtianxia1997-1, ambiguous)."""
    quality, others = _quality_words(name)
    if not quality or not others:
        return False
    for other in eval_names:
        other_quality, other_words = _quality_words(other)
        if other != name and not other_words and quality & other_quality:
            return True
    return False


def outvoted(s: Signal, why: str) -> Signal:
    """A secondary eval's finding while the run's quality evals say otherwise (``why``: at their best, or not
    degrading): information, and no cause for another detector's finding (``outvoted`` in its evidence)."""
    if s.severity not in (Severity.WARNING, Severity.CRITICAL):
        return s
    return restated(s, f"but {why}, which outvotes a secondary eval: information, not a flag.", Severity.INFO,
                    outvoted=1.0)


SCORED_NOTHING_MIN_EVALS = 3


def has_quality_eval(ctx: JudgeContext) -> bool:
    """Whether the run logs an eval that sums up its quality (`is_quality_eval`: mAP, accuracy, F1) and that
    has scored something: one exactly 0 at every one of ≥ ``SCORED_NOTHING_MIN_EVALS`` evals (3, the evals from
    which a frozen or all-zero eval is judged stuck) vouches for nothing, so it neither outvotes a secondary
    eval nor holds a best. A YOLO segmenter whose box and mask precision, recall and mAPs were exactly 0 at all
    20 validations, every val loss NaN (log-np-egoryankovsky-1, round 83, bad): its NaN losses were information
    ("the quality eval is not degrading, which outvotes a secondary eval") and the run was stopped four checks
    after its third eval, by the mAP's own stuck rule."""
    return any(is_quality_eval(series.name) and not _scored_nothing(series) for series, _ in ctx.evals)


def _scored_nothing(series: MetricSeries) -> bool:
    _, values = finite_xy(series.steps, series.values)
    return values.size >= SCORED_NOTHING_MIN_EVALS and not bool(np.any(values))


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
            note = "but it is a secondary eval and the run's quality eval judges it: a warning, not a stop."
            s = restated(s, note, Severity.WARNING, secondary=1.0)
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
