"""The agent backend, for a user with no API key: the calling agent is the way to a reviewer.

`escalate_review` answers WAIT with ``next_action: record_review`` and the strict reviewer prompt of the
seed (run, step X of Y, loss checkpoints, last evals, baselines, what the judge is unsure about, "respond
with exactly one of STOP / CONTINUE / WAIT"). The agent puts it to ``mcp__llm-chat__chat`` when that tool
exists, otherwise to a fresh subagent asked for strict, high-rigour feedback, and hands the reply to
`record_review`: parsed like any backend's answer and stored the same way, so `schedule_next` and
`stop_run` use it. A reply that is not exactly one decision is stored as a failed review: WAIT.
"""

from __future__ import annotations

from ..errors import ReviewError
from ..models import ReviewResult
from .answer import answer_from_reply
from .outcome import Reply, answered, awaiting, failed
from .prompt import ReviewFacts, build_prompt

__all__ = ["AGENT_REVIEWER", "HOW_TO_ANSWER", "LLM_CHAT_TOOL", "agent_prompt", "record_reply"]

LLM_CHAT_TOOL = "mcp__llm-chat__chat"
AGENT_REVIEWER = "agent"
"""The model named in a recorded review when the agent does not say which model answered."""
HOW_TO_ANSWER = (
    f"put `prompt` to {LLM_CHAT_TOOL} if you have that tool, otherwise to a fresh subagent asked for strict, "
    "high-rigour feedback; then call record_review with this run and the reply as `answer`"
)


def agent_prompt(facts: ReviewFacts) -> ReviewResult:
    """WAIT carrying the prompt, until the agent records the reply."""
    return awaiting(facts, build_prompt(facts, "word"), HOW_TO_ANSWER)


def record_reply(facts: ReviewFacts, reply: str, reviewer: str | None) -> ReviewResult:
    """The agent's reviewer's ``reply`` as a review of ``facts``: STOP / CONTINUE / WAIT, or a failed WAIT."""
    model = (reviewer or "").strip() or AGENT_REVIEWER
    try:
        answer = answer_from_reply(reply)
    except ReviewError as exc:
        return failed(facts, "agent", model, str(exc), 0.0)
    return answered(facts, "agent", Reply(answer=answer, model=model, image_attached=False), 0.0)
