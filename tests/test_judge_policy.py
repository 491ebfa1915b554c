"""The policy over sequences of checks: healthy runs never stop, divergence stops within one extra check."""

from __future__ import annotations

import numpy as np
import pytest

from mcp_training_check.judge import JudgeSettings, judge
from mcp_training_check.models import Decision, RunStatus, Severity, SignalKind, Verdict
from tests.test_judge_helpers import (
    ar1,
    decay_loss,
    kinds,
    make_history,
    make_series,
    replay,
    run_judge,
    warmup_cosine_lr,
)


def _healthy_with_spikes(seed: int, n: int = 700) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    loss = decay_loss(n, noise=rng.uniform(0.02, 0.08), rho=rng.uniform(0.3, 0.8), seed=seed)
    grad = np.exp(ar1(n, 0.2, 0.5, rng))
    for at in rng.choice(np.arange(60, n), 5, replace=False):
        width = int(rng.integers(1, 3))
        loss[at : at + width] *= rng.uniform(1.5, 4.0)
        grad[at : at + width] *= rng.uniform(2.0, 10.0)
    return {"loss": loss, "grad_norm": grad, "learning_rate": warmup_cosine_lr(n)}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("check_every", [5, 25])
def test_healthy_runs_with_recovering_spikes_never_stop(seed, check_every):
    checks = replay(_healthy_with_spikes(seed), check_every, start=40)
    stops = [(end, v.summary) for end, v in checks if v.decision is Decision.STOP]
    assert not stops
    assert any(SignalKind.SPIKE_RECOVERED in kinds(v) for _, v in checks)


def _diverging(onset: int, n: int, seed: int = 1) -> np.ndarray:
    loss = decay_loss(n, seed=seed)
    loss[onset:] *= np.exp(np.linspace(0, 2.0, n - onset))  # up to 7.4× within n - onset points
    return loss


@pytest.mark.parametrize("check_every", [5, 10, 20])
def test_divergence_stops_within_one_extra_check_after_it_is_visible(check_every):
    """A runaway loss, no cause logged: stopped by the check after the one that first saw it (checks a few
    logged points apart, as cron fires are; a check per logged point cannot tell a step from a climb)."""
    onset, n = 500, 560
    checks = replay({"loss": _diverging(onset, n)}, check_every, start=onset - 20)
    visible = next(i for i, (_, v) in enumerate(checks) if SignalKind.DIVERGENCE in kinds(v))
    stopped = next(i for i, (_, v) in enumerate(checks) if v.decision is Decision.STOP)
    assert stopped - visible <= 1
    assert all(v.decision is not Decision.STOP for _, v in checks[:visible])
    assert checks[visible][0] > onset


def test_previous_verdicts_survive_a_json_round_trip():
    loss = decay_loss(520, seed=1)
    loss[500:] *= 2.6
    two_checks = JudgeSettings.model_validate({"confirm_checks": 2, "confirm_share": 0.0})
    first = run_judge(make_series("loss", loss[:506], new_points=6), settings=two_checks)
    assert kinds(first).get(SignalKind.DIVERGENCE) == "watch", first.summary
    stored = Verdict.model_validate_json(first.model_dump_json())
    second = run_judge(make_series("loss", loss[:508], new_points=2), previous=[stored], settings=two_checks)
    assert second.decision is Decision.STOP, second.summary


def test_flat_loss_is_unsure():
    flat = 3.0 * np.exp(ar1(500, 0.03, 0.5, np.random.default_rng(9)))
    verdict = run_judge(make_series("loss", flat))
    assert verdict.decision is Decision.UNSURE
    assert verdict.summary.startswith("UNSURE: loss is not learning")


def test_no_new_data_in_a_running_run_is_information_for_the_launcher():
    verdict = run_judge(make_series("loss", decay_loss(300), new_points=0))
    assert verdict.decision is Decision.CONTINUE
    assert kinds(verdict)[SignalKind.NO_NEW_DATA] == "info"


