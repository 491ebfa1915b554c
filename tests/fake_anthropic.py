"""An Anthropic Messages API on 127.0.0.1 for tests: the real `anthropic` 2.x client talks to it exactly as
it talks to api.anthropic.com.

    with FakeAnthropic() as api:
        api.replies.append(tool_answer("STOP", "loss diverged"))
        client = anthropic.Anthropic(api_key=api.api_key, base_url=api.url)

What anthropic 2.14 sends (read in its `_client.py` / `_base_client.py`, asserted by tests/test_review_wire.py):
`POST /v1/messages` with `Authorization: Bearer <api_key>` (2.x sends `api_key` as a bearer token, the same
header as `auth_token`; there is no `x-api-key`), `anthropic-version: 2026-10-21`, `content-type:
application/json`, `x-stainless-retry-count: <n>`, and a JSON body `{"model", "max_tokens", "messages":
[{"role", "content"}], "system"?, "tools": [{"name", "description", "input_schema"}], "tool_choice":
{"type": "tool", "name"}}`. It retries 408/409/429/5xx and dropped connections (`max_retries`, back-off
0.5 s doubling, or what `retry-after` says) and never 400/401/403/404.

The answer is a message as in `anthropic/types/message.py`: `{"id", "type": "message", "role":
"assistant", "model", "content": [{"type": "tool_use", "id", "name", "input"}], "stop_reason":
"tool_use", "stop_sequence": null, "usage": {"input_tokens", "output_tokens"}}`; an error is
`{"type": "error", "error": {"type", "message"}, "request_id"}` with the API's status for that type.

Strict on purpose: a request with the wrong key gets 401, one whose shape is wrong (no model, no
max_tokens, no forced tool call, a tool_choice naming no tool, a prompt missing any of
`expect_in_prompt`) gets 400 `invalid_request_error` saying what was wrong, an unknown model (when
`models` is set) 404. Every request is recorded with its headers, body and the status it got.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tests.loopback import LoopbackServer, TrackedHandler

__all__ = ["FakeAnthropic", "Recorded", "Reply", "api_error", "hang", "raw_body", "text_answer", "tool_answer"]

ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


@dataclass
class Reply:
    """One scripted answer: a message content list, an error, or a hang (no answer at all)."""

    content: list[dict[str, Any]] | None = None
    stop_reason: str = "tool_use"
    error_type: str | None = None
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False
    raw: bytes | None = None  # sent as is with status 200 and ``content_type``
    content_type: str = "application/json"


def tool_answer(decision: str, reason: str = "", **extra: Any) -> Reply:
    """The model calls the forced tool with this input (``reason=""`` leaves it out)."""
    given: dict[str, Any] = {"decision": decision, **({"reason": reason} if reason else {}), **extra}
    return Reply(content=[{"type": "tool_use", "input": given}])


def text_answer(text: str) -> Reply:
    return Reply(content=[{"type": "text", "text": text}], stop_reason="end_turn")


def api_error(error_type: str, message: str, **headers: str) -> Reply:
    return Reply(error_type=error_type, message=message, headers=headers)


def hang() -> Reply:
    return Reply(hang=True)


def raw_body(body: bytes, content_type: str = "application/json") -> Reply:
    """Status 200 with these bytes: an HTML page from a proxy, garbage, JSON of another shape."""
    return Reply(raw=body, content_type=content_type)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int | None = None

    @property
    def prompt(self) -> str:
        """The text of every user message (what the model reads besides the system prompt)."""
        messages = self.body.get("messages", []) if isinstance(self.body, dict) else []
        return "\n".join(_text_of(m.get("content")) for m in messages if isinstance(m, dict))


class FakeAnthropic(LoopbackServer):
    thread_name = "FakeAnthropic"

    def __init__(self, *, api_key: str | None = None, models: set[str] | None = None) -> None:
        self.api_key = api_key or "sk-ant-fake-" + secrets.token_hex(16)
        self.models = models  # None: any model name is accepted
        self.expect_in_prompt: list[str] = []
        self.replies: deque[Reply] = deque()
        self.default = Reply(error_type="api_error", message="the test scripted no reply for this request")
        self.requests: list[Recorded] = []
        super().__init__(threading.Lock())

    # -- lifecycle ---------------------------------------------------------------------------------

    def handler_class(self) -> type[TrackedHandler]:
        return _Handler

    # -- answering ---------------------------------------------------------------------------------

    def answer(self, record: Recorded) -> tuple[int, dict[str, Any] | bytes, dict[str, str]] | None:
        """Status, JSON body (or raw bytes) and headers for one request; None means hang (never answer)."""
        problem = self._auth_problem(record) or _shape_problem(record) or self._prompt_problem(record)
        if problem is not None:
            return _error(*problem)
        body = record.body
        if self.models is not None and body["model"] not in self.models:
            return _error("not_found_error", f"model: {body['model']}")
        with self.lock:
            reply = self.replies.popleft() if self.replies else self.default
        if reply.hang:
            return None
        if reply.error_type is not None:
            return _error(reply.error_type, reply.message, reply.headers)
        if reply.raw is not None:
            return 200, reply.raw, {"Content-Type": reply.content_type}
        return 200, _message(body, reply), {}

    def _auth_problem(self, record: Recorded) -> tuple[str, str] | None:
        if record.headers.get("authorization") != f"Bearer {self.api_key}":
            return "authentication_error", "invalid x-api-key"
        return None

    def _prompt_problem(self, record: Recorded) -> tuple[str, str] | None:
        missing = [text for text in self.expect_in_prompt if text not in record.prompt]
        if missing:
            return "invalid_request_error", f"the test expected these in the prompt: {missing}"
        return None


def _shape_problem(record: Recorded) -> tuple[str, str] | None:
    """What is wrong with a Messages request (the checks the real API makes that matter here)."""
    body = record.body
    if (record.method, record.path) != ("POST", "/v1/messages"):
        return "not_found_error", f"Not found: {record.method} {record.path}"
    if not record.headers.get("anthropic-version"):
        return "invalid_request_error", "anthropic-version: header is required"
    if not isinstance(body, dict):
        return "invalid_request_error", "the body is not a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "invalid_request_error", "model: Field required"
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        return "invalid_request_error", "max_tokens: Field required (a positive integer)"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or messages[0].get("role") != "user":
        return "invalid_request_error", "messages: a non-empty list starting with a user turn is required"
    return _tool_problem(body)


def _tool_problem(body: dict[str, Any]) -> tuple[str, str] | None:
    tools = body.get("tools") or []
    names = {tool.get("name") for tool in tools if isinstance(tool, dict)}
    if any(not isinstance(t.get("input_schema"), dict) or t["input_schema"].get("type") != "object" for t in tools):
        return "invalid_request_error", "tools.0.input_schema: must be a JSON schema of type object"
    choice = body.get("tool_choice")
    if not isinstance(choice, dict) or choice.get("type") != "tool":
        return "invalid_request_error", "tool_choice: this test server only answers a forced tool call"
    if choice.get("name") not in names:
        return "invalid_request_error", f"tool_choice.name: no tool named {choice.get('name')!r} in tools"
    return None


def _message(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    """A Messages API answer; a tool_use block gets an id and the forced tool's name."""
    content = []
    for block in reply.content or []:
        if block["type"] == "tool_use":
            block = {"id": "toolu_" + secrets.token_hex(12), "name": body["tool_choice"]["name"], **block}
        content.append(block)
    return {
        "id": "msg_" + secrets.token_hex(12),
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": max(1, len(json.dumps(body)) // 4), "output_tokens": 40},
    }


def _error(
    error_type: str, message: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    body = {"type": "error", "error": {"type": error_type, "message": message}, "request_id": _request_id()}
    return ERROR_STATUS[error_type], body, dict(headers or {})


def _request_id() -> str:
    return "req_" + secrets.token_hex(12)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return ""


class _Handler(TrackedHandler):
    fake: FakeAnthropic

    def _handle(self) -> None:
        record = self._record()
        answer = self.fake.answer(record)
        if answer is None:  # hang: hold the request, then drop the connection without an answer
            self.fake.release.wait()
            self.close_connection = True
            return
        status, payload, headers = answer
        record.status = status
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        request_id = None if isinstance(payload, bytes) else payload.get("request_id")
        self.send_response(status)
        if "Content-Type" not in headers:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", request_id or _request_id())
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _record(self) -> Recorded:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        record = Recorded(self.command, self.path.split("?", 1)[0], headers, body)
        with self.fake.lock:
            self.fake.requests.append(record)
        return record

    do_GET = do_POST = do_PUT = do_DELETE = _handle
