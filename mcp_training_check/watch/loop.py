"""The loop of `training-check watch`: check, print one line, act as the skill would, sleep, repeat.

It is the skill's cron loop without an agent: `Monitor.check` at each turn, ``escalate_review`` on an
unsure verdict, ``stop_run`` on a STOP only when the person passed ``--stop`` (never otherwise), and
``schedule_next`` after a review or a stop. A W&B sweep or project gets `check_many`: one line for the
group and one per run to stop or review, never a stop. It sleeps until the schedule's ``next_check_at``
and returns once the schedule says monitoring is over. The clock and the sleep are passed in
(`WatchClock`), so a test runs a week of checks in a second and `--seconds-per-minute` compresses time
for a demo or a test.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..errors import StopError, TrainingCheckError
from ..models import CheckReport, ReviewResult, RunKind, Schedule, StopResult
from ..schedule import CRON_ACTION_WORDS
from ..service import Monitor
from ..stop import no_stop_configured

__all__ = ["REAL_SECONDS_PER_MINUTE", "WatchClock", "compressed_clock", "refuse_an_unwatchable_run", "watch_run"]

REAL_SECONDS_PER_MINUTE = 60.0
"""Seconds slept per schedule minute when time is not compressed."""

GROUP_KINDS = (RunKind.WANDB_SWEEP, RunKind.WANDB_PROJECT)
"""Run kinds watched with `check_many` (one line for the group)."""


@dataclass(frozen=True)
class WatchClock:
    """Where the loop's time comes from: ``now`` for the schedule, ``sleep`` in real seconds, and how many
    real seconds one schedule minute lasts (60 unless compressed)."""

    now: Callable[[], datetime]
    sleep: Callable[[float], None]
    seconds_per_minute: float = REAL_SECONDS_PER_MINUTE

    def seconds_until(self, at: datetime) -> float:
        minutes = max((at - self.now()).total_seconds(), 0.0) / 60
        return minutes * self.seconds_per_minute


def compressed_clock(seconds_per_minute: float = REAL_SECONDS_PER_MINUTE) -> WatchClock:
    """The wall clock, running ``60 / seconds_per_minute`` times faster from now on (real time at 60)."""
    if seconds_per_minute <= 0:
        raise ValueError(f"seconds per minute must be positive, not {seconds_per_minute}")
    start, started = datetime.now().astimezone(), time.monotonic()
    speed = REAL_SECONDS_PER_MINUTE / seconds_per_minute

    def now() -> datetime:
        return start + timedelta(seconds=(time.monotonic() - started) * speed)

    return WatchClock(now=now, sleep=time.sleep, seconds_per_minute=seconds_per_minute)


def watch_run(
    monitor: Monitor, run: str, *, act_on_stop: bool, clock: WatchClock, emit: Callable[[str], None]
) -> Schedule:
    """Check ``run`` until its schedule says monitoring is over; return that last schedule.

    ``act_on_stop``: stop the run (as training-check.toml configures) on a stop verdict or a reviewer's
    STOP; without it a STOP is only reported. An error of this package in the first check propagates
    (the run or the config is wrong); a later one is printed and the check retried at the same interval
    (a log rotated away for a moment must not end a week of watching). Ctrl-C raises KeyboardInterrupt
    from wherever the loop is, the state store staying consistent."""
    is_group = refuse_an_unwatchable_run(monitor, run, act_on_stop=act_on_stop)
    last: Schedule | None = None
    said: set[str] = set()
    while True:
        checked_at = clock.now()
        try:
            schedule, lines = _turn(monitor, run, checked_at, is_group=is_group, act_on_stop=act_on_stop, clock=clock)
        except TrainingCheckError as exc:
            if last is None or last.interval_minutes is None:
                raise
            emit(f"{checked_at:%Y-%m-%d %H:%M}  ERROR: {exc}; trying again in {last.interval_minutes} min")
            clock.sleep(last.interval_minutes * clock.seconds_per_minute)
            continue
        for line in lines:
            emit(_explained_once(line, said))
        if not schedule.monitoring:
            return schedule
        last = schedule
        clock.sleep(_wait_seconds(schedule, clock))


def _explained_once(line: str, said: set[str]) -> str:
    """``line``, its explanation (no reviewer; a STOP not acted on) shortened when an earlier line of the watch
    gave it."""
    for explanation, again in ((NO_AGENT_REVIEWER, NO_AGENT_REVIEWER_AGAIN), (STOP_NOT_ACTED, STOP_NOT_ACTED_AGAIN)):
        if explanation in line:
            if explanation in said:
                return line.replace(explanation, again)
            said.add(explanation)
    return line


def _turn(
    monitor: Monitor, run: str, at: datetime, *, is_group: bool, act_on_stop: bool, clock: WatchClock
) -> tuple[Schedule, list[str]]:
    """One check (of a run or a group) and what follows it: the schedule to sleep by and the lines to print."""
    if is_group:
        return _group_turn(monitor, run, at)
    report = monitor.check(run, now=at)
    schedule, notes = _act(monitor, run, report, act_on_stop=act_on_stop, clock=clock)
    return schedule, [check_line(report, schedule, at), *(f"  {note}" for note in notes)]


def refuse_an_unwatchable_run(monitor: Monitor, run: str, *, act_on_stop: bool) -> bool:
    """Whether ``run`` is a W&B sweep or project; the run string's error (a missing log, a typo'd alias), or
    StopError when --stop cannot be honoured."""
    ctx = monitor.context(run)
    is_group = ctx.ref.kind in GROUP_KINDS
    if act_on_stop and is_group:
        raise StopError(
            f"--stop stops one run, and {run!r} is a sweep or project: watch it without --stop, and stop a "
            "run it reports with `training-check stop <run> --confirm --reason ...` (its [runs.<name>.stop])."
        )
    if act_on_stop and ctx.settings.stop is None:
        raise StopError(f"watch --stop: {no_stop_configured(ctx.ref)} Or watch without --stop.")
    return is_group


def _group_turn(monitor: Monitor, run: str, at: datetime) -> tuple[Schedule, list[str]]:
    """One check of a sweep or project: its summary line, then a line per run to stop or review."""
    report = monitor.check_many(run, now=at)
    head = report.summary.removesuffix(report.schedule.summary).rstrip("; ")
    lines = [f"{at:%Y-%m-%d %H:%M}  {head}; {_next_check_words(report.schedule)}"]
    for line in report.runs:
        if line.next_action in ("stop_run", "escalate_review") and line.decision is not None:
            lines.append(f"  {line.decision.value.upper()} {line.run}: {line.summary}")
    return report.schedule, lines


def stop_command(run: str, reason: str) -> str:
    """The `training-check stop` command a person can paste for a STOP watch did not act on; the reason is the
    verdict's or reviewer's first clause ("loss is NaN at step 469"), without the count of other signals or the
    full stop after it."""
    short = reason.removeprefix("STOP: ").split(": ", 1)[0].split(" (+", 1)[0].strip().rstrip(".")
    return f"training-check stop {shlex.quote(run)} --confirm --reason {shlex.quote(short)}"


def _act(
    monitor: Monitor, run: str, report: CheckReport, *, act_on_stop: bool, clock: WatchClock
) -> tuple[Schedule, list[str]]:
    """What the skill does after a check: review an unsure verdict, stop on STOP (if allowed), reschedule.
    Returns the schedule to follow and a line for each thing done."""
    notes: list[str] = []
    review: ReviewResult | None = None
    if report.next_action == "escalate_review":
        review = monitor.escalate_review(run)
        notes.append(review_line(review))
    stop_reason = review.reason if review and review.decision == "STOP" else None
    if report.next_action == "stop_run" and report.verdict is not None:
        stop_reason = report.verdict.summary
    if stop_reason is not None and not act_on_stop:
        notes.append(f"{STOP_NOT_ACTED} (or: {stop_command(run, stop_reason)})")
    elif stop_reason is not None:
        notes.append(stop_line(monitor.stop_run(run, confirm=True, reason=stop_reason)))
    if review is None and (stop_reason is None or not act_on_stop):
        return report.schedule, notes
    return monitor.schedule_next(run, now=clock.now()), notes


def _wait_seconds(schedule: Schedule, clock: WatchClock) -> float:
    if schedule.next_check_at is not None:
        return clock.seconds_until(schedule.next_check_at)
    return (schedule.interval_minutes or 0) * clock.seconds_per_minute


def check_line(report: CheckReport, schedule: Schedule, at: datetime) -> str:
    """One line per check: when, the verdict (or why nothing was read), and the next check it leads to."""
    if report.verdict is not None:
        label, head = report.verdict.decision.value.upper(), report.verdict.spelled_out()
    else:
        label, head = "UNREAD", "; ".join(report.snapshot.warnings) or report.snapshot.summary
    head = head if head.startswith(label) else f"{label}: {head}"
    return f"{at:%Y-%m-%d %H:%M}  {head.rstrip('.')}; {_next_check_words(schedule)}"


def _next_check_words(schedule: Schedule) -> str:
    """The schedule's summary without what to do with the cron job: that is the skill's business."""
    if schedule.cron_action is not None:
        return schedule.summary.removesuffix(CRON_ACTION_WORDS[schedule.cron_action])
    return schedule.summary.partition(";")[0]  # "stop monitoring: run stopped"


NO_AGENT_REVIEWER = (
    "no reviewer in a terminal: with no API key the reviewer is the calling agent (Claude Code), and watch has "
    "none; for an LLM reviewer set ANTHROPIC_API_KEY, or LLM_API_KEY with LLM_MODEL (an OpenAI-compatible API), "
    'and [defaults.review] backend, if written, to "anthropic" or "openai". Unsure checks keep their interval '
    "meanwhile"
)
NO_AGENT_REVIEWER_AGAIN = "no reviewer in a terminal, as above"
"""What the review line says after the first time: the whole explanation at every check drowned the verdicts."""

STOP_NOT_ACTED = "STOP not acted on: watch stops a run only with --stop"
STOP_NOT_ACTED_AGAIN = "STOP not acted on (no --stop)"
"""The same after the first time: a run left to go on after a STOP was told why at every check of the night."""


def review_line(review: ReviewResult) -> str:
    if review.backend == "agent" and review.next_action == "record_review":
        return f"review {review.decision} ({NO_AGENT_REVIEWER})"
    why = f"reviewer failed: {review.error}" if review.reviewer_failed and review.error else review.reason
    return f"review {review.decision} ({why})"


def stop_line(result: StopResult) -> str:
    """stop_run's own summary (outcome, verification, where the notes went) and the incident number."""
    incident = f" (incident #{result.incident_id})" if result.incident_id is not None else ""
    return f"{result.summary}{incident}"
