"""When to check a run next, and the exact CronCreate arguments that make it happen.

The interval climbs a ladder while the run looks healthy and drops to the bottom on any anomaly:

    first check → 10 min;  healthy (CONTINUE, no anomaly) → next rung, up to 60;
    STOP / UNSURE / anomaly → 10;  review WAIT, nothing read or no new points → unchanged;
    run ended (its status, its log's final line, its total steps reached) → stop monitoring.

A log that stopped growing keeps its interval: whether the process is alive is the launcher's job, and
checking it more often would not tell (a reviewer's CONTINUE still lets the interval climb).

WAIT wins over anomaly on purpose: a WAIT answers the review of an anomaly, so that anomaly is already
being handled; resetting on it would make "unchanged on WAIT" never happen.

Cron expressions are written in the process's local time (Claude Code reads them in its own local
zone, which the server shares) and touch only the minute field, so they fire every ``interval``
minutes across hour, day and whole-hour DST boundaries. ``*/60`` is never written (it means minute 0
only); 60 minutes is ``M * * * *``. `CronExpr` parses what CronCreate accepts and finds the next fire,
which is how ``next_check_at`` is computed and how the tests check the expression.

Claude Code deletes a recurring job by itself some days after creating it (`CRON_MAX_AGE`). So a
schedule is made against the cron already in force for the run (`state.HandedOutCron`): the same
interval keeps the same cron (``cron_action`` "keep", so a healthy run's job is not churned at every
fire), until the job is `CRON_RENEW_MARGIN` from its expiry ("recreate": delete and create it again
now); another interval is a new cron ("replace"). `handed_out` is what the service stores afterwards.
A `schedule_next` in the same fire as the check that handed the cron out (after a review, before the
skill touched the job) repeats that check's action for an unchanged cron: a "recreate" the skill has not
carried out yet must not turn into "keep".

`schedule_after` applies the ladder to a verdict (a reviewer's CONTINUE clears the unsure verdict it
answered); `check_report` adds the one next action a check ends with (stop, review, keep watching, end).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from .models import (
    CheckReport,
    CronAction,
    CronArgs,
    DataSource,
    Decision,
    MetricSnapshot,
    NextAction,
    RunStatus,
    Schedule,
    Severity,
    SignalKind,
    Verdict,
)
from .state import HandedOutCron

INTERVAL_LADDER_MINUTES: tuple[int, ...] = (10, 20, 30, 60)  # each divides 60, so `M,M+I,...` is even
FIRST_INTERVAL_MINUTES = INTERVAL_LADDER_MINUTES[0]
ANOMALY_INTERVAL_MINUTES = INTERVAL_LADDER_MINUTES[0]
MAX_INTERVAL_MINUTES = INTERVAL_LADDER_MINUTES[-1]
MINUTES_PER_HOUR = 60
CRON_SEARCH_LIMIT_DAYS = 366 * 5  # a valid expression fires within 5 years (Feb 29 needs 4)
ONE_MINUTE = timedelta(minutes=1)
DEFAULT_PROMPT_TEMPLATE = "/training-check {run}"

CRON_MAX_AGE = timedelta(days=7)
"""How long Claude Code keeps a recurring CronCreate job before deleting it by itself (after one last fire).
Read from the installed tool code: 7 days in 2.1.197 (``recurringMaxAgeMs`` 604,800,000 ms); 2.1.332
makes it a remotely configured value, 30 days by default (0 = never), reported as ``maxAgeMs`` in the
CronCreate result. The shortest seen is assumed: re-creating a job early costs nothing."""

CRON_RENEW_MARGIN = timedelta(days=1)
"""A job is re-created at the first check this close to its expiry: at least 24 fires at the 60-min cap,
so a few fires skipped while the session was busy (jobs fire only when it is idle) cannot let it lapse."""


# --------------------------------------------------------------------------- cron


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31),
    _Field("month", 1, 12),
    _Field("day of week", 0, 7),  # 0 and 7 are Sunday
)
_EVEN_STEP_SPANS = {"minute": 60, "hour": 24}  # `*/S` here must divide the span or it fires unevenly


def _parse_field(text: str, spec: _Field) -> frozenset[int]:
    """One cron field (``*``, ``N``, ``*/S``, ``A-B``, ``A-B/S`` and comma lists) → the values it allows."""
    values: set[int] = set()
    for term in text.split(","):
        base, _, step_text = term.partition("/")
        step = _number(step_text, spec) if step_text else 1
        if base == "*":
            low, high = spec.low, spec.high
            span = _EVEN_STEP_SPANS.get(spec.name)
            if step_text and step > spec.high - spec.low:
                raise ValueError(f"cron {spec.name} */{step} fires only at {spec.low}; write {spec.low} instead")
            if step_text and span and (step < 1 or span % step):
                raise ValueError(f"cron {spec.name} step */{step} does not divide {span}; list the values")
        elif "-" in base:
            low, high = (_number(part, spec) for part in base.split("-", 1))
        elif step_text:
            raise ValueError(f"cron {spec.name} term {term!r}: N/S is not supported, write A-B/S")
        else:
            low = high = _number(base, spec)
        if not spec.low <= low <= high <= spec.high or step < 1:
            raise ValueError(f"cron {spec.name} term {term!r} is outside {spec.low}-{spec.high}")
        values.update(range(low, high + 1, step))
    if spec.name == "day of week" and 7 in values:
        values = (values - {7}) | {0}
    return frozenset(values)


def _number(text: str, spec: _Field) -> int:
    if not text.isdigit():
        raise ValueError(f"cron {spec.name}: {text!r} is not a number (names, L, W and ? are not supported)")
    return int(text)


@dataclass(frozen=True)
class CronExpr:
    """A parsed 5-field cron expression in CronCreate's dialect, matched against wall-clock time."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    days_restricted: bool
    weekdays_restricted: bool

    @classmethod
    def parse(cls, expr: str) -> CronExpr:
        parts = expr.split()
        if len(parts) != len(_FIELDS):
            raise ValueError(f"cron {expr!r} has {len(parts)} fields; CronCreate needs 5")
        minutes, hours, days, months, weekdays = (
            _parse_field(text, spec) for text, spec in zip(parts, _FIELDS, strict=True)
        )
        return cls(
            minutes,
            hours,
            days,
            months,
            weekdays,
            days_restricted=parts[2] != "*",
            weekdays_restricted=parts[4] != "*",
        )

    def _day_matches(self, at: datetime) -> bool:
        """Standard cron: when both day fields are restricted, either one matching is enough."""
        if at.month not in self.months:
            return False
        day_ok = at.day in self.days
        weekday_ok = (at.isoweekday() % 7) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return day_ok or weekday_ok
        return day_ok and weekday_ok

    def matches(self, at: datetime) -> bool:
        return self._day_matches(at) and at.hour in self.hours and at.minute in self.minutes

    def next_fire(self, after: datetime) -> datetime:
        """First minute strictly after ``after`` at which this fires, in ``after``'s time zone."""
        at = after.replace(second=0, microsecond=0) + ONE_MINUTE
        limit = at + timedelta(days=CRON_SEARCH_LIMIT_DAYS)
        while at < limit:
            if not self._day_matches(at):
                at = at.replace(hour=0, minute=0) + timedelta(days=1)
            elif at.hour not in self.hours:
                at = at.replace(minute=0) + timedelta(hours=1)
            elif at.minute not in self.minutes:
                at += ONE_MINUTE
            else:
                return at
        raise ValueError(f"cron {self} never fires within {CRON_SEARCH_LIMIT_DAYS} days")


