"""The reviewer's answer, one model for every backend: ``{"decision": STOP|CONTINUE|WAIT, "reason"}``.

Three ways in, one validation: a tool call's input (Anthropic, OpenAI-compatible), a JSON object as the
whole text (an endpoint without tool calls), and the agent's reply — the decision word first, then the
reason. Anything else is a ReviewError naming what came back, which the caller turns into WAIT.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ReviewError
from ..models import ReviewDecision

__all__ = [
    "ANSWER_SCHEMA",
    "DECISION_WORDS",
    "MAX_REASON_CHARS",
    "NO_REASON",
    "REVIEW_TOOL",
    "TOOL_DESCRIPTION",
    "ReviewAnswer",
    "answer_from_input",
    "answer_from_json_text",
    "answer_from_reply",
]

MAX_REASON_CHARS = 1000
REVIEW_TOOL = "record_review"
TOOL_DESCRIPTION = "Record your decision about the training run and the short reason for it."
DECISION_WORDS = ("STOP", "CONTINUE", "WAIT")
NO_REASON = "the reviewer gave no reason"
QUOTED_CHARS = 160

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "enum": list(DECISION_WORDS),
            "description": "STOP: clearly bad, stop it now. CONTINUE: healthy enough. WAIT: look again later.",
        },
        "reason": {"type": "string", "description": "One or two sentences citing the numbers that decided."},
    },
    "required": ["decision", "reason"],
    "additionalProperties": False,
}

_FENCE = re.compile(r"^```(?:json)?\s*\n(?P<body>.*)\n```$", re.DOTALL)
_DECISION_WORD = re.compile(r"\b(STOP|CONTINUE|WAIT)\b")  # in the reason: only capitals count as a decision
_FIRST_WORD = re.compile(r"(STOP|CONTINUE|WAIT)\b", re.IGNORECASE)
_LABEL = re.compile(r"(?:decision|verdict|answer)\s*[:=\-–—]\s*", re.IGNORECASE)  # "Decision: STOP"
_SENTENCE_ON = re.compile(r"[ \t]+\w")  # the decision word goes on as a sentence: "Stop it now"
_EMPHASIS = re.compile(r"[*_`]+")
_LEADING_DECORATION = re.compile(r"^[\s*_`#>\"'.:\-–—]+")
_REASON_LABEL = re.compile(r"(?:reason|because)\s*[:\-–—]\s*", re.IGNORECASE)  # "STOP\nReason: ..."


class ReviewAnswer(BaseModel):
    """A reviewer's answer, validated: anything else is a malformed answer (→ WAIT)."""

    model_config = ConfigDict(extra="ignore", strict=True, defer_build=True)

    decision: ReviewDecision
    reason: str = Field(min_length=1, max_length=MAX_REASON_CHARS)


def answer_from_input(given: object) -> ReviewAnswer:
    """A tool call's input (a dict), validated."""
    try:
        return ReviewAnswer.model_validate(given)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "input"
        raise ReviewError(
            f"the model's answer is not a valid review ({where}: {first['msg']}; got {str(given)[:QUOTED_CHARS]}): "
            "the next check will escalate again"
        ) from exc


def answer_from_json_text(text: str) -> ReviewAnswer:
    """The whole text must be one JSON object (a ```json fence around it is tolerated); then validated."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group("body").strip()
    try:
        given = json.loads(body)
    except ValueError:
        raise ReviewError(
            f"the model answered in prose, not the JSON object asked for (text {_quote(text)}): "
            "use a model that follows instructions, or one with tool calls"
        ) from None
    if not isinstance(given, dict):
        raise ReviewError(f"the model's JSON answer is not an object (got {_quote(body)}): the next check asks again")
    return answer_from_input(given)


def answer_from_reply(reply: str) -> ReviewAnswer:
    """The agent's reply: exactly one decision word, first (``STOP``, ``**CONTINUE** — noise``, ``Decision:
    WAIT``, or the JSON object), then the reason. A reply in sentence case that goes on as a sentence
    (``Stop it now.``, ``Continue training: it learns``) keeps the whole sentence as its reason, so no verb is
    cut off it (it gave "it now."). A ``Reason:`` label is dropped. Two different decision words, or none
    first, is not an answer."""
    text = reply.strip()
    if text.startswith(("{", "```")):
        return answer_from_json_text(text)
    head = _LEADING_DECORATION.sub("", text)
    label = _LABEL.match(head)
    head = _LEADING_DECORATION.sub("", head[label.end() :]) if label else head
    decision, rest = _split_decision(head)
    named = {decision, *_DECISION_WORD.findall(rest)} - {None}
    if decision is None or len(named) > 1:
        said = "it does not start with one" if decision is None else f"it names {' and '.join(sorted(map(str, named)))}"
        raise ReviewError(
            f"the reply is not exactly one of STOP / CONTINUE / WAIT ({said}; reply {_quote(text)}): ask the "
            "reviewer again for one decision word first, then record its reply"
        )
    reason = _LEADING_DECORATION.sub("", rest).strip()
    labelled = _REASON_LABEL.match(reason)
    reason = (reason[labelled.end() :] if labelled else reason).strip() or NO_REASON
    return answer_from_input({"decision": decision, "reason": reason[:MAX_REASON_CHARS]})


def _split_decision(head: str) -> tuple[str | None, str]:
    """The decision word at the head of a reply and the text left for the reason; ``None`` when no decision
    word is first. A word in capitals or emphasis (``STOP loss NaN``, ``**STOP** loss NaN``, as the prompt
    asks) or followed by a separator is the verdict alone; a word in sentence case that goes on as a sentence
    (``Stop it now.``) is the reason's first word too."""
    first = _FIRST_WORD.match(head)
    if first is None:
        return None, head
    word = first.group(1)
    emphasis = _EMPHASIS.match(head, first.end())
    set_apart = word.isupper() or emphasis is not None or not _SENTENCE_ON.match(head, first.end())
    return word.upper(), head[first.end() :] if set_apart else head


def _quote(text: str) -> str:
    return repr(" ".join(text.split())[:QUOTED_CHARS])
