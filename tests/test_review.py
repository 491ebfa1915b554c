"""escalate_review end to end: a real unsure run, `Monitor`, the real anthropic client, a fake Messages API.

What the reviewer answers, what it was asked, what is stored, and what schedule_next and stop_run make
of the stored answer. Failures of the reviewer are in test_review_failures.py.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
import subprocess
import sys

import pytest

from mcp_training_check.config import DEFAULT_REVIEW_MODEL
from mcp_training_check.errors import NothingToReview
from mcp_training_check.models import Decision, ReviewResult
from mcp_training_check.review import REVIEW_TOOL
from mcp_training_check.review.outcome import MAX_ANSWER_TOKENS
from mcp_training_check.service import Monitor
from mcp_training_check.state import DB_FILENAME, StateStore
from tests import review_fixtures
from tests.fake_anthropic import tool_answer
from tests.review_fixtures import BASELINE, RUN, healthy_project, unsure_project, write_flat_log

api = review_fixtures.api  # the fake Anthropic API fixture


@pytest.mark.parametrize(
    ("decision", "next_action"),
    [("STOP", "stop_run"), ("CONTINUE", "schedule_next"), ("WAIT", "schedule_next")],
)
def test_the_reviewers_answer_comes_back_and_is_stored(tmp_path, api, decision, next_action):
    monitor = unsure_project(tmp_path)
    api.replies.append(tool_answer(decision, f"loss flat at 2.9 for 6,000 steps: {decision}"))
    result = monitor.escalate_review(RUN)
    assert (result.decision, result.next_action, result.reviewer_failed) == (decision, next_action, False)
    assert result.reason == f"loss flat at 2.9 for 6,000 steps: {decision}"
    assert result.error is None and result.model == DEFAULT_REVIEW_MODEL
    assert result.summary.startswith(f"reviewer {DEFAULT_REVIEW_MODEL} (anthropic) says {decision}")
    assert result.backend == "anthropic" and result.image_attached
    assert 0 < result.latency_seconds < review_fixtures.ANSWER_TIMEOUT
    latest = monitor.store.recent_checks(monitor.context(RUN).key)[0]
    assert result.check_id == latest.id and latest.verdict is not None
    assert monitor.store.latest_review(monitor.context(RUN).key) == result
    assert len(api.requests) == 1 and api.requests[0].status == 200


def test_the_request_is_a_forced_tool_call_with_the_key_as_bearer(tmp_path, api):
    monitor = unsure_project(tmp_path)
    api.replies.append(tool_answer("WAIT", "too early"))
    monitor.escalate_review(RUN)
    (request,) = api.requests
    assert request.headers["authorization"] == f"Bearer {api.api_key}"
    assert "x-api-key" not in request.headers
    assert request.headers["anthropic-version"]
    body = request.body
    assert body["model"] == DEFAULT_REVIEW_MODEL and body["max_tokens"] == MAX_ANSWER_TOKENS
    assert body["tool_choice"] == {"type": "tool", "name": REVIEW_TOOL}
    (tool,) = body["tools"]
    schema = tool["input_schema"]
    assert schema["properties"]["decision"]["enum"] == ["STOP", "CONTINUE", "WAIT"]
    assert set(schema["required"]) == {"decision", "reason"}
    assert "false STOP" in body["system"]


def test_the_prompt_holds_the_runs_facts(tmp_path, api):
    monitor = unsure_project(tmp_path)
    write_flat_log(tmp_path / "flat.jsonl", points=700)  # the run went on: a second unsure check
    monitor.check(RUN)
    checks = monitor.store.recent_checks(monitor.context(RUN).key)
    first, second = checks[-1].verdict, checks[0].verdict
    assert first is not None and second is not None
    signal = second.signals[0]
    api.expect_in_prompt = [
        "Run: flat",
        "latest step 6,990",
        signal.message,  # each signal's message ...
        "drop=",  # ... and its evidence
        "loss (train_loss, lower is better)",
        "eval/acc (eval, higher is better)",
        "recent (step: value)",
        f"eval/acc {BASELINE}",
        "total_steps=20000",
        f"check #{checks[-1].id}",  # the earlier decision
        first.summary,
    ]
    api.replies.append(tool_answer("WAIT", "still flat"))
    result = monitor.escalate_review(RUN)
    assert not result.reviewer_failed, result.error
    assert result.check_id == checks[0].id
    prompt = api.requests[0].prompt
    assert prompt.count(signal.message) <= 2  # summary and signal, no more
    assert len(prompt) < 4000, f"prompt is {len(prompt)} characters"


def test_an_earlier_review_is_part_of_the_next_prompt(tmp_path, api):
    monitor = unsure_project(tmp_path)
    api.replies.append(tool_answer("WAIT", "give it another 1,000 steps"))
    monitor.escalate_review(RUN)
    write_flat_log(tmp_path / "flat.jsonl", points=700)
    monitor.check(RUN)
    api.expect_in_prompt = ["earlier review of check #1: WAIT: give it another 1,000 steps"]
    api.replies.append(tool_answer("STOP", "flat for 7,000 steps after a WAIT"))
    assert monitor.escalate_review(RUN).decision == "STOP"


# --------------------------------------------------------------------------- model


def test_llm_model_from_the_environment_is_used_when_the_file_names_none(tmp_path, api, monkeypatch):
    monkeypatch.setenv("LLM_MODEL", "claude-haiku-5-5")
    monitor = unsure_project(tmp_path)
    api.replies.append(tool_answer("WAIT", "early"))
    assert monitor.escalate_review(RUN).model == "claude-haiku-5-5"
    assert api.requests[0].body["model"] == "claude-haiku-5-5"


def test_the_files_model_wins_over_llm_model(tmp_path, api, monkeypatch):
    monkeypatch.setenv("LLM_MODEL", "claude-haiku-5-5")
    monitor = unsure_project(tmp_path, review='model = "claude-opus-5-5"')
    api.replies.append(tool_answer("WAIT", "early"))
    monitor.escalate_review(RUN)
    assert api.requests[0].body["model"] == "claude-opus-5-5"


# --------------------------------------------------------------------------- nothing to review


def test_a_run_whose_latest_verdict_is_continue_is_not_reviewed(tmp_path, api):
    monitor, run = healthy_project(tmp_path)
    cli_words = rf"call schedule_next \(`training-check schedule {run}` on the command line\)"  # the CLI too
    with pytest.raises(NothingToReview, match=rf"is continue, not unsure.*{cli_words}"):
        monitor.escalate_review(run)
    assert api.requests == []


def test_a_run_whose_latest_verdict_is_stop_is_not_reviewed_and_told_the_whole_stop_command(tmp_path, api):
    """`training-check review` after a STOP said "`training-check stop` on the command line", which `stop` refuses
    without the run, --confirm and --reason."""
    log = tmp_path / "nan.jsonl"
    log.write_text(
        "".join(json.dumps({"step": s, "loss": 2.0 if s < 200 else float("nan")}) + "\n" for s in range(300))
    )
    monitor = Monitor()
    assert monitor.check(str(log)).verdict.decision is Decision.STOP
    with pytest.raises(NothingToReview) as refused:
        monitor.escalate_review(str(log))
    command = str(refused.value).split("(`", 1)[1].split("` on the command line", 1)[0]
    assert shlex.split(command)[:3] == ["training-check", "stop", str(log)]
    assert "--confirm --reason 'loss is NaN at step 299'" in command
    assert api.requests == []


def test_a_run_never_checked_is_not_reviewed(tmp_path, api):
    write_flat_log(tmp_path / "flat.jsonl")
    monitor = Monitor()
    with pytest.raises(NothingToReview, match="call `check`"):
        monitor.escalate_review(str(tmp_path / "flat.jsonl"))
    assert api.requests == []


# --------------------------------------------------------------------------- schedule_next


def test_schedule_next_after_a_stored_wait_keeps_the_interval(tmp_path, api):
    monitor = unsure_project(tmp_path)
    checked = monitor.store.recent_checks(monitor.context(RUN).key)[0].interval_minutes
    api.replies.append(tool_answer("WAIT", "too early to say"))
    monitor.escalate_review(RUN)
    schedule = monitor.schedule_next(RUN)
    assert schedule.interval_minutes == checked == 10
    assert "review said WAIT, interval unchanged" in schedule.summary


def test_schedule_next_after_a_stored_continue_climbs(tmp_path, api):
    monitor = unsure_project(tmp_path)
    api.replies.append(tool_answer("CONTINUE", "flat but the LR is constant; fine"))
    monitor.escalate_review(RUN)
    schedule = monitor.schedule_next(RUN)
    assert schedule.interval_minutes == 20
    assert "healthy, interval up from 10" in schedule.summary


def test_without_a_review_an_unsure_run_stays_at_ten_minutes(tmp_path):
    """The control for the two above: the same run, no reviewer asked."""
    monitor = unsure_project(tmp_path)
    schedule = monitor.schedule_next(RUN)
    assert schedule.interval_minutes == 10 and "verdict UNSURE" in schedule.summary


def test_a_review_of_an_older_check_is_not_used_by_schedule_next(tmp_path, api):
    monitor = unsure_project(tmp_path)
    api.replies.append(tool_answer("CONTINUE", "fine"))
    monitor.escalate_review(RUN)
    write_flat_log(tmp_path / "flat.jsonl", points=700)
    monitor.check(RUN)  # a newer unsure verdict nobody reviewed
    schedule = monitor.schedule_next(RUN)
    assert schedule.interval_minutes == 10 and "verdict UNSURE" in schedule.summary


def test_an_explicit_review_argument_wins_over_the_stored_one(tmp_path, api):
    monitor = unsure_project(tmp_path)
    api.replies.append(tool_answer("CONTINUE", "fine"))
    monitor.escalate_review(RUN)
    assert "review said WAIT" in monitor.schedule_next(RUN, review="WAIT").summary


# --------------------------------------------------------------------------- stop_run


def test_stop_run_after_a_reviewer_stop_records_the_reviews_reason(tmp_path, api):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        (tmp_path / "train.pid").write_text(f"{sleeper.pid}\n")
        monitor = unsure_project(tmp_path, entry='[runs.flat.stop]\npid_file = "train.pid"\ngrace_seconds = 5\n')
        api.replies.append(tool_answer("STOP", "loss flat at 2.9 for 6,000 of 20,000 steps: not learning"))
        review = monitor.escalate_review(RUN)
        result = monitor.stop_run(RUN, confirm=True, reason=review.reason)
        assert result.outcome.value == "stopped" and sleeper.poll() is not None
    finally:
        sleeper.kill()
        sleeper.wait()
    incident = monitor.store.find_incident(monitor.context(RUN).key)
    assert incident is not None
    assert incident["review"] == f"STOP by {DEFAULT_REVIEW_MODEL}: {review.reason}"
    notes = (tmp_path / "notes.md").read_text()
    assert f"- **Review:** STOP by {DEFAULT_REVIEW_MODEL}: loss flat at 2.9" in notes
    assert "- **Decision:** unsure" in notes
    assert monitor.schedule_next(RUN).monitoring is False, "a verified stop ends monitoring"


# --------------------------------------------------------------------------- state


def test_a_state_database_from_before_reviews_is_upgraded_in_place(tmp_path, isolated_home):
    monitor = unsure_project(tmp_path)
    key = monitor.context(RUN).key
    monitor.close()
    db = sqlite3.connect(isolated_home / DB_FILENAME)  # back to schema 1, as an older version left it
    db.execute("DROP TABLE reviews")
    db.execute("DROP TABLE crons")  # schema 3's, also newer than 1
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    store = StateStore()
    (check,) = store.recent_checks(key)
    review = ReviewResult(
        run=RUN, summary="s", decision="WAIT", reason="r", model="m", reviewer_failed=False,
        latency_seconds=0.1, check_id=check.id, next_action="schedule_next",
    )  # fmt: skip
    store.record_review(key, review)
    assert store.latest_review(key) == review
    assert store.forget_run(key) and store.latest_review(key) is None
