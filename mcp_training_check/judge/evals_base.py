"""The eval tests' thresholds (``[judge.evals]``), shared by `evals` and `evals_degrading`."""

from __future__ import annotations

from pydantic import Field

from .context import Detector


class EvalBase(Detector):
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
      warning (a flag, never a stop): the trend, not the gap, tells it from noise; a quality eval's slide that
      is only watched by the steady-decay test below (under its 5 % gap) is this one when the train loss fell.
      Not while every quality eval of the run is at or near its best (``quality_near_best_margin``), unless
      every one of them is itself sliding so (`quality_sliding`): a loss that worsens while the
      accuracy holds is over-confidence on the examples still wrong (NLL overfits before accuracy does:
      Guo et al. 2017, On Calibration of Modern Neural Networks), information. A Keras classifier after its
      last LR cut, val loss 2-12 % over its best while its accuracy holds 0.90-0.91 (log-Detect-Clothes-1,
      healthy, unsure at its last 7 checks; log-VisLungTransformer-1, log-OSCCC-Detection-1, one check
      each). A large overfit is no mild one and still stops (log-irfanet-10-1, val loss 0.69 → 1.37 at
      accuracy 0.74, stopped within one check of its fault; its earlier mild overfit is information).
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
      they would be). Within the eval's noise margin the mild overfit's significant Theil–Sen trend since
      the best stands in for it, as the steady decay's does for an accuracy: a Keras CNN's val loss swings
      0.69–1.33 before its best (a noise margin of 81 %), then climbs 0.69 → 1.08 over 12 evals while the
      train loss falls 67 % (log-irfanet-10-1, bad): 1.57× its best, seen worsening at the check before
      (a mild overfit there), stopped then and not two checks later, once 1.8× cleared the noise margin.
    - Once critical (a large overfit, a steady decay), an eval stays critical at later checks while it is
      still ≥ ``degrade_margin`` worse than its best with none of its last ``patience_evals`` evals back at
      it, even when the stop rule's own margin (1.5× the best, 15 % below it) or the noise margin is no
      longer met: the degradation itself drives the noise margin up (a timm fine-tune's eval loss jumping
      0.30 → 0.42–0.51 makes its robust σ a third of the best), so one eval a little better would otherwise
      turn a stopped run's next check back to continue while the eval is still 35 % above its best.
    - ``collapse_loss_ratio``: a lower-is-better eval ≥ 3× its best has exploded (Megatron-style
      multiple of the best, not a relative margin).
    - ``collapse_level_evals``: the best a collapse is measured from is the best level the eval held before
      the evals in question (those past its one best eval), the best median of 3 consecutive evals (as the
      degrade tests measure it), not its one luckiest eval: the lowest of many noisy evals near a loss floor
      sits far below their level. With fewer than 3 evals before them, the best eval itself (an eval loss
      1.15 → 5.46 at the third eval, issue-keras-9214, bad, still collapses). An eval loss logged to 4
      decimals at 4e-4-1.5e-3 has its lowest eval at 3e-4, so a 1e-3 is "3× its best" every few evals
      (log-EmoNetTCN-1, healthy, unsure); a few-class YOLO val cls_loss at 1e-4-4e-4 likewise
      (log-Plane-OR-Ship-1, healthy). Their levels, 4e-4 and 2.5e-4, are never tripled. A collapse from a
      held level (Megatron's 3×, an accuracy halved) is as visible as before.
    - ``collapse_drop_fraction``: a higher-is-better eval that lost ≥ 50 % of its best has collapsed
      (accuracy falling towards chance). A non-finite eval collapses at once.
    - A collapse is watched at one eval, a warning from ``confirm_evals`` evals (or once the run has ended: no
      next check), and critical once confirmed: ``confirm_evals`` collapsed evals in a row
      that a previous check (with evals since) saw collapsing too, or ``collapse_sustain_evals`` (4) in a
      row within one check, or an optimizer cause before it (the policy). A watched collapse still witnesses
      a diverging train loss (the policy: one failure seen by two detectors stops at once). Real runs have
      eval excursions that recover: a CTC validation loss 7× its best for two evals mid-run, back on its trend
      by the next check. Four evals in a row are far longer than such an episode and still within a check of a real
      collapse seen from its start.
    - ``collapse_noise_z`` / ``collapse_noise_evals``: and only evals ≥ 4 × the eval's own noise from its best
      collapse (robust σ of the eval-to-eval differences over the last 10 evals before the ones in question,
      so the collapse does not inflate it, nor a quiet phase long past deflate it; 4 as for
      ``degrade_noise_z``). A YOLO mAP of 0.008 falling to 0.002 in
      the first epochs of a slow start (log-thesis-1, which ends at 0.99) is eval noise around zero, not a
      collapse; an eval from a quiet plateau to a third of it, or from its first evals (σ 0 before 3),
      still is.
    - ``collapse_floor_fraction``: a higher-is-better eval bounded in [0, 1] (an mAP, an accuracy) whose best level
      (as above) is under 5 % of its scale, beside another quality eval of the run whose last 3 evals'
      median is above it, is one head of a two-headed model (box and keypoints, box and mask) that has not
      left its floor while the other has: it has no level to collapse from, its falls are the floor's noise,
      and whether it learns is the not-learning rule's question (`evaltrend`: under 5 %, its
      ``stuck_stop_fraction``, an eval has gained nothing). Alone, such a fall is still a collapse: a
      detector's only mAP 0.017 → 0 under a flat loss (issue-paddledet-548, bad) learns nothing at all. A
      YOLOv8-pose keypoint mAP50 at exactly 0 for 11 epochs, 0.041 at two evals, back to 0 for 8, then
      0.12-0.35 to the end (its box mAP 0.65 meanwhile) was 'at zero: the model is broken' and stopped
      (log-pose-jdoubleu2-1, healthy); nor to degrade from: the same eval, 0 again at epochs 15-21, was '100 %
      worse than its best 0.0415' at epoch 21 (unsure). Measured blind on the holdout it cost one bad run its stop.
    - ``floor_learning_fraction``: a higher-is-better eval bounded in [0, 1] whose best is under 10 % of its
      scale has not left its floor either, alone or not, and while the train loss fell ≥ ``degrade_margin``
      since that best its slides are the floor's noise: a critical decay or collapse of it is a warning
      (`_floor_noise`; a NaN eval stays critical), and whether the model learns is the not-learning rule's
      question. YOLO detectors in their first epochs were stopped so while their train losses fell 11-22 %: an
      mAP50 18 % under its best 0.0275 (log-qf-wonyeongjun-1), mAP_0.5 0.083 → 0.016 and 0.055 → 0.024
      (log-nw-abdul-rahman-ammourah-1, log-rt-alex-star-arch-1; all healthy, their bests 0.028-0.083, which
      twice ``collapse_floor_fraction`` covers). Not while an eval loss of the run is ≥ (1 +
      ``overfit_stop_margin``) × its best (medians of 3): a model that fits its training set and nothing else,
      as a detector whose mAP50 never passed 0.034 while its val box loss rose to 1.5× its best
      (log-qf-dikirust-1, bad); nor under a flat train loss (issue-paddledet-548 above).
    - ``collapse_zero_fraction``: a higher-is-better eval at ≤ 0.1 % of its best is at zero (a Dice of
      1e-10, an mAP of 0: the model outputs nothing), which no eval noise reaches — critical at once, as a
      NaN is. The deepest healthy dip among the MLPerf runs of issue 9 is to 40 % of the best. Not inside the
      LR's warmup (`context.warming_up_at`: the eval's step at or before the warmup's end, configured or read
      from an LR still rising): a warmup's climbing LR knocks a model back on purpose, so there a zero is
      confirmed like any collapse, at the next check. Ultralytics warms up over ``warmup_epochs`` = 3 by
      default: a YOLOv8m-seg's mask mAP50 at 0.0005 after 0.568, its val cls_loss Inf, at epoch 3, the LR's
      peak, and 0.68 at epoch 4, 0.96 later (log-seg-gabigr67-1, healthy, was stopped at its first check).
      Nor is a collapse from a best that is the eval's first eval, inside the warmup, critical while the
      warmup lasts (a warning), and once it has ended collapses are measured from the evals since: that level
      is a fine-tune's pretrained model, which the warmup's climbing LR knocks down on purpose. A YOLOv8-pose
      fine-tune's keypoint mAP50-95 0.43 at its first eval, 0.05-0.25 while its LR climbs over epochs 2-4 and
      0.21 two epochs after, 0.58 at its end (log-pose-nichamond143-1, healthy, was stopped at epochs 4-6). A
      collapse from a level the run reached itself, or under an LR without a warmup, is judged as before.
    - ``collapse_zero_max_samples`` / ``collapse_zero_chance_fraction``: unless sampling reaches that zero: an accuracy
      whose every value is a fraction k/n of a small eval set (n ≤ 100, the fewest n that fits) scores 0 by
      chance with probability (1 − best)ⁿ (binomial, each sample right with the best's accuracy); from 1 %
      on, a zero is an eval's noise, confirmed like any collapse. An ST-GCN's top-1 accuracy on a 5-sample
      eval, 0.2 → 0 → 0.4 (0.8⁵ = 33 %; log-st-gcn-master-improved-1, stopped at its third check, long
      before its label's plateau). An accuracy of 0.9 on 20 samples (0.1²⁰) or any value not such a
      fraction (a Dice of 1e-10 after 0.83, an mAP of 0.0 after 0.4123) is still at zero at once. On such a
      set any other collapse (`_beyond_sampling`) needs the collapsed evals' pooled k of count·n to fall short
      of the best's k of n at under the same 1 % (Fisher's exact test, one-sided): a baldness classifier's
      accuracy on 5 validation images, 0.4 at its first eval and 0 at the next three (2 of 5 against 0 of 10
      and 0 of 15: p = 9.5 % and 5.3 %), then 0.6 from epoch 11 (log-ly-aparna534-1, healthy, was stopped at
      its 2nd and 3rd checks); 4 of 5 against 0 of 15 (p = 0.1 %) still collapses. Both tests read a percent
      accuracy on its [0, 1] scale (`percent_scale`): 40.0 then 0.0 on 5 images is the same 2 of 5 as 0.4.
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
    - ``sole_overfit_stop_margin``: an eval loss in a run that logs no quality eval (`has_quality_eval`: no
      accuracy, mAP, F1 to outvote it) is the run's only measure of generalisation. When it is in a long, steady
      overfit — ≥ 20 % above its best (median of 3), the evals since rising in ≥ ``decay_falling_share`` of
      their pairs over ≥ ``overfit_long_fraction`` of the steps the eval covers, ≥ ``decay_min_evals`` evals
      after the best, the train loss lower than at it, degrading at the previous check too — it is critical
      below the large overfit's 1.5×: nothing in the run says the model still improves, and the checkpoint to
      keep is half a run behind (Keras' and Lightning's EarlyStopping would have ended it at their patience of
      a few evals). 20 %: four ``degrade_margin``s, and the creep of an over-confident classifier's loss
      (1.25×) is only spared by its accuracy, which such a run does not log. An LSTM chatbot's val loss climbing
      from 4.66 at epoch 5 to 5.65 (1.21×) at epoch 54 and on to 6.86 at 90 while its train loss falls 6.8 →
      0.1 (log-lc-jckuri-1, bad) was unsure at 15 checks and never stopped; the healthy runs without a quality
      eval of corpus_real/'s train split never rise that long (log-ls-valeriedaash-1's val loss: 1.67× its
      best for 17 evals over 19 % of its run). The same margin judges a run with no train loss whose every eval
      is a loss (`_eval_only_loss_rising`), in the eval's own direction as a higher-is-better eval's steady
      decay is: rising significantly since its best over a real share of the run, ≥ 20 % above it and further
      than at the previous check (log-lz-cagatayogretmen-1, bad: an age regressor's val MSE 1.5× its best by
      block, unsure to its end; stopped at its 16th check now).
    - ``overfit_long_z`` / ``overfit_long_fraction``: except a long, steady overfit of an eval loss, which
      stays a warning (a flag, never a stop) whatever the quality eval says: the evals since its best (median
      of 3), ≥ ``mild_overfit_evals`` of them, span ≥ half the steps the eval covers and rise at a Mann–Kendall
      z ≥ 4 (the 4 errors of ``degrade_noise_z``: a trend, not an eval's noise), while the train loss fell since
      that best. Over-confidence that has grown for half the run is what a reviewer wants to hear of (is the
      quality eval about to follow; is the checkpoint to keep already behind?), a creep over a few evals is
      not. YOLOv5 val obj and cls losses climbing 0.0113 → 0.0131 and 0.0080 → 0.0110 over the last 60-85 %
      of 500 epochs at z 4.9-5.8 while the mAP still creeps up (log-Trashdetection-with-yolov5-1,
      log-buat-cc-1, ambiguous: continue at every check) are flagged; the healthy creeps of corpus_real/'s
      train split stay below it (log-1802284174-test-1's val cls_loss, z 3.4 over 73 % of its run; a
      log-yolo_gas-1 obj_loss, z 3.3), and the healthy YOLOs' larger rises (a val box_loss 8-32 % over its
      best and falling back to it, log-mouse-keyboard-detector-1; a few-class cls_loss 17× its best for 20 of
      150 epochs, log-the-Garbage-Projeckt-1) are neither steady nor half the run.
      In a run whose every eval is a loss (no eval score at all, `only_eval_losses`) the flag is a stop once a
      second check, with evals since, finds the long overfit again and the later half of the evals since its
      best still rise significantly (at any gap over the degrade margin, not only ``sole_overfit_stop_margin``'s
      20 %, which still judges a rise that levelled off): no eval score is there to say the model still
      improves, and the run has been past its best for half its length at each of two checks, where an
      early-stopping patience (Keras' EarlyStopping watches the val loss by default) would have ended it long
      before. A rainfall GAN's val L1 7-12 % over its best 40 epochs on, rising at z 4.6-6.9 while its train L1
      falls (log-rl-shhaurya17-1, bad), was unsure to its end; an LSTM chatbot's val loss (log-lc-jckuri-1, bad)
      waited 6 checks for 1.2×. The long overfits of the healthy and ambiguous runs of corpus_real/'s train
      split all log an eval score (a text-to-motion retriever's recall@10 beside its composite val loss,
      log-tu-mukundshankar-dev-1, healthy, which a first version that asked only for a quality eval stopped).
    - ``memorised_accuracy_fraction`` / ``memorised_gap_fraction`` / ``memorised_min_evals``: an eval accuracy whose
      median of its last 3 evals is ≥ 0.2 (absolute) below the train accuracy's, that train accuracy at ≥ 0.95
      (the training set memorised), with no significant rise (Theil–Sen, 95 %) over ≥ 4 evals, is overfitting
      with nothing left to learn from the training set → warning (a flag for review, never a stop: whether
      0.70 held-out is the task's ceiling is not in the log). Healthy runs of both corpora that log both
      accuracies end within 0.01 of each other; a CIFAR ResNet ends at 1.00 against 0.95, an ImageNet one
      at 0.80 against 0.76: 0.2 is four times those gaps. (An RNN text classifier at 0.99 train and 0.64–0.70
      held-out for ten epochs.)
    - ``memorised_learned_fraction``: not a held-out accuracy that has gained half of its headroom or more since
      its first eval (medians of 3 evals at both ends, as a hopeless eval's progress is read): it learned to
      generalise, and holds what it learned; whether its level is the task's ceiling (or its small data
      set's: 140 training samples memorised) is not in the log, and a fall from its best is the degrading
      tests' to judge. A classifier whose val accuracy rose 0.17 → 0.77 by epoch 33 and held 0.76-0.80 to epoch
      191 while its train accuracy reached 1.0 (log-th-m-elga-1, round 9, healthy) was unsure at 16 of its 20
      checks. The accuracies the flag marks in the bad and ambiguous runs of corpus_real/'s train split had
      gained at most 24 % of their headroom since their first eval (excerpts whose first eval is already on the
      plateau gained none), that run 71-77 %.
    - ``close_mosaic_steps`` / ``phase_shift_change`` / ``phase_shift_z``: a run that trains its last 10 steps
      on other data (Ultralytics' ``close_mosaic`` = 10 by default turns mosaic augmentation off for the last
      10 epochs; its logs step by epoch) shows it in a train loss stepping at the first of them: by ≥ 0.1 in
      ln (10 %) and ≥ 4× the robust σ of its last ≤ 20 point-to-point changes (the YOLO runs of
      corpus_real/'s train split that step there at all do so by 0.14-1.3 in ln, at 4-210 σ; a DETR's 0.02 is
      no step). Its evals are then judged since that step, as after an SGDR restart: a critical decay or
      overfit that the evals since do not show too is a warning. A YOLO26n-seg's mask mAP50-95 14 % under its
      best and falling at epoch 43 of 50 was stopped; the new phase moves every eval (its mask mAP50 0.98
      best, 0.87 last: log-seg-abdullah-2027-1, healthy, stopped at its last 4 checks). For a log stepping by
      iterations the window is its last 10 steps; ``None`` turns it off.
    - ``overfit_gap_ratio``: an eval loss ≥ 3× the train loss at its step (median of the train loss's last 5 points
      up to it) and worse than the eval before, while that train level fell between the two evals, is a deep,
      growing overfit → warning (it needs only two evals, so it sees a run that evaluates rarely); critical when the
      previous check found it too at an earlier eval (it kept growing across checks) and no eval score of the run
      (an accuracy, a WER: no loss nor perplexity) is at its best having gained ≥ ``degrade_margin`` of its headroom
      (`_quality_improving`): a Joey-NMT Transformer's dev loss at 10⁶× its train loss and rising at each of its
      evals every 4,000 steps, perplexity 23 → 54 → 81, its token accuracy flat at 6.2 % (log-rl-shania3322-1, bad)
      was unsure for 10 checks; a Whisper fine-tune whose eval loss rises the same way while its WER still improves
      (log-Whisper_small_hi-1, ambiguous) stays a flag. Of the train-split runs of both corpora that log an eval
      loss beside a train loss, the healthy ones peak at 2.0× (a MatConvNet ImageNet run) and 2.4× (a corpus/ MLP
      whose noisy per-step train loss dips at an eval 2 % worse than the one before: the closest a healthy run
      comes); a GPT-2 XL fine-tuned on Shakespeare has its val loss at 3.75 then 3.90 while its train loss falls
      0.93 → 0.65 (6×). The ratio is read against the gap the eval loss started with, in a log holding the run's
      start: ≥ 3× the train loss and ≥ 3× its ratio at its first eval when that was above 1 (`_start_gap`). A test
      loss summed over its set sits 20× a per-sample train loss from its first eval, and rising 136 → 137 is no
      deep overfit (a model-inversion attack, log-tv-pereteanugeorge-1, healthy, was stopped at its tenth check);
      the Joey-NMT dev loss above, summed over tokens, starts at 1.5·10⁵× and reaches 1.5·10⁶×, and is still one.
    - ``overfit_rising_evals``: "growing" is the eval loss worse than the eval before at each of its last 2
      evals (a run with only 2 evals shows its one rise). One rise is an eval's noise: a classifier's val loss
      swinging 0.7-1.5 between evals, or one 0.004 → 0.00414 at its floor, rises at every other eval while
      the train loss falls to 1e-4 (log-topnmusic-1, log-VisLungTransformer-1, log-Cmamba_reconstruct-1,
      log-OSCCC-Detection-1, log-irrigation-classification-1: healthy, unsure at 1-4 checks each on it). An
      overfit grows eval after eval: a RoBERTa's val loss 0.111 → 0.114 → 0.142, a sentiment classifier's
      0.279 → 0.282 → 0.284 (ambiguous, still flagged).
    - ``overfit_confirm_checks``: an eval found overfitting (its degrading finding above, the train loss falling) at 6
      checks in a row, each with evals since the one before and none nearer its best than the check before, is a
      sustained overfit → critical at any gap past the degrade margin: issue 9's confirmation across checks, for a slide
      too small for the large-overfit stop (1.5×) that a cron sees widen all afternoon. Never while every quality eval
      of the run is at or near its best (`_quality_at_best`: over-confidence, as for the mild overfit; corpus/'s
      ambiguous MLP overfits keep their accuracy and stay flags). A leaf-segmentation U-Net's val loss 1.05× → 1.20× its
      best over six checks (epochs 40-54) while its train loss falls (log-tm-vikas-gp-1, bad) and a multi-label
      classifier's mean val accuracy held at 0.795, 7 % under its first-epoch best, for 40 epochs (log-tj-longcinao-1,
      bad) were unsure to their ends. Six: the most checks a verdict keeps (the service's ``PREVIOUS_VERDICTS`` 5, and
      this one); the healthy runs of corpus_real/'s train split widen at 4 checks in a row at most (a bike-share GNN
      whose val loss settles 5-8 % over its best, log-hj-facuvcanale-1; a YOLOv5's val obj loss, log-rt-zhangmmei-1).
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
    collapse_level_evals: int = Field(default=3, ge=1)
    collapse_floor_fraction: float = Field(default=0.05, ge=0, lt=1)
    floor_learning_fraction: float = Field(default=0.1, ge=0, lt=1)
    collapse_zero_max_samples: int = Field(default=100, ge=1)
    collapse_zero_chance_fraction: float = Field(default=0.01, ge=0, le=1)
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
    memorised_learned_fraction: float = Field(default=0.5, gt=0, le=1)
    close_mosaic_steps: int | None = Field(default=10, ge=1)
    phase_shift_change: float = Field(default=0.1, gt=0)
    phase_shift_z: float = Field(default=4.0, gt=0)
    memorised_min_evals: int = Field(default=4, ge=4)
    overfit_gap_ratio: float = Field(default=3.0, gt=1)
    overfit_rising_evals: int = Field(default=2, ge=1)
    overfit_long_z: float = Field(default=4.0, gt=0)
    overfit_long_fraction: float = Field(default=0.5, gt=0, le=1)
    overfit_confirm_checks: int = Field(default=6, ge=2, le=6)
    sole_overfit_stop_margin: float = Field(default=0.2, gt=0)
