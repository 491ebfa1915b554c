"""An OpenAI-compatible chat completions API on 127.0.0.1 for tests: the real `openai` client talks to it as it
talks to api.openai.com, a vLLM server or any llm-chat endpoint.

    with FakeOpenAI() as api:
        api.replies.append(tool_call("STOP", "loss diverged"))
        client = openai.OpenAI(api_key=api.api_key, base_url=api.base_url)

What openai 3.x sends (read in its `_base_client.py` / `resources/chat/completions`, asserted by
tests/test_review_openai.py): `POST <base_url>/chat/completions` with `Authorization: Bearer <api_key>`,
`content-type: application/json`, `x-stainless-retry-count: <n>` and a JSON body `{"model", "messages":
[{"role", "content": str | [{"type": "text", "text"}, {"type": "image_url", "image_url": {"url"}}]}],
"max_tokens"?, "tools"?: [{"type": "function", "function": {"name", "description", "parameters"}}],
"tool_choice"?: {"type": "function", "function": {"name"}}}`. It retries 408/409/429/5xx and dropped
connections (`max_retries`, back-off from 0.5 s, or what `retry-after` says up to 2 minutes), never 400/401/404.

The answer is `{"id", "object": "chat.completion", "created", "model", "choices": [{"index": 0, "message":
{"role": "assistant", "content", "refusal", "tool_calls"?: [{"id", "type": "function", "function": {"name",
"arguments": "<JSON text>"}}]}, "finish_reason"}], "usage"}`; an error is `{"error": {"message", "type",
"param", "code"}}` with its HTTP status (OpenAI's `model_not_found` 404, `invalid_api_key` 401).

Strict on purpose: the wrong key gets 401; a malformed request (no model, no messages, a tool_choice naming no
tool, an image that is not a base64 PNG data URL) 400; tools or images where the endpoint is set not to take
them (`tools_supported`, `images_supported`) 400, as text-only servers answer; an unknown model (when
`models` is set) 404. Every request is recorded with its headers, body, decoded images and status.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tests.loopback import LoopbackServer, TrackedHandler

__all__ = [
    "ChatReply",
    "FakeOpenAI",
    "Recorded",
    "api_error",
    "hang",
    "html_page",
    "raw_body",
    "refusal",
    "text_reply",
    "tool_call",
]

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DATA_URL_PREFIX = "data:image/png;base64,"
COMPLETIONS_PATH = "/v1/chat/completions"
ERROR_STATUS = {
    "invalid_request_error": 400,
    "invalid_api_key": 401,
    "model_not_found": 404,
    "rate_limit_exceeded": 429,
    "server_error": 500,
}


@dataclass
class ChatReply:
    """One scripted answer: tool calls or text, an error, an HTML page, or a hang (no answer at all)."""

    tool_calls: list[dict[str, Any]] | None = None
    content: str | None = None
    refusal: str | None = None
    finish_reason: str = "stop"
    error_code: str | None = None
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    html: str | None = None
    hang: bool = False
    raw: bytes | None = None  # sent as is with status 200 and ``content_type``
    content_type: str = "application/json"


def tool_call(decision: str, reason: str = "", *, name: str | None = None, **extra: Any) -> ChatReply:
    """The model calls the forced function with these arguments (``reason=""`` leaves it out)."""
    given: dict[str, Any] = {"decision": decision, **({"reason": reason} if reason else {}), **extra}
    call = {"name": name, "arguments": json.dumps(given)}
    return ChatReply(tool_calls=[call], finish_reason="tool_calls")


def text_reply(text: str) -> ChatReply:
    return ChatReply(content=text)


def refusal(text: str) -> ChatReply:
    return ChatReply(refusal=text)


def api_error(code: str, message: str, **headers: str) -> ChatReply:
    return ChatReply(error_code=code, message=message, headers=headers)


def html_page(body: str = "<html><body><h1>502 Bad Gateway</h1></body></html>") -> ChatReply:
    """A proxy's HTML page with status 200 (as a misconfigured gateway or a login wall answers)."""
    return ChatReply(html=body)


def hang() -> ChatReply:
    return ChatReply(hang=True)


def raw_body(body: bytes, content_type: str = "application/json") -> ChatReply:
    """Status 200 with these bytes: garbage, or JSON of another shape."""
    return ChatReply(raw=body, content_type=content_type)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int | None = None
    images: list[bytes | str] = field(default_factory=list)  # a str: a part that is no PNG data URL

    @property
    def prompt(self) -> str:
        """The text of every message."""
        messages = self.body.get("messages", []) if isinstance(self.body, dict) else []
        return "\n".join(_text_of(m.get("content")) for m in messages if isinstance(m, dict))