def cron_every(interval_minutes: int, first_fire: datetime) -> str:
    """Cron firing every ``interval_minutes`` (a divisor of 60, or 60) with one fire at ``first_fire``."""
    if MINUTES_PER_HOUR % interval_minutes:
        raise ValueError(
            f"interval {interval_minutes} min does not divide an hour; use one of {INTERVAL_LADDER_MINUTES}"
        )
    count = MINUTES_PER_HOUR // interval_minutes
    minutes = sorted((first_fire.minute + k * interval_minutes) % MINUTES_PER_HOUR for k in range(count))
    return f"{','.join(map(str, minutes))} * * * *"


# --------------------------------------------------------------------------- interval


def _on_ladder(minutes: int) -> int:
    """The largest rung not above ``minutes`` (an off-ladder interval from elsewhere snaps down)."""
    return max((rung for rung in INTERVAL_LADDER_MINUTES if rung <= minutes), default=FIRST_INTERVAL_MINUTES)


def _choose_interval(
    *,
    decision: Decision | None,
    previous: int | None,
    anomaly: bool,
    review_wait: bool,
    read_failed: bool,
    stalled: bool = False,
) -> tuple[int, str]:
    """The next interval and the few words saying why (precedence as in the module docstring)."""
    if previous is None:
        return FIRST_INTERVAL_MINUTES, "first check"
    current = _on_ladder(previous)
    if review_wait:
        return current, "review said WAIT, interval unchanged"
    if read_failed:
        return current, "nothing could be read, interval unchanged"
    if stalled and decision is not Decision.STOP:
        return current, "no new points, interval unchanged: process health is the launcher's job"
    if anomaly or decision in (Decision.STOP, Decision.UNSURE):
        what = f"verdict {decision.value.upper()}" if decision in (Decision.STOP, Decision.UNSURE) else "anomaly"
        if previous == ANOMALY_INTERVAL_MINUTES:
            return ANOMALY_INTERVAL_MINUTES, f"{what}, interval stays {ANOMALY_INTERVAL_MINUTES}"
        return ANOMALY_INTERVAL_MINUTES, f"{what}, back to {ANOMALY_INTERVAL_MINUTES} from {previous}"
    if decision is Decision.CONTINUE:
        if current >= MAX_INTERVAL_MINUTES:
            return MAX_INTERVAL_MINUTES, f"healthy, at the {MAX_INTERVAL_MINUTES}-min cap"
        rung = INTERVAL_LADDER_MINUTES[INTERVAL_LADDER_MINUTES.index(current) + 1]
        return rung, f"healthy, interval up from {previous}"
    return current, "no verdict, interval unchanged"


