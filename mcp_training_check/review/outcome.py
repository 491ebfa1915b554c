"""What every backend shares: the wall-clock deadline, HTTP errors in words, and the result shapes.

Every failure is a WAIT, never an exception: a backend raises ReviewError naming the fix, and `failed`
turns it into ``decision: WAIT, reviewer_failed: true``. A run is never stopped because a second opinion
could not be had.

``timeout_seconds`` bounds the whole review on the wall clock (`within`). The SDKs' timeouts bound one
attempt, not their retries and back-off (they honour ``retry-after``), nor a server that trickles bytes;
so the call runs in a daemon thread and the caller stops waiting at the deadline.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TypeVar

from ..errors import ReviewError
from ..models import ReviewBackend, ReviewNextAction, ReviewResult
from .answer import ReviewAnswer
from .prompt import ReviewFacts

__all__ = [
    "CONNECT_TIMEOUT_SECONDS",
    "MAX_ANSWER_TOKENS",
    "MAX_RETRIES",
    "Endpoint",
    "Reply",
    "answered",
    "api_json",
    "awaiting",
    "failed",
    "status_problem",
    "timeout_problem",
    "unreachable_problem",
    "within",
]

MAX_RETRIES = 2
"""Retries of a 429/5xx/529 or a dropped connection (both SDKs' default); the deadline bounds them all."""
CONNECT_TIMEOUT_SECONDS = 5.0
MAX_ANSWER_TOKENS = 400  # a decision and two sentences; a longer answer is a rambling one
SUMMARY_REASON_CHARS = 240
SHOWN_BODY_CHARS = 80
"""Characters of an unusable answer body shown in the error: enough to recognise a login page or a proxy."""

T = TypeVar("T")


@dataclass(frozen=True)
class Endpoint:
    """An API the reviewer calls, as its error messages name it."""

    name: str  # "the Anthropic API"
    base_url: str
    key_env: str
    base_env: str
    model_setting: str  # where the model is set, e.g. "[defaults.review] model or LLM_MODEL"


@dataclass(frozen=True)
class Reply:
    """A backend's usable answer: the decision, the model that gave it, and whether it saw the chart."""

    answer: ReviewAnswer
    model: str
    image_attached: bool


def within(seconds: float, call: Callable[[], T], endpoint: Endpoint) -> T:
    """``call()`` in a daemon thread, waited for at most ``seconds``; then ReviewError. The abandoned
    thread ends on its own when the SDK's per-attempt timeout (also ``seconds``) fires."""
    box: Future[T] = Future()

    def run() -> None:
        try:
            box.set_result(call())
        except BaseException as exc:  # handed to the waiting caller, which re-raises it
            box.set_exception(exc)

    threading.Thread(target=run, name="training-check-review", daemon=True).start()
    try:
        return box.result(timeout=seconds)
    except TimeoutError:
        raise ReviewError(
            f"the reviewer timed out after {seconds:g} s (retries included) at {endpoint.base_url}: raise "
            f"[defaults.review] timeout_seconds, or check {endpoint.base_env} and the network"
        ) from None


def timeout_problem(endpoint: Endpoint, seconds: float) -> str:
    """The SDK's own timeout (per request), in the words of both backends."""
    return (
        f"the reviewer timed out after {seconds:g} s at {endpoint.base_url}: raise [defaults.review] "
        f"timeout_seconds, or check {endpoint.base_env} and the network"
    )


def unreachable_problem(endpoint: Endpoint, cause: BaseException) -> str:
    """No connection after the SDK's retries, in the words of both backends."""
    return (
        f"cannot reach {endpoint.name} at {endpoint.base_url} ({cause}) after {MAX_RETRIES} retries: "
        f"check {endpoint.base_env} and the network"
    )


def status_problem(endpoint: Endpoint, status: int, said: str, model: str) -> str:
    """An HTTP error answer → what went wrong, with the API's own words, and the fix."""
    api = endpoint.name
    if status == 401:
        return f"{api} refused the key (HTTP 401: {said}): check {endpoint.key_env}"
    if status == 403:
        return f"the key may not use model {model!r} (HTTP 403: {said}): check {endpoint.key_env} and the model"
    if status == 404:
        return f"model {model!r} was not found (HTTP 404: {said}): set {endpoint.model_setting} to a current model"
    if status == 429:
        return f"rate-limited (HTTP 429: {said}) after {MAX_RETRIES} retries: wait, or raise the key's limits"
    if status >= 500:
        return (
            f"{api} failed (HTTP {status}: {said}) after {MAX_RETRIES} retries: "
            "try again later; the next check will escalate again"
        )
    return f"{api} rejected the request (HTTP {status}: {said}): check the model name and {endpoint.base_env}"


def api_json(endpoint: Endpoint, status: int, content_type: str, body: bytes, what: str) -> dict[str, object]:
    """The JSON object of a 2xx answer, else ReviewError: a proxy's or login wall's HTML page, bytes that
    are not JSON or not even text, JSON that is not an object. ``what`` names the answer expected ("a
    chat completion"). The SDKs hand a non-JSON body back as a plain string and fail later, far from why.
    A JSON object under another content type is taken, as the SDKs take it (some local servers send one)."""
    media = content_type.split(";", 1)[0].strip().lower() or "no content type"
    where = f"{endpoint.name} at {endpoint.base_url} answered HTTP {status}"
    fix = f"set {endpoint.base_env} to the API's base URL (it now reaches a web page, proxy or login wall)"
    try:
        data = json.loads(body)
    except ValueError:  # JSONDecodeError, and UnicodeDecodeError for bytes in no Unicode encoding
        if not media.endswith("json"):  # application/json, application/problem+json
            raise ReviewError(f"{where} with {media}, not JSON (so not {what}): {_shown(body)}; {fix}") from None
        raise ReviewError(f"{where} with a body that is not JSON (so not {what}): {_shown(body)}; {fix}") from None
    if not isinstance(data, dict):
        raise ReviewError(f"{where} with JSON that is not a JSON object (so not {what}): {_shown(body)}; {fix}")
    return data


def _shown(body: bytes) -> str:
    """The start of a body, printable and on one line, whatever bytes it holds."""
    if not body:
        return "an empty body"
    text = " ".join(body[: SHOWN_BODY_CHARS * 4].decode("utf-8", errors="replace").split())
    text = "".join(c if c.isprintable() else "?" for c in text)
    return f"{len(body)} bytes starting {text[:SHOWN_BODY_CHARS]!r}"


# --------------------------------------------------------------------------- results


def answered(facts: ReviewFacts, backend: ReviewBackend, reply: Reply, seconds: float) -> ReviewResult:
    answer = reply.answer
    then: ReviewNextAction = "stop_run" if answer.decision == "STOP" else "schedule_next"
    reason = short(answer.reason).rstrip(".")  # "...; next:" after it, not "..; next:"
    return ReviewResult(
        run=facts.run,
        summary=f"reviewer {reply.model} ({backend}) says {answer.decision}: {reason}; next: {then}",
        decision=answer.decision,
        reason=answer.reason,
        model=reply.model,
        backend=backend,
        reviewer_failed=False,
        latency_seconds=round(seconds, 3),
        check_id=facts.check.id,
        image_attached=reply.image_attached,
        next_action=then,
    )


def failed(facts: ReviewFacts, backend: ReviewBackend, model: str, problem: str, seconds: float) -> ReviewResult:
    return ReviewResult(
        run=facts.run,
        summary=f"WAIT: the reviewer failed ({short(problem)}); next: schedule_next, do not stop on this",
        decision="WAIT",
        reason="no review: the reviewer failed, so the run is neither stopped nor cleared",
        model=model,
        backend=backend,
        reviewer_failed=True,
        error=problem,
        latency_seconds=round(seconds, 3),
        check_id=facts.check.id,
        next_action="schedule_next",
    )


def awaiting(facts: ReviewFacts, prompt: str, how: str) -> ReviewResult:
    """The agent backend's WAIT: nothing was asked yet; ``prompt`` is for the agent to put to a reviewer."""
    return ReviewResult(
        run=facts.run,
        summary=f"WAIT until the review is recorded: {how}",
        decision="WAIT",
        reason="no review yet: the agent backend hands the prompt to the calling agent",
        model="agent",
        backend="agent",
        reviewer_failed=False,
        latency_seconds=0.0,
        check_id=facts.check.id,
        prompt=prompt,
        next_action="record_review",
    )


def short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_REASON_CHARS else text[: SUMMARY_REASON_CHARS - 1] + "…"
