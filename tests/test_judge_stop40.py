"""Judge changes of stop 40: a quality eval's steady slide just beyond its noise margin is no stop while another
quality eval of the run holds its best; an eval grown ≥ 5× its first level is a slow start leaving its floor, not a
stuck run. Each real-run test fails on the code before its change; the controls pass on both."""

from __future__ import annotations

from benchmarks.replay import checkpoints
from mcp_training_check.models import Severity, SignalKind
from tests.test_judge_classes import decisions, replay_cuts, replay_real


def _degrading(verdict, metric: str):
    return [s for s in verdict.signals if s.kind is SignalKind.EVAL_DEGRADING and s.metric == metric]


def test_a_sliding_map50_beside_a_map50_95_at_its_best_is_not_stopped(real):
    """log-nu-deven2011-1 (round 88, train, healthy): a YOLO fine-tune whose mAP50 starts at its best (0.733-0.742 at
    epochs 1-2) and eases to 0.68-0.70 while its stricter mAP50-95 climbs from 0.59 to new bests (0.65 at the end) and
    every val loss falls. The mAP50's slide, 7.3 % below its best against a 6.9 % noise margin, was a steady decay
    and stopped the run at its fourth check, and at 14 more. The mAP50-95 within 5 % of its best speaks for the
    model: the slide is a warning (unsure), not a stop."""
    run = real["log-nu-deven2011-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    slide = _degrading(verdicts[3], "eval/mAP50(B)")
    assert slide and slide[0].severity is Severity.WARNING, verdicts[3].summary
    assert "another quality eval is at or near its best (eval/mAP50-95(B) 0.6" in slide[0].message


def test_the_same_slide_with_the_map50_95_sliding_too_is_stopped(real):
    """Control: the same run with its mAP50-95 following its mAP50 (0.85 × it at each eval): no quality eval holds
    its best, so the steady slide stops the run at the same check as before."""
    run = real["log-nu-deven2011-1"]
    steps, values = run.metrics["eval/mAP50(B)"]
    metrics = dict(run.metrics) | {"eval/mAP50-95(B)": (steps, values * 0.85)}
    verdicts = replay_cuts(metrics, checkpoints(run), run_config=run.config)
    code = decisions(verdicts)
    assert code[3] == "S", code
    assert any(s.severity is Severity.CRITICAL for s in _degrading(verdicts[3], "eval/mAP50(B)")), verdicts[3].summary


def _not_learning(verdict, metric: str):
    flat = [s for s in verdict.signals if s.kind is SignalKind.FLAT and s.metric == metric]
    return [s for s in flat if "not learning" in s.message]


def test_a_detector_whose_map_has_multiplied_from_its_floor_is_a_slow_start(real):
    """log-nw-kallasrikanth1999-1 (round 90, train, healthy): a YOLOv5 whose mAP@0.5 sits at 0.0002-0.0005 for its
    first epochs and has grown to 0.03 by epoch 13 of 45 (3.3 % of its headroom), then climbs to 0.67. Both mAPs
    were 'not learning' at a second check and the run was stopped there. An eval ≥ 5× its first level is leaving
    its floor: the finding stays a warning (unsure) and the run is never stopped."""
    run = real["log-nw-kallasrikanth1999-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    stuck = _not_learning(verdicts[5], "eval/mAP_0.5")
    assert stuck and stuck[0].severity is Severity.WARNING, verdicts[5].summary
    assert "leaving its floor" in stuck[0].message


def test_the_same_detector_with_its_maps_held_at_their_first_level_is_stopped(real):
    """Control: the same run with both mAPs held at their first epochs' level (0.0003 and 0.0001, a few millionths
    of noise) to the end: nothing grows, so the second check that finds them not learning stops the run."""
    run = real["log-nw-kallasrikanth1999-1"]
    metrics = dict(run.metrics)
    for name, level in (("eval/mAP_0.5", 3e-4), ("eval/mAP_0.5:0.95", 1e-4)):
        steps, _ = run.metrics[name]
        metrics[name] = (steps, level + 1e-6 * (steps % 3))
    verdicts = replay_cuts(metrics, checkpoints(run), run_config=run.config)
    code = decisions(verdicts)
    assert "S" in code[:7], code
    first = code.index("S")
    assert any(s.severity is Severity.CRITICAL for s in _not_learning(verdicts[first], "eval/mAP_0.5")), code


def test_an_accuracy_that_grew_under_five_times_and_never_learns_is_still_stopped(real):
    """Control on a real bad run: log-th-jayshenoy-1 (train), a top-1 accuracy 0.023 → 0.063 (2.75×) that never
    learns, stopped one check after its fault is visible, as before."""
    run = real["log-th-jayshenoy-1"]
    assert run.label == "bad"
    code, visible, _ = replay_real(run)
    assert code.index("S") == visible + 1, (code, visible)
