"""`check_many`'s pieces: one short line per run of a W&B sweep or project, and the group's one report.

`service.Monitor.check_many` lists the running runs and checks each with `Monitor.check`'s path; this
module turns those reports into ``RunLine`` rows (bad runs first, summaries clipped so the result stays
small) and picks one schedule for the whole group: the shortest interval any run still monitored needs.
One cron job watches the whole group, never one per run: Claude Code allows `CRON_JOBS_PER_SESSION` jobs
a session, and a sweep can have more runs than that.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from .config import ResolvedRunConfig
from .errors import RunRefError, TrainingCheckError
from .models import CheckReport, DataSource, Decision, GroupReport, RunKind, RunLine, RunRef, Schedule
from .schedule import CRON_ACTION_WORDS, cron_action_reason, next_schedule
from .sources import Progress, no_progress
from .state import HandedOutCron

__all__ = [
    "GROUP_LINES",
    "GROUP_WORKERS",
    "check_members",
    "group_report",
    "member_line",
    "member_settings",
    "require_group",
    "unreadable_line",
]

GROUP_WORKERS = 4
"""Runs of a sweep or project checked at once (each holds a W&B request and its own run lock)."""

GROUP_LINES = 20
"""Runs listed in a sweep/project result; the rest are counted in `omitted` (the result stays < ~1,500 tokens)."""

LINE_CHARS = 160
"""Longest per-run summary in a sweep/project result."""

HEALTHY_LINE_CHARS = 100
"""Longest summary of a run judged continue: the healthy ones need the least explaining."""

CRON_JOBS_PER_SESSION = 50
"""Claude Code refuses CronCreate beyond this many jobs in one session ("Too many scheduled jobs (max 50)",
read from its tool code, 2.1.197 and 2.1.332): why a group gets one job, not one per run."""

_GROUP_ORDER = {"stop_run": 0, "escalate_review": 1, "continue_monitoring": 2, "end_monitoring": 3, "fix_source": 4}

MemberResult = tuple[RunLine, Schedule | None]


def require_group(ref: RunRef, run: str) -> None:
    """Refuse a single run: check_many takes a W&B sweep or project."""
    if ref.kind not in (RunKind.WANDB_SWEEP, RunKind.WANDB_PROJECT):
        raise RunRefError(
            f"check_many takes a W&B sweep or project ('entity/project', 'entity/project/sweeps/<id>' or a "
            f"sweep URL), not {run!r}: call check for a single run."
        )


def member_settings(group: ResolvedRunConfig, ref: RunRef) -> ResolvedRunConfig:
    """One run of a group, with the group's roles, baselines and judge settings (never its stop)."""
    return group.model_copy(update={"alias": None, "run": ref.raw, "log_fallback": None, "stop": None})


def unreadable_line(ref: RunRef, exc: TrainingCheckError) -> RunLine:
    return RunLine(run=ref.raw, decision=None, summary=_clip(str(exc)), next_action="fix_source")


def member_line(ref: RunRef, report: CheckReport) -> RunLine:
    """The run's verdict (or why it could not be read) in one clipped line."""
    decision = report.verdict.decision if report.verdict else None
    head = report.verdict.summary if report.verdict else report.snapshot.summary
    if report.snapshot.data_source is DataSource.UNREACHABLE:
        head = "; ".join(report.snapshot.warnings) or head
    if decision is not None and head.upper().startswith(f"{decision.value.upper()}:"):
        head = head[len(decision.value) + 1 :]  # the line's `decision` already says it
    limit = HEALTHY_LINE_CHARS if decision is Decision.CONTINUE else LINE_CHARS
    return RunLine(run=ref.raw, decision=decision, summary=_clip(head, limit), next_action=report.next_action)


def _clip(text: str, limit: int = LINE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def check_members(
    members: Sequence[RunRef], check: Callable[[RunRef], MemberResult], progress: Progress | None = None
) -> list[MemberResult]:
    """``check`` on every member, GROUP_WORKERS at a time, results in the members' order; ``progress``
    hears of each one done."""
    report = progress or no_progress
    done = itertools.count(1)
    lock = threading.Lock()

    def check_one(ref: RunRef) -> MemberResult:
        result = check(ref)
        with lock:
            count = next(done)
        report(count, len(members), "checking runs")
        return result

    with ThreadPoolExecutor(max_workers=GROUP_WORKERS) as pool:
        return list(pool.map(check_one, members))


def group_report(
    group: RunRef, results: Sequence[MemberResult], now: datetime | None, *, in_force: HandedOutCron | None = None
) -> GroupReport:
    """Bad runs first; one schedule for the group: the shortest interval of any run still monitored.
    ``in_force``: the group's cron last handed out (kept while the interval is unchanged)."""
    what = "sweep" if group.kind is RunKind.WANDB_SWEEP else "project"
    lines = sorted((line for line, _ in results), key=lambda line: (_GROUP_ORDER[line.next_action], line.run))
    counts: dict[str, int] = {}
    for line in lines:
        label = line.decision.value if line.decision else ("unreadable" if line.next_action == "fix_source" else "none")
        counts[label] = counts.get(label, 0) + 1
    live = [s for _, s in results if s is not None and s.monitoring and s.interval_minutes]
    schedule = _group_schedule(group, live, len(results), what, now, in_force)
    tally = ", ".join(f"{n} {label}" for label, n in sorted(counts.items())) or "none"
    head = f"{len(lines)} running run(s) in {what} {group.raw}: {tally}"
    if lines and lines[0].next_action == "stop_run":
        head += f"; stop {lines[0].run} first"
    return GroupReport(
        run=group.raw,
        summary=f"{head}; {schedule.summary}",
        runs=lines[:GROUP_LINES],
        omitted=max(len(lines) - GROUP_LINES, 0),
        counts=counts,
        schedule=schedule,
    )


def _group_schedule(
    group: RunRef, live: list[Schedule], checked: int, what: str, now: datetime | None, in_force: HandedOutCron | None
) -> Schedule:
    if not live:
        why = "no running runs" if not checked else "no run left to watch"
        return Schedule(
            summary=f"stop monitoring: {why} in the {what}; delete the cron job",
            monitoring=False,
            reason=f"{why.capitalize()} in {what} {group.raw}. Delete its cron job with CronDelete (find the id "
            "with CronList); start again when new runs start.",
        )
    shortest = min(live, key=lambda s: s.interval_minutes or 0)
    interval = shortest.interval_minutes or 0
    schedule = next_schedule(
        run=group.raw,
        decision=None,
        previous_interval_minutes=interval,
        anomaly=False,
        review_wait=True,  # "unchanged": keep the shortest interval the runs asked for
        read_failed=False,
        run_ended=False,
        now=now,
        in_force=in_force,
    )
    action = schedule.cron_action or "replace"
    clock = f" at {schedule.next_check_at:%H:%M %Z}".rstrip() if schedule.next_check_at else ""
    return schedule.model_copy(
        update={
            "summary": f"next check in {interval} min (the shortest over {len(live)} run(s)){clock}"
            + CRON_ACTION_WORDS[action],
            "reason": f"One cron job for the whole {what}, never one per run (Claude Code allows "
            f"{CRON_JOBS_PER_SESSION} jobs a session), at the shortest interval any of its runs needs; "
            + cron_action_reason(action),
        }
    )
