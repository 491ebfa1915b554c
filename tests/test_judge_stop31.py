"""Judge changes of stop 31: each test fails on the code before its change, each with a control."""

from __future__ import annotations

import numpy as np

from mcp_training_check.models import Decision, SignalKind
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
