"""A perplexity is judged on its loss's scale: ln(perplexity), the cross-entropy it exponentiates.

Each real-run test compares a perplexity with the same values logged as their log (``log_perplexity``, which
the judge reads as logged): both must be judged alike. On the old code (the perplexity judged on its own
exponential scale) each of them differs. Then the transform's edge cases: non-finite and non-positive values,
a log already, a baseline, the names in the verdict.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcp_training_check.judge.scale import log_scale_view
from mcp_training_check.models import Decision, MetricRole, Severity, SignalKind, Verdict
from mcp_training_check.roles import assign_roles, is_raw_perplexity, log_scale_name, logged_name, primary_train_loss
from tests.test_judge_classes import decisions, replay_cuts
from tests.test_judge_helpers import make_history, make_series, run_judge
from tests.test_judge_round7 import SOCKEYE_PPL

# issue-sockeye-706 (corpus_real train, healthy; github.com/awslabs/sockeye/issues/706): its 8 training lines
# (perplexity 406 -> 348, SOCKEYE_PPL), then three lines at 2.0-2.4x that perplexity: a loss 5.85 nats
# climbing back to 6.6-6.7, +13 %.
RISE_STEPS = np.arange(2400, 2950, 50, dtype=np.int64)
RISE_PPL = np.concatenate([SOCKEYE_PPL, [760.0, 790.0, 820.0]])

# log-slm-training-1 (corpus_real train, healthy; 0Xero7/slm_training lightning_logs/version_0/metrics.csv):
# its 10 epochs' eval/perplexity and train/loss_epoch, then three more epochs in which the train loss goes on
# falling and the eval perplexity comes back from 36.7 to 42-44 (its cross-entropy 3.60 -> 3.74-3.78, +4 %).
SLM_STEPS = np.array([14073, 28147, 42221, 56295, 70369, 84443, 98517, 112591, 126665, 140739, 154813, 168887, 182961])
SLM_EVAL_PPL = np.array([63.9313, 53.6894, 49.8535, 46.9898, 44.7294, 42.4389, 40.7746, 38.6957, 37.4671, 36.6815,
                         42.0, 43.0, 44.0])  # fmt: skip
SLM_TRAIN_LOSS = np.array([4.77697, 4.21829, 4.10121, 4.02349, 3.95526, 3.88854, 3.82526, 3.76723, 3.71996, 3.68724,
                           3.66, 3.64, 3.62])  # fmt: skip


def _findings(verdicts: list[Verdict]) -> list[list[tuple[SignalKind, Severity]]]:
    return [[(s.kind, s.severity) for s in v.signals] for v in verdicts]


def test_a_train_perplexity_is_judged_as_its_cross_entropy():
    """issue-sockeye-706 with its perplexity back at 2× (+13 % of its loss): judged as the same values logged as
    a log perplexity are (a plateau: unsure), not as a 2× spike on the perplexity's scale (watched: continue
    on the old code). Every check's findings alike, and the messages name ln(train/perplexity)."""
    cuts = [int(s) for s in RISE_STEPS[3:]]
    ppl = replay_cuts({"train/perplexity": (RISE_STEPS, RISE_PPL)}, cuts)
    logged = replay_cuts({"train/log_perplexity": (RISE_STEPS, np.log(RISE_PPL))}, cuts)
    assert decisions(ppl) == decisions(logged) == ".....uuu"
    assert _findings(ppl) == _findings(logged)
    flat = next(s for s in ppl[-1].signals if s.kind is SignalKind.FLAT)
    assert flat.metric == "train/perplexity"
    assert flat.message.startswith("ln(train/perplexity) is flat")


def test_an_eval_perplexity_is_judged_as_its_cross_entropy():
    """log-slm-training-1 with its eval perplexity 15-20 % above its best for 3 evals, its cross-entropy
    3.8 % (under the 5 % degrade margin): continue, as the same log perplexity; the old code flagged the
    perplexity's own 15 % (unsure)."""
    cuts = [int(s) for s in SLM_STEPS[4:]]
    train = {"train/loss": (SLM_STEPS, SLM_TRAIN_LOSS)}
    ppl = replay_cuts(train | {"eval/perplexity": (SLM_STEPS, SLM_EVAL_PPL)}, cuts)
    logged = replay_cuts(train | {"eval/log_perplexity": (SLM_STEPS, np.log(SLM_EVAL_PPL))}, cuts)
    assert decisions(ppl) == decisions(logged) == "." * len(cuts)
    assert _findings(ppl) == _findings(logged)


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("train/perplexity", True),
        ("eval/ppl", True),
        ("valid_ppl", True),
        ("eval/log_perplexity", False),  # MLPerf's eval_log_perplexity: a log already
        ("eval_log_ppl", False),
        ("ln_perplexity", False),
        ("train/loss", False),
    ],
)
def test_which_names_are_raw_perplexities(name, raw):
    assert is_raw_perplexity(name) is raw


