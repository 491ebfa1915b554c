"""escalate_review: a second opinion from an LLM when the judge says UNSURE, as STOP, CONTINUE or WAIT.

The reviewer reads only what is stored — the unsure verdict with its signals, the run's metric summaries
(last, best, a few recent values), earlier decisions and the owner's baselines — in one compact prompt,
and must answer through one forced tool call whose input is ``{"decision", "reason"}``.

Every failure is a WAIT, never an exception: no key, reviewer disabled, HTTP 401/403/404/400, 429 or
5xx after the client's bounded retries, a timeout, a refused connection, an answer that is not the tool
call or not one of the three decisions. The result then says ``reviewer_failed`` and names the fix.
A run is never stopped because a second opinion could not be had.

``timeout_seconds`` bounds the whole review on the wall clock. The SDK's timeout bounds one attempt,
not its retries and back-off (it honours ``retry-after`` however long), nor a server that trickles
bytes; so the call runs in a daemon thread and the caller stops waiting at the deadline.

Configuration: ``ANTHROPIC_API_KEY`` (sent as ``Authorization: Bearer`` by anthropic 2.x),
``ANTHROPIC_BASE_URL`` for a gateway or proxy, the model from ``[defaults.review] model`` when the file
sets it, else ``LLM_MODEL``, else `DEFAULT_REVIEW_MODEL`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..config import ResolvedRunConfig, ReviewSettings
from ..errors import NothingToReview, ReviewError
from ..models import Decision, MetricSnapshot, ReviewDecision, ReviewNextAction, ReviewResult
from ..state import CheckRecord
from .prompt import SYSTEM_PROMPT, ReviewFacts, build_prompt

if TYPE_CHECKING:  # anthropic takes about a second to import: only a review loads it (in _send)
    import anthropic
    from anthropic.types import Message, ToolParam

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENV",
    "MAX_RETRIES",
    "MODEL_ENV",
    "REVIEW_TOOL",
    "ReviewAnswer",
    "ReviewFacts",
    "current_review",
    "review_facts",
    "review_model",
    "run_review",
    "unsure_check",
]

API_KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
MODEL_ENV = "LLM_MODEL"  # the convention other LLM tools on these machines share
DEFAULT_BASE_URL = "https://api.anthropic.com"

MAX_RETRIES = 2
"""Retries of a 429/5xx/529 or a dropped connection (the SDK's default); the deadline bounds them all."""

CONNECT_TIMEOUT_SECONDS = 5.0
MAX_ANSWER_TOKENS = 400  # a decision and two sentences; a longer answer is a rambling one
MAX_REASON_CHARS = 1000
SUMMARY_REASON_CHARS = 240

REVIEW_TOOL = "record_review"
_TOOL: ToolParam = {
    "name": REVIEW_TOOL,
    "description": "Record your decision about the training run and the short reason for it.",
    "input_schema": {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "enum": ["STOP", "CONTINUE", "WAIT"],
                "description": "STOP: clearly bad, stop it now. CONTINUE: healthy enough. WAIT: look again later.",
            },
            "reason": {"type": "string", "description": "One or two sentences citing the numbers that decided."},
        },
        "required": ["decision", "reason"],
        "additionalProperties": False,
    },
}

T = TypeVar("T")


class ReviewAnswer(BaseModel):
    """The forced tool call's input, validated: anything else is a malformed answer (→ WAIT)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    decision: ReviewDecision
    reason: str = Field(min_length=1, max_length=MAX_REASON_CHARS)


# --------------------------------------------------------------------------- which check


def latest_verdict_check(checks: Sequence[CheckRecord]) -> CheckRecord | None:
    """The newest check that holds a verdict (schedule and stop rows hold none)."""
    return next((c for c in checks if c.verdict is not None), None)


def unsure_check(run: str, checks: Sequence[CheckRecord]) -> CheckRecord:
    """The check to review: the latest verdict, which must be unsure; NothingToReview says why not."""
    latest = latest_verdict_check(checks)
    if latest is None or latest.verdict is None:
        raise NothingToReview(
            f"run {run!r} has no stored verdict to review: call `check` (or `judge`) first, and "
            "escalate_review only when its next_action is escalate_review."
        )
    decision = latest.verdict.decision
    if decision is not Decision.UNSURE:
        then = "stop_run" if decision is Decision.STOP else "schedule_next"
        raise NothingToReview(
            f"nothing to review: the latest verdict of run {run!r} (check #{latest.id}) is {decision.value}, "
            f"not unsure; the reviewer only answers unsure verdicts. Act on the verdict: call {then}."
        )
    return latest


def current_review(checks: Sequence[CheckRecord], review: ReviewResult | None) -> ReviewResult | None:
    """``review`` if it answered the run's latest verdict; a newer check makes it stale (None)."""
    latest = latest_verdict_check(checks)
    if review is None or latest is None or review.check_id != latest.id:
        return None
    return review