def _ended_schedule(run: str, status: RunStatus | None, why: str | None = None) -> Schedule:
    word = status.value if status is not None and status.has_ended else "ended"
    fact = why or f"The run {run} has {word} (status {status.value if status else 'unknown'})."
    return Schedule(
        summary=f"stop monitoring: run {word}; delete the cron job",
        monitoring=False,
        reason=(
            f"{fact[0].upper()}{fact[1:].rstrip('.')}, so there is nothing left to watch. Delete the run's "
            "cron job with CronDelete (find the id with CronList)."
        ),
    )


def next_schedule(
    *,
    run: str,
    decision: Decision | None,
    previous_interval_minutes: int | None,
    anomaly: bool,
    review_wait: bool,
    read_failed: bool,
    run_ended: bool,
    run_status: RunStatus | None = None,
    now: datetime | None = None,
    prompt_template: str = DEFAULT_PROMPT_TEMPLATE,
    in_force: HandedOutCron | None = None,
    same_fire: bool = False,
    stalled: bool = False,
    ended_because: str | None = None,
) -> Schedule:
    """The next check of ``run``: interval, cron for CronCreate, when it fires, and what to do with the
    run's job given ``in_force``, the cron last handed out for it (``same_fire``: by the check this call
    follows, so the skill has not acted on it yet).

    ``now`` (default: the current time) is converted to the process's local zone, the zone
    CronCreate reads the expression in; a naive ``now`` is taken as local time.
    """
    if run_ended or (run_status is not None and run_status.has_ended):
        return _ended_schedule(run, run_status, ended_because)
    interval, why = _choose_interval(
        decision=decision,
        previous=previous_interval_minutes,
        anomaly=anomaly,
        review_wait=review_wait,
        read_failed=read_failed,
        stalled=stalled,
    )
    local_now = (now or datetime.now()).astimezone()
    prompt = prompt_template.format(run=run)
    cron, action, handed_out_at = _cron_in_force(interval, prompt, local_now, in_force, same_fire=same_fire)
    fire = CronExpr.parse(cron).next_fire(local_now)
    expires = (handed_out_at + CRON_MAX_AGE).astimezone(local_now.tzinfo)
    clock = f"{fire:%H:%M %Z}".strip()
    return Schedule(
        summary=_next_check_words(interval, why, clock, action),
        monitoring=True,
        interval_minutes=interval,
        next_check_at=fire,
        cron_create=CronArgs(cron=cron, prompt=prompt, recurring=True),
        cron_action=action,
        cron_expires_at=expires,
        reason=f"{why[0].upper()}{why[1:]}; {cron_action_reason(action)}",
    )