def test_no_new_data_in_a_finished_run_is_not_a_warning():
    verdict = run_judge(make_series("loss", decay_loss(300), new_points=0), status=RunStatus.FINISHED)
    assert SignalKind.NO_NEW_DATA not in kinds(verdict)
    assert kinds(verdict)[SignalKind.RUN_ENDED] == "info"
    assert verdict.decision is Decision.CONTINUE


def test_an_ended_run_is_judged_and_says_there_is_nothing_left_to_stop():
    loss = decay_loss(300)
    loss[-1] = np.nan
    verdict = run_judge(make_series("loss", loss), status=RunStatus.CRASHED)
    assert verdict.decision is Decision.STOP
    assert "nothing left to stop" in verdict.summary


def test_no_metrics_yet_is_too_early():
    verdict = judge(make_history(), {})
    assert verdict.decision is Decision.CONTINUE and "too early to judge" in verdict.summary


def test_no_judged_metric_is_unsure():
    verdict = run_judge(make_series("throughput", np.linspace(0.3, 0.6, 20)))
    assert verdict.decision is Decision.UNSURE and "no train-loss or eval metric" in verdict.summary


def test_signals_are_compact_sorted_and_summarised_in_one_line():
    loss = decay_loss(600)
    loss[-1] = np.nan
    loss[-10:-5] *= 3
    grad = np.exp(ar1(600, 0.2, 0.5, np.random.default_rng(1)))
    grad[-6:] *= 30
    lr = warmup_cosine_lr(600)
    lr[-50:] *= 10
    evals = [make_series(f"eval/loss_{i}", np.linspace(2, 3, 10), np.arange(1, 11) * 600) for i in range(6)]
    verdict = run_judge(
        make_series("loss", loss), make_series("grad_norm", grad), make_series("learning_rate", lr), *evals
    )
    assert len(verdict.signals) <= 8
    ranks = [{Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}[s.severity] for s in verdict.signals]
    assert ranks == sorted(ranks)
    assert len({(s.kind, s.metric) for s in verdict.signals}) == len(verdict.signals)
    assert "\n" not in verdict.summary and verdict.summary.startswith("STOP: loss is NaN")
    assert all(any(ch.isdigit() for ch in s.message) for s in verdict.signals)


GISTS = [
    ("loss is NaN at step 4,000: 3 non-finite value(s) of loss in the last 600 points.", "loss is NaN at step 4,000"),
    (
        "loss 7.8 at step 12 was 3.4× the median 2.3 (z 9, threshold 6); grad norm co-spiked.",
        "loss 7.8 at step 12 was 3.4× the median 2.3",
    ),
    ("loss improving: 2.51 → 2.38 (medians of the first and last thirds).", "loss improving: 2.51 → 2.38"),
    (
        "eval/map50 at step 6: median 0.1 is 40% worse (threshold 5%).",
        "eval/map50 at step 6: median 0.1 is 40% worse",
    ),
    ("only 7 finite loss points.", "only 7 finite loss points"),
    ("(odd) a message that opens with a parenthesis.", "(odd) a message that opens with a parenthesis"),
]


@pytest.mark.parametrize(("message", "gist"), GISTS)
def test_a_signals_gist_is_its_first_clause(message, gist):
    from mcp_training_check.models import Signal

    assert Signal(kind=SignalKind.SPIKE, severity=Severity.WATCH, message=message).gist() == gist


def test_the_summary_says_the_first_clause_and_the_count_not_the_whole_sentence():
    """The sentence with its numbers is the first signal's message in the same result: the summary said it
    word for word a second time."""
    loss = decay_loss(600)
    loss[-1] = np.nan
    grad = np.exp(ar1(600, 0.2, 0.5, np.random.default_rng(1)))
    grad[-1] = np.nan
    verdict = run_judge(make_series("loss", loss), make_series("grad_norm", grad))
    main = verdict.signals[0]
    assert verdict.decision is Decision.STOP and main.message not in verdict.summary
    others = sum(s.severity is Severity.CRITICAL for s in verdict.signals[1:])
    assert others >= 1
    assert verdict.summary == f"STOP: loss is NaN at step 6,000 (+{others} more critical)."
