"""The OpenAI-compatible backend: chat completions at any endpoint llm-chat's settings name (OpenAI,
DeepSeek, Kimi, Qwen, OpenRouter, a local vLLM or Ollama), through the official `openai` client.

Configuration, the llm-chat convention: ``LLM_API_KEY``, ``LLM_BASE_URL`` (default the OpenAI API),
``LLM_MODEL`` — or ``[defaults.review] model`` when the file writes one — then ``LLM_FALLBACK_MODEL``
when the first model is not found (HTTP 404, or a 400 saying so).

The request forces a ``record_review`` function call and carries the run's chart as an ``image_url``
data URL. An answer in the text instead of the call must be exactly the JSON object. An endpoint that
rejects the request (HTTP 400: no tool calls, no images) is asked once more in plain text, the JSON
object requested and no image. The `openai` package is imported only here, when a review is sent.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..config import ReviewSettings
from ..errors import ReviewError
from .answer import ANSWER_SCHEMA, REVIEW_TOOL, TOOL_DESCRIPTION, ReviewAnswer, answer_from_input, answer_from_json_text
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
from .prompt import AnswerForm, system_prompt

if TYPE_CHECKING:
    import openai as openai_sdk
    from openai.types.chat import ChatCompletion

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENV",
    "DEFAULT_BASE_URL",
    "FALLBACK_MODEL_ENV",
    "MODEL_ENV",
    "ask_openai",
    "openai_endpoint",
    "openai_models",
]

API_KEY_ENV = "LLM_API_KEY"
BASE_URL_ENV = "LLM_BASE_URL"
MODEL_ENV = "LLM_MODEL"
FALLBACK_MODEL_ENV = "LLM_FALLBACK_MODEL"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
TOOL_OR_JSON = (
    'If you cannot call tools, answer instead with only the JSON object {"decision": "STOP" | "CONTINUE" | '
    '"WAIT", "reason": "..."} and nothing else.'
)
_NOT_FOUND_WORDS = re.compile(r"model.*(not found|does not exist|not exist|unknown)|unknown model", re.IGNORECASE)


class _ModelNotFound(Exception):
    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


def openai_endpoint() -> Endpoint:
    return Endpoint(
        name="the OpenAI-compatible API",
        base_url=os.environ.get(BASE_URL_ENV, "").strip() or DEFAULT_BASE_URL,
        key_env=API_KEY_ENV,
        base_env=BASE_URL_ENV,
        model_setting=f"[defaults.review] model or {MODEL_ENV} (and {FALLBACK_MODEL_ENV})",
    )


def openai_models(settings: ReviewSettings) -> list[str]:
    """The models to try in order: the file's model or LLM_MODEL, then LLM_FALLBACK_MODEL."""
    first = settings.model if "model" in settings.model_fields_set else os.environ.get(MODEL_ENV, "").strip()
    fallback = os.environ.get(FALLBACK_MODEL_ENV, "").strip()
    models = [first] if first else []
    if fallback and fallback not in models:
        models.append(fallback)
    return models


def ask_openai(
    prompt_for: Callable[[AnswerForm], str], chart: Callable[[], bytes | None], *, settings: ReviewSettings
) -> Reply:
    """Ask each model in turn until one exists, with the chart (drawn once key and model are known);
    every failure a ReviewError naming the fix."""
    key = os.environ.get(API_KEY_ENV, "").strip()
    if not key:
        raise ReviewError(
            f"{API_KEY_ENV} is not set: set it (with {BASE_URL_ENV} and {MODEL_ENV}, as for llm-chat) in the "
            "environment of the training-check server or CLI, or use another [defaults.review] backend"
        )
    models = openai_models(settings)
    if not models:
        raise ReviewError(
            f"no model for the OpenAI-compatible reviewer: set {MODEL_ENV} (e.g. gpt-5-mini, deepseek-chat) "
            "or [defaults.review] model"
        )
    import openai

    image = chart()
    endpoint = openai_endpoint()
    timeout = openai.Timeout(settings.timeout_seconds, connect=min(CONNECT_TIMEOUT_SECONDS, settings.timeout_seconds))
    missing: list[str] = []
    with openai.OpenAI(api_key=key, base_url=endpoint.base_url, timeout=timeout, max_retries=MAX_RETRIES) as client:
        for model in models:
            try:
                return _ask_model(client, model, prompt_for, image, endpoint, settings.timeout_seconds)
            except _ModelNotFound as exc:
                missing.append(f"{model!r} ({exc.said})")
    tried = " then ".join(missing)
    raise ReviewError(
        f"model {tried} was not found (HTTP 404) at {endpoint.base_url}: set {endpoint.model_setting} to a "
        "model the endpoint serves"
    )


def _ask_model(
    client: openai_sdk.OpenAI,
    model: str,
    prompt_for: Callable[[AnswerForm], str],
    image: bytes | None,
    endpoint: Endpoint,
    seconds: float,
) -> Reply:
    """The full request (forced call + chart); on a 400 that is not "no such model", once in plain text."""
    import openai

    try:
        prompt = prompt_for("tool") + "\n" + TOOL_OR_JSON
        completion = _create(client, model, _messages(prompt, image, "tool"), endpoint, seconds, with_tool=True)
        return Reply(answer=_answer_from(completion), model=model, image_attached=image is not None)
    except openai.BadRequestError as exc:
        first = _api_message(exc)
    try:
        completion = _create(client, model, _messages(prompt_for("json"), None, "json"), endpoint, seconds)
    except openai.BadRequestError as exc:
        raise ReviewError(
            f"{endpoint.name} rejected the request with the tool call and the chart (HTTP 400: {first}) and in "
            f"plain text (HTTP 400: {_api_message(exc)}): check the model name and {BASE_URL_ENV}"
        ) from exc
    return Reply(answer=_answer_from(completion), model=model, image_attached=False)


