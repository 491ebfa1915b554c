"""escalate_review at the edges: through the MCP SDK's in-process client, through the CLI as a subprocess,
and the fake Messages API itself against the real anthropic client (so the fake's strictness is tested)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anthropic
import pytest
from anthropic.types import ToolUseBlock

from mcp_training_check.models import ReviewResult, Schedule
from mcp_training_check.server import build_server
from tests import review_fixtures
from tests.fake_anthropic import tool_answer
from tests.review_fixtures import RUN, unsure_project
from tests.test_server import call

api = review_fixtures.api  # the fake Anthropic API fixture

TOOL = {"name": "t", "input_schema": {"type": "object", "properties": {}}}


# --------------------------------------------------------------------------- MCP


def test_escalate_review_tool_answers_and_schedule_next_uses_the_stored_answer(tmp_path, api):
    server = build_server(unsure_project(tmp_path))
    api.replies.append(tool_answer("CONTINUE", "flat loss at a constant LR: noise"))
    result = call(server, "escalate_review", {"run": RUN})
    assert not result.is_error, result.content
    review = ReviewResult.model_validate(result.structured_content)
    assert (review.decision, review.next_action, review.reviewer_failed) == ("CONTINUE", "schedule_next", False)
    schedule = Schedule.model_validate(call(server, "schedule_next", {"run": RUN}).structured_content)
    assert schedule.interval_minutes == 20


def test_escalate_review_tool_returns_wait_not_an_error_when_the_reviewer_fails(tmp_path, api, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monitor = unsure_project(tmp_path, review='backend = "anthropic"\ntimeout_seconds = 3')
    result = call(build_server(monitor), "escalate_review", {"run": RUN})
    assert not result.is_error
    review = ReviewResult.model_validate(result.structured_content)
    assert review.decision == "WAIT" and review.reviewer_failed and "ANTHROPIC_API_KEY" in (review.error or "")


@pytest.mark.parametrize(
    ("run", "expected"),
    [("/no/such/run.log", "/no/such/run.log"), ("never-checked", "call `check`")],
)
def test_escalate_review_tool_errors_say_what_to_do(tmp_path, api, run, expected):
    if run == "never-checked":
        run = str(tmp_path / "train.log")
        (tmp_path / "train.log").write_text("step 1 | loss 2.0\n")
    result = call(build_server(unsure_project(tmp_path)), "escalate_review", {"run": run})
    assert result.is_error
    assert expected in " ".join(getattr(block, "text", "") for block in result.content)


# --------------------------------------------------------------------------- CLI


def test_cli_review_prints_the_answer(tmp_path, api, isolated_home):
    unsure_project(tmp_path).close()
    api.replies.append(tool_answer("STOP", "not learning after 6,000 steps"))
    env = {**os.environ, "TRAINING_CHECK_HOME": str(isolated_home)}
    command = [sys.executable, "-m", "mcp_training_check", "review", RUN]
    done = subprocess.run([*command, "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    review = ReviewResult.model_validate(json.loads(done.stdout))
    assert (review.decision, review.next_action) == ("STOP", "stop_run")
    api.replies.append(tool_answer("WAIT", "too early"))
    text = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60).stdout
    assert text.startswith("review   WAIT (") and f"next     the next check: training-check schedule {RUN}" in text
    api.replies.append(tool_answer("STOP", "not learning after 6,000 steps"))
    stopping = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60).stdout
    assert "next     stop the run: training-check stop flat --confirm --reason 'not learning after 6,000 steps'" in (
        stopping
    ), "the review named the MCP tool stop_run, no command the person could run"
    assert "  ! no way to stop run 'flat' is configured: add a [runs.flat.stop] table" in stopping, (
        "the command was printed as if it would stop a run with no stop table"
    )


# --------------------------------------------------------------------------- the fake itself


def client(api, key: str | None = None) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=key or api.api_key, base_url=api.url, max_retries=0, timeout=5)


def test_the_fake_answers_a_forced_tool_call_in_the_sdks_types(api):
    api.replies.append(tool_answer("WAIT", "why"))
    message = client(api).messages.create(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}],
        tools=[TOOL], tool_choice={"type": "tool", "name": "t"},
    )  # fmt: skip
    (block,) = message.content
    assert isinstance(block, ToolUseBlock) and block.name == "t"
    assert block.input == {"decision": "WAIT", "reason": "why"}
    assert message.stop_reason == "tool_use" and message.usage.output_tokens > 0


@pytest.mark.parametrize(
    ("change", "error", "says"),
    [
        ({"key": "sk-ant-wrong"}, anthropic.AuthenticationError, "invalid x-api-key"),
        ({"tool_choice": {"type": "auto"}}, anthropic.BadRequestError, "forced tool call"),
        ({"tool_choice": {"type": "tool", "name": "other"}}, anthropic.BadRequestError, "no tool named 'other'"),
        ({"messages": []}, anthropic.BadRequestError, "non-empty list"),
    ],
)
def test_the_fake_refuses_what_the_api_would(api, change, error, says):
    request = {
        "model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}],
        "tools": [TOOL], "tool_choice": {"type": "tool", "name": "t"},
    }  # fmt: skip
    key = change.pop("key", None)
    with pytest.raises(error, match=says):
        client(api, key).messages.create(**{**request, **change})
