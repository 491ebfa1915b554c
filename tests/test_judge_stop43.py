"""Judge change of stop 43: a detector whose every average precision is exactly 0 at its first evals finds
nothing yet, and is flagged from its 2nd eval; its stop still waits for the 6th eval and a second check, so a
check that sees it there stops it one check sooner. Each real-run test fails on the code before the change; the
controls pass on both."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.replay import checkpoints
from mcp_training_check.models import Severity, SignalKind
from tests.test_judge_classes import decisions, replay_cuts, replay_real

MAP50_95 = "eval/mAP50-95(B)"
FINDS_NOTHING = "the detector finds nothing yet; judged stuck from its 6th eval"


def _stuck(verdict, metric: str):
    return [s for s in verdict.signals if s.kind is SignalKind.FLAT and s.metric == metric]


@pytest.mark.parametrize(
    ("run_id", "evals_at_first_check"),
    [("log-no-deskthom-1", 3), ("log-nu-guilhermenobre-1", 3)],
)
def test_a_detector_at_zero_from_its_first_eval_is_flagged_then_stopped_at_the_next_check(
    real, run_id, evals_at_first_check
):
    """log-no-deskthom-1 (round 82) and log-nu-guilhermenobre-1 (round 88), train, bad: YOLO detectors whose every
    mAP, precision and recall are exactly 0 at every epoch. Their first check saw 3 evals, too few to judge
    stuck (6): continue, then a warning at the second check, a stop at the third, two checks after the fault
    was visible. A detector at 0 at every eval from its 2nd is flagged now, so the check that has its 6th eval
    stops it: within one check."""
    run = real[run_id]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    assert visible == 0 and code[:2] == "uS", code
    (flag,) = _stuck(verdicts[0], MAP50_95)
    assert flag.severity is Severity.WARNING and FINDS_NOTHING in flag.message, flag.message
    assert flag.evidence["points"] == evals_at_first_check
    (stop,) = _stuck(verdicts[1], MAP50_95)
    assert stop.severity is Severity.CRITICAL and stop.evidence["points"] >= 6, stop.message


def _eval_steps(run, name: str = MAP50_95) -> np.ndarray:
    return run.metrics[name][0]


def test_a_detector_at_zero_is_not_stopped_before_its_sixth_eval(real):
    """Control: the same detector checked at its 3rd, 4th and 5th evals is stopped at none of them (flagged at
    each now): a detector's slow start sits at 0 for up to 27 evals in the train split's healthy runs, and the
    flag never stops it sooner than a stuck eval would be."""
    run = real["log-no-deskthom-1"]
    steps = _eval_steps(run)
    verdicts = replay_cuts(run.metrics, [int(steps[2]), int(steps[3]), int(steps[4])], run_config=run.config)
    assert "S" not in decisions(verdicts), [v.summary for v in verdicts]
    for verdict in verdicts:
        assert all(s.severity is not Severity.CRITICAL for s in _stuck(verdict, MAP50_95)), verdict.summary


def test_one_zero_eval_is_not_flagged(real):
    """Control: at its first eval only, a detector at 0 is not flagged (16 healthy train runs with an average
    precision score 0 at their first eval and not at their second)."""
    run = real["log-no-deskthom-1"]
    (verdict,) = replay_cuts(run.metrics, [int(_eval_steps(run)[0])], run_config=run.config)
    assert not _stuck(verdict, MAP50_95), verdict.summary


def test_a_pose_head_at_zero_beside_boxes_found_is_not_flagged(real):
    """Control: log-ns-kedarnathkc-1 (round 86, train, healthy), a YOLOv8n-pose whose pose mAPs are exactly 0 for
    its first 7 epochs while its box mAP50 is 0.79 from the first: the detector finds objects, its keypoint head
    starts later. The pose mAPs are not flagged as finding nothing, and the run is not stopped."""
    run = real["log-ns-kedarnathkc-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    for verdict in verdicts[:3]:
        assert not any(FINDS_NOTHING in s.message for s in verdict.signals), verdict.summary


def test_a_detector_that_starts_finding_objects_is_not_stopped(real):
    """Control: log-pc-artitsamchoosri-1 (round 96, train, healthy), a YOLOv5 whose mAPs are exactly 0 at its first
    6 epochs and then rise: not stopped at its second check, where its mAP has left 0 (flagged at its first, 5
    evals at 0, now)."""
    run = real["log-pc-artitsamchoosri-1"]
    assert run.split == "train" and run.label == "healthy"
    cuts = checkpoints(run)
    code, _, _ = replay_real(run)
    assert "S" not in code, code
    assert np.any(run.metrics["eval/mAP_0.5"][1][run.metrics["eval/mAP_0.5"][0] <= cuts[1]])
