"""Judge changes of stop 35: each test fails on the code before its change."""

from __future__ import annotations

import numpy as np

from benchmarks.replay import checkpoints
from mcp_training_check.models import Severity, SignalKind
from tests.test_judge_classes import replay_cuts, replay_real


def _not_learning(verdict, metric: str = "train/loss"):
    flat = [s for s in verdict.signals if s.kind is SignalKind.FLAT and s.metric == metric]
    return [s for s in flat if "not learning" in s.message]


def test_a_late_stretch_of_pretraining_whose_eval_loss_falls_at_every_eval_is_not_stopped(real):
    """log-lk-jaipkapoor99-1 (round 51, train, healthy): a resumed GPT-2 124M pre-training, steps 70,250-152,587,
    whose one-batch train loss wanders 2.93-3.56 around a slowly falling median while its eval loss falls at
    nearly every eval, 3.274 -> 3.142. 'Not learning: within 5 % of its initial level' stopped it at checks
    13-15; an eval improving significantly over the same steps makes it a flag."""
    run = real["log-lk-jaipkapoor99-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    flagged = [s for v in verdicts for s in _not_learning(v)]
    assert flagged and all(s.severity is Severity.WARNING for s in flagged)
    assert any("mid-run (step 70,250)" in s.message and "improves significantly" in s.message for s in flagged)


def test_the_same_stall_from_the_run_s_start_beside_an_eval_loss_that_does_not_improve_is_still_stopped(real):
    """Control: the same train loss moved to the run's start (its log holding step 0's neighbourhood), beside an
    eval loss that only wobbles around its first value, is stopped at its second 'not learning' check. (Stop 36:
    mid-run, where this control first stood, the stall is a flag whatever the eval does; tests/test_judge_stop36.py.)"""
    run = real["log-lk-jaipkapoor99-1"]
    shift = int(run.metrics["train/loss"][0][0]) - 250
    metrics = {name: (np.asarray(steps) - shift, values) for name, (steps, values) in run.metrics.items()}
    steps, values = metrics["eval/loss"]
    metrics["eval/loss"] = (steps, values[0] + 0.004 * np.sin(np.arange(values.size)))
    verdicts = replay_cuts(metrics, [cut - shift for cut in checkpoints(run)])
    assert any(s.severity is Severity.CRITICAL for v in verdicts for s in _not_learning(v))


def test_a_binary_classifier_at_ln_2_on_both_sets_is_stopped_though_it_drifts_down(real):
    """log-lk-rosepy-1 (round 51, train, bad): a GCN classifying brain graphs, BCE 0.6985 -> 0.6886 on train and
    0.6964 -> 0.6908 on validation over all 18 epochs (ln 2 = 0.6931), macro F1 at one class's share. With no
    accuracy to name N, and a slow drift the trend reads as 'learning slowly', it was continue at 16 of its 18
    checks and never stopped. Both losses within 2 % of ln 2 at every point over 10+ points each is the
    untrained classifier on both sets."""
    run = real["log-lk-rosepy-1"]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    assert "S" in code[visible:] and "S" not in code[:visible], code
    stop = verdicts[code.index("S")]
    found = [s for s in _not_learning(stop) if s.severity is Severity.CRITICAL]
    assert found and "ln 2 = 0.693" in found[0].message and "eval/loss" in found[0].message, stop.summary


def _at_chance_pair(train_offset: float, eval_offset: float, n: int = 18) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    steps = np.arange(1, n + 1, dtype=np.int64)
    drift = np.linspace(0.0, -0.008, n)
    return {
        "train/loss": (steps, np.log(2) + train_offset + drift),
        "eval/loss": (steps, np.log(2) + eval_offset + drift / 2),
    }


def test_one_side_at_ln_2_or_a_band_left_is_not_read_as_chance():
    """Controls: the same drift with the eval loss 5 % under ln 2 (one side only, as a healthy run whose eval
    loss sat at ln 2 for its first 15 evals, log-tj-ridhap-1) is not that finding; nor are both sides at 3 %
    under it, outside the band."""
    cuts = [12, 15, 18]
    one_side = replay_cuts(_at_chance_pair(0.0, -0.05 * np.log(2)), cuts)
    outside = replay_cuts(_at_chance_pair(-0.03 * np.log(2), -0.03 * np.log(2)), cuts)
    for verdicts in (one_side, outside):
        assert not any("of ln 2" in s.message for v in verdicts for s in v.signals)
    both = replay_cuts(_at_chance_pair(0.0, 0.0), cuts)
    assert any("of ln 2" in s.message and s.severity is Severity.CRITICAL for s in both[-1].signals)


def test_a_classifier_answering_the_majority_class_on_both_sets_is_stopped(real):
    """log-ts-p4nzer96-1 (round 55, train, bad): a Keras MLP at train accuracy 0.808919 (the training set's
    majority share, to six digits) from its second epoch and val accuracy 0.8594 at all 100 epochs while both
    losses fall: unsure at all 20 checks ('a flag, not a stop: the losses may still move the predictions').
    Over 15 epochs on both sets not one prediction changed."""
    run = real["log-ts-p4nzer96-1"]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    assert "S" in code[visible : visible + 3], code
    stop = verdicts[code.index("S")]
    found = [s for s in stop.signals if s.metric == "eval/accuracy" and s.severity is Severity.CRITICAL]
    assert found and "do not change on either set" in found[0].message, stop.summary


def test_the_same_eval_accuracy_beside_a_train_accuracy_that_moves_stays_a_flag(real):
    """Control: the same run with its train accuracy moving in its 4th digit is not read as the same predictions
    on both sets, and nothing else stops it before its 10th check."""
    run = real["log-ts-p4nzer96-1"]
    steps, values = run.metrics["train/accuracy"]
    moving = values + 1e-3 * (np.arange(values.size) % 3)
    verdicts = replay_cuts(dict(run.metrics) | {"train/accuracy": (steps, moving)}, checkpoints(run)[:10])
    assert not any("either set" in s.message for v in verdicts for s in v.signals)
    assert all(v.decision.value != "stop" for v in verdicts)


def test_a_sentence_embedding_models_correlations_are_read_as_its_quality_evals(real):
    """log-rs-masonbeale-1 (round 53, train, bad): a sentence-transformers fine-tune that logs only its dev
    Pearson and Spearman correlations (best 0.198 at epoch 8, then falling steadily to 0.138). Neither name said
    a direction, so the run had 'no train-loss or eval metric' and was unsure at all 20 checks; as
    higher-is-better quality evals the decay is stopped at the check that first sees it."""
    run = real["log-rs-masonbeale-1"]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    assert code[visible] == "S" and "S" not in code[:visible], code
    assert any(s.metric == "eval/pearson_cosine" and s.severity is Severity.CRITICAL for s in verdicts[visible].signals)


def test_a_run_that_logs_only_its_train_mae_is_judged_by_it(real):
    """log-tt-lbd-hfut-1 (round 25, train, healthy): a regressor that logs only its train MAE, 14.65 -> 1.99 over
    40 epochs: unsure at all 20 checks ('no train-loss or eval metric'); continue at each now."""
    run = real["log-tt-lbd-hfut-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert code == "." * len(code), code
    assert all("no train-loss or eval metric" not in s.message for v in verdicts for s in v.signals)


def test_a_train_mae_beside_a_named_loss_stays_a_metric_of_its_own():
    from mcp_training_check.models import MetricRole
    from mcp_training_check.roles import assign_roles

    roles = assign_roles(["train/loss", "train/mae"])
    assert roles["train/loss"].role is MetricRole.TRAIN_LOSS and roles["train/mae"].role is MetricRole.OTHER
    alone = assign_roles(["train/mae", "train/lr"])
    assert alone["train/mae"].role is MetricRole.TRAIN_LOSS
