"""Every way the reviewer can fail ends as WAIT with reviewer_failed and an error that names the fix — within
`timeout_seconds` on the wall clock, never as an exception, and stored so schedule_next keeps the interval.
"""

from __future__ import annotations

import socket
import time

import pytest

from mcp_training_check.review.outcome import MAX_RETRIES
from tests import review_fixtures
from tests.fake_anthropic import api_error, hang, text_answer, tool_answer
from tests.review_fixtures import FAILING, RUN, SLACK_SECONDS, TIMEOUT, unsure_project

api = review_fixtures.api  # the fake Anthropic API fixture


def review_failing(monitor, *, within: float = TIMEOUT + SLACK_SECONDS):
    """escalate_review, which must answer WAIT/failed within ``within`` s; returns (result, seconds)."""
    started = time.monotonic()
    result = monitor.escalate_review(RUN)
    elapsed = time.monotonic() - started
    assert (result.decision, result.reviewer_failed, result.next_action) == ("WAIT", True, "schedule_next")
    assert result.error and result.summary.startswith("WAIT: the reviewer failed")
    assert elapsed <= within, f"the review took {elapsed:.2f} s, bound {within} s"
    stored = monitor.store.latest_review(monitor.context(RUN).key)
    assert stored == result, "a failed review is stored too: schedule_next keeps the interval on it"
    return result, elapsed


# --------------------------------------------------------------------------- before any request


def test_no_api_key_is_a_wait_naming_the_variable_without_any_request(tmp_path, api, monkeypatch):
    """With the backend named in the file; left out, no key means the agent backend (test_review_agent)."""
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    result, _ = review_failing(unsure_project(tmp_path, review='backend = "anthropic"'), within=0.5)
    assert "ANTHROPIC_API_KEY is not set" in result.error
    assert api.requests == []


def test_a_disabled_reviewer_is_a_wait_without_any_request(tmp_path, api):
    result, _ = review_failing(unsure_project(tmp_path, review="enabled = false"), within=0.5)
    assert "enabled = false" in result.error and "enabled = true" in result.error
    assert api.requests == []


# --------------------------------------------------------------------------- HTTP errors


def test_a_refused_key_is_a_wait_naming_the_key_after_one_request(tmp_path, api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong")
    result, _ = review_failing(unsure_project(tmp_path, review=FAILING))
    assert "HTTP 401" in result.error and "check ANTHROPIC_API_KEY" in result.error
    assert "authentication_error: invalid x-api-key" in result.error  # the API's own words
    assert [r.status for r in api.requests] == [401], "a 401 is not retried"


def test_an_unknown_model_is_a_wait_naming_where_to_set_it(tmp_path, api, monkeypatch):
    api.models = {"claude-sonnet-5-5"}
    monkeypatch.setenv("LLM_MODEL", "claude-retired-3")
    result, _ = review_failing(unsure_project(tmp_path, review=FAILING))
    assert "model 'claude-retired-3' was not found (HTTP 404" in result.error
    assert "LLM_MODEL" in result.error
    assert [r.status for r in api.requests] == [404]


def test_a_500_then_an_answer_is_retried_within_the_budget(tmp_path, api):
    monitor = unsure_project(tmp_path, review="timeout_seconds = 10")
    api.replies.extend([api_error("api_error", "Internal server error"), tool_answer("CONTINUE", "noise")])
    result = monitor.escalate_review(RUN)
    assert (result.decision, result.reviewer_failed) == ("CONTINUE", False)
    assert [r.status for r in api.requests] == [500, 200]
    assert [r.headers["x-stainless-retry-count"] for r in api.requests] == ["0", "1"]


@pytest.mark.parametrize(("error_type", "status"), [("api_error", 500), ("overloaded_error", 529)])
def test_a_persistent_server_error_is_a_wait_after_the_bounded_retries(tmp_path, api, error_type, status):
    api.default = api_error(error_type, "try later")
    result, _ = review_failing(unsure_project(tmp_path, review="timeout_seconds = 10"), within=10 + SLACK_SECONDS)
    assert f"HTTP {status}: {error_type}: try later" in result.error
    assert f"after {MAX_RETRIES} retries" in result.error
    assert [r.status for r in api.requests] == [status] * (1 + MAX_RETRIES)


def test_a_long_retry_after_cannot_push_the_review_past_its_deadline(tmp_path, api):
    """The SDK sleeps whatever retry-after says; the wall-clock deadline still holds."""
    api.default = api_error("rate_limit_error", "rate limit exceeded", **{"retry-after": "30"})
    result, elapsed = review_failing(unsure_project(tmp_path, review=FAILING))
    assert f"timed out after {TIMEOUT} s" in result.error
    assert elapsed >= TIMEOUT - 0.1
    assert [r.status for r in api.requests] == [429]


# --------------------------------------------------------------------------- no answer at all


def test_a_server_that_never_answers_is_a_wait_at_the_deadline(tmp_path, api):
    api.default = hang()
    result, elapsed = review_failing(unsure_project(tmp_path, review=FAILING))
    assert f"the reviewer timed out after {TIMEOUT} s" in result.error
    assert "timeout_seconds" in result.error
    assert TIMEOUT - 0.1 <= elapsed <= TIMEOUT + SLACK_SECONDS
    print(f"hung API: WAIT after {elapsed:.2f} s (timeout_seconds={TIMEOUT})")


def test_a_refused_connection_is_a_wait_naming_the_base_url(tmp_path, api, monkeypatch):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    result, _ = review_failing(unsure_project(tmp_path, review=FAILING))
    assert f"cannot reach the Anthropic API at http://127.0.0.1:{port}" in result.error
    assert "ANTHROPIC_BASE_URL" in result.error


# --------------------------------------------------------------------------- unusable answers


def test_a_text_answer_instead_of_the_tool_call_is_a_wait(tmp_path, api):
    api.replies.append(text_answer("I think you should stop the run."))
    result, _ = review_failing(unsure_project(tmp_path, review=FAILING))
    assert "answered without calling record_review" in result.error
    assert "stop_reason end_turn" in result.error and "I think you should stop" in result.error


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (tool_answer("MAYBE", "unclear"), "decision: Input should be 'STOP', 'CONTINUE' or 'WAIT'"),
        (tool_answer("stop", "lower case"), "decision: Input should be 'STOP', 'CONTINUE' or 'WAIT'"),
        (tool_answer("STOP"), "reason: Field required"),
        (tool_answer("STOP", "x" * 1001), "reason: String should have at most 1000 characters"),
    ],
)
def test_an_answer_outside_the_schema_is_a_wait(tmp_path, api, answer, problem):
    api.replies.append(answer)
    result, _ = review_failing(unsure_project(tmp_path, review=FAILING))
    assert "not a valid review" in result.error and problem in result.error


def test_a_failed_review_keeps_the_interval(tmp_path, api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong")
    monitor = unsure_project(tmp_path, review=FAILING)
    review_failing(monitor)
    schedule = monitor.schedule_next(RUN)
    assert schedule.interval_minutes == 10 and "review said WAIT" in schedule.summary