def _next_check_words(interval: int, why: str, clock: str, action: CronAction) -> str:
    """A new job fires ``interval`` minutes from now; a kept one at its own next fire, which may be sooner
    ("next check in 10 min … at 16:18" said at 16:17:46 read as a promise of ten minutes)."""
    if action == "replace":
        return f"next check in {interval} min ({why}) at {clock}"
    return f"next check at {clock} (every {interval} min: {why}){CRON_ACTION_WORDS[action]}"


CRON_ACTION_WORDS: dict[CronAction, str] = {
    "replace": "",
    "keep": "; keep the cron job",
    "recreate": "; re-create the cron job now, it expires soon",
}


def cron_action_reason(action: CronAction) -> str:
    """What the skill does with the run's cron job (`cron_expires_at` says until when it lasts)."""
    if action == "keep":
        return "same cron as this run's job: keep it (create it only if CronList shows none)."
    if action == "recreate":
        return (
            "same cron, but Claude Code would soon delete this run's job by itself: re-create it now, "
            "CronDelete, then CronCreate(cron_create)."
        )
    return "replace this run's cron job: CronDelete, then CronCreate(cron_create)."


def _cron_in_force(
    interval: int, prompt: str, local_now: datetime, in_force: HandedOutCron | None, *, same_fire: bool
) -> tuple[str, CronAction, datetime]:
    """The cron to hand out, what to do with the run's job, and when that job was (or is now) handed out.

    The cron in force stays while the interval and prompt are unchanged, until CRON_RENEW_MARGIN before
    it expires; otherwise a new cron whose first fire is ``interval`` minutes from now. In the same fire
    the unchanged cron keeps the action already handed out (the skill has not acted on it yet)."""
    same_job = in_force is not None and (in_force.interval_minutes, in_force.prompt) == (interval, prompt)
    if in_force is not None and same_job and _is_valid_cron(in_force.cron):
        if same_fire:
            return in_force.cron, in_force.action, in_force.handed_out_at
        if local_now < in_force.handed_out_at + CRON_MAX_AGE - CRON_RENEW_MARGIN:
            return in_force.cron, "keep", in_force.handed_out_at
        return in_force.cron, "recreate", local_now
    cron = cron_every(interval, local_now.replace(second=0, microsecond=0) + timedelta(minutes=interval))
    return cron, "replace", local_now


def _is_valid_cron(cron: str) -> bool:
    try:
        CronExpr.parse(cron)
    except ValueError:
        return False
    return True


def handed_out(schedule: Schedule, check_id: int | None = None) -> HandedOutCron | None:
    """What to store as the run's cron in force after ``schedule`` was handed out by the check row
    ``check_id`` (None: no job any more)."""
    if not schedule.monitoring or schedule.cron_create is None or schedule.cron_expires_at is None:
        return None
    return HandedOutCron(
        cron=schedule.cron_create.cron,
        prompt=schedule.cron_create.prompt,
        interval_minutes=schedule.interval_minutes or FIRST_INTERVAL_MINUTES,
        handed_out_at=schedule.cron_expires_at - CRON_MAX_AGE,
        action=schedule.cron_action or "replace",
        check_id=check_id,
    )


