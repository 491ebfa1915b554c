"""Claude Code's session scheduler (CronCreate / CronDelete / CronList) on a simulated clock, for the
scripted skill loop: the server only hands over CronCreate arguments, the scheduler is Claude Code's.

Its rules as read from Claude Code's own tool code (`npm install @anthropic-ai/claude-code`, versions
2.1.197 and 2.1.332, the CronCreate tool and its scheduler):

- CronCreate takes exactly ``cron, prompt, recurring=true, durable=false`` (a strict schema: any other key is
  refused) and answers ``{id, humanSchedule, recurring, durable}``; beyond 50 jobs it refuses ("Too many
  scheduled jobs (max 50)"). CronList answers ``jobs`` with ``id, cron, prompt, recurring, durable``: no
  creation time.
- A recurring job fires at each cron match plus a fixed per-job delay (a share of its period, capped), and
  a job older than its maximum age (7 days by default) fires one final time, then is deleted.

The cron grammar accepted here is only what the server writes (a minute list, every other field ``*``),
read independently of the project's `CronExpr`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

MAX_JOBS = 50
MAX_AGE = timedelta(days=7)
JITTER_SHARE = 0.5
JITTER_CAP = timedelta(minutes=30)
"""A job fires up to this share of its period late, at most JITTER_CAP (Claude Code's defaults,
``recurringFrac`` 0.5 and ``recurringCapMs`` 1,800,000); the share is fixed per job, derived from its id."""

ALLOWED_ARGS = {"cron", "prompt", "recurring", "durable"}


class CronToolError(Exception):
    """What CronCreate / CronDelete answer with is_error."""


def minute_list(cron: str) -> list[int]:
    minute, *rest = cron.split()
    if rest != ["*", "*", "*", "*"] or not all(part.isdigit() for part in minute.split(",")):
        raise CronToolError(f"this simulation only knows minute-list crons, not {cron!r}")
    return sorted(int(part) for part in minute.split(","))


def next_match(cron: str, after: datetime) -> datetime:
    """The first whole minute strictly after ``after`` whose minute is in the cron's list."""
    at = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    minutes = minute_list(cron)
    while at.minute not in minutes:
        at += timedelta(minutes=1)
    return at


@dataclass
class Job:
    id: str
    cron: str
    prompt: str
    durable: bool
    created_at: datetime
    delay: timedelta
    next_fire: datetime

    def listing(self) -> dict[str, Any]:
        return {"id": self.id, "cron": self.cron, "prompt": self.prompt, "recurring": True, "durable": self.durable}


@dataclass
class ClaudeCron:
    """The session's jobs on a simulated clock; ``expired`` holds the jobs deleted at their maximum age."""

    now: datetime
    jobs: dict[str, Job] = field(default_factory=dict)
    expired: list[Job] = field(default_factory=list)
    created: list[Job] = field(default_factory=list)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    # ------------------------------------------------------------------ the three tools

    def cron_create(self, args: dict[str, Any]) -> dict[str, Any]:
        unknown = set(args) - ALLOWED_ARGS
        if unknown:
            raise CronToolError(f"unrecognized key(s) in CronCreate input: {sorted(unknown)}")
        if args.get("recurring", True) is not True:
            raise CronToolError("this simulation only runs recurring jobs")
        if len(self.jobs) >= MAX_JOBS:
            raise CronToolError(f"Too many scheduled jobs (max {MAX_JOBS}). Cancel one first.")
        cron, prompt = str(args["cron"]), str(args["prompt"])
        minutes = minute_list(cron)
        period = timedelta(minutes=60 // len(minutes))
        number = next(self._ids)
        share = JITTER_SHARE * ((number * 7) % 10) / 10  # fixed per job, as Claude Code's is
        job = Job(
            id=f"job{number}", cron=cron, prompt=prompt, durable=bool(args.get("durable", False)),
            created_at=self.now, delay=min(period * share, JITTER_CAP), next_fire=next_match(cron, self.now),
        )  # fmt: skip
        self.jobs[job.id] = job
        self.created.append(job)
        return {"id": job.id, "humanSchedule": f"every {period.seconds // 60} minutes", "recurring": True,
                "durable": job.durable}  # fmt: skip

    def cron_delete(self, job_id: str) -> dict[str, Any]:
        if job_id not in self.jobs:
            raise CronToolError(f"No scheduled job with id '{job_id}'")
        del self.jobs[job_id]
        return {"id": job_id}

    def cron_list(self) -> dict[str, list[dict[str, Any]]]:
        return {"jobs": [job.listing() for job in self.jobs.values()]}

    # ------------------------------------------------------------------ the clock

    def next_fire(self) -> tuple[datetime, Job] | None:
        """Advance the clock to the next fire (delay included) and return it; None when no job is left."""
        if not self.jobs:
            return None
        job = min(self.jobs.values(), key=lambda j: j.next_fire + j.delay)
        self.now = job.next_fire + job.delay
        job.next_fire = next_match(job.cron, job.next_fire)
        if self.now - job.created_at >= MAX_AGE:  # the final fire: the job is gone afterwards
            del self.jobs[job.id]
            self.expired.append(job)
        return self.now, job