class FakeOpenAI(LoopbackServer):
    thread_name = "FakeOpenAI"

    def __init__(self, *, api_key: str | None = None, models: set[str] | None = None) -> None:
        self.api_key = api_key or "sk-fake-" + secrets.token_hex(16)
        self.models = models  # None: any model name is accepted
        self.tools_supported = True
        self.images_supported = True
        self.replies: deque[ChatReply] = deque()
        self.default = ChatReply(error_code="server_error", message="the test scripted no reply for this request")
        self.requests: list[Recorded] = []
        super().__init__(threading.Lock())

    def handler_class(self) -> type[TrackedHandler]:
        return _Handler

    @property
    def base_url(self) -> str:
        """What LLM_BASE_URL is set to: the API root with its /v1, as for OpenAI and vLLM."""
        return self.url + "/v1"

    # -- answering ---------------------------------------------------------------------------------

    def answer(self, record: Recorded) -> tuple[int, bytes, dict[str, str]] | None:
        """Status, body bytes and headers for one request; None means hang (never answer)."""
        problem = self._auth_problem(record) or _shape_problem(record) or self._capability_problem(record)
        if problem is not None:
            return _error(*problem)
        body = record.body
        if self.models is not None and body["model"] not in self.models:
            said = f"The model `{body['model']}` does not exist or you do not have access to it."
            return _error("model_not_found", said)
        with self.lock:
            reply = self.replies.popleft() if self.replies else self.default
        if reply.hang:
            return None
        if reply.error_code is not None:
            return _error(reply.error_code, reply.message, reply.headers)
        if reply.raw is not None:
            return 200, reply.raw, {"Content-Type": reply.content_type}
        if reply.html is not None:
            return 200, reply.html.encode(), {"Content-Type": "text/html; charset=utf-8"}
        return 200, json.dumps(_completion(body, reply)).encode(), {"Content-Type": "application/json"}

    def _auth_problem(self, record: Recorded) -> tuple[str, str] | None:
        if record.headers.get("authorization") != f"Bearer {self.api_key}":
            return "invalid_api_key", "Incorrect API key provided."
        return None

    def _capability_problem(self, record: Recorded) -> tuple[str, str] | None:
        if record.body.get("tools") and not self.tools_supported:
            return "invalid_request_error", "tools are not supported by this model"
        if record.images and not self.images_supported:
            return "invalid_request_error", "this model does not take image input"
        return None


def _shape_problem(record: Recorded) -> tuple[str, str] | None:
    """What is wrong with a chat completions request (the checks a real server makes that matter here)."""
    body = record.body
    if (record.method, record.path) != ("POST", COMPLETIONS_PATH):
        return "invalid_request_error", f"Invalid URL ({record.method} {record.path})"
    if not isinstance(body, dict):
        return "invalid_request_error", "the body is not a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "invalid_request_error", "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "invalid_request_error", "messages: a non-empty array is required"
    if any(not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant") for m in messages):
        return "invalid_request_error", "messages: each needs a role of system, user or assistant"
    if any(isinstance(image, str) for image in record.images):
        return "invalid_request_error", f"image_url: {record.images[0]!r}"
    return _tool_problem(body)


def _tool_problem(body: dict[str, Any]) -> tuple[str, str] | None:
    tools = body.get("tools") or []
    names = {t.get("function", {}).get("name") for t in tools if isinstance(t, dict) and t.get("type") == "function"}
    if any(t.get("function", {}).get("parameters", {}).get("type") != "object" for t in tools):
        return "invalid_request_error", "tools[0].function.parameters: must be a JSON schema of type object"
    choice = body.get("tool_choice")
    if choice is not None and (not isinstance(choice, dict) or choice.get("function", {}).get("name") not in names):
        return "invalid_request_error", f"tool_choice: no function named in tools ({choice!r})"
    return None


def _completion(body: dict[str, Any], reply: ChatReply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": reply.refusal}
    if reply.tool_calls is not None:
        forced = (body.get("tool_choice") or {}).get("function", {}).get("name", "record_review")
        message["tool_calls"] = [
            {"id": "call_" + secrets.token_hex(8), "type": "function",
             "function": {"name": call["name"] or forced, "arguments": call["arguments"]}}
            for call in reply.tool_calls
        ]  # fmt: skip
    return {
        "id": "chatcmpl-" + secrets.token_hex(12),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}],
        "usage": {"prompt_tokens": max(1, len(json.dumps(body)) // 4), "completion_tokens": 40, "total_tokens": 0},
    }


def _error(code: str, message: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
    kind = "invalid_request_error" if code in ("model_not_found", "invalid_api_key") else code
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return ERROR_STATUS[code], json.dumps(body).encode(), {"Content-Type": "application/json", **(headers or {})}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _images_of(body: Any) -> list[bytes | str]:
    """Every image part's PNG bytes; a part that is not a base64 PNG data URL is kept as its URL (an error)."""
    found: list[bytes | str] = []
    messages = body.get("messages", []) if isinstance(body, dict) else []
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "image_url":
                found.append(_decode(str(part.get("image_url", {}).get("url", ""))))
    return found


def _decode(url: str) -> bytes | str:
    if not url.startswith(DATA_URL_PREFIX):
        return url[:60]
    try:
        data = base64.b64decode(url[len(DATA_URL_PREFIX) :], validate=True)
    except ValueError:
        return url[:60]
    return data if data.startswith(PNG_MAGIC) else url[:60]


class _Handler(TrackedHandler):
    fake: FakeOpenAI

    def _handle(self) -> None:
        record = self._record()
        answer = self.fake.answer(record)
        if answer is None:  # hang: hold the request, then drop the connection without an answer
            self.fake.release.wait()
            self.close_connection = True
            return
        status, data, headers = answer
        record.status = status
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", "req_" + secrets.token_hex(8))
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
        record.images = _images_of(body)
        with self.fake.lock:
            self.fake.requests.append(record)
        return record

    do_GET = do_POST = do_PUT = do_DELETE = _handle
