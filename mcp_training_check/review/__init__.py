"""The second opinion: when the judge says unsure, an LLM answers STOP, CONTINUE or WAIT.

    reviewer    which verdict to review, the facts it gets, the call (bounded, every failure a WAIT)
    prompt      the strict reviewer prompt built from stored facts only

Reads the stored checks (`state`); `Monitor` stores the answer for `schedule_next` and `stop_run`.
"""

from .prompt import SYSTEM_PROMPT, ReviewFacts, build_prompt
from .reviewer import (
    REVIEW_TOOL,
    ReviewAnswer,
    current_review,
    latest_verdict_check,
    review_facts,
    review_model,
    run_review,
    unsure_check,
)

__all__ = [
    "REVIEW_TOOL",
    "SYSTEM_PROMPT",
    "ReviewAnswer",
    "ReviewFacts",
    "build_prompt",
    "current_review",
    "latest_verdict_check",
    "review_facts",
    "review_model",
    "run_review",
    "unsure_check",
]
