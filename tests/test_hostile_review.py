"""Hostile reviewer endpoints (issue 10, items 6 and 8): an endpoint on 127.0.0.1 that answers HTTP 200
with an HTML page, undecodable bytes, or JSON of another shape gives WAIT with a reason that names the
problem, for both API backends, through the real `anthropic` / `openai` clients, and over MCP
`escalate_review` answers WAIT, never "Error executing tool"."""

from __future__ import annotations

import pytest

from mcp_training_check.server import build_server
from tests import review_fixtures
from tests.fake_anthropic import raw_body as anthropic_raw
from tests.fake_openai import raw_body as openai_raw
from tests.review_fixtures import FAILING, RUN, unsure_project
from tests.test_review_failures import review_failing
from tests.test_server import call

api = review_fixtures.api
openai_api = review_fixtures.openai_api

NO_CHART = "image = false"
"""The chart is beside the point here, and drawing it in a cold process could eat the short deadline."""
HTML = b"<!doctype html><html><body><h1>Sign in to the proxy</h1></body></html>"
GARBAGE = bytes(range(256)) * 4  # not UTF-8, not JSON
HOSTILE = [
    pytest.param(HTML, "text/html; charset=utf-8", "text/html", id="html-page"),
    pytest.param(GARBAGE, "application/json", "not JSON", id="garbage-as-json"),
    pytest.param(GARBAGE, "application/octet-stream", "application/octet-stream", id="garbage-as-bytes"),
    pytest.param(b"\xff\xfe{", "text/html", "text/html", id="undecodable-html"),
    pytest.param(b'"just a string"', "application/json", "not a JSON object", id="json-string"),
    pytest.param(b"[1, 2]", "application/json", "not a JSON object", id="json-list"),
    pytest.param(b"{}", "application/json", "not a", id="empty-object"),
    pytest.param(b'{"content": "hello"}', "application/json", "not a", id="wrong-shape"),
    pytest.param(b"", "application/json", "not JSON", id="empty-body"),
]


@pytest.mark.parametrize(("body", "content_type", "named"), HOSTILE)
def test_anthropic_endpoint_answering_garbage_is_a_wait_naming_it(tmp_path, api, body, content_type, named):
    api.replies.append(anthropic_raw(body, content_type))
    result, _ = review_failing(unsure_project(tmp_path, review=f'backend = "anthropic"\n{FAILING}\n{NO_CHART}'))
    assert named in result.error, result.error
    assert "ANTHROPIC_BASE_URL" in result.error and api.url in result.error
    assert "Error" not in result.error.split(":")[0] and "Traceback" not in result.error


@pytest.mark.parametrize(("body", "content_type", "named"), HOSTILE)
def test_openai_endpoint_answering_garbage_is_a_wait_naming_it(tmp_path, openai_api, body, content_type, named):
    openai_api.replies.append(openai_raw(body, content_type))
    result, _ = review_failing(unsure_project(tmp_path, review=f'backend = "openai"\n{FAILING}\n{NO_CHART}'))
    assert named in result.error, result.error
    assert "LLM_BASE_URL" in result.error


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_escalate_review_over_mcp_answers_wait_for_an_html_page(tmp_path, api, openai_api, backend):
    fake = api if backend == "anthropic" else openai_api
    fake.replies.append((anthropic_raw if backend == "anthropic" else openai_raw)(HTML, "text/html"))
    server = build_server(unsure_project(tmp_path, review=f'backend = "{backend}"\n{FAILING}\n{NO_CHART}'))
    result = call(server, "escalate_review", {"run": RUN})
    text = " ".join(getattr(block, "text", "") for block in result.content)
    assert not result.is_error, text
    assert result.structured_content["decision"] == "WAIT" and result.structured_content["reviewer_failed"]
    assert "text/html" in result.structured_content["error"]


def test_a_real_answer_under_another_content_type_is_still_taken(tmp_path, api):
    """Some gateways label JSON text/plain; the SDKs parse it, so must the check before them."""
    message = (
        b'{"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use", '
        b'"stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}, "content": [{"type": '
        b'"tool_use", "id": "toolu_1", "name": "record_review", "input": {"decision": "CONTINUE", '
        b'"reason": "flat but the eval is above its baseline"}}]}'
    )
    api.replies.append(anthropic_raw(message, "text/plain"))
    monitor = unsure_project(tmp_path, review=f'backend = "anthropic"\n{FAILING}\n{NO_CHART}')
    result = monitor.escalate_review(RUN)
    assert (result.decision, result.reviewer_failed) == ("CONTINUE", False), result.error
