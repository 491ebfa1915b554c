"""Judge changes of stop 36: each test fails on the code before its change."""

from __future__ import annotations

import numpy as np

from benchmarks.replay import checkpoints
from mcp_training_check.models import Severity
from tests.test_judge_classes import replay_cuts, replay_real
from tests.test_judge_stop35 import _not_learning


def test_a_converged_tail_logged_mid_run_without_an_eval_is_flagged_not_stopped(real):
    """log-qk-abhi0069-1 (round 67, train, healthy): a 30M decoder's last 348 steps (8,201-8,548, the tail its
    notebook kept), its one-step loss noise around 0.12 on a memorised training set and its EMA creeping down. With
    no eval to show it still learns, 'not learning: still at its initial level at a second check' stopped it at
    its last 8 checks; the level a mid-run log starts at is not the run's initial one."""
    run = real["log-qk-abhi0069-1"]
    assert run.split == "train" and run.label == "healthy"
    code, _, verdicts = replay_real(run)
    assert "S" not in code, code
    flagged = [s for v in verdicts for s in _not_learning(v)]
    assert flagged and all(s.severity is Severity.WARNING for s in flagged)
    assert any("mid-run (step 8,201)" in s.message and "improves" not in s.message for s in flagged)


def test_a_mid_run_stall_beside_an_eval_that_does_not_improve_is_a_flag_too(real):
    """Control of the same class on another run: the resumed GPT-2 of stop 35's test with its eval loss made to
    wobble around its first value (no eval improving) is flagged mid-run at its 'not learning' checks, not stopped;
    the same stall moved to the run's start is still stopped (tests/test_judge_stop35.py)."""
    run = real["log-lk-jaipkapoor99-1"]
    steps, values = run.metrics["eval/loss"]
    wobble = values[0] + 0.004 * np.sin(np.arange(values.size))
    verdicts = replay_cuts(dict(run.metrics) | {"eval/loss": (steps, wobble)}, checkpoints(run))
    flagged = [s for v in verdicts for s in _not_learning(v)]
    assert flagged and all(s.severity is Severity.WARNING for s in flagged)
    assert all("mid-run (step 70,250)" in s.message for s in flagged if "level the log starts at" in s.message)