def review_facts(
    run: str,
    check: CheckRecord,
    checks: Sequence[CheckRecord],
    snapshot: MetricSnapshot,
    *,
    latest_review: ReviewResult | None,
    settings: ResolvedRunConfig,
) -> ReviewFacts:
    """The facts for reviewing ``check`` (from ``checks``, most recent first): the others are history."""
    earlier_review = latest_review if latest_review is not None and latest_review.check_id != check.id else None
    return ReviewFacts(
        run=run,
        check=check,
        snapshot=snapshot,
        earlier=[c for c in checks if c.verdict is not None and c.id != check.id],
        previous_review=earlier_review,
        baselines=settings.baselines,
        hints=settings.judge_hints(),
    )


# --------------------------------------------------------------------------- configuration


def review_model(settings: ReviewSettings) -> str:
    """The file's ``model`` when written there (the project owner chose it), else LLM_MODEL, else default."""
    if "model" in settings.model_fields_set:
        return settings.model
    return os.environ.get(MODEL_ENV, "").strip() or settings.model


def _base_url() -> str:
    return os.environ.get(BASE_URL_ENV, "").strip() or DEFAULT_BASE_URL


# --------------------------------------------------------------------------- the review


def run_review(facts: ReviewFacts, settings: ReviewSettings) -> ReviewResult:
    """Ask the reviewer about ``facts``; always a result, WAIT with ``reviewer_failed`` on any failure."""
    model = review_model(settings)
    started = time.monotonic()
    try:
        answer = _ask(build_prompt(facts), model=model, settings=settings)
    except ReviewError as exc:
        return _failed(facts, model, str(exc), time.monotonic() - started)
    return _answered(facts, model, answer, time.monotonic() - started)


def _ask(prompt: str, *, model: str, settings: ReviewSettings) -> ReviewAnswer:
    if not settings.enabled:
        raise ReviewError(
            "the reviewer is disabled ([defaults.review] enabled = false in training-check.toml); "
            "set enabled = true to use it, or judge the unsure verdict yourself"
        )
    key = os.environ.get(API_KEY_ENV, "").strip()
    if not key:
        raise ReviewError(
            f"{API_KEY_ENV} is not set: set it to an Anthropic API key (and {BASE_URL_ENV} for a gateway) "
            "in the environment of the training-check server or CLI"
        )
    seconds = settings.timeout_seconds
    message = _within(seconds, lambda: _send(prompt, model=model, key=key, seconds=seconds))
    return _answer_from(message)


def _within(seconds: float, call: Callable[[], T]) -> T:
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
            f"the reviewer timed out after {seconds:g} s (retries included) at {_base_url()}: raise "
            "[defaults.review] timeout_seconds, or check ANTHROPIC_BASE_URL and the network"
        ) from None