def is_anomaly(verdict: Verdict | None) -> bool:
    """Anything but a clean continue: a stop or unsure decision, or any signal above info (watch included)."""
    if verdict is None:
        return False
    if verdict.decision is not Decision.CONTINUE:
        return True
    return any(s.severity is not Severity.INFO for s in verdict.signals)


def schedule_after(
    *,
    run: str,
    verdict: Verdict | None,
    previous_interval_minutes: int | None,
    review: str | None,
    read_failed: bool,
    run_status: RunStatus,
    now: datetime | None,
    in_force: HandedOutCron | None = None,
    same_fire: bool = False,
) -> Schedule:
    """The next check after ``verdict``; ``review`` is the reviewer's STOP / CONTINUE / WAIT on it, if asked.
    A reviewer's CONTINUE clears the unsure verdict it answered: the interval climbs as when healthy.
    ``in_force``, ``same_fire``: the cron last handed out for the run (see `next_schedule`)."""
    answer = (review or "").upper()
    cleared = verdict is not None and answer == "CONTINUE"
    ended = _signal_message(verdict, SignalKind.RUN_ENDED)
    return next_schedule(
        run=run,
        decision=Decision.CONTINUE if cleared else (verdict.decision if verdict else None),
        previous_interval_minutes=previous_interval_minutes,
        anomaly=False if cleared else is_anomaly(verdict),
        review_wait=answer == "WAIT",
        read_failed=read_failed,
        run_ended=run_status.has_ended or ended is not None,
        run_status=run_status,
        now=now,
        in_force=in_force,
        same_fire=same_fire,
        stalled=not cleared and _signal_message(verdict, SignalKind.NO_NEW_DATA) is not None,
        ended_because=ended,
    )


def _signal_message(verdict: Verdict | None, kind: SignalKind) -> str | None:
    """The message of ``verdict``'s signal of ``kind`` (the judge's run-ended and no-new-data facts)."""
    found = next((s for s in verdict.signals if s.kind is kind), None) if verdict is not None else None
    return found.message if found is not None else None


def stalled_unsure(verdict: Verdict) -> bool:
    """An unsure verdict of a check that read no new points: the evidence the check before it judged."""
    return verdict.decision is Decision.UNSURE and _signal_message(verdict, SignalKind.NO_NEW_DATA) is not None


def next_action(
    snapshot: MetricSnapshot, verdict: Verdict | None, schedule: Schedule, *, same_evidence_reviewed: bool = False
) -> NextAction:
    """``same_evidence_reviewed``: the verdict is a `stalled_unsure` one whose previous verdict a reviewer
    answered: asking again about the same points costs a review (an API call at each check of a stalled log)
    and can only get the same answer, so the check goes on monitoring."""
    if not schedule.monitoring:
        return "end_monitoring"
    if snapshot.data_source is DataSource.UNREACHABLE:
        return "fix_source"
    if verdict is None:
        return "continue_monitoring"
    if verdict.decision is Decision.STOP:
        return "stop_run"
    if verdict.decision is Decision.UNSURE:
        return "continue_monitoring" if same_evidence_reviewed else "escalate_review"
    return "continue_monitoring"


def check_report(
    run: str,
    snapshot: MetricSnapshot,
    verdict: Verdict | None,
    schedule: Schedule,
    *,
    same_evidence_reviewed: bool = False,
) -> CheckReport:
    """One check's answer: the verdict's summary (or the snapshot's) and the schedule in one line, and the
    action (``same_evidence_reviewed``: see `next_action`)."""
    head = verdict.summary if verdict else snapshot.summary
    return CheckReport(
        run=run,
        summary=f"{head.rstrip('.')}; {schedule.summary}",
        snapshot=snapshot,
        verdict=verdict,
        schedule=schedule,
        next_action=next_action(snapshot, verdict, schedule, same_evidence_reviewed=same_evidence_reviewed),
    )
