"""The eval-trend tests' thresholds (``[judge.eval_trend]``), shared by `evaltrend_stuck`, `evaltrend_unchanged`
and `evaltrend`, and the measures they read: which eval stands in for a missing train loss (`primary_eval`)
or sums a run up (`judging_eval`), and how far an eval got (`progress`, `headroom`)."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from ..models import Direction
from ..roles import tokenize
from ..state import MetricSeries
from .context import Detector, JudgeContext
from .evalkinds import is_quality_eval, unit_scaled
from .stats import falling_pairs_share, rolling_median, strictly_falling, theil_sen

EDIT_RATE_TOKENS = frozenset({"wer", "cer"})
"""Word and character error rates: edit distances over the reference length, the only evals that exceed 1."""

RANKING_TOKENS = frozenset({"ndcg", "mrr", "hit", "hits", "hr"})
"""Top-k ranking metrics of a recommender or a retriever (NDCG@10, MRR, hit rate, HR@10): their level is set by
the catalogue's size and k, not by 1, so a low one is no sign of a hopeless model: a SASRec on Amazon Beauty
(12,000 items) reaches an NDCG@10 of 0.04 (log-ck-hmz76-1, healthy: 0.008 → 0.041 in 10 epochs, then a plateau,
was 'not learning: 3.3 % of what there was to gain' and stopped at 9 checks)."""

EMPTY_OUTPUT_RATE = 1.0
"""An edit-distance error rate of an empty output (every reference word deleted). Above it the model does
worse than saying nothing: it inserts garbage. A healthy MLPerf RNN-T's first eval is at 11.5 and its second
back at 1.0; a wav2letter model at 4.5 for three evals in a row has learned nothing."""


def primary_eval(ctx: JudgeContext) -> tuple[MetricSeries, Direction] | None:
    """The eval with the most finite points (the one logged most regularly); the first such by name."""
    ranked = sorted(ctx.evals, key=lambda e: (-int(np.isfinite(e[0].values).sum()), e[0].name))
    return ranked[0] if ranked else None


def progress(values: np.ndarray, direction: Direction, baseline: float | None = None) -> float:
    """How far the best eval moved from the first, as a share of what was there to gain.

    With a baseline (what comparable runs reach) that the first eval falls short of, what there was to
    gain is the way to it: a GPT-3 log perplexity from 2.75 to 2.72 against a target of 2.69 is half way.
    Otherwise a metric bounded in [0, 1] (accuracy, WER, F1) is measured against its headroom: an accuracy
    going from 0.001 (chance among 1,000 classes) to 0.002 doubled but gained 0.1 % of what it could; a
    loss against its first value (a loss that halves has moved 50 %).
    """
    first = float(values[0])
    best = float(values.max() if direction is Direction.HIGHER else values.min())
    gain = best - first if direction is Direction.HIGHER else first - best
    if baseline is not None:
        to_go = baseline - first if direction is Direction.HIGHER else first - baseline
        if to_go <= 0:
            return 1.0
        return gain / to_go
    bounded = bool(values.min() >= 0 and values.max() <= 1)
    room = (1 - first if direction is Direction.HIGHER else first) if bounded else abs(first)
    return gain / room if room > 0 else 0.0


def headroom(values: np.ndarray, direction: Direction) -> float:
    """What an eval's median level has left to gain: to 1 for a higher-is-better metric bounded in [0, 1] (an
    accuracy, an mAP), else its own size (a loss, a WER: a gain is a share of the level), as `progress`."""
    level = float(np.median(values))
    bounded = bool(values.min() >= 0 and values.max() <= 1)
    return 1 - level if bounded and direction is Direction.HIGHER else abs(level)


def ceiling_room(name: str, values: np.ndarray, direction: Direction) -> float:
    """`headroom` on the eval's [0, 1] scale (`unit_scaled`): a dev accuracy printed at 98.7 has 1.3 % left to
    gain, not 98.7 (five healthy ChineseNER runs of corpus_real/'s train split, round 17, were "flat below its
    ceiling" at 1-12 checks each with dev accuracies of 98.2-98.8)."""
    return headroom(unit_scaled(name, values), direction)


def judging_eval(ctx: JudgeContext) -> tuple[MetricSeries, Direction] | None:
    """The eval that sums the run up: the one with most finite points, a quality eval (`is_quality_eval`: mAP,
    accuracy, F1) first among equals, then the first by name."""
    ranked = sorted(
        ctx.evals,
        key=lambda e: (-int(np.isfinite(e[0].values).sum()), not is_quality_eval(e[0].name), e[0].name),
    )
    return ranked[0] if ranked else None


def hopeless_progress(values: np.ndarray, direction: Direction) -> float:
    """`progress` on medians of 3 evals: from the median of the first 3 to the best median of 3 in a row."""
    return progress(rolling_median(values, 3), direction)


class EvalTrendBase(Detector):
    """The eval-trend tests' thresholds, and what both kinds of test read: whether a series falls (by
    Theil–Sen, or point by point below 4 points), improves significantly, or sits at a hopeless level.

    Thresholds:
    - ``min_evals``: fewer finite evals than this → too early to judge (4: the fewest on which a rank
      slope can be significant at all).
    - ``trend_window_evals``: the slope is measured over the last 20 evals (a few epochs of a per-epoch
      accuracy, a few thousand steps of a validation loss every few hundred).
    - ``slope_confidence_z``: two-sided normal quantile of the Theil–Sen band (1.96 → 95 %), as the trend
      detector's.
    - ``stuck_min_evals`` / ``stuck_progress_fraction``: after 6 evals, a best eval that has gained less than 15 %
      of what there was to gain since the first (the train loss's ``flat_min_drop_fraction``; see
      `progress`) and with no significant trend in its good direction over all evals is not learning →
      warning. A healthy run gains most of its eval in its first evals, or at least keeps gaining.
    - ``steady_pairs_share`` / ``steady_min_change_fraction``: an eval better eval after eval — ≥ 95 % of its
      pairs (each eval against each later one) in its good order, over ≥ ``stuck_min_evals`` evals, and its best
      ≥ 1 % better than its first (relative to the larger of the two) — is learning too, however little of its
      headroom it gained (`_steady`): never stuck, and it outvotes a hopeless sibling as a significant trend
      does. The Theil–Sen band's autocorrelation correction reads the curvature of a steady climb as
      correlated noise: a from-scratch YOLOv8n-obb's mAP50-95 rising at every epoch but one, 0 → 0.044 over
      its first 15 epochs (4.4 % of its headroom, 99 % of its pairs rising), scored Mann–Kendall z 1.9 on 2.2
      effective points and stopped a healthy run at 4 checks (log-obb-schnilchmitte-1, round 9). On noise,
      95 % of 6 evals' 15 pairs in order (none out of order) has a chance of 1 in 720. The stuck evals of the
      train split's bad and ambiguous runs, at the checks the stuck rule flags them, have at most 86 % of their
      pairs in order (a stuck MLPerf BERT's eval loss 8.003 → 7.973 over 20 evals, 0.4 %: the 1 % is the
      ``chance_min_fall_fraction`` of an eval loss at ln N, under which a fall is rounding digits, not learning).
    - ``overfit_witness_margin``: a hopeless eval judged stuck (above: under ``stuck_progress_fraction`` of its
      headroom, by medians of 3) is also critical at the second check that sees it, whatever share of its
      headroom under that it gained, while an eval loss of the run overfits: the median of its last 3 evals
      ≥ 5 % worse than its best eval (≥ 3 evals before its last, over ≥ 6 evals), with the train loss (median
      of 5 points) ≥ 5 % lower than at that best (`_overfit_witness`). 5 % and 3 evals are the eval detector's
      ``degrade_margin`` and ``patience_evals``, its overfitting warning. The two are one failure read twice: the
      model memorises its training set while the held-out side never learned and is losing what little it
      had. A CLIP-style fine-tune whose val retrieval top-1 rose from chance (1/87) to 0.08 at epoch 6 and fell
      back to 0.04 (5.3 % of its headroom, just above ``stuck_stop_fraction``) while its val loss never improved
      on its epoch-2 best and the train loss fell 4.4 → 0.09 was unsure at 18 checks and never stopped
      (log-th-jayshenoy-1, round 9, bad). No other run of corpus_real/'s train split changed a decision for it;
      its one healthy run with both at one check (a YOLOv8-pose at its first check) has no check before.
    - ``memorised_train_fall_fraction``: the witness's train loss has fallen to at most half (≥ 50 %) of its
      level at the eval loss's best: a memorised training set, as the CLIP fine-tune's 4.4 → 0.09 (90 %) is. A
      train loss easing 5-20 % is a model still learning, and a slow-starting detector's val box or objectness
      loss off its first-epoch best is no witness beside it. At stop 39 (1,974 train runs) the witness made
      critical the hopeless evals (5-15 % of their headroom) of three healthy YOLO runs with the train box loss
      5.4-14 % lower, and stopped one of them (a segmenter at 7.5 % of its mAP's headroom after 16 epochs, 0.5
      later: log-np-it21344756-1); at half, it stops none of them and the bad run it was written for still.
    - ``stuck_stop_fraction``: below 5 % (the metric sits at its initial value: chance accuracy, a WER
      near 1) and seen by the previous check too → critical: a run stuck for a large share of its steps
      does not start learning later. The previous check need not have had fewer evals: evals can be hours
      apart, and waiting for the next one only lets a run that never learns go on.
    - ``stuck_growth_ratio``: a higher-is-better eval whose level (median of its last 3 evals) is ≥ 5× its first
      level (median of its first 3) is leaving its floor, however little of its headroom that is: a slow start, not
      a stuck run, so its not-learning finding stays a warning (unsure) at a second check. Without a baseline
      the headroom is the whole scale, which a detector's mAP50-95 starting at 0.0002 takes epochs to show a
      share of. At stop 40 (2,084 train runs) the healthy slow starts stopped as not learning had grown 5-130×
      at their stop (YOLO mAPs 0.0003 → 0.033 after 14 epochs, 0.0002 → 0.013 after 36 of 100, 0.0011 → 0.012
      after 9: log-nw-kallasrikanth1999-1, log-nu-achyuta41-1, log-nq-skull1807-1), the bad runs' stuck evals at
      their fault at most 2.75× (an accuracy 0.023 → 0.063 that never learns, log-th-jayshenoy-1) or at 0.
    - ``stuck_ap_floor_fraction``: without a baseline, a detector's average precision (`names_average_precision`:
      mAP50-95, bbox AP) whose best is ≥ 1 % (0.01), its values not one number repeated, is not stuck at a second
      check either, however little of the scale it gained: a detector without skill holds it at 0, so one at
      0.04-0.14 finds objects, and a low plateau of it is unsure (a flag), not a stop. The stuck rule's "initial
      value" is chance (an accuracy at 1/N, a WER near 1), and an mAP's chance is 0. At stop 42 (2,267 train runs)
      six healthy YOLO runs were stopped as not learning with best mAPs of 0.037-0.14 after 7-41 epochs (a
      warm-up dip 0.042 → 0.029 → 0.077 at epoch 7 of 20, later 0.23: log-pg-rolanddeschain-ship-it-1;
      log-ne-anikribhu-1, log-nf-fdisla1608-1, log-nj-ancientaritocrat-1, log-nu-d1r34n-1,
      log-pc-artitsamchoosri-1); the bad runs' stuck mAPs were exactly 0 at their first stop, and those whose mAP
      had left 0 (a loss blow-up, an eval collapse) are stopped by those faults' own findings. Under 1 %: a
      segmenter's mask mAP50 at 0.009 after 26 epochs still stops its healthy run (log-np-laupgm-1), as an
      obb model's frozen 0.0008 does (log-yolov5_obb-1, ambiguous).
    - ``stuck_baseline_min_evals`` / ``stuck_far_fraction``: with a baseline for the eval (what comparable
      runs reach), it is judged stuck from its 3rd eval, and only while its best is ≥ 25 % worse than the
      baseline (the eval detector's ``far_margin``): a metric at chance for three evals while comparable
      runs are far above it from their first is visible then; one near its target (a U-Net3D Dice of
      0.89 against 0.908, a GPT-3 perplexity finishing its last percent) is not stuck however slowly it
      moves. Its progress is measured on the way to the baseline (`progress`), and it is stuck below
      ``stuck_stop_fraction`` of it (the way being known, a slow start is not a warning).
    - ``frozen_min_evals``: an eval with a baseline, far below it, and identical to the last digit at every
      one of its first 2 evals, to at least ``FROZEN_MIN_DIGITS`` (stats) significant digits, is frozen (the
      evaluation does not look at the model: an FID of 646.082 at every eval) and judged stuck at once; a
      learning model's eval never repeats itself exactly. Without a baseline, a hopeless eval (below)
      frozen from its first eval is judged stuck from its 3rd (``stuck_baseline_min_evals``), not its
      6th: a BERT classifier's validation accuracy at 3.6058 % at every epoch predicts one class. (A
      healthy RNN-T's WER repeats 0.977391 while it outputs blanks, but not from its first eval on.) So is an
      accuracy (not an mAP: a detector's slow start sits at 0) exactly 0 at every eval from its first, which has
      no digits to be frozen to: below chance (1/N) at every eval, no held-out prediction is ever right (a
      YOLOv8n-cls's val top-1 and top-5 at 0 for all 22 epochs while its train loss falls 2.52 → 0.05:
      log-cls-ahmed-ashraf-khalil-1, bad, was flagged at its 6th eval and stopped four checks late).
    - ``zero_accuracy_flag_evals``: such an accuracy exactly 0 is a warning from its first eval (1), before its
      3rd: below chance at its first eval, no held-out prediction is right, whatever the train loss does. Every
      train run of corpus_real/ with an eval accuracy exactly 0 at its first eval is bad or ambiguous (8 runs; a
      flair tagger's DEV accuracy and F1 at 0 after its one epoch, issue-flair-213, ambiguous, was continue at
      every check). Its stop still waits for the 3rd eval (a warning at the next check on the same evals); seen
      at the check before, it is critical at its 3rd eval (log-cls-ahmed-ashraf-khalil-1, bad: a check sooner).
    - ``zero_ap_flag_evals``: a detector's average precision (`names_average_precision`) exactly 0 at every one of
      its ≥ 2 evals, as every other average precision of the run is, finds nothing yet: a warning before it has
      the ``stuck_min_evals`` (6) to be judged stuck, never a stop sooner. Its first check then counts as the
      previous sighting, so the first check with 6 such evals stops it. At stop 43 (2,304 train runs) YOLO
      detectors at 0 at every epoch were continue at the first check (3 evals), flagged at the next and stopped
      one check later (log-no-deskthom-1, log-nu-guilhermenobre-1, bad). One eval at 0 is not flagged: 16 healthy
      train runs with an average precision score 0 at their first eval and not at their second; a slow start
      sits at 0 for up to 27 evals (log-ni-elegant0lemon-1, healthy), which the flag never stops sooner than a
      stuck eval would be. Not while another average precision of the run has left 0: a pose head at 0 for its
      first 7 epochs beside a box mAP50 at 0.79 is a keypoint head starting later (log-ns-kedarnathkc-1,
      healthy, stopped at its 4th check without this).
    - A word or character error rate above 1 (`EMPTY_OUTPUT_RATE`) at every eval, for at least 3 evals
      (``stuck_baseline_min_evals``) is worse than an empty output and judged stuck from its 3rd eval, as a
      frozen hopeless eval is (progress measured against its first value).
    - ``hopeless_fraction``: in a run with a train loss, an eval without a baseline is judged stuck (as
      above) only when it is bounded in [0, 1] and its best is within 15 % of the worst end (accuracy ≤
      0.15, WER ≥ 0.85): a fine-tuning eval that starts near its best is normal, a WER stuck near 0.9
      from the start is not.
      Its stop (below ``stuck_stop_fraction``) reads medians of 3 evals at both ends, the first 3 and the best
      3 in a row (`hopeless_progress`), as the eval detector reads a best: at that level the eval-to-eval
      noise is as large as all of the progress there is to gain, so one lucky eval must not decide it (issue
      9: a Whisper fine-tune's WER swinging 0.90–0.98 for 20 evals, one 0.899 at its 2nd, was 6.8 % of the way
      from its first 0.964, unsure at 15 checks and never stopped; by medians of 3 it gained 2.8 %). The
      warning keeps the single best, so no eval is flagged that was not before. Nor is it stopped while another
      quality eval of the run (`is_quality_eval`, bounded) has gained ≥ ``stuck_progress_fraction`` of its
      headroom by the same medians: the model is learning, and the hopeless one is its stricter reading (a
      YOLOv5's mAP@0.5:0.95 at 0.03–0.09 for its first 15 of 20 epochs while its mAP@0.5 reaches 0.25–0.46,
      then 0.50 and 0.99: log-yolov5_model-1, healthy, was stopped at 9 checks). Nor is it a warning: the
      other quality eval says the model learns, which outvotes the hopeless one (information): a stricter
      reading of the same quality (mAP@0.5:0.95 beside mAP@0.5) is learned later, and one side of a
      confidence threshold's trade-off (`evals.is_secondary_eval`: precision, recall) says nothing against a
      quality eval that has learned (a YOLOv8's precision(B) at 0.008 for 36 evals while its mAP50(B) gains
      97 % of its headroom: log-mouse-keyboard-detector-1, healthy, unsure at 6 checks;
      log-yolov5_model-1 at 8 more). No ambiguous or bad run of either train split was flagged by it alone.
      A quality eval near the top of its scale (the median of its last 3 evals ≥ 1 − ``hopeless_fraction``,
      0.85: as far from its good end as a hopeless eval is from its bad one) outvotes it too: a fine-tune's
      box mAP50 at 0.995 from its first eval has no headroom left to gain, while its keypoint mAP50 sits at 0
      for 14 of 150 epochs and then reaches 0.96 (log-pose-vahhabbm-1, healthy, was stopped at its second
      check); a fine-tune's box mAP50 at 0.91 whose keypoint mAP is 0 at its first 9 epochs of 500 was
      stopped for it, 6 epochs before its box mAP's real decay (log-pose-andrejet55-1, bad). Not one exactly
      the same at every eval: an audio-visual model's fused accuracy at 1.0 for 100 epochs beside a branch at
      0.0 is a degenerate test set (log-OGM-GE-1, bad).
      So does one rising significantly over all its evals (Theil–Sen at ``slope_confidence_z``, as the eval's
      own `_improving`): a box mAP50 doubling 0.15 → 0.32 over 11 epochs had gained 14.5 % of its headroom
      by medians of 3, so the keypoint mAP50-95 at 0.06-0.085 stopped the run at epoch 11, five epochs before
      its overfit (log-pose-ignaher12-1, bad). A keypoint head exactly 0 from its first eval beside it waits for
      ``zero_head_run_fraction`` (log-pose-sinyukkirill-1, bad, stopped at 25 of 100 epochs, not 5).
      A learning quality eval outvotes any stuck eval without a baseline, hopeless or not, and in an eval-only
      run too: a sketch classifier's accuracy rising at every epoch 0.33 → 0.40 while its macro F1 over many
      imbalanced classes wanders 0.04-0.10 (log-tu-gaallmin-1, round 32, healthy) was stopped for its F1 at
      3 checks, since only a run with a train loss had its siblings asked.
    - ``stuck_min_run_fraction``: without a baseline, a stuck eval that still moves (its evals not one value
      repeated: a frozen or all-zero eval is an output that does not change, and is stopped as before) is a
      warning, not a stop, before a quarter of a known total: the train loss's ``stuck_min_run_fraction``,
      a slow start that a schedule's later steps may undo. A YOLOv8n-seg's mask mAP50 at 0.04-0.12 over its
      first 8 of 50 epochs, its LR still in Ultralytics' warmup (at least 100 iterations, half the run on its
      small data set), was stopped at epoch 8; it climbs to 0.34 by its last epoch (log-seg-ferogama-1,
      healthy). No bad run of the train split was stopped later for it.
    - ``zero_head_run_fraction``: but not once the hopeless eval has been exactly 0 at every eval up to a
      quarter of a known total (the train loss's ``stuck_min_run_fraction``): one head of a two-headed
      model (box and keypoints) that has scored nothing for a quarter of the run while the other learns is
      not learning its task — a warning, critical at the next check that still sees it. YOLOv8-pose keypoint
      mAPs exactly 0 at all 50 and 60 epochs while their box mAPs reach 0.83 and 0.40 (log-pose-fournier-1,
      log-pose-donidodni-1, bad) were information to the end; the healthy heads of the train split left 0 by
      9-11 % of their runs (keypoints: 14 of 150 epochs, 11 of 100; a box head 41 of 1,000), as a YOLOv5-OBB
      run of issue 9 did after 21 epochs. Without a known total a zero head stays information.
      (Judged against its headroom, an accuracy climbing from 0.001 to 0.12 gained little; its significant
      trend keeps it from being called stuck.)
    - ``zero_head_min_evals``: and at ≥ 10 evals: a quarter of a short run is too few evals to call a head
      dead. A YOLOv8n-pose fine-tune of 25 epochs whose keypoint mAPs were 0 at epochs 1-7 (28 % of its run)
      was stopped at epoch 7; they rise from epoch 8 to 0.26 at its last (log-ns-kedarnathkc-1, round 86,
      healthy). The healthy heads above left 0 after 11 and 14 evals, at 9-11 % of longer runs; the bad heads
      of the train split were 0 at 16-31 evals when stopped.
    - Any other eval of a run with a train loss is judged not learning from its 3rd eval
      (``stuck_baseline_min_evals``) when it shows the model's output has not changed: with the train loss not
      falling either (Theil–Sen from 4 points at ``slope_confidence_z``; below that, not every point lower than
      the one before), it is identical to the last digit at every eval from its first (`is_frozen`, ≥ 4
      significant digits: a graph classifier's accuracy at 0.5298 for 20 epochs, a Keras model's at the
      0.9983 majority share, each predicting one class; a learning model's eval never repeats itself
      exactly, and a converged one was not frozen from its first eval), or it is an eval loss at its
      untrained level: its median within ``chance_drop_fraction`` of ln N or above it for the config's class
      count N (without one, N told by the run itself: an accuracy logged with it at 1/N, `chance.py`), its
      best (median of 3) less than that below its first eval, and not falling (a two-class video model at
      ln 2 = 0.693 for 7 epochs; a 4-option QA model's eval loss at 1.3863 = ln 4 beside an accuracy at
      0.25). A warning, and critical when the next check still sees it,
      new evals or not — the train loss's ``_at_chance`` rule, on the held-out side. A frozen eval beside
      another eval of the run, a loss, falling over its evals (`_moving_eval`: significant, a fitted fall ≥
      ``chance_min_fall_fraction``) is a flag, never a stop: the outputs change on the held-out set, their
      argmax has not flipped yet (an EEG classifier's val accuracy at 0.48062, one class's share, for its first
      23 epochs while its val loss falls 1.78 → 1.70 over the first 6, then 0.50-0.56: stopped at its second
      check, 12 steps into 118; the frozen stops of the corpus have their eval loss frozen too or flat).
    - An eval accuracy repeated exactly from its first eval (any number of digits) beside a train accuracy
      frozen to the last digit from its first point (`is_frozen`), both over ≥ ``stuck_baseline_min_evals``
      points, predicts the same on both sets: a warning (flagged for a look, never a stop), whether or not
      the losses fall — a GCN at 0.62857 train and 0.51 validation accuracy for 11 epochs while both losses
      still fall 10 % and 3 %. The train accuracy's ≥ 4 digits repeated are what a learning model never
      logs; a held-out accuracy on a small set (51 of 100 nodes) repeats by chance, so alone it is not
      enough, and with the losses moving the model may yet change its predictions.
    - ``settle_evals``: the same holds when both are repeated from their second point on (≥
      ``stuck_baseline_min_evals`` points after it): the first point is logged after one epoch, before a
      model collapsing to one class has settled on it (a keras-gcn on Cora at 0.30 then 0.2929 train and
      0.3433 then 0.35 val accuracy for 11 epochs while both losses fall 6 %). 1, not more: a run whose
      accuracies moved for several evals and then repeat to the last digit is a finding of its own, not this.
    - ``chance_drop_fraction``: 5 %, the trend detector's ``stuck_drop_fraction``: within it of ln N the loss
      is the uniform predictor's.
    - ``chance_min_fall_fraction``: an eval loss at ln N that falls significantly is learning only when its
      fitted fall over its evals (Theil–Sen slope × their span, log scale) is at least 1 %, a fifth of
      ``chance_drop_fraction``: at that pace it leaves chance within five such spans. Four evals of a
      model outputting the uniform distribution can fall in rank order by digits of rounding (issue 9: a
      4-option QA model's eval loss 1.3863, 1.38628, 1.38619, 1.3856 = ln 4, a 0.05 % fall, read as
      falling, so the run was flagged a check after its fault was visible and stopped two after).
    - ``plateau_min_evals`` / ``plateau_gain_fraction``: in a run whose train loss falls (Theil–Sen over its
      points since the first eval), the eval that sums the run up (`judging_eval`: most evals, a quality eval
      first) flat over all of its ≥ 7 evals — no significant trend either way, and a slope band
      (``slope_confidence_z``) that rules out a gain of 5 % of its headroom (`headroom`: to 1 for an accuracy,
      its own level for a loss) over them — is flagged: the model keeps fitting its training set while the
      held-out metric gains nothing (converged, or no longer generalising). A warning, never a stop, and no
      not-learning finding (`context.PLATEAU_EVIDENCE`). 7 evals and 5 %, the train-loss plateau's
      ``plateau_min_points`` and ``stuck_drop_fraction`` (issue 9: a NER dev F1 at 0.692-0.701 for 7 epochs
      while its train loss fell 54,603 → 44,205; an MNIST MLP's val loss at 0.0714-0.0740 for 10 epochs from
      the first while its train loss fell — ambiguous, continue at every check). A train loss flat too is the
      trend detector's plateau; an eval that improves early and then saturates has a significant trend over
      all its evals.
    - ``plateau_ceiling_fraction``: an accuracy-like eval whose median is ≥ 0.95 (the ``memorised`` level of the eval
      detector) is at its ceiling, not on a plateau: a YOLO mAP@0.5 at 0.995 for 140 epochs, a classifier's
      val accuracy at 0.98 (log-FaceCar-YOLOv5-1, log-OSCCC-Detection-1, healthy: flagged at 7 and 8 checks
      without it). Its headroom is too small for any band to rule out 5 % of it anyway, except on an eval
      repeated to the last digit.
    - ``frozen_tail_evals``: a quality eval (`is_quality_eval`) below that ceiling repeated exactly over its last
      ≥ 10 evals, having moved before or not, while the train loss does not fall over their steps, is a flag (a
      warning, never a stop): the held-out predictions stopped changing and nothing else moves. An st-gcn's
      top-1 at exactly 0.4 for its last 17 of 20 evals (a 5-clip test set) while its train loss wanders
      1.05-2.3 with no trend (log-st-gcn-master-improved-1, ambiguous) was continue at every check past its
      doubt point. On a small eval set a repeat alone is chance (51 of 100 nodes), so the train loss must be
      flat too. The healthy runs of corpus_real/'s train split with a quality eval repeated ≥ 7 times below
      0.95 are two YOLOv5 runs in their last epochs: one's mAP@0.5:0.95 13 times while its box loss still
      falls (log-the-Garbage-Projeckt-1), the other's 8 times at 0.666 with its losses flat
      (log-FaceCar-YOLOv5-1): 10 is above those 8. A lower-is-better eval (a loss, an FID) repeated to the last
      digit (`is_frozen`, ≥ 4 significant digits) over its last 10 evals with the train loss flat over them and
      no other eval loss falling is a stop at the next check (`_frozen_loss_tail_why`): a continuous value does
      not repeat by chance (a Keras regressor's val loss at 0.03065895905925168 from its 3rd to its 4,000th
      epoch, log-Tweet-Popularity-1, bad; no healthy run of either corpus's train split has an eval loss
      repeated so even 5 times). Not while the LR over those evals is ≤ ``frozen_dead_lr_ratio`` (1e-3, the LR
      detector's ``dead_ratio``: updates a thousand times smaller than at the peak) × its peak: the schedule
      froze the model, a dead LR that the LR detector flags for a look (issue 9's ambiguous dead-LR runs;
      corpus/'s a05 and a06, whose eval loss repeats exactly once their LR is dead, are flagged, not stopped).
      The repeats are counted across one eval that differs when the value on both sides of it is the same
      (`repeats_across_one_eval`): coming back to the identical continuous value is itself the dead output.
      In a run with no train loss, the primary eval so repeated is a flag, never a stop (`_frozen_primary`): a
      schedule decayed to nothing and a dead network look the same without one (log-lh-agronowski-1,
      ambiguous: an MNIST val loss at 0.5736554 for its last 60 epochs, continue at every check before).
    - ``same_predictions_stop_evals``: an eval accuracy below that ceiling repeated exactly from its first eval
      beside a train accuracy frozen to the last digit from its first point (`_same_predictions`), both over
      ≥ 15 points, is a stop at the next check whatever the losses do: for 15 epochs the model has predicted
      the same for every example of both sets, the training set's majority share to six digits (a Keras MLP at
      train accuracy 0.808919 and val accuracy 0.8594 for all its 100 epochs while both losses fell,
      corpus_real log-ts-p4nzer96-1, round 55, bad: unsure at all 20 checks). Before 15 it is a flag: falling
      losses may still flip a prediction. One side alone is not enough: an accuracy repeated over its first 23
      evals while the train accuracy rose, and then learning a little (log-EEG-Classification-1, bad for a
      later overfit), is a model whose outputs still change; and the two must be one accuracy on two sets
      (``train/k_accuracy`` beside ``val/k_accuracy``), not two heads of a multi-task model. No healthy run of
      corpus_real/'s train split has both accuracies so repeated even 3 times below the ceiling.
    """

    min_evals: int = Field(default=4, ge=4)
    trend_window_evals: int = Field(default=20, ge=4)
    slope_confidence_z: float = Field(default=1.96, gt=0)
    stuck_min_evals: int = Field(default=6, ge=2)
    stuck_progress_fraction: float = Field(default=0.15, gt=0, lt=1)
    stuck_stop_fraction: float = Field(default=0.05, gt=0, lt=1)
    stuck_baseline_min_evals: int = Field(default=3, ge=2)
    stuck_far_fraction: float = Field(default=0.25, gt=0)
    frozen_min_evals: int = Field(default=2, ge=2)
    hopeless_fraction: float = Field(default=0.15, gt=0, lt=0.5)
    settle_evals: int = Field(default=1, ge=0, le=1)
    chance_drop_fraction: float = Field(default=0.05, gt=0, lt=1)
    chance_min_fall_fraction: float = Field(default=0.01, ge=0, lt=1)
    plateau_min_evals: int = Field(default=7, ge=4)
    plateau_gain_fraction: float = Field(default=0.05, gt=0, lt=1)
    plateau_ceiling_fraction: float = Field(default=0.95, gt=0, le=1)
    frozen_tail_evals: int = Field(default=10, ge=3)
    same_predictions_stop_evals: int = Field(default=15, ge=3)
    frozen_dead_lr_ratio: float = Field(default=1e-3, gt=0, lt=1)
    zero_head_run_fraction: float = Field(default=0.25, gt=0, le=1)
    zero_head_min_evals: int = Field(default=10, ge=1)
    stuck_min_run_fraction: float = Field(default=0.25, ge=0, lt=1)
    steady_pairs_share: float = Field(default=0.95, gt=0.5, le=1)
    steady_min_change_fraction: float = Field(default=0.01, ge=0, lt=1)
    overfit_witness_margin: float = Field(default=0.05, gt=0, lt=1)
    memorised_train_fall_fraction: float = Field(default=0.5, gt=0, lt=1)
    stuck_growth_ratio: float = Field(default=5.0, gt=1)
    stuck_ap_floor_fraction: float = Field(default=0.01, gt=0, lt=0.15)
    zero_accuracy_flag_evals: int = Field(default=1, ge=1)
    zero_ap_flag_evals: int = Field(default=2, ge=1)

    def _real_fall(self, steps: np.ndarray, y: np.ndarray) -> float | None:
        """How far a log-scale series that falls (`_falling`) falls over its steps, when that is at least
        ``chance_min_fall_fraction`` (more than rounding digits), else None: its Theil–Sen slope × its span from
        4 points, its first minus its last below that."""
        if y.size < 4:
            fall = float(y[0] - y[-1]) if self._falling(steps, y) else None
        else:
            trend = theil_sen(steps, y, confidence_z=self.slope_confidence_z)
            fall = -trend.slope * float(steps[-1] - steps[0]) if trend is not None and trend.falling else None
        return fall if fall is not None and fall >= self.chance_min_fall_fraction else None

    def _falling(self, steps: np.ndarray, y: np.ndarray) -> bool:
        """Theil–Sen falling from 4 points; below that, every point lower than the one before."""
        if y.size < 4:
            return y.size > 1 and strictly_falling(y)
        trend = theil_sen(steps, y, confidence_z=self.slope_confidence_z)
        return trend is not None and trend.falling

    def _hopeless(self, name: str, values: np.ndarray, d: Direction) -> bool:
        """A metric bounded in [0, 1] (`unit_scaled`) whose best is within ``hopeless_fraction`` of its worst end (an
        accuracy ≤ 0.15, a WER ≥ 0.85): with a train loss to judge the run by, only such an eval is judged stuck. Not a
        loss (its name says so) whose values happen to lie in [0, 1]: a loss has no worst end at 1, and a YOLO11n-obb
        fine-tune's val box loss at 0.96 from its first epoch (falling to 0.91 by its 100th) was read as a WER near 1
        and flagged not learning at its first 3 checks (log-obb-slavikovics-1, healthy). Nor a ranking metric
        (``RANKING_TOKENS``): its level is the catalogue's, not the model's distance from 1."""
        values = unit_scaled(name, values)
        if values.size == 0 or values.min() < 0 or values.max() > 1 or RANKING_TOKENS.intersection(tokenize(name)):
            return False
        if d is Direction.LOWER and "loss" in tokenize(name):
            return False
        if d is Direction.HIGHER:
            return float(values.max()) <= self.hopeless_fraction
        return float(values.min()) >= 1 - self.hopeless_fraction

    def _improving(self, steps: np.ndarray, values: np.ndarray, d: Direction) -> bool:
        """A significant trend in the good direction over all evals: learning, however slowly (an MLPerf
        BERT accuracy climbing from 0.70 to 0.72 gains little of its headroom but is on its way); or a steady
        one (`_steady`), which the autocorrelation correction cannot see."""
        return self._significant(steps, values, d) or self._steady(values, d)

    def _significant(self, steps: np.ndarray, values: np.ndarray, d: Direction) -> bool:
        """A Theil–Sen trend in the good direction at ``slope_confidence_z``."""
        trend = theil_sen(steps, values, confidence_z=self.slope_confidence_z)
        return trend is not None and (trend.rising if d is Direction.HIGHER else trend.falling)

    def _steady(self, values: np.ndarray, d: Direction) -> bool:
        """At least ``stuck_min_evals`` evals with ≥ ``steady_pairs_share`` of their pairs (each eval against
        each later one) in the good order, the best ≥ ``steady_min_change_fraction`` better than the first
        (relative to the larger of the two): better eval after eval, however little of its headroom it gained."""
        if values.size < self.stuck_min_evals:
            return False
        first = float(values[0])
        best = float(values.max() if d is Direction.HIGHER else values.min())
        scale = max(abs(first), abs(best))
        if scale == 0 or abs(best - first) / scale < self.steady_min_change_fraction:
            return False
        return falling_pairs_share(values if d is Direction.LOWER else -values) >= self.steady_pairs_share
