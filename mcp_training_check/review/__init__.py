"""The second opinion: when the judge says unsure, a reviewer answers STOP, CONTINUE or WAIT.

    backends       which backend answers (file, else the environment, else the agent); the one API path
    anthropic      Anthropic Messages API, a forced record_review tool call, the chart as an image block
    openai_compat  any OpenAI-compatible chat completions endpoint (llm-chat's LLM_* settings)
    agent          no key: WAIT with the prompt for the calling agent, whose reply record_review stores
    answer         the one answer model and its parsers (tool input, JSON text, the agent's reply)
    outcome        the wall-clock deadline, HTTP errors in words, results (every failure a WAIT)
    facts, prompt  which check is reviewed and the strict prompt built from stored facts only
    image          the run's chart (`plot`) under a size cap

Reads the stored checks (`state`) and draws with `plot`; `Monitor` stores the answer for
`schedule_next` and `stop_run`. The anthropic and openai packages are imported only when asked.
"""

from .agent import record_reply
from .answer import REVIEW_TOOL, ReviewAnswer, answer_from_reply
from .backends import choose_backend, run_review
from .facts import current_review, latest_verdict_check, review_facts, unsure_check
from .image import MAX_REVIEW_IMAGE_BYTES, review_image
from .prompt import SYSTEM_PROMPT, ReviewFacts, build_prompt

__all__ = [
    "MAX_REVIEW_IMAGE_BYTES",
    "REVIEW_TOOL",
    "SYSTEM_PROMPT",
    "ReviewAnswer",
    "ReviewFacts",
    "answer_from_reply",
    "build_prompt",
    "choose_backend",
    "current_review",
    "latest_verdict_check",
    "record_reply",
    "review_facts",
    "review_image",
    "run_review",
    "unsure_check",
]
