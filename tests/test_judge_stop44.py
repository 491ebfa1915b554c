"""Judge change of stop 44: a bounded quality eval (an mAP, an accuracy) whose best is still under 10 % of its
scale has not left its floor, and its falls there are the floor's noise while the train loss falls: a slide or
collapse of it is a warning, not a stop, unless an eval loss of the run has risen to 1.5× its best (a model
that fits its training set only). Each real-run test fails on the code before the change; the controls pass on
both."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.replay import checkpoints
from mcp_training_check.models import Severity, SignalKind
from tests.test_judge_classes import decisions, replay_cuts, replay_real, with_point

ON_FLOOR = "has not left its floor has learned nothing to lose yet"


@pytest.mark.parametrize(
    ("run_id", "check"),
    [("log-qf-wonyeongjun-1", 4), ("log-nw-abdul-rahman-ammourah-1", 2), ("log-rt-alex-star-arch-1", 1)],
)
def test_a_slide_of_an_eval_that_never_left_its_floor_does_not_stop_a_learning_run(real, run_id, check):
    """Three healthy train runs, YOLO detectors in their first epochs: log-qf-wonyeongjun-1 (round 120; mAP50 best
    0.0275, 18 % under it three evals later, 'still decaying': critical), log-nw-abdul-rahman-ammourah-1 (round
    90; mAP_0.5 0.083 → 0.016, a confirmed collapse) and log-rt-alex-star-arch-1 (round 11; mAP_0.5 0.055 → 0.024). Each
    was stopped at that check while its train loss fell; each goes on to learn. The slide is a warning now."""
    run = real[run_id]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    floor = [s for s in verdicts[check].signals if s.kind is SignalKind.EVAL_DEGRADING and ON_FLOOR in s.message]
    assert floor, verdicts[check].summary
    assert all(s.severity is Severity.WARNING and s.evidence["on_floor"] == 1.0 for s in floor)


def test_a_floor_eval_beside_an_eval_loss_risen_half_again_still_stops(real):
    """Control: log-qf-dikirust-1 (round 120, train, bad: a detector whose mAP50 never passes 0.034). Its mAPs
    collapse from 0.022 to 0 under a falling train loss, as the healthy runs' do, but its val box loss is 1.5×
    its best: the model fits its training set and nothing else. Still stopped at its third check."""
    run = real["log-qf-dikirust-1"]
    assert run.split == "train" and run.label == "bad"
    code, visible, verdicts = replay_real(run)
    assert visible == 0 and code[:3] == "uuS", code
    assert not any(ON_FLOOR in s.message for s in verdicts[2].signals), verdicts[2].summary


def test_a_lone_floor_eval_falling_to_zero_under_a_flat_loss_still_stops(real):
    """Control: issue-paddledet-548 (train, bad): a detector's only mAP 0.017 → 0 while its loss stays flat. No
    falling train loss says the model learns, so its collapse stops the run where the fault is visible."""
    run = real["issue-paddledet-548"]
    assert run.split == "train" and run.label == "bad"
    code, visible, _ = replay_real(run)
    assert "S" not in code[:visible] and code[visible] == "S", (code, visible)


def test_a_floor_eval_that_turns_nan_still_stops(real):
    """Control: the same healthy detector (log-qf-wonyeongjun-1) with its mAP50 NaN at the eval its fourth check
    reads: the evaluation broke, clearly bad whatever its level, and no floor spares it."""
    run = real["log-qf-wonyeongjun-1"]
    cuts = checkpoints(run)[:5]
    steps, _ = run.metrics["eval/mAP50(B)"]
    last = int(np.searchsorted(steps, cuts[4], side="right")) - 1
    verdicts = replay_cuts(with_point(run, "eval/mAP50(B)", last, float("nan")), cuts, run_config=run.config)
    assert decisions(verdicts)[4] == "S", [v.summary for v in verdicts]
