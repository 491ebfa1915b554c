"""The OpenAI-compatible reviewer end to end: a real unsure run, `Monitor`, the real `openai` client and a
chat completions server on 127.0.0.1 (tests/fake_openai.py) — answers, fallbacks and every failure as WAIT
within the deadline — plus the chart on the wire for both API backends, and which backend is chosen.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time

import openai
import pytest

from mcp_training_check.config import ReviewSettings
from mcp_training_check.review import MAX_REVIEW_IMAGE_BYTES, REVIEW_TOOL, choose_backend
from mcp_training_check.review.outcome import MAX_RETRIES
from tests import review_fixtures
from tests.fake_anthropic import tool_answer
from tests.fake_openai import PNG_MAGIC, api_error, hang, html_page, refusal, text_reply, tool_call
from tests.review_fixtures import FAILING, OPENAI_MODEL, RUN, SLACK_SECONDS, TIMEOUT, unsure_project

api = review_fixtures.api
openai_api = review_fixtures.openai_api


def review_failing(monitor, *, within: float = TIMEOUT + SLACK_SECONDS):
    """escalate_review answering WAIT/failed by the openai backend within ``within`` s."""
    started = time.monotonic()
    result = monitor.escalate_review(RUN)
    elapsed = time.monotonic() - started
    assert (result.decision, result.reviewer_failed, result.backend) == ("WAIT", True, "openai"), result
    assert result.next_action == "schedule_next" and result.error
    assert elapsed <= within, f"the review took {elapsed:.2f} s, bound {within} s"
    assert monitor.store.latest_review(monitor.context(RUN).key) == result
    return result, elapsed


# --------------------------------------------------------------------------- answers


def test_a_tool_call_answer_comes_back_with_backend_and_model(tmp_path, openai_api):
    monitor = unsure_project(tmp_path)
    openai_api.replies.append(tool_call("CONTINUE", "flat at 3.0 with a constant LR: noise, eval above baseline"))
    result = monitor.escalate_review(RUN)
    assert (result.decision, result.backend, result.model) == ("CONTINUE", "openai", OPENAI_MODEL)
    assert not result.reviewer_failed and result.image_attached and result.next_action == "schedule_next"
    assert result.summary.startswith(f"reviewer {OPENAI_MODEL} (openai) says CONTINUE")
    (request,) = openai_api.requests
    assert request.status == 200 and request.headers["authorization"] == f"Bearer {openai_api.api_key}"
    body = request.body
    assert body["model"] == OPENAI_MODEL
    assert body["tool_choice"] == {"type": "function", "function": {"name": REVIEW_TOOL}}
    (tool,) = body["tools"]
    assert tool["function"]["parameters"]["properties"]["decision"]["enum"] == ["STOP", "CONTINUE", "WAIT"]
    assert body["messages"][0]["role"] == "system" and "false STOP" in body["messages"][0]["content"]
    assert monitor.schedule_next(RUN).interval_minutes == 20, "the stored CONTINUE lets the interval climb"


def test_the_chart_goes_along_as_a_png_under_the_cap(tmp_path, openai_api):
    monitor = unsure_project(tmp_path)
    openai_api.replies.append(tool_call("WAIT", "too early"))
    monitor.escalate_review(RUN)
    (request,) = openai_api.requests
    (image,) = request.images
    assert isinstance(image, bytes) and image.startswith(PNG_MAGIC)
    assert 10_000 < len(image) <= MAX_REVIEW_IMAGE_BYTES
    user = request.body["messages"][1]["content"]
    assert [part["type"] for part in user] == ["text", "image_url"], "the chart comes next to the numbers"
    assert "Run: flat" in user[0]["text"] and "Training loss (loss) at 10 checkpoints" in user[0]["text"]


def test_the_anthropic_request_carries_the_chart_too(tmp_path, api):
    monitor = unsure_project(tmp_path)
    api.replies.append(tool_answer("WAIT", "too early"))
    assert monitor.escalate_review(RUN).image_attached
    (request,) = api.requests
    text, image = request.body["messages"][0]["content"]
    assert text["type"] == "text" and "Run: flat" in text["text"]
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    png = base64.b64decode(image["source"]["data"])
    assert png.startswith(PNG_MAGIC) and len(png) <= MAX_REVIEW_IMAGE_BYTES


@pytest.mark.parametrize("how", ["file", "argument"])
def test_image_false_or_no_image_sends_the_numbers_alone(tmp_path, openai_api, how):
    monitor = unsure_project(tmp_path, review=f"timeout_seconds = 20\n{'image = false' if how == 'file' else ''}")
    openai_api.replies.append(tool_call("WAIT", "too early"))
    result = monitor.escalate_review(RUN, image=how != "argument")
    assert not result.image_attached and not result.reviewer_failed
    (request,) = openai_api.requests
    assert request.images == [] and isinstance(request.body["messages"][1]["content"], str)


def test_a_json_answer_in_the_text_is_accepted(tmp_path, openai_api):
    monitor = unsure_project(tmp_path)
    openai_api.replies.append(text_reply('```json\n{"decision": "STOP", "reason": "flat for 6,000 steps"}\n```'))
    result = monitor.escalate_review(RUN)
    assert (result.decision, result.reason, result.next_action) == ("STOP", "flat for 6,000 steps", "stop_run")


def test_an_endpoint_without_tools_or_images_is_asked_again_in_plain_text(tmp_path, openai_api):
    openai_api.tools_supported = False
    monitor = unsure_project(tmp_path)
    openai_api.replies.append(text_reply('{"decision": "WAIT", "reason": "only 6,000 of 20,000 steps"}'))
    result = monitor.escalate_review(RUN)
    assert (result.decision, result.reviewer_failed, result.image_attached) == ("WAIT", False, False)
    first, second = openai_api.requests
    assert first.status == 400 and first.body["tools"]
    assert second.status == 200 and "tools" not in second.body and second.images == []
    assert "Answer with exactly this JSON object" in second.prompt


def test_a_missing_model_falls_back_to_llm_fallback_model(tmp_path, openai_api, monkeypatch):
    openai_api.models = {"deepseek-chat"}
    monkeypatch.setenv("LLM_MODEL", "retired-model")
    monkeypatch.setenv("LLM_FALLBACK_MODEL", "deepseek-chat")
    monitor = unsure_project(tmp_path)
    openai_api.replies.append(tool_call("CONTINUE", "noise"))
    result = monitor.escalate_review(RUN)
    assert (result.decision, result.model) == ("CONTINUE", "deepseek-chat")
    asked = [(r.body["model"], r.status) for r in openai_api.requests]
    assert asked == [("retired-model", 404), ("deepseek-chat", 200)]


def test_no_model_found_at_all_is_a_wait_naming_both(tmp_path, openai_api, monkeypatch):
    openai_api.models = {"deepseek-chat"}
    monkeypatch.setenv("LLM_FALLBACK_MODEL", "also-gone")
    result, _ = review_failing(unsure_project(tmp_path, review=FAILING))
    assert f"model '{OPENAI_MODEL}'" in result.error and "then 'also-gone'" in result.error
    assert "LLM_FALLBACK_MODEL" in result.error and [r.status for r in openai_api.requests] == [404, 404]


# --------------------------------------------------------------------------- failures → WAIT


def test_a_refused_key_is_a_wait_naming_llm_api_key(tmp_path, openai_api, monkeypatch):
    monkeypatch.setenv("LLM_API_KEY", "sk-wrong")
    result, _ = review_failing(unsure_project(tmp_path, review=FAILING))
    assert "HTTP 401" in result.error and "check LLM_API_KEY" in result.error
    assert "Incorrect API key provided" in result.error
    assert [r.status for r in openai_api.requests] == [401], "a 401 is not retried"


def test_a_429_then_an_answer_is_retried(tmp_path, openai_api):
    monitor = unsure_project(tmp_path)
    openai_api.replies.extend([api_error("rate_limit_exceeded", "slow down"), tool_call("STOP", "diverged")])
    result = monitor.escalate_review(RUN)
    assert (result.decision, result.reviewer_failed) == ("STOP", False)
    assert [r.status for r in openai_api.requests] == [429, 200]
    assert [r.headers["x-stainless-retry-count"] for r in openai_api.requests] == ["0", "1"]


def test_a_persistent_429_is_a_wait_after_the_bounded_retries(tmp_path, openai_api):
    openai_api.default = api_error("rate_limit_exceeded", "slow down")
    result, _ = review_failing(unsure_project(tmp_path, review="timeout_seconds = 10"), within=10 + SLACK_SECONDS)
    assert "rate-limited (HTTP 429: rate_limit_exceeded: slow down)" in result.error
    assert [r.status for r in openai_api.requests] == [429] * (1 + MAX_RETRIES)


def test_a_persistent_server_error_is_a_wait_after_the_bounded_retries(tmp_path, openai_api):
    openai_api.default = api_error("server_error", "The server had an error while processing your request.")
    result, _ = review_failing(unsure_project(tmp_path, review="timeout_seconds = 10"), within=10 + SLACK_SECONDS)
    assert "the OpenAI-compatible API failed (HTTP 500: server_error: The server had an error" in result.error
    assert f"after {MAX_RETRIES} retries" in result.error
    assert [r.status for r in openai_api.requests] == [500] * (1 + MAX_RETRIES)


def test_a_long_retry_after_cannot_push_the_review_past_its_deadline(tmp_path, openai_api):
    """openai honours retry-after up to 2 minutes; the wall-clock deadline still holds."""
    openai_api.default = api_error("rate_limit_exceeded", "slow down", **{"retry-after": "30"})
    result, elapsed = review_failing(unsure_project(tmp_path, review=FAILING))
    assert f"timed out after {TIMEOUT} s" in result.error and elapsed >= TIMEOUT - 0.1
    assert [r.status for r in openai_api.requests] == [429]


def test_a_server_that_never_answers_is_a_wait_at_the_deadline(tmp_path, openai_api):
    openai_api.default = hang()
    result, elapsed = review_failing(unsure_project(tmp_path, review=FAILING))
    assert f"the reviewer timed out after {TIMEOUT} s" in result.error and "LLM_BASE_URL" in result.error
    assert elapsed >= TIMEOUT - 0.1
    print(f"hung chat completions API: WAIT after {elapsed:.2f} s (timeout_seconds={TIMEOUT})")


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (tool_call("MAYBE", "unclear"), "decision: Input should be 'STOP', 'CONTINUE' or 'WAIT'"),
        (tool_call("STOP"), "reason: Field required"),
        (text_reply("I would STOP, or maybe WAIT."), "answered in prose, not the JSON object"),
        (text_reply('["STOP"]'), "not an object"),
        (refusal("I can't help with that."), "the model refused to review"),
        (html_page(), "not a chat completion"),
    ],
)
def test_an_answer_that_is_not_one_decision_is_a_wait(tmp_path, openai_api, reply, problem):
    openai_api.replies.append(reply)
    result, _ = review_failing(unsure_project(tmp_path, review=FAILING))
    assert problem in result.error


def test_no_llm_api_key_with_the_backend_named_is_a_wait_without_a_request(tmp_path, openai_api, monkeypatch):
    monkeypatch.delenv("LLM_API_KEY")
    result, _ = review_failing(unsure_project(tmp_path, review='backend = "openai"'), within=1.0)
    assert "LLM_API_KEY is not set" in result.error and openai_api.requests == []


# --------------------------------------------------------------------------- which backend


@pytest.mark.parametrize(
    ("env", "written", "chosen"),
    [
        ({}, None, "agent"),
        ({"ANTHROPIC_API_KEY": "k"}, None, "anthropic"),
        ({"LLM_API_KEY": "k", "LLM_BASE_URL": "http://h/v1"}, None, "openai"),
        ({"LLM_API_KEY": "k", "LLM_MODEL": "m"}, None, "openai"),
        ({"LLM_API_KEY": "k"}, None, "agent"),  # a key alone names no endpoint
        ({"ANTHROPIC_API_KEY": "k", "LLM_API_KEY": "k", "LLM_MODEL": "m"}, None, "anthropic"),
        ({"ANTHROPIC_API_KEY": "k"}, "agent", "agent"),
        ({}, "openai", "openai"),
    ],
)
def test_the_backend_is_the_files_else_the_first_configured_else_the_agent(monkeypatch, env, written, chosen):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = ReviewSettings() if written is None else ReviewSettings(backend=written)
    assert choose_backend(settings) == chosen


# --------------------------------------------------------------------------- the fake itself


def test_the_fake_refuses_what_a_server_would(openai_api):
    client = openai.OpenAI(api_key="sk-wrong", base_url=openai_api.base_url, max_retries=0, timeout=5)
    with pytest.raises(openai.AuthenticationError, match="Incorrect API key"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    client = openai.OpenAI(api_key=openai_api.api_key, base_url=openai_api.base_url, max_retries=0, timeout=5)
    with pytest.raises(openai.BadRequestError, match="no function named"):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}],
            tool_choice={"type": "function", "function": {"name": "other"}},
        )  # fmt: skip
    openai_api.replies.append(tool_call("WAIT", "why"))
    completion = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    (call,) = completion.choices[0].message.tool_calls or []
    assert call.function.name == REVIEW_TOOL and call.function.arguments == '{"decision": "WAIT", "reason": "why"}'


def test_the_api_clients_and_matplotlib_load_only_when_a_review_needs_them(tmp_path, isolated_home):
    """A server start or an agent-backend review imports none of anthropic, openai or matplotlib."""
    unsure_project(tmp_path).close()
    script = (
        "import sys\nfrom mcp_training_check.server import build_server\n"
        "from mcp_training_check.service import Monitor\n"
        f"build_server(Monitor()); result = Monitor().escalate_review({RUN!r})\n"
        "print(result.next_action, sorted(m for m in ('anthropic', 'openai', 'matplotlib') if m in sys.modules))"
    )
    env = {**os.environ, "TRAINING_CHECK_HOME": str(isolated_home)}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["record_review", "[]"]
