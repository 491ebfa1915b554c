"""The train loss's trend tests, their common part: the thresholds of ``TrendDetector`` (one settings
section, ``[judge.trend]``) and the levels both the rise tests (`trend_rise`) and the stall tests
(`trend_stall`) read.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from ..models import Severity, SignalKind
from .context import Detector, JudgeContext
from .stats import strictly_falling, theil_sen

TAIL_POINTS = 512  # trailing runs above a threshold are counted over at most this many recent points
MEDIAN_SE = 1.2533  # standard error of a median of n normal points is this × σ / √n


def median_gap_error(sigma: float, n1: int, n2: int) -> float:
    """Standard error of the difference between a median of ``n1`` points and one of ``n2`` points whose noise is
    ``sigma`` (`MEDIAN_SE`): how far two levels of a loss must be apart before the gap is more than its noise."""
    return MEDIAN_SE * sigma * float(np.sqrt(1 / n1 + 1 / n2))


def holds_start(steps: np.ndarray) -> bool:
    """A log holding the run's start: its first step within two of its logging intervals (the median step
    between points, so unit-free: updates or epochs)."""
    return steps.size >= 2 and float(steps[0]) <= 2 * float(np.median(np.diff(steps)))


class LossTrendBase(Detector):
    """The train-loss trend tests' thresholds, and the levels both kinds of test read (the run's early
    points, its best block median, whether it falls).

    Thresholds:
    - ``min_points``: fewer finite loss points after warmup than this → "too early to judge" (10: the
      smallest sample on which a median and a rank slope mean anything).
    - ``min_smooth_points`` / ``smooth_window_points``: the recent level is a rolling median of the
      fewest points, between 5 and 25, whose standard error puts a ``divergence_ratio`` change
      ``divergence_z`` errors away: 5 on a smooth loss (3 of 5 points must be above — one outlier never
      counts), 25 when per-step losses of small batches swing 10× between points (the corpus' batch-4
      runs), where a median of 5 wanders by ±50 %. 25 points still fit many times between two checks.
    - ``reference_window_points``: "best so far" is the lowest median of consecutive blocks of this many
      points (50), not the single lowest value, which noise drags down.
    - ``divergence_ratio``: the recent level ≥ this × the best so far is divergence. 2.0 is
      llm-foundry KillLossSpike's multiplier.
    - ``divergence_z``: and the gap must be ≥ this many standard errors of (level − best), from the noise
      of log(loss): 4, because the best is a minimum over many blocks and so sits ~2.5 errors low.
    - ``blowup_early_ratio`` / ``blowup_min_ratio``: the recent level ≥ 3× the median of the first
      ``early_window_points`` after warmup (at most the first third of a short log's points; worse than
      the untrained model by far), or ≥ 10× the best
      level (Megatron's 10×), is a blow-up. Sustained, it is a warning at the first check that sees it
      and critical when the previous check (with points since) saw it too, or at once when it is still
      climbing (a runaway) or has a cause (the policy: an LR jump, a grad-norm explosion). Large real
      runs have blow-ups that fall back within a check (a recommendation model's loss at 3× its early
      median in its first few dozen logged steps); the seed's rule confirms over several checkpoints.
      The same 10× is also read on raw points, at any length of log: the last ``sustain_points`` raw
      points in a row each ≥ 10× the median of the log's first ``early_window_points`` (at most its first
      third, at least ``sustain_points``). A per-step loss whose noise sizes the rolling median to 25
      points hides a blow-up shorter than half of that window however large it is (issue 9: a Faster
      R-CNN loss swinging 0.14–1.0, then 25,238 and on to 1.2e6, was a "spike" at every check).
    - ``blowup_stop_ratio``: those raw points each ≥ 100× the early median (``blowup_min_ratio``²: ten
      times past the blow-up line at every point) are critical at once, without waiting for the next
      check: two orders of magnitude past the untrained model's loss is weights thrown off, not a
      transient — the recoverable blow-ups of issue 9 reach 3–4× the early median, the healthy runs of
      both corpora' train splits stay below 1.3× at three points in a row (2× at any single point), and
      a single 1e16 batch (a detection run's recurring explosions) is one point, never three in a row.
      Between 10× and 100× the raw blow-up is confirmed like the smoothed one (a short pasted log at 12×,
      70×, 83× is unsure, then stopped at the next check).
      The same 100× (against the best median) also ends a divergence's wait for confirmation: an episode whose
      raw peak was ≥ 100× the best median before it and ≥ ``blowup_early_ratio`` × the early median (past the
      loss the run started from, so a loss at a floor orders of magnitude below its start is not judged by
      ratios of tiny numbers) is critical as soon as the divergence after it is sustained, even while it
      falls: the loss has not come back from the blow-up, and weights thrown that far do not return to their
      best (issue 9: a physics-informed net's loss at 0.022 blew up to 17.9, 788× its best, and fell back
      only to 6-9× its best for 185 epochs, watched as "falling again" at every check).
    - ``sustain_points``: smoothed (or, for the raw blow-up, raw) points in a row above a threshold
      before it is reported (3).
    - Raw divergence in a short log: below ``min_points`` the smoothed divergence cannot be measured, so
      raw points stand in for it, as for the raw blow-up: the last ``sustain_points`` raw points in a row
      each ≥ ``divergence_ratio`` × the median of the log's first points (at most its first third, at
      least ``sustain_points``). Watch, like an unconfirmed divergence; a warning (a reviewer's look)
      while it keeps climbing — each of those points above the one before — or when the previous check
      (with points since) saw it rising or diverging too, and critical at once only with a cause (the
      policy: an LR jump, a grad-norm explosion). No healthy run of either corpus' train
      split gets there: their short prefixes stay below 1.3× at three points in a row; issue 9's
      BEVFusion loss at 2.6× with its grad norm ×15 and a MAR total loss climbing 10.8 → 85 (×4.4 the
      median of its first three points) do.
    - ``raw_climb_ratio``: a short log's climb below the raw divergence's 2×: its last ``sustain_points``
      raw points each above the one before and above every earlier point, the last ≥ 1.5× the median of
      its first points, is a warning (never a stop on its own: three points are too few to confirm).
      1.5: between the healthy short prefixes' 1.3× at three points in a row
      and the divergence ratio's 2× (issue 9: a TF2 detector's loss 1.19–1.44 for six points, then
      1.77, 2.16, 2.37 — 1.76× the median of its first three — was continue at every check).
    - ``start_min_points``: a log holding the run's start (its first step within two logging intervals)
      whose loss never went below its first point over ≥ 8 points and is not falling has not moved from
      its initial loss: a warning (never a stop; its chance level is unknown and an unstated warmup keeps a
      start flat too). The later points' median must sit ``rising_z`` errors (of the point noise) above the
      first point, so a slow noisy decay whose first point happened to be low is not flagged, and less
      than ``rising_min_change`` above it, so a climb is left to the divergence rules.
      A healthy start falls below its first point within a few logging intervals (no
      healthy log of either corpus' train split that holds its start gets there; an excerpt from epoch 95
      of a converged diffusion run would, which is why the start must be in the log); issue 9: a fairseq
      pointer-generator at 10.52–10.72 for 81 updates, never below its first 10.519 and its median 3.1
      errors above it, was continue; the synthetic slow decay of tests/test_judge_trend.py (9 points) is 1.7.
    - ``start_blowup_ratio``: such a log whose loss, over ≥ ``start_min_points`` points, sits ≥ 3× its first
      point at the median of every later point and of its last ``chance_min_points``, never back below it, was
      blown up by its first updates and has not come back (`_blown_from_start`): a warning, never a stop. 3× is
      the eval collapse's ``collapse_loss_ratio``; a blow-up that recovers (issue 9's recommendation model, 3×
      its early median for a few dozen steps, then falling) has most of its points below it. An LSTM question
      classifier at SGD lr 0.1 logs 1.80 (ln 6) at iteration 0, 18.3 at 10, 31.0 at 20 and 8–24 to its last
      print at 200 (log-rl-jamie0725-1, bad, round 20: nothing at any check).
    - ``flat_start_min_points``: from this many points (20, ``early_window_points``: where the Theil–Sen
      band of the not-falling test has the power the 9-point start lacks) such a log is flagged the same
      way when it merely stayed within ``stuck_drop_fraction`` of its first value (its rolling median of 3
      never lower) and is not falling over the whole log, even if some point dipped below the first: "never
      improved by more than a small share since its first points" is the principle, and the strict
      never-below test only guards short logs. A warning, never a stop: a per-epoch log whose first point
      averages a whole epoch cannot tell stuck from converged within that epoch (the product's "flat →
      unsure"). A run that fell a lot and then flattened is not flagged: it left its first value long ago.
      The ``flat_min_points`` test (200 points) judges against the median of the first 20, so a per-epoch
      log of 50 never reached it (issue 9: a Lightning regression's per-epoch loss 0.03334 → 0.03323 over 50
      epochs, within 0.3 % from its first epoch, was continue at every check; at 50 points the
      flat_min_points test would instead escalate six healthy runs of corpus_real/'s train split). It confirms,
      critical, a finding of the previous check that the loss sat at its untrained level (`_at_chance`: ln N,
      identical to the last digit, beside an accuracy at 0), which is critical at a second sight: the same
      stall seen through a test its print noise let pass (log-lz-ardalcar-1, bad: a 4-digit loss identical
      over its last 3 prints at one check and not at the next, stopped a check later than its fault allowed).
    - ``stuck_lr_spent_fraction``: such a flat start is critical when the previous check (with points
      since) found it too and the run's logged LR has meanwhile decayed to ≤ 50 % of its highest value in
      the log. Both reasons the flat start is only a warning are then answered by the run's own LR: it is
      past any warmup (its peak is behind it), and at half its peak a linear decay has spent 3/4 of its
      step-size budget and a cosine one half: the phase where a model learns most is over, and a run that
      converged within its first logged point is told apart by the decay having happened with no loss
      movement at all (issue 9: a Phi-3 SFT at 4.67–4.71 from step 20 to 680 while its LR decayed linearly
      from 4.9e-5 to 0 was unsure from step 400 and never stopped). The one healthy run of either corpus'
      train split with a flat-start warning has it at one check, its LR still at 71 % of its peak, and
      learns from there (log-drowsy-driver-detection-1, 0.109 at step 100 and at step 2,000, 0.06 at the
      end); a run without an LR series, or with a constant one, stays at the warning (a slow start that
      learns later, log-DeepConvLstm-1, logs no LR).
    - ``stuck_persist_min_points``: a run that logs no LR and states no total gives neither answer, so its flat start
      stays a warning until it has persisted: critical when the previous check (with points since) found it too,
      the log now holds ≥ 50 points from its start, all within ``stuck_drop_fraction`` of the first, and its last
      third's median is not below its first third's by ``rising_z`` standard errors of a median (the point noise
      from first differences): no step down anywhere in it, however small, that its noise cannot explain. Issue
      9's "stuck at its initial loss for a large share of its steps: unsure, then stopped when it persists". A
      run that converged within its first logged point has nothing left to gain from fifty more of them either.
      50 is ``reference_window_points``, the points the rules take for a level; on corpus_real/'s train split
      the healthy logs flat from their start reach 49 and 52 points, and both step down between their thirds (a
      NumPy GPT whose 97 micro-batch losses hold 3 optimizer updates, 1,287 → 1,228 by thirds at its 44th point,
      log-ts-olepl-1; a slow learner falling at every print, log-tu-bclavie-1). An LSTM classifier at 2.80-2.97
      for all 121 epochs (log-lv-maple-ntf-1, bad) and a binary classifier at 100 ln 2 with its accuracy at
      0.50 for 100 epochs (log-tw-kruthikahassan-1, bad) were unsure to their end.
    - ``confirm_checks``: divergence seen alone (no LR jump, grad-norm explosion or eval collapse behind
      it, not a blow-up) becomes critical only when this many consecutive checks (3) saw the same episode
      and it is not falling: a corrupted shard lifts the train loss 3× for hundreds of steps and recovers.
      Until then it is ``watch`` (continue, next check in 10 minutes): a reviewer asked about one
      check's episode could only answer WAIT.
      With a cause, the policy makes it critical at once.
      A divergence still climbing within its episode (rising medians of its thirds, ≥
      ``rising_min_change`` and ``rising_z`` errors from first to last) is a runaway: critical at once.
    - ``confirm_share``: and the episode must cover 25 % of the steps judged so far, so that denser checks
      do not confirm it sooner in steps: a transient shorter than a quarter of the run can still recover.
    - ``trend_window_points``: the slope is measured over the last this many points (100).
    - ``rising_min_change``: a rise of at least 10 % over the window (by the slope and by the medians of
      its first and last thirds) and a recent level 10 % above the best so far is "rising".
    - ``rising_z``: "rising" when the autocorrelation-corrected Mann–Kendall z is ≥ 3 — watch at the first
      check that sees it, a warning when the previous check saw the loss rising or diverging too (a
      bad batch or clipping lifts 100 points once; a drift goes on); between
      the ``confidence_z`` band and 3 it is info ("possibly rising"), which an LR jump or a grad-norm
      explosion before it still turns critical. Noisy, autocorrelated healthy curves reach z ≈ 2.2 over a
      100-point window; real divergence shows z ≥ 4. Once the previous check (with points since) saw it
      rising or diverging, "possibly rising" is enough for the warning, with the same ≥
      ``rising_min_change`` above the best: the drift is established, and its continuation only has to
      be significant at ``confidence_z``, not to reach z 3 again at every check (hysteresis, as an alarm
      that needs more to start than to go on). A noisy per-step loss climbing 0.85 → 1.5 in stages
      (issue 9: DeepLab-LargeFOV, z 3.0 at one check, 2.8 at the next) was watched once and then dropped.
    - ``plateau_window_points``: without a significant move over the trend window, the slope over the
      last 200 points tells "still improving" from "no clear trend" (both info).
    - ``flat_min_points`` / ``flat_min_drop_fraction``: after at least 200 points, a best level less than 15 % below
      the median of the run's first ``early_window_points`` is "not learning" (warning) — unless an eval
      loss improved by as much. Judged against the start of the run, not a recent window: a converged
      plateau (late in a decaying schedule or not) has long dropped far below its start and is only info.
      So is a log holding the run's start whose best is ≥ 15 % below its first point, unless stuck (below):
      it learned within its early window, which then hides its start (a Lightning per-epoch log whose loss
      falls 0.57 → 0.47 in its first epoch and plateaus at 0.41 for 190 more: 27 % below its first point,
      6 % below its first 20 points' median; log-isl-python-1, healthy, was unsure at its last check).
    - ``stuck_drop_fraction``: a loss not learning whose best is less than 5 % below its first points, and
      that is not falling over the whole run (Theil–Sen band at ``confidence_z``: a fine-tuning loss falling
      slowly is learning), sits at its initial value (ln of the class count for a classifier that never
      learns); when the previous check
      (with points since) found it not learning too, it is critical: stuck for a large share of its steps
      over two checks, it does not start learning later.
    - ``stuck_min_run_fraction``: when the run's total steps are known (config, or the log's step N/total),
      that critical waits until the run has done a quarter of them; before, it stays a warning. The loss
      level alone does not say the model is untrained: a pretrained model's continued training or
      fine-tune starts at its trained loss, sits through its warmup and may then fall only a few per cent
      over its whole run, and two checks early in a long run cover a small share of it (issue 9: healthy
      log-tokalign-baseline-1, a GPT-NeoX continued pretraining with a per-step loss of 1.95–2.37, flat to
      0.3 % over its first 376 of 2,500 steps and then falling 2.23 → 2.10, was stopped at 15 % and 20 % of
      its run; its fall is significant from 25 %). A quarter: the stop still saves 3/4 of the run's budget,
      and no bad run of either corpus' train split is stopped by this test earlier. Without a known total
      the two checks stay the test (a classifier at ln N from its start).
      The same quarter answers the flat start's other doubt (`_stuck_for_its_run`): a start-holding log of
      ≥ ``start_min_points`` whose best rolling median of 3 is still within ``stuck_drop_fraction`` of its first
      ``chance_min_points`` points' median at ≥ a quarter of a known total, and whose Theil–Sen band rules out a
      fall of ``stuck_drop_fraction`` even projected from its first step to the total, will end its run where it
      began: a warning, critical at the next check (with points since) that still sees it. Projecting the band to
      the total, not to the window seen, keeps slow learners: a continued pretraining falling 5 % over its whole
      run (log-tokalign-baseline-1) and a Keras regressor at lr 6.25e-6 (log-tg-asem000-1) hold a 5 % fall in
      their band; a loss that fell in its warmup (a LoRA at 2.39 → 2.09 in 5 steps, log-rl-its-kumar-yash-1) left
      its start. Short per-epoch logs never reached ``flat_min_points`` and had no stop at all: a stock-return
      regressor within 0.1 % of 0.443 from its 3rd epoch to its 20th (log-lj-seavleu-1), a protein-interaction
      model at 0.096-0.097 (log-lr-bibhuprasadbehera-1) and a binary scorer at ln 2 over 133 logs
      (log-tl-adamhermes-1), bad, were unsure to their end; they are stopped at 35-60 % of their runs (train
      split: recall 81.0 → 83.8 %, no healthy check moved).
    - ``slow_learner_z``: a loss less than 15 % below its first points that falls over the whole run with
      a Mann–Kendall z of at least 3 (the slope's ``rising_z``: the same evidence for a fall as a rise needs
      for a warning) is learning slowly, not "not learning" (info): continued pretraining and LLM
      fine-tunes lower a pretrained model's loss by a few per cent over a whole run, steadily (issue 9:
      healthy log-tokalign-baseline-1, 2.23 → 2.10 over 2,500 steps with z 3–6.6 from its 5th check on,
      was unsure at 19 of 20 checks). A run that learns nothing does not keep a trend that strong: the
      noise of corpus/'s a02 (LR 1e-6, ambiguous) and a03 (vanishing gradients) peaks at |z| 2.6 and 2.4
      over their 20 checks, so they stay flagged; 3 leaves that margin and has a false-alarm rate of 0.3 %
      per check for a loss with no trend.
    - ``slow_learner_pairs_share``: a smoothed loss (an EMA, a running mean) falls at nearly every point, yet
      the autocorrelation correction of the Mann–Kendall test shrinks its hundreds of points to a few
      effective ones, so its |z| cannot reach 3 however steady the fall: a ColBERT fine-tune's EMA loss (weight
      0.999) falls 6.26 → 5.31 at every one of its 500 prints, z −2.7 from 3 effective points
      (log-tu-bclavie-1, round 32, healthy), and was "not learning" at 13 checks. A loss with ≥ 99 % of its
      pairs of points in falling order (each point against each later one), over ≥ ``flat_min_points``
      points, is a steady fall too. The noise of a loss that learns nothing leaves pairs near 50 %. Neither
      reading counts a Theil–Sen slope of 0 as a fall, whatever its z: a U-Net's loss printed to 2 decimals
      at 1.68-1.70 for 990 steps (log-tu-yazanshannak-1, round 32, bad) has a median pairwise change of none
      and was "learning slowly, 0 % by the slope" at some checks between its stops.
    - ``chance_min_points`` / ``zero_accuracy_fraction``: a loss that never learned is told without its
      run's start, in a short excerpt (a log pasted from step 690 on), when its chance level is known: the
      config states the class or vocabulary count N (``vocab_size``, ``num_labels``, ``num_classes``) and
      the loss's median is within ``stuck_drop_fraction`` of ln N or above it (the untrained model's
      loss; without a count in the config, N = round(e^loss) when an accuracy logged with it sits at
      1/N: `chance.implied_class_count`), or an accuracy logged with it, or a quality eval (a Dice, an mAP,
      an F1), has been ≤ 0.001 at every point (never one prediction right; 0.001 is a 3-decimal log's 0.000,
      and 1/N of a 30k vocabulary is below it; a lung segmenter's Dice loss at 1.0 and val Dice at 0.0 for all
      15 epochs, log-tt-simbalol2006-1, bad, was stopped at its 7th eval by the stuck-eval test; healthy YOLO runs
      whose mAP is 0 for their first 3-41 epochs have a falling loss, which this test never reads), or it is
      identical to
      the last digit at its last 3 points (`is_frozen`, ≥ 4 significant digits: the model's output does
      not change; a Keras classifier sure of one class logs 14.5063 every epoch, and no healthy run of
      either corpus repeats a 4-digit loss three times). From its 3rd point (``chance_min_points``: when
      "it does not move" is visible, as for a stuck eval), with its median less than
      ``stuck_drop_fraction`` below its first point and not falling either (Theil–Sen from 4 points;
      below that, not every point lower than the one before), it is a warning, and critical when the
      next check still sees it, new points or not: the evidence is not noise that more points could
      average away, and waiting for points a stalled run will not log only lets it hold its GPUs. A
      healthy run leaves ln N within its first steps, and its accuracy leaves 0 with it; points inside a
      stated warmup are not judged (issue 9: a BERT loss at 11.17 = ln 30k + ln 2 with MLM accuracy 0.000
      from step 10 to 1,460, a TF upgrade's silent failure; a text recogniser at accuracy 0 after 10k
      iterations).
    - ``chance_band_fraction`` / ``chance_band_min_points`` / ``chance_band_max_classes``: without an accuracy
      to name N, both sides of the model name it: a train loss (in a log holding the run's start) and an eval
      loss of the run each within 2 % of ln N at every point from their first, over ≥ 10 points each, for one
      N from 2 to 10, are the untrained classifier's loss on both sets, and the same warning-then-critical
      finding, falling or not: a slow drift inside that band is a model learning the classes' shares, not the
      task. A GCN classifying brain graphs (corpus_real log-lk-rosepy-1, round 51, bad): BCE 0.6985 → 0.6886
      on train and 0.6964 → 0.6908 on validation over all 18 epochs, ln 2 = 0.6931, macro F1 at one class's
      share: "learning slowly", continue at 16 of its 18 checks. 2 %: that run's points are within 0.7 % of
      ln 2, a CIFAR-10 net stuck at 2.26-2.34 (ln 10 = 2.303, log-lj-flyant407-1, bad) within 1.8 %; a
      healthy run's loss leaves so narrow a band within its first points on at least one side (the one healthy
      run of the train split with an eval loss there for its first 15 evals, log-tj-ridhap-1, has a train loss
      outside it). N ≤ 10: ln N of a large vocabulary is where a language model starts and leaves slowly (a
      healthy LM at ln 917 on both sides for its first 12 of 16 points, log-tw-snpm-1).
    - ``confidence_z``: two-sided normal quantile of the Theil–Sen band (1.96 → 95 %), with the
      variance inflated for autocorrelation (Hamed–Rao effective sample size).
    - ``witness_evals`` / ``witness_drop_fraction``: a train-loss episode not yet confirmed and not
      falling back (a divergence seen on too few checks, or a slow climb below) is critical at once when
      an eval accuracy fell with it: the median of its evals since the episode began (the first raw point of the first
      smoothed window above) ≥ 2 % (the eval detector's ``baseline_margin``: eval noise on typical eval
      sets) below the median of its last 5 evals before, with ≥ 5 evals on each side. Two detectors see
      one failure — the model got worse on held-out data, not only on its current batches — as the
      policy's eval collapse or LR jump does for a divergence. 5 evals, not 3: a noisy shard (corpus/'s
      ``noisy_shard`` runs) lifts the train loss 2.5× and costs the eval accuracy 5 % for the 3–4 evals
      before it recovers; a slow divergence (issue 9, class 4: a Keras CIFAR run whose train loss climbs
      from 0.77 to 0.87 over 90 epochs, a DE-GNN whose train loss doubles while its accuracies swing to
      0.76) keeps the eval down for ≥ 8 evals, often with gaps in the log between checks that would
      otherwise postpone the confirmation by many checks. (On the train splits, 4 evals would still stop no
      healthy run, 3 would stop the noisy shard.)
    - ``slow_divergence_ratio``: a train loss climbing back above its best block median by ≥ 10 % (the
      slope's ``rising_min_change``) and ≥ ``divergence_z`` standard errors for ``sustain_points``
      smoothed points is a slow divergence — reported when an eval accuracy fell with it (above), or when it is
      back where it started (``undone_start_share``, below); any other rise is left to the slope's rising test
      (watch, then warning), since a rising train loss can be a schedule's or a curriculum's doing.
    - ``undone_start_share``: such a slow divergence with no eval witness whose recent median has climbed back
      this share of the way from its best block median to the median of the run's first ``early_window_points``
      after warmup (1.0: all the way, at or above where the loss started) has undone everything the run learned:
      a warning (a reviewer's look), critical when it is confirmed as a divergence is (``confirm_checks`` checks
      of the same episode over ``confirm_share`` of the judged steps, not falling). Only in a run that had
      learned: its best ≥ ``stuck_drop_fraction`` (5 %) below that median, the not-learning tests' own line; a
      loss that never fell that far has nothing to undo, and a rise from its start is the rising test's and the
      blow-up rules' (tests/test_judge_trend.py's flat loss ramped 1.4× stays watched at first sight, and a short
      fine-tune 1.9 → 1.75 that blows up 4× is stopped by the blow-up rule, not flagged before). 1.0, not the
      divergence's ``floor_min_share``: a quarter of the way back is a plateau's wobble or a curriculum's step,
      while a loss back above its own start for ``sustain_points`` smoothed points and ≥ ``slow_divergence_ratio``
      above its best has nothing left to show for its updates; a schedule that lifts the loss that far is for a
      reviewer to vouch for. No healthy run of corpus_real/'s train split gets there at any check (its 561 healthy
      runs: no check moved). Issue 9: a predictive-coding GPT's batch loss 9.46 → its best block median 7.89, then
      back at 9.26 by step 2,007 against the 8.41 of its first 20 prints (its best 6.2 % below them), and
      9.3-10.9 to its end while its energy term rose ×40 and its val perplexity ×5 (log-lr-cheralia-1, bad:
      continue at every check from its fault, now unsure two checks after it; never stopped, its episode restarts
      between checks). ``None`` turns it off.
    - ``floor_min_share``: a divergence and a slow divergence must also climb back at least 25 %
      of the way from the best median to where the loss started (the median of its first ``early_window_points``
      after warmup), on the log scale the ratios are read on. A loss that fell by orders of magnitude wobbles at its
      floor by ratios that are large only because both numbers are tiny (issue 9: healthy log-MLP_FPS-1, a
      regression loss 0.2 → 4e-5, eight and a half e-folds, whose recent median at its floor was 3.1× its best, 16 %
      of the way back, was stopped). The bad runs' divergences in both corpora's train splits climb ≥ 86 % of the way
      back at every check from their fault on (a divergence climbs back toward the untrained loss); the closest
      healthy one is corpus/'s h16 at 28 % (never more than watched); a quarter leaves margin both
      ways, and it keeps the 10× blow-up line reportable by this rule on any fall the corpora have (ln 10 is 27 % of
      MLP_FPS's 8.5 e-folds) — the blow-up rules themselves (3× the early median, 10× the best, raw 10×/100×) are
      not gated. When the start is not known or the loss fell by less than ``divergence_ratio`` the share is 1 (no
      floor to wobble at). The slope's rising test is not gated: it is a watch, then a warning, never a stop
      on its own, and it exists for drifts far smaller than a quarter of the way back (tests/test_judge_trend.py:
      a 1.4× ramp on a loss that fell 6 → 2 is under a quarter of the way back when first seen).
    - ``plateau_min_points``: a loss that shows no significant rise and no steady fall (Mann–Kendall z above
      −``slow_learner_z``: a steady fall is a slow learner; nor a fall of ``stuck_drop_fraction`` by the slope
      of the recent window) over all of its ≥ 7 points seen — in a log holding its run's start, all its points
      after the first and after warmup, ≥ ``min_points`` of them as for every trend test on such a log (the
      first logging interval holds the fast first drop; LR restarts included: the window is the whole log) —
      and whose slope band (``confidence_z``) rules out a fall of ``stuck_drop_fraction`` (5 %) over them, or,
      from ``flat_start_min_points`` (20) points on, whose last third's median is no lower than its first
      third's (nor ``rising_min_change`` above it: a higher one is an episode the divergence rules judge, a
      noisy shard's), is flat over the whole window seen: a warning
      (the product's "flat → unsure", a reviewer's look), never a stop, and no not-learning finding that would
      confirm one (`context.PLATEAU_EVIDENCE`): a converged plateau looks the same in a window. 7: the fewest
      points on which the Mann–Kendall band is narrow enough to rule out 5 % on a loss steady to a percent
      (issue 9: a darkflow YOLO loss 103.8-104.5 over 19 steps, a DeepLab fine-tune 0.371-0.379 over 8 logs, a
      transformer_base 1.96-2.31 over 9, an ESPnet LM 1.46-1.50 over 7 — ambiguous, continue at every check).
      The band, not the missing significance, is the test: the noisy per-step losses of healthy LLM
      fine-tunes (MLPerf's Llama-2 LoRA, 10-38 points leaning down at z −1 to −2) show no significant trend
      either, but their band still holds a 7-40 % fall. A DeepConvLSTM's loss 1.646 at epoch 1, then
      1.433-1.439 for 16 epochs with its train accuracy at one class's share, before it learns (ambiguous), is
      flagged at its 5th check; its significant drift of 0.1 % (1.439 → 1.437) is no fall. On corpus_real/'s
      train split the rule flags 3 healthy checks (a PVT excerpt at the end of its cosine schedule, flat to
      0.6 %; a continued pretraining flat to 0.3 % after its warmup at its first check; an mmpretrain excerpt
      at its last), none of corpus/'s (h07, flat for 127 points after its LR restart, falls over its whole
      log). The no-gain reading is for noisy per-step losses whose band is too wide to rule anything out (a
      RoPE classifier at 0.23-4.5 around 0.84 for 80 logs, a Lightning model at 0.23-0.81 for 75, a hydrology
      model at 0.05-0.10 with spikes: ambiguous, continue at every check); it flags 5 healthy checks of
      corpus_real/'s train split (a Llama-2 LoRA at 3 checks, an irrigation classifier at 2) and one of
      corpus/'s (h16 at 1,650 steps, its log 1.14 → 1.16 by thirds after its noisy shard).
      A log whose LR rose at every logged point (its warmup still under way at its last point, so no point is
      past it) is read the same way over its points after the first, from ``flat_start_min_points`` on, with
      its last third allowed down to ``stuck_drop_fraction`` below its first: the warmup is where a loss falls
      fastest, and a loss that holds its level within 5 % while its LR keeps growing has not started to learn
      from it. A detectron2 detector's loss 5.8 → 3.7-5.6 (4.91 → 4.87 by thirds) over 41 logs while its LR
      grows 40× in a warmup that outlasts the log (log-gdp-objdetect-1, ambiguous) was continue at every
      check; after a warmup the stricter "no lower" stays (at "within 5 %" there, noisy healthy LoRA
      fine-tunes and a hydrology model of corpus_real/'s train split escalate at 14 more checks).
    - ``accuracy_fall_fraction``: an accuracy on the training set (``train/accuracy``) falling over all its
      ≥ ``plateau_min_points`` points — a significant Theil–Sen trend down (Mann–Kendall z ≤ −``confidence_z``)
      and its last third's median ≥ 5 % (the ``stuck_drop_fraction`` scale) below its first third's — is a
      warning (a reviewer's look, never a stop): a model trained on those very batches should not get worse
      at them, whatever its noisy loss shows. An ESPnet CTC/attention model's train accuracy 0.44 → 0.29
      (0.36 → 0.30 by thirds, z −2.0) over 14 iterations of a loss swinging 376-1,205 without a trend
      (issue-espnet-3370, ambiguous) was continue at every check. No healthy run of corpus_real/'s train
      split that logs a train accuracy (17, from 7 to 2,000 points) gets there; the bad ones that do (a
      DE-GNN's accuracy sliding 0.91 → 0.81, an fp16 classifier at chance sliding 0.102 → 0.092) are
      stopped already.
    - ``climb_min_points`` / ``climb_rising_share`` / ``climb_min_change``: a loss climbing back from its
      minimum, steadily and for long: ≥ 8 points after its lowest point (the fewest on which "every epoch
      higher than the one before" is no run of luck: 8 rising points in a row happen by chance once in 40,320
      orderings), ≥ 80 % of their pairs in rising order (the eval detector's ``decay_falling_share``, the same
      "steady" for a climb as for a decay), the median of its last 3 points ≥ 1 % above the minimum (the
      labelling rule of corpus_real/ for a slow climb's fault: the first point > 1 % above the minimum), over
      ≥ ``confirm_share`` of the judged steps (a climb shorter than a quarter of the run can still turn). Watched
      (a schedule, a curriculum or a growing augmentation can lift a train loss), critical when an eval loss
      of the run climbs back too (its last 3 evals' median ≥ 1 % above its best eval, 3+ evals back) and the
      previous check (with points since) saw the climb: both losses worse for a quarter of the run. The smoothed
      rules need +10 % over the best (``slow_divergence_ratio``), which a per-epoch mean over thousands of
      batches climbing a few per cent never reaches; a per-step loss's noise keeps its pairs near 50 % rising
      (issue 9: a GRU language model's train loss 0.7978 → 0.8271 at every epoch for 15 epochs with its val
      loss 0.907 → 0.94 was continue at every check). It adds no false STOP on either corpus (train and holdout).
    - ``climb_flag_share`` / ``climb_flag_change``: without an eval loss to witness it, a climb over ≥ half the
      judged steps (as a long overfit's ``overfit_long_fraction``) by ≥ 10 % (``slow_divergence_ratio``'s
      margin), seen at the previous check too, is a warning — a look, never a stop: a loss that has risen that
      steadily for that long is a slow divergence unless a schedule lifts it, which the log does not say. An
      adversarial autoencoder's reconstruction loss climbing 0.00624 → 0.0077 (+23 %) at every epoch from epoch
      8 of 54 while its latent critic's game runs away (log-tx-aaaaaiden-1, bad) was continue at every check;
      the one healthy climb of corpus_real/'s train split (a cGAN's, +39 % over 30 % of its run) is short of it.
    - ``warmup_eval_worse_fraction``: a warmup that undid the run's progress. The trend rules judge the
      points after the warmup only, so a loss that fell during the warmup and climbed back as the LR rose to
      its peak has its damaged level as its "best". When the lowest median of ``sustain_points`` after the
      warmup is ≥ ``divergence_ratio`` × the lowest during it (and ≥ ``floor_min_share`` of the way back to the
      log's first points), and an eval whose best came at or before the warmup's end has a median since that
      best ≥ 10 % worse than it (in its own direction), the loss never came back: watched at the first check
      that sees both, critical at the next (with points since). 10 %: twice the eval detector's
      ``degrade_margin``, because the evals after the warmup are few when it is first seen (one or two) and
      one of them must not be an unlucky eval's noise. Needs a warmup end (the config's or the LR's) with no
      LR restart after it (issue 9: a Whisper LoRA fine-tune's loss 0.118 at step 125, then 0.26-0.33 after
      its warmup to 1e-4 ended at step 525, eval loss 0.219 -> 0.42 and WER 0.18 -> 0.30, was continue at every
      check). It adds no false STOP and no escalation on either corpus (train and holdout).
      It is judged from ``sustain_points`` points after the warmup, not from the trend rules' ``min_points``: its
      evidence is a median of 3 points after the warmup against the lowest during it and an eval's worsening, no
      trend, and waiting for 10 logs after the warmup only lets the damaged run go on (the same Whisper run was
      watched at step 750 and stopped at 825, 10 logs after the warmup's end, with its eval loss 1.9× its best
      since step 500; now watched at 600 and stopped at 675).
    - ``eval_improving_z``: no such flag while an eval of the run improves over the same steps (≥ 4 evals,
      Mann–Kendall z ≥ 1.645 in its better direction: one-sided 95 %, as the question "does it still
      improve" has one side): the model still gets better on held-out data, so the flat train loss is a
      converged one, not a stuck run. A per-batch train loss that converged within its warmup looks flat for
      the rest of its run while its evals keep climbing (the example training of `examples/demo_train`:
      train loss 0.64 → 0.67 by thirds over steps 101–599 while its eval accuracy climbs 0.807 → 0.838 at
      z 1.94, best at its last eval; unsure at its end, which the README's first command shows a new user).
      A flat eval beats 1.645 one time in twenty by chance, which the two-sided band's 1.96 would make one
      in forty, at the cost of such saturating climbs. In a log that starts mid-run (`holds_start` false: its
      first points are a trained level, not an untrained one) the same eval keeps the "not learning: within
      ``stuck_drop_fraction`` of its initial level" finding a flag, never a stop: a late stretch of a long
      pre-training learns too slowly for its noisy train loss to show it (a resumed GPT-2 124M, steps
      70,250-152,587, one-batch train loss 2.93-3.56 around a slowly falling median while its eval loss falls at
      nearly every eval 3.274 → 3.142, corpus_real log-lk-jaipkapoor99-1, healthy: stopped at 3 of its 20
      checks before). On the train split it moved that run only.
    - ``eval_gain_fraction``: with only 2 or 3 evals over those steps (too few for a rank test), an eval better
      at each than at the one before and whose last has gained ≥ 15 % of what there was to gain from its first
      (to 1 for a bounded higher-is-better eval, else its first value's size) improves just the same: 15 %,
      the eval trend detector's ``stuck_progress_fraction`` and the trend's ``flat_min_drop_fraction`` (issue 9:
      healthy log-irrigation-classification-1, a per-step loss noisy at 1e-3..0.2 read flat at checks 6-7 while
      its 2 evals went F1 0.874 → 0.973 and eval loss 0.474 → 0.077). On the train split it moved that run
      only, and no ambiguous or bad run.
    - A loss lower at every logged point than at the one before is never flat: the autocorrelation correction
      reads a smooth curve's residuals as correlated and leaves a fall at every one of 8 logs at z -1.9 (issue
      9: healthy issue-mmpretrain-742, 6.704 → 6.618 in its warm-up). No threshold: a strict fall at each point.
    - ``game_min_points`` / ``game_spread_fraction`` (`trend_game`): in a GAN, a discriminator loss whose ≥ 20
      prints (``flat_start_min_points``: the prints a loss flat from its start is judged on) all sit within 10 %
      of its median level (10th to 90th percentile) is a flag, never a stop: the discriminator's output does not
      depend on its input, so the adversarial game is not being played. On the train split of corpus_real/ the
      discriminator losses of the 13 healthy GAN logs (CycleGAN, pix2pix, pix2pixHD, ComboGAN, an inpainting
      GAN) spread 38 % of their level or more at every check from their 20th print (log-CycleGAN-yunhsuanwu-1's
      D_A), while log-conditional-style-transfer-1 (ambiguous: its disc and gen losses at 1.00 from the first
      print to the 1.2M-th iteration while its other terms fall slowly) spreads 1 %: 10 % is four times below
      the first and ten times above the second. ``None`` turns the flag off. The flag is critical when the
      previous check found the discriminator frozen too and no other metric of the run (train-side loss or
      score, or eval) has a median over its last 20 prints ``stuck_drop_fraction`` (5 %) better than over its
      first: a run where nothing trains, which the issue's "stuck at its initial loss … then stopped when it
      persists" names (log-lz-aloilor-1, bad: discriminator at 2 ln 2 for 448 prints, generator within 3 % of
      its start, unsure at every check; stopped at the second check now).
    - ``trained_start_fraction`` (`trend_stall`): no not-learning finding on a train loss while a quality eval of
      the run (bounded in [0, 1], higher is better) sat at ≥ 0.95 at its first eval and still does over its last
      3: a model fine-tuned from one already as good as its eval can tell has nothing to fall to, and its train
      loss holding (or above) its first level is a converged model's. 0.95: the eval trend detector's
      ``plateau_ceiling_fraction``, the level it calls an eval's ceiling. (corpus_real log-rt-ljt666666-1, healthy:
      a 2,000-epoch YOLOv5 fine-tune whose mAP@0.5 is 0.996-0.998 from its first epoch while its box loss wanders
      0.015 → 0.02-0.07 and back was stopped as stuck at 45 % of its run.) ``None`` turns it off.
    - ``game_won_loss`` (`trend_game`): in a GAN, a discriminator loss (never negative) whose last 20 prints
      have a median ≤ 0.01 while its generator's adversarial loss (``G_A`` beside ``D_A``) is no lower over its last
      20 prints than over its first is a flag, never a stop: the discriminator has won (ganhacks: "D loss goes to
      0: failure mode"). 0.01 is an LSGAN discriminator within 0.1 of both its targets (0.25 at the balance) or a
      BCE one 99 % sure of each side. On the train split of corpus_real/ the CycleGAN-family discriminators of the
      healthy logs keep a 20-print median ≥ 0.021 at every check (log-pix2pix-projet-ter-1's D_real, then
      log-Juanki0396-TFG-1's D_A at 0.024 while G_A climbs 0.42 → 0.61), while the three ambiguous one-sided
      collapses fall to 0.0055 (log-EE4115-1's D_A, G_A 0.38 → 0.82), 0.007 (log-Ganilla-Witness-Style-1) and
      0 (log-CycleGAN-samcw-1, G_A at 0.999). A colourisation GAN's discriminator at 0.001-0.02 for stretches
      (healthy log-ls-yggyatsso-1) is not flagged: its generator's loss falls 38 → 10. ``None`` turns it off.
    - ``game_won_outright_loss`` (`trend_game`): a discriminator whose last 20 prints have a median ≤ 0.001 has
      won outright, and is flagged whatever its generator's loss does (a flag, never a stop): a generator's
      total falls on its reconstruction terms alone once the adversarial one carries nothing (a CycleGAN's
      generator loss 3.3 → 0.42 while its discriminator prints 0.0000 from epoch 88 of 100, round 32's
      log-tu-buchuitoudegou-1, ambiguous, was continue at every check). 0.001 is a tenth of ``game_won_loss``:
      under every stretch of the healthy colourisation GAN above. ``None`` turns it off.
    """

    min_points: int = Field(default=10, ge=4)
    min_smooth_points: int = Field(default=5, ge=1)
    smooth_window_points: int = Field(default=25, ge=1)
    reference_window_points: int = Field(default=50, ge=1)
    divergence_ratio: float = Field(default=2.0, gt=1)
    divergence_z: float = Field(default=4.0, ge=0)
    blowup_early_ratio: float = Field(default=3.0, gt=1)
    blowup_min_ratio: float = Field(default=10.0, gt=1)
    blowup_stop_ratio: float = Field(default=100.0, gt=1)
    early_window_points: int = Field(default=20, ge=1)
    sustain_points: int = Field(default=3, ge=1)
    confirm_checks: int = Field(default=3, ge=1)
    confirm_share: float = Field(default=0.25, ge=0, le=1)
    trend_window_points: int = Field(default=100, ge=4)
    rising_min_change: float = Field(default=0.10, gt=0)
    rising_z: float = Field(default=3.0, gt=0)
    plateau_window_points: int = Field(default=200, ge=4)
    flat_min_points: int = Field(default=200, ge=4)
    flat_min_drop_fraction: float = Field(default=0.15, gt=0, lt=1)
    stuck_drop_fraction: float = Field(default=0.05, gt=0, lt=1)
    stuck_min_run_fraction: float = Field(default=0.25, ge=0, lt=1)
    slow_learner_z: float = Field(default=3.0, gt=0)
    slow_learner_pairs_share: float = Field(default=0.99, gt=0.5, le=1)
    chance_min_points: int = Field(default=3, ge=3)
    chance_band_fraction: float = Field(default=0.02, gt=0, lt=0.5)
    chance_band_min_points: int = Field(default=10, ge=3)
    chance_band_max_classes: int = Field(default=10, ge=2)
    zero_accuracy_fraction: float = Field(default=0.001, ge=0)
    confidence_z: float = Field(default=1.96, gt=0)
    slow_divergence_ratio: float = Field(default=1.10, gt=1)
    raw_climb_ratio: float = Field(default=1.5, gt=1)
    start_min_points: int = Field(default=8, ge=3)
    start_blowup_ratio: float = Field(default=3.0, gt=1)
    flat_start_min_points: int = Field(default=20, ge=4)
    stuck_lr_spent_fraction: float = Field(default=0.5, gt=0, lt=1)
    stuck_persist_min_points: int = Field(default=50, ge=4)
    witness_evals: int = Field(default=5, ge=1)
    witness_drop_fraction: float = Field(default=0.02, gt=0, lt=1)
    floor_min_share: float = Field(default=0.25, gt=0, lt=1)
    eval_improving_z: float = Field(default=1.645, gt=0)
    eval_gain_fraction: float = Field(default=0.15, gt=0, le=1)
    plateau_min_points: int = Field(default=7, ge=4)
    accuracy_fall_fraction: float = Field(default=0.05, gt=0, lt=1)
    undone_start_share: float | None = Field(default=1.0, gt=0)
    climb_min_points: int = Field(default=8, ge=3)
    climb_rising_share: float = Field(default=0.8, gt=0.5, le=1)
    climb_min_change: float = Field(default=0.01, gt=0)
    climb_flag_share: float = Field(default=0.5, gt=0, le=1)
    climb_flag_change: float = Field(default=0.1, gt=0)
    warmup_eval_worse_fraction: float = Field(default=0.1, gt=0)
    game_min_points: int = Field(default=20, ge=4)
    game_spread_fraction: float | None = Field(default=0.1, gt=0)
    game_won_loss: float | None = Field(default=0.01, gt=0)
    game_won_outright_loss: float | None = Field(default=0.001, gt=0)
    trained_start_fraction: float | None = Field(default=0.95, gt=0, le=1)

    def _early_points(self, n: int) -> int:
        """The run's first ``early_window_points``, but no more than its first third: in a log of 40
        points, 20 would take in the blow-up itself and lift the reference it is measured against."""
        return max(1, min(self.early_window_points, n // 3))

    def _block_width(self, n: int) -> int:
        return max(1, min(self.reference_window_points, n // 2))

    def _best_before(self, y: np.ndarray, k: int) -> np.ndarray:
        """For each of the last ``k`` points, the lowest block median over the blocks ended before it.

        Blocks are consecutive runs of ``reference_window_points``: medians of disjoint blocks cost n
        instead of n × window and a high block (an excursion) never lowers the minimum.
        """
        w = self._block_width(y.size)
        nb = y.size // w
        best = np.minimum.accumulate(np.median(y[: nb * w].reshape(nb, w), axis=1))
        done = (y.size - k + np.arange(k)) // w  # blocks fully before each point
        return np.where(done > 0, best[np.clip(done - 1, 0, nb - 1)], np.inf)

    @staticmethod
    def _rising_before(ctx: JudgeContext, name: str) -> bool:
        """The previous check (with points since) already saw this loss rising or diverging."""
        if not ctx.previous:
            return False
        return any(
            s.kind is SignalKind.DIVERGENCE and s.metric == name and s.severity is not Severity.INFO
            and s.step is not None and ctx.last_step is not None and s.step < ctx.last_step
            for s in ctx.previous[0].signals
        )  # fmt: skip

    def _falling(self, steps: np.ndarray, y: np.ndarray) -> bool:
        """Whether the loss falls over the whole run (a fine-tuning loss falling slowly is learning); below
        Theil–Sen's 4 points, whether every point is below the one before (a start falling 3 % a log)."""
        if y.size < 4:
            return y.size > 1 and strictly_falling(y)
        trend = theil_sen(steps, y, confidence_z=self.confidence_z)
        return trend is not None and trend.falling
