"""Failure classes found in corpus_real/'s train split in the thirteenth judge round; one test per rule on a
real train-split run, each with a control."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.corpus_runs import Run, load_corpus
from benchmarks.replay import checkpoints
from tests.test_judge_classes import REAL, decisions, replay_cuts, replay_real


@pytest.fixture(scope="module")
def real() -> dict[str, Run]:
    return {run.id: run for run in load_corpus(REAL)}


def test_a_long_steady_overfit_of_a_run_without_a_quality_eval_is_stopped(real):
    """log-lc-jckuri-1 (train, bad; jckuri's learning_curve.csv, an LSTM next-word chatbot, 90 epochs): its val
    loss, the only eval it logs, climbs from its best 4.66 at epoch 5 to 6.86 while the train loss falls 6.8 ->
    0.1. It was unsure at 15 checks and never stopped; with nothing in the run to say the model still improves,
    a rise >= 20 % over its best, steady over half the run, is now stopped."""
    run = real["log-lc-jckuri-1"]
    code, visible, _ = replay_real(run)
    assert "S" in code[visible:], code


def test_a_long_overfit_beside_a_quality_eval_or_under_a_fifth_is_not_stopped(real):
    """Controls on log-lc-jckuri-1: the same run with an accuracy eval that holds (a quality eval that can outvote
    its loss), or with its val loss held under 1.15x its best, is never stopped."""
    run = real["log-lc-jckuri-1"]
    steps, values = run.metrics["eval/loss"]
    noise = np.random.default_rng(0).normal(0.0, 0.003, steps.size)
    with_accuracy = dict(run.metrics) | {"eval/accuracy": (steps, 0.31 + noise)}
    cuts = checkpoints(run)
    assert "S" not in decisions(replay_cuts(with_accuracy, cuts, run_config=run.run_config("full")))
    held = dict(run.metrics) | {"eval/loss": (steps, np.minimum(values, 1.15 * values.min()))}
    assert "S" not in decisions(replay_cuts(held, cuts, run_config=run.run_config("full")))
