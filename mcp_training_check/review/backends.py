"""Which backend answers, and the one path every API review takes: enabled? → chart → ask within the
deadline → an answer, or WAIT naming the fix.

Backend choice: ``[defaults.review] backend`` when written; left out, the first whose settings are in the
environment — ``ANTHROPIC_API_KEY`` → anthropic; ``LLM_API_KEY`` with ``LLM_BASE_URL`` or ``LLM_MODEL``
→ openai — else agent (no key at all: the calling agent asks a model and records the reply).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from ..config import ReviewSettings
from ..errors import ReviewError
from ..models import ReviewBackend, ReviewResult
from . import anthropic as anthropic_backend
from . import openai_compat
from .agent import agent_prompt
from .image import review_image
from .outcome import Endpoint, Reply, answered, failed, within
from .prompt import ReviewFacts, build_prompt

__all__ = ["choose_backend", "run_review"]


def choose_backend(settings: ReviewSettings) -> ReviewBackend:
    if settings.backend is not None:
        return settings.backend
    if _env(anthropic_backend.API_KEY_ENV):
        return "anthropic"
    if _env(openai_compat.API_KEY_ENV) and (_env(openai_compat.BASE_URL_ENV) or _env(openai_compat.MODEL_ENV)):
        return "openai"
    return "agent"


def run_review(facts: ReviewFacts, settings: ReviewSettings) -> ReviewResult:
    """Ask the configured reviewer about ``facts``; always a result, WAIT with ``reviewer_failed`` on any
    failure (the agent backend: WAIT with the prompt to put to a reviewer)."""
    backend = choose_backend(settings)
    model = _model_named(backend, settings)
    started = time.monotonic()
    try:
        if not settings.enabled:
            raise ReviewError(
                "the reviewer is disabled ([defaults.review] enabled = false in training-check.toml); "
                "set enabled = true to use it, or judge the unsure verdict yourself"
            )
        if backend == "agent":
            return agent_prompt(facts)
        ask, endpoint = _api_call(backend, facts, settings)
        reply = within(settings.timeout_seconds, ask, endpoint)
    except ReviewError as exc:
        return failed(facts, backend, model, str(exc), time.monotonic() - started)
    except Exception as exc:  # an answer no check above foresaw: still a WAIT, never a failed tool call
        problem = f"the reviewer's answer could not be used ({type(exc).__name__}: {str(exc)[:200]})"
        return failed(facts, backend, model, problem, time.monotonic() - started)
    return answered(facts, backend, reply, time.monotonic() - started)


def _api_call(
    backend: ReviewBackend, facts: ReviewFacts, settings: ReviewSettings
) -> tuple[Callable[[], Reply], Endpoint]:
    """The whole API review as one call for the deadline: drawing the chart included."""

    def image() -> bytes | None:
        return review_image(facts) if settings.image else None

    if backend == "anthropic":
        return (
            lambda: anthropic_backend.ask_anthropic(build_prompt(facts, "tool"), image, settings=settings),
            anthropic_backend.anthropic_endpoint(),
        )
    return (
        lambda: openai_compat.ask_openai(lambda form: build_prompt(facts, form), image, settings=settings),
        openai_compat.openai_endpoint(),
    )


def _model_named(backend: ReviewBackend, settings: ReviewSettings) -> str:
    """The model a failed review names: the one that would have been asked first."""
    if backend == "anthropic":
        return anthropic_backend.review_model(settings)
    if backend == "openai":
        return next(iter(openai_compat.openai_models(settings)), f"(no model: set {openai_compat.MODEL_ENV})")
    return "agent"


def _env(name: str) -> bool:
    return bool(os.environ.get(name, "").strip())