def _send(prompt: str, *, model: str, key: str, seconds: float) -> Message:
    """One Messages API call with the forced tool; every failure becomes a ReviewError naming the fix."""
    import anthropic

    timeout = anthropic.Timeout(seconds, connect=min(CONNECT_TIMEOUT_SECONDS, seconds))
    try:
        with anthropic.Anthropic(api_key=key, base_url=_base_url(), timeout=timeout, max_retries=MAX_RETRIES) as client:
            return client.messages.create(
                model=model,
                max_tokens=MAX_ANSWER_TOKENS,
                system=SYSTEM_PROMPT,
                messages=[{"role": "user", "content": prompt}],
                tools=[_TOOL],
                tool_choice={"type": "tool", "name": REVIEW_TOOL},
            )
    except anthropic.APIStatusError as exc:
        raise ReviewError(_status_problem(exc, model)) from exc
    except anthropic.APITimeoutError as exc:
        raise ReviewError(
            f"the reviewer timed out after {seconds:g} s at {_base_url()}: raise [defaults.review] "
            "timeout_seconds, or check ANTHROPIC_BASE_URL and the network"
        ) from exc
    except anthropic.APIConnectionError as exc:
        cause = exc.__cause__ or exc
        raise ReviewError(
            f"cannot reach the Anthropic API at {_base_url()} ({cause}) after {MAX_RETRIES} retries: "
            "check ANTHROPIC_BASE_URL and the network"
        ) from exc
    except Exception as exc:  # any other client failure is still only a failed review, never a crash
        raise ReviewError(f"the anthropic client failed ({type(exc).__name__}: {exc})") from exc


def _status_problem(exc: anthropic.APIStatusError, model: str) -> str:
    """An HTTP error answer → what went wrong, with the API's own words, and the fix."""
    status = exc.status_code
    said = _api_message(exc)
    if status == 401:
        return f"the Anthropic API refused the key (HTTP 401: {said}): check {API_KEY_ENV}"
    if status == 403:
        return f"the key may not use model {model!r} (HTTP 403: {said}): check {API_KEY_ENV} and the model"
    if status == 404:
        return (
            f"model {model!r} was not found (HTTP 404: {said}): set [defaults.review] model or "
            f"{MODEL_ENV} to a current model"
        )
    if status == 429:
        return f"rate-limited (HTTP 429: {said}) after {MAX_RETRIES} retries: wait, or raise the key's limits"
    if status >= 500:
        return (
            f"the Anthropic API failed (HTTP {status}: {said}) after {MAX_RETRIES} retries: "
            "try again later; the next check will escalate again"
        )
    return f"the Anthropic API rejected the request (HTTP {status}: {said}): check the model name and {BASE_URL_ENV}"


def _api_message(exc: anthropic.APIStatusError) -> str:
    """``error.type: error.message`` from the API's error body, else the SDK's own text."""
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        return f"{error.get('type', 'error')}: {error.get('message', '')}".strip()
    return str(exc.message)[:200]


def _answer_from(message: Message) -> ReviewAnswer:
    """The forced tool call's input, validated; a text answer or a bad input is a ReviewError."""
    calls = [block for block in message.content if block.type == "tool_use" and block.name == REVIEW_TOOL]
    if not calls:
        text = " ".join(getattr(block, "text", "") for block in message.content).strip()
        raise ReviewError(
            f"the model answered without calling {REVIEW_TOOL} (stop_reason {message.stop_reason}, "
            f"text {text[:120]!r}): it may not support forced tool use; set another model"
        )
    given = calls[0].input
    try:
        return ReviewAnswer.model_validate(given)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "input"
        raise ReviewError(
            f"the model's answer is not a valid review ({where}: {first['msg']}; got {str(given)[:160]}): "
            "the next check will escalate again"
        ) from exc


# --------------------------------------------------------------------------- results


def _answered(facts: ReviewFacts, model: str, answer: ReviewAnswer, seconds: float) -> ReviewResult:
    then: ReviewNextAction = "stop_run" if answer.decision == "STOP" else "schedule_next"
    return ReviewResult(
        run=facts.run,
        summary=f"reviewer {model} says {answer.decision}: {_short(answer.reason)}; next: {then}",
        decision=answer.decision,
        reason=answer.reason,
        model=model,
        reviewer_failed=False,
        latency_seconds=round(seconds, 3),
        check_id=facts.check.id,
        next_action=then,
    )


def _failed(facts: ReviewFacts, model: str, problem: str, seconds: float) -> ReviewResult:
    return ReviewResult(
        run=facts.run,
        summary=f"WAIT: the reviewer failed ({_short(problem)}); next: schedule_next, do not stop on this",
        decision="WAIT",
        reason="no review: the reviewer failed, so the run is neither stopped nor cleared",
        model=model,
        reviewer_failed=True,
        error=problem,
        latency_seconds=round(seconds, 3),
        check_id=facts.check.id,
        next_action="schedule_next",
    )


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_REASON_CHARS else text[: SUMMARY_REASON_CHARS - 1] + "…"