def test_the_log_scale_name_round_trips_and_keeps_the_primary_train_loss():
    assert logged_name(log_scale_name("train/perplexity")) == "train/perplexity"
    assert logged_name("train/loss") == "train/loss"
    roles = assign_roles(["train/perplexity", "train/loss_bbox"])
    renamed = {log_scale_name(n) if n == "train/perplexity" else n: info for n, info in roles.items()}
    assert primary_train_loss(renamed) == log_scale_name(primary_train_loss(roles) or "")


def _view(values, *, name="train/perplexity", baselines=None):
    history = make_history(make_series(name, values))
    return log_scale_view(history, assign_roles(history.metrics), baselines or {}, ())


def test_nan_and_inf_stay_non_finite_and_the_rest_is_ln():
    view = _view([400.0, math.nan, 300.0, math.inf, 200.0])
    series = view.history.metrics["ln(train/perplexity)"]
    assert series.name == "ln(train/perplexity)"
    assert np.isnan(series.values[1]) and series.values[3] == math.inf
    np.testing.assert_allclose(series.values[[0, 2, 4]], np.log([400.0, 300.0, 200.0]))
    assert series.min_value == pytest.approx(math.log(200.0)) and series.max_value == pytest.approx(math.log(400.0))
    assert view.logged == {"ln(train/perplexity)": "train/perplexity"}


@pytest.mark.parametrize("values", [[400.0, 0.0, 300.0], [400.0, -1.0, 300.0]])
def test_a_series_with_a_value_at_or_below_zero_is_no_perplexity_and_stays_as_logged(values):
    view = _view(values)
    assert list(view.history.metrics) == ["train/perplexity"]
    assert view.logged == {}


def test_a_baseline_goes_to_ln_and_one_at_or_below_zero_keeps_the_series_as_logged():
    view = _view([60.0, 50.0, 40.0], name="eval/perplexity", baselines={"eval/perplexity": 30.0})
    assert view.baselines == {"ln(eval/perplexity)": pytest.approx(math.log(30.0))}
    kept = _view([60.0, 50.0, 40.0], name="eval/perplexity", baselines={"eval/perplexity": 0.0})
    assert kept.baselines == {"eval/perplexity": 0.0} and kept.logged == {}


def test_a_log_perplexity_and_an_unjudged_perplexity_stay_as_logged():
    assert _view([3.0, 2.9, 2.8], name="eval/log_perplexity").logged == {}
    assert _view([400.0, 300.0], name="perplexity").logged == {}  # no split word: OTHER, never judged


def test_a_nan_perplexity_still_stops_under_its_own_name():
    """NaN stays NaN under the transform, so the non-finite detector fires on it as on any loss."""
    verdict = run_judge(make_series("train/perplexity", [400.0, 390.0, 380.0, math.nan]))
    assert verdict.decision is Decision.STOP
    nan = next(s for s in verdict.signals if s.kind is SignalKind.NON_FINITE)
    assert nan.metric == "train/perplexity"


def test_an_earlier_verdict_under_the_logged_name_is_found_again():
    """The previous check's findings (stored under ``train/perplexity``) confirm this one's: the view renames
    them, so a not-learning perplexity is critical at its second check as a loss is."""
    flat = np.full(8, 31000.0) * (1 + 1e-3 * np.sin(np.arange(8)))
    steps = np.arange(8, dtype=np.int64) * 50 + 50
    verdicts = replay_cuts({"train/perplexity": (steps, flat)}, [300, 400], run_config={"vocab_size": 32000})
    assert [v.decision for v in verdicts] == [Decision.UNSURE, Decision.STOP]
    assert all(s.metric == "train/perplexity" for v in verdicts for s in v.signals if s.metric)
    assert assign_roles(["train/perplexity"])["train/perplexity"].role is MetricRole.TRAIN_LOSS
