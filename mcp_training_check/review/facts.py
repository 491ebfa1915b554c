"""Which check a review answers, and the facts the reviewer gets about it (all from stored state)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from ..config import ResolvedRunConfig
from ..errors import NothingToReview
from ..models import Decision, MetricSnapshot, ReviewResult
from ..roles import RoleInfo
from ..state import CheckRecord, RunHistory
from .prompt import ReviewFacts

__all__ = ["current_review", "latest_verdict_check", "review_facts", "unsure_check"]


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
        told = latest.verdict.stated_signal()
        reason = told.gist() if told is not None else latest.verdict.summary
        tool, command = (
            ("stop_run", f"training-check stop {shlex.quote(run)} --confirm --reason {shlex.quote(reason)}")
            if decision is Decision.STOP
            else ("schedule_next", f"training-check schedule {shlex.quote(run)}")
        )
        raise NothingToReview(
            f"nothing to review: the latest verdict of run {run!r} (check #{latest.id}) is {decision.value}, "
            f"not unsure; the reviewer only answers unsure verdicts. Act on the verdict: call {tool} "
            f"(`{command}` on the command line)."
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
    history: RunHistory | None = None,
    roles: Mapping[str, RoleInfo] | None = None,
) -> ReviewFacts:
    """The facts for reviewing ``check`` (from ``checks``, most recent first): the others are history.
    A pending agent prompt (no answer yet) is not an earlier review."""
    earlier_review = latest_review if latest_review is not None and latest_review.check_id != check.id else None
    if earlier_review is not None and earlier_review.next_action == "record_review":
        earlier_review = None
    return ReviewFacts(
        run=run,
        check=check,
        snapshot=snapshot,
        earlier=[c for c in checks if c.verdict is not None and c.id != check.id],
        previous_review=earlier_review,
        baselines=settings.baselines,
        hints=settings.judge_hints(),
        history=history,
        roles=dict(roles or {}),
    )