def _messages(prompt: str, image: bytes | None, form: AnswerForm) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
    if image is not None:
        url = f"data:{IMAGE_MEDIA_TYPE};base64,{base64.b64encode(image).decode('ascii')}"
        content.append({"type": "image_url", "image_url": {"url": url}})
    user: Any = content if image is not None else prompt
    return [{"role": "system", "content": system_prompt(form)}, {"role": "user", "content": user}]


def _create(
    client: openai_sdk.OpenAI,
    model: str,
    messages: list[dict[str, Any]],
    endpoint: Endpoint,
    seconds: float,
    *,
    with_tool: bool = False,
) -> ChatCompletion:
    """One chat completion; BadRequestError passes (the caller may retry plainly), _ModelNotFound for a
    missing model, every other failure a ReviewError."""
    import openai

    tool_args: dict[str, Any] = {}
    if with_tool:
        function = {"name": REVIEW_TOOL, "description": TOOL_DESCRIPTION, "parameters": ANSWER_SCHEMA}
        tool_args = {
            "tools": [{"type": "function", "function": function}],
            "tool_choice": {"type": "function", "function": {"name": REVIEW_TOOL}},
        }
    try:
        raw = client.chat.completions.with_raw_response.create(
            model=model,
            messages=messages,  # type: ignore[arg-type]
            max_tokens=MAX_ANSWER_TOKENS,
            **tool_args,
        )
        body = raw.http_response.read()
    except openai.APIStatusError as exc:
        said = _api_message(exc)
        if exc.status_code == 404 or (exc.status_code == 400 and _says_model_not_found(exc, said)):
            raise _ModelNotFound(said) from exc
        if exc.status_code == 400:
            raise
        raise ReviewError(status_problem(endpoint, exc.status_code, said, model)) from exc
    except openai.APITimeoutError as exc:
        raise ReviewError(timeout_problem(endpoint, seconds)) from exc
    except openai.APIConnectionError as exc:
        raise ReviewError(unreachable_problem(endpoint, exc.__cause__ or exc)) from exc
    except Exception as exc:  # any other client failure is still only a failed review, never a crash
        raise ReviewError(f"the openai client failed ({type(exc).__name__}: {exc})") from exc
    api_json(endpoint, raw.status_code, raw.headers.get("content-type", ""), body, "a chat completion")
    return _completion(raw.parse(), endpoint)


def _completion(completion: object, endpoint: Endpoint) -> ChatCompletion:
    """The SDK hands back a non-JSON body (an HTML error page from a proxy) as plain text: not an answer."""
    from openai.types.chat import ChatCompletion

    if not isinstance(completion, ChatCompletion) or not getattr(completion, "choices", None):
        shown = " ".join(str(completion).split())[:120]
        raise ReviewError(
            f"{endpoint.name} at {endpoint.base_url} answered something that is not a chat completion "
            f"({shown!r}): check {BASE_URL_ENV} (it should end in /v1 for most servers)"
        )
    return completion


def _answer_from(completion: ChatCompletion) -> ReviewAnswer:
    """The record_review call's arguments, else the text as the JSON object; a refusal is a ReviewError."""
    choice = completion.choices[0]
    message = choice.message
    if getattr(message, "refusal", None):
        raise ReviewError(f"the model refused to review ({message.refusal!r}): set another model")
    if choice.finish_reason == "content_filter":
        raise ReviewError("the endpoint's content filter stopped the answer: set another model")
    for call in message.tool_calls or []:
        function = getattr(call, "function", None)
        if function is not None and function.name == REVIEW_TOOL:
            return answer_from_input(_arguments(function.arguments))
    text = (message.content or "").strip()
    if not text:
        raise ReviewError(
            f"the model answered neither with {REVIEW_TOOL} nor with text (finish_reason {choice.finish_reason}): "
            "set another model"
        )
    return answer_from_json_text(text)


def _arguments(raw: str) -> object:
    try:
        return json.loads(raw)
    except ValueError:
        raise ReviewError(
            f"the model's {REVIEW_TOOL} arguments are not JSON ({raw[:120]!r}): the next check will escalate again"
        ) from None


def _api_message(exc: openai_sdk.APIStatusError) -> str:
    """``type: message`` of the error body (OpenAI's ``{"error": {...}}`` or a bare one), else the SDK's."""
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        kind = body.get("code") or body.get("type") or "error"
        return f"{kind}: {body['message']}"[:200]
    if isinstance(body, dict) and isinstance(body.get("detail"), str):  # vLLM / FastAPI servers
        return body["detail"][:200]
    return str(exc.message)[:200]


def _says_model_not_found(exc: openai_sdk.APIStatusError, said: str) -> bool:
    body = exc.body
    code = body.get("code") if isinstance(body, dict) else None
    return code == "model_not_found" or bool(_NOT_FOUND_WORDS.search(said))
