"""The Anthropic backend: one Messages API call whose answer is a forced ``record_review`` tool call.

Configuration: ``ANTHROPIC_API_KEY`` (sent as ``Authorization: Bearer`` by anthropic 2.x),
``ANTHROPIC_BASE_URL`` for a gateway or proxy, the model from ``[defaults.review] model`` when the file
sets it, else ``LLM_MODEL``, else `DEFAULT_REVIEW_MODEL`. The run's chart goes along as an image block
after the text. The `anthropic` package is imported only here, when a review is sent.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..config import ReviewSettings
from ..errors import ReviewError
from .answer import ANSWER_SCHEMA, REVIEW_TOOL, TOOL_DESCRIPTION, ReviewAnswer, answer_from_input
from .image import IMAGE_MEDIA_TYPE
from .outcome import (
    CONNECT_TIMEOUT_SECONDS,
    MAX_ANSWER_TOKENS,
    MAX_RETRIES,
    Endpoint,
    Reply,
    api_json,
    status_problem,
    timeout_problem,
    unreachable_problem,
)
from .prompt import SYSTEM_PROMPT

if TYPE_CHECKING:
    import anthropic as anthropic_sdk
    from anthropic.types import Message

__all__ = ["API_KEY_ENV", "BASE_URL_ENV", "MODEL_ENV", "anthropic_endpoint", "ask_anthropic", "review_model"]

API_KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
MODEL_ENV = "LLM_MODEL"  # the convention other LLM tools on these machines share
DEFAULT_BASE_URL = "https://api.anthropic.com"


def review_model(settings: ReviewSettings) -> str:
    """The file's ``model`` when written there (the project owner chose it), else LLM_MODEL, else default."""
    if "model" in settings.model_fields_set:
        return settings.model
    return os.environ.get(MODEL_ENV, "").strip() or settings.model


def anthropic_endpoint() -> Endpoint:
    return Endpoint(
        name="the Anthropic API",
        base_url=os.environ.get(BASE_URL_ENV, "").strip() or DEFAULT_BASE_URL,
        key_env=API_KEY_ENV,
        base_env=BASE_URL_ENV,
        model_setting=f"[defaults.review] model or {MODEL_ENV}",
    )


def ask_anthropic(prompt: str, chart: Callable[[], bytes | None], *, settings: ReviewSettings) -> Reply:
    """One Messages API call with the forced tool and the chart (drawn once the key is known to be
    there); every failure a ReviewError naming the fix."""
    key = os.environ.get(API_KEY_ENV, "").strip()
    if not key:
        raise ReviewError(
            f"{API_KEY_ENV} is not set: set it to an Anthropic API key (and {BASE_URL_ENV} for a gateway) "
            "in the environment of the training-check server or CLI, or use another [defaults.review] backend"
        )
    model = review_model(settings)
    image = chart()
    raw = _send(_content(prompt, image), model=model, key=key, seconds=settings.timeout_seconds)
    return Reply(answer=_answer_from(_message(raw)), model=model, image_attached=image is not None)


def _content(prompt: str, image: bytes | None) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
    if image is not None:
        data = base64.b64encode(image).decode("ascii")
        blocks.append({"type": "image", "source": {"type": "base64", "media_type": IMAGE_MEDIA_TYPE, "data": data}})
    return blocks


def _send(content: list[dict[str, Any]], *, model: str, key: str, seconds: float) -> anthropic_sdk.APIResponse[Message]:
    """The raw answer (status, headers, body): what it holds is checked before the SDK parses it."""
    import anthropic

    endpoint = anthropic_endpoint()
    timeout = anthropic.Timeout(seconds, connect=min(CONNECT_TIMEOUT_SECONDS, seconds))
    try:
        with anthropic.Anthropic(
            api_key=key, base_url=endpoint.base_url, timeout=timeout, max_retries=MAX_RETRIES
        ) as client:
            raw = client.messages.with_raw_response.create(**_request(content, model))
            raw.read()  # the body, within the deadline and the client's lifetime
            return raw
    except anthropic.APIStatusError as exc:
        raise ReviewError(status_problem(endpoint, exc.status_code, _api_message(exc), model)) from exc
    except anthropic.APITimeoutError as exc:
        raise ReviewError(timeout_problem(endpoint, seconds)) from exc
    except anthropic.APIConnectionError as exc:
        raise ReviewError(unreachable_problem(endpoint, exc.__cause__ or exc)) from exc
    except Exception as exc:  # any other client failure is still only a failed review, never a crash
        raise ReviewError(f"the anthropic client failed ({type(exc).__name__}: {exc})") from exc


def _request(content: list[dict[str, Any]], model: str) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": MAX_ANSWER_TOKENS,
        "system": SYSTEM_PROMPT,
        "messages": [{"role": "user", "content": content}],
        "tools": [{"name": REVIEW_TOOL, "description": TOOL_DESCRIPTION, "input_schema": ANSWER_SCHEMA}],
        "tool_choice": {"type": "tool", "name": REVIEW_TOOL},
    }


def _api_message(exc: anthropic_sdk.APIStatusError) -> str:
    """``error.type: error.message`` from the API's error body, else the SDK's own text."""
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        return f"{error.get('type', 'error')}: {error.get('message', '')}".strip()
    return str(exc.message)[:200]


def _message(raw: anthropic_sdk.APIResponse[Message]) -> Message:
    """The Messages API answer in ``raw``; anything else (an HTML page, garbage, JSON of another shape)
    is a ReviewError naming it."""
    endpoint = anthropic_endpoint()
    what = "a Messages API message"
    body = raw.http_response.content
    data = api_json(endpoint, raw.status_code, raw.headers.get("content-type", ""), body, what)
    if data.get("type") != "message" or not isinstance(data.get("content"), list):
        keys = ", ".join(sorted(map(str, data))[:8]) or "none"
        raise ReviewError(
            f"{endpoint.name} at {endpoint.base_url} answered JSON that is not {what} (keys: {keys}): "
            f"set {BASE_URL_ENV} to the Anthropic API or a gateway that speaks it"
        )
    return raw.parse()


def _answer_from(message: Message) -> ReviewAnswer:
    """The forced tool call's input, validated; a text answer or a bad input is a ReviewError."""
    blocks = message.content
    calls = [b for b in blocks if getattr(b, "type", None) == "tool_use" and getattr(b, "name", None) == REVIEW_TOOL]
    if not calls:
        text = " ".join(str(getattr(block, "text", "")) for block in blocks).strip()
        raise ReviewError(
            f"the model answered without calling {REVIEW_TOOL} (stop_reason {message.stop_reason}, "
            f"text {text[:120]!r}): it may not support forced tool use; set another model"
        )
    return answer_from_input(getattr(calls[0], "input", None))
