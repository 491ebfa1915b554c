"""Judge changes of stop 31: each test fails on the code before its change, each with a control."""

from __future__ import annotations

import numpy as np

from mcp_training_check.models import Decision, SignalKind
from tests.test_judge_classes import replay_real
from tests.test_judge_helpers import make_series, run_judge


def _collapse_verdict(values: list[float]):
    loss = make_series("train/loss", np.geomspace(2.0, 0.5, 40))
    acc = make_series("eval/accuracy", np.array(values), np.arange(1, len(values) + 1) * 4)
    verdict = run_judge(loss, acc)
    found = [s for s in verdict.signals if s.kind is SignalKind.EVAL_DEGRADING and "collapsed" in s.message]
    return verdict, found


def test_a_percent_accuracy_on_a_tiny_eval_set_is_read_for_its_sampling_noise():
    """The accuracy of log-ly-aparna534-1's 5 validation images printed in percent: 40 at its best, then 0 at
    three evals. 2 right of 5 against 0 of 15 happens by sampling one time in twenty (Fisher: 5.3 %), as it
    does on the [0, 1] scale (tests/test_judge_round18.py); read as it was printed, 40.0 is no fraction k/n
    and the zero was 'collapsed … confirmed': a stop."""
    verdict, found = _collapse_verdict([20.0, 40.0, 40.0, 40.0, 0.0, 0.0, 0.0])
    fraction, found_fraction = _collapse_verdict([0.2, 0.4, 0.4, 0.4, 0.0, 0.0, 0.0])
    assert verdict.decision is fraction.decision and verdict.decision is not Decision.STOP, [
        s.message for s in verdict.signals
    ]
    assert bool(found) == bool(found_fraction)


def test_a_percent_accuracy_beyond_its_sampling_noise_still_collapses():
    """Control: 16 of 20 right against 0 of 20 (p < 1e-6) in percent, and 41.23 % → 0 (no fraction of a small
    set) are collapses and stop, as their [0, 1] versions do."""
    for values in ([20.0, 40.0, 80.0, 80.0, 80.0, 80.0, 0.0, 0.0, 0.0, 0.0], [30.0, 41.23, 40.0, 0.0, 0.0, 0.0]):
        verdict, found = _collapse_verdict(values)
        assert found and verdict.decision is Decision.STOP, (values, [s.message for s in verdict.signals])


def test_an_lr_warmup_printed_to_few_digits_is_warming_up_not_above_its_peak(real):
    """log-ox-alynxx-1 (round 24, train, healthy; an SSD): a linear warmup printed to 5 decimals repeats values
    (4e-05, 5e-05, 5e-05, 6e-05, 7e-05 …), so it was not strictly rising and not yet doubled (no warmup end
    inferred): '1.7× the peak reached after warmup' at its second check. A climb whose repeats it leaves by
    exactly its smallest rise is a warmup under way, as `_inferred_warmup_end` reads it."""
    run = real["log-ox-alynxx-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert code == "." * len(code), code
    assert not any(s.kind is SignalKind.LR_ANOMALY for v in verdicts for s in v.signals)


def test_an_lr_above_the_peak_it_fell_from_is_still_flagged():
    """Control: an LR held, decayed, then climbing back in steps too small for a jump to 1.9x its first value
    (a schedule gone wrong) is above the peak its schedule reached: a warning."""
    loss = make_series("train/loss", np.geomspace(2.0, 0.5, 40))
    lr = make_series("train/lr", np.array([7.8e-5] * 10 + [6e-5] * 5 + [9e-5] * 5 + [1.2e-4] * 5 + [1.46e-4] * 5))
    verdict = run_judge(loss, lr)
    assert any(s.kind is SignalKind.LR_ANOMALY and "peak" in s.message for s in verdict.signals), [
        s.message for s in verdict.signals
    ]


def test_every_quality_eval_sliding_while_the_train_loss_falls_is_a_mild_overfit(real):
    """log-ly-aetandrianwr-1 (round 18, train, ambiguous; a next-location transformer): Acc@1, MRR and NDCG slide
    2-3 % below their best from epoch 8 at Mann–Kendall z −3.7 to −4.5 while the train loss falls. Each was only
    'watched': the steady decay's watch pre-empted the mild-overfit test, and the quality evals, within their
    noise margin of their best, then outweighed their own slide. It is flagged at its last checks now."""
    run = real["log-ly-aetandrianwr-1"]
    assert run.split == "train" and run.label == "ambiguous"
    code, _, verdicts = replay_real(run)
    assert "u" in code[-3:] and "S" not in code, code
    last = [s for s in verdicts[-1].signals if s.kind is SignalKind.EVAL_DEGRADING and "mildly" in s.message]
    assert {s.metric for s in last} == {"eval/acc_at_1", "eval/mrr", "eval/ndcg"}, [s.message for s in last]


def test_a_quality_eval_that_holds_still_outweighs_another_ones_slide(real):
    """Control: a YOLOv8-pose run whose pose mAP50-95 eases off late while its other quality evals hold
    (log-pose-dhkimapple-1, round 7, train, healthy) stays continue at every check: one quality eval at its
    best still speaks for the model (an earlier version that let any quality eval's slide speak escalated
    late checks of 10 healthy YOLO and classifier runs)."""
    run = real["log-pose-dhkimapple-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, _ = replay_real(run)
    assert code == "." * len(code), code


def test_a_deep_overfit_still_growing_at_a_later_check_is_stopped(real):
    """log-rl-shania3322-1 (round 20, train, bad; a Joey-NMT Transformer): its dev loss is 10⁶× its train loss
    and worse at each of its evals every 4,000 steps (perplexity 23 → 54 → 81) while its token accuracy sits at
    6.2 %: 'a deep, growing overfit (a flag, not a stop)' at every check from its fault to its end. Seen growing
    again at a check with a new eval, it is critical, and stays so while no eval comes."""
    run = real["log-rl-shania3322-1"]
    assert run.split == "train" and run.label == "bad"
    code, _, verdicts = replay_real(run)
    assert code.endswith("SSSSS") and "S" not in code[:-5], code
    found = [s for s in verdicts[-1].signals if "train_ratio" in s.evidence]
    assert found and "still growing eval after eval" in found[0].message, [s.message for s in verdicts[-1].signals]


def test_a_deep_overfit_beside_an_eval_score_still_improving_stays_a_flag(real):
    """Control: a Whisper fine-tune whose eval loss climbs 0.307 → 0.468 at over 100× its train loss while its
    WER still improves 0.346 → 0.320 (log-Whisper_small_hi-1, train, ambiguous) is
    unsure, never stopped: the model still gets better where it counts."""
    run = real["log-Whisper_small_hi-1"]
    assert run.split == "train" and run.label == "ambiguous"
    code, _, verdicts = replay_real(run)
    assert "S" not in code and "u" in code, code
    assert any("still improves" in s.message for v in verdicts for s in v.signals)
