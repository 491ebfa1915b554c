"""Judge changes of stop 40: a quality eval's steady slide just beyond its noise margin is no stop while another
quality eval of the run holds its best. Each real-run test fails on the code before its change; the controls pass on
both."""

from __future__ import annotations

import pytest

from benchmarks.corpus_runs import Run, load_corpus
from benchmarks.replay import checkpoints
from mcp_training_check.models import Severity, SignalKind
from tests.test_judge_classes import REAL, decisions, replay_cuts, replay_real


@pytest.fixture(scope="module")
def real() -> dict[str, Run]:
    return {run.id: run for run in load_corpus(REAL)}


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
