"""next_schedule: the interval ladder, when monitoring ends, and crons that CronCreate accepts."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from mcp_training_check.models import Decision, RunStatus, Schedule
from mcp_training_check.schedule import INTERVAL_LADDER_MINUTES, MAX_INTERVAL_MINUTES, CronExpr, next_schedule

C, S, U = Decision.CONTINUE, Decision.STOP, Decision.UNSURE
NOW = datetime(2026, 3, 4, 9, 47, tzinfo=UTC)


pytestmark = pytest.mark.usefixtures("utc_local_zone")


def _schedule(
    previous: int | None,
    decision: Decision | None = C,
    *,
    anomaly: bool = False,
    review_wait: bool = False,
    read_failed: bool = False,
    run_ended: bool = False,
    run_status: RunStatus | None = None,
    now: datetime = NOW,
) -> Schedule:
    return next_schedule(
        run="ent/proj/abc123",
        decision=decision,
        previous_interval_minutes=previous,
        anomaly=anomaly,
        review_wait=review_wait,
        read_failed=read_failed,
        run_ended=run_ended,
        run_status=run_status,
        now=now,
    )


# --------------------------------------------------------------------------- the ladder


@pytest.mark.parametrize(
    ("previous", "decision", "flags", "interval", "why"),
    [
        (None, C, {}, 10, "first check"),
        (None, S, {"anomaly": True}, 10, "first check"),
        (10, C, {}, 20, "healthy, interval up from 10"),
        (20, C, {}, 30, "healthy, interval up from 20"),
        (30, C, {}, 60, "healthy, interval up from 30"),
        (60, C, {}, 60, "healthy, at the 60-min cap"),
        (60, C, {"anomaly": True}, 10, "anomaly, back to 10 from 60"),
        (30, S, {}, 10, "verdict STOP, back to 10 from 30"),
        (20, U, {}, 10, "verdict UNSURE, back to 10 from 20"),
        (10, S, {}, 10, "verdict STOP, interval stays 10"),  # was "back to 10 from 10"
        (10, C, {"anomaly": True}, 10, "anomaly, interval stays 10"),
        (30, U, {"review_wait": True}, 30, "review said WAIT, interval unchanged"),
        (60, None, {"read_failed": True}, 60, "nothing could be read, interval unchanged"),
        (20, None, {}, 20, "no verdict, interval unchanged"),
        (25, C, {}, 30, "healthy, interval up from 25"),  # off-ladder 25 snaps to 20 first
        (90, C, {}, 60, "healthy, at the 60-min cap"),
        (45, None, {"read_failed": True}, 30, "nothing could be read, interval unchanged"),
    ],
)
def test_ladder(
    previous: int | None, decision: Decision | None, flags: dict, interval: int, why: str
) -> None:
    schedule = _schedule(previous, decision, **flags)
    assert schedule.monitoring is True
    assert schedule.interval_minutes == interval
    assert f"({why})" in schedule.summary


def test_healthy_run_climbs_to_the_cap_and_an_anomaly_resets_it() -> None:
    seen: list[int] = []
    previous: int | None = None
    for anomaly in [False] * 5 + [True, False]:
        previous = _schedule(previous, C, anomaly=anomaly).interval_minutes
        assert previous is not None
        seen.append(previous)
    assert seen == [10, 20, 30, 60, 60, 10, 20]
    assert tuple(sorted(set(seen))) == INTERVAL_LADDER_MINUTES and max(seen) == MAX_INTERVAL_MINUTES


def test_summary_and_cron_arguments() -> None:
    schedule = _schedule(10)
    assert schedule.summary == "next check in 20 min (healthy, interval up from 10) at 10:07 UTC"
    assert schedule.cron_create is not None
    assert schedule.cron_create.cron == "7,27,47 * * * *"
    assert schedule.cron_create.prompt == "/training-check ent/proj/abc123"
    assert schedule.cron_create.recurring is True
    assert schedule.next_check_at == NOW + timedelta(minutes=20)
    assert "CronDelete" in schedule.reason and "CronCreate" in schedule.reason


@pytest.mark.parametrize(
    ("run_ended", "status", "word"),
    [(True, RunStatus.FINISHED, "finished"), (False, RunStatus.STOPPED, "stopped"), (True, None, "ended")],
)
def test_ended_run_stops_monitoring(run_ended: bool, status: RunStatus | None, word: str) -> None:
    schedule = _schedule(30, C, run_ended=run_ended, run_status=status)
    assert schedule.monitoring is False
    assert schedule.summary == f"stop monitoring: run {word}; delete the cron job"
    assert (schedule.cron_create, schedule.interval_minutes, schedule.next_check_at) == (None, None, None)
    assert "CronDelete" in schedule.reason


def test_running_status_keeps_monitoring() -> None:
    assert _schedule(30, C, run_status=RunStatus.RUNNING).monitoring is True


# --------------------------------------------------------------------------- cron validity and timing

BOUNDARY_NOWS = [
    NOW,
    datetime(2026, 3, 4, 9, 0, 0, tzinfo=UTC),
    datetime(2026, 3, 4, 9, 59, 59, 999_999, tzinfo=UTC),  # seconds are dropped: fires at :59 + interval
    datetime(2026, 3, 4, 23, 55, 30, tzinfo=UTC),  # next fire is tomorrow
    datetime(2026, 12, 31, 23, 58, tzinfo=UTC),  # next fire is next year
    datetime(2028, 2, 28, 23, 41, tzinfo=UTC),  # into a leap day
]


def _minute_field(cron: str) -> set[int]:
    """Read the minute list back by hand, independently of CronExpr."""
    minute, *rest = cron.split()
    assert rest == ["*", "*", "*", "*"] and "/" not in minute and "*" not in minute
    return {int(part) for part in minute.split(",")}


@pytest.mark.parametrize("now", BOUNDARY_NOWS, ids=lambda now: now.strftime("%Y-%m-%d_%H:%M:%S"))
@pytest.mark.parametrize("previous", [None, 10, 20, 30])
def test_cron_fires_at_next_check_at_then_every_interval(now: datetime, previous: int | None) -> None:
    schedule = _schedule(previous, C, now=now)
    assert schedule.cron_create is not None and schedule.interval_minutes and schedule.next_check_at
    cron, interval = schedule.cron_create.cron, schedule.interval_minutes
    minutes = _minute_field(cron)
    assert all(0 <= m <= 59 for m in minutes) and len(minutes) == 60 // interval
    expected_first = now.replace(second=0, microsecond=0) + timedelta(minutes=interval)
    assert schedule.next_check_at == expected_first and schedule.next_check_at.tzinfo is not None
    expr, fire = CronExpr.parse(cron), now
    for k in range(2 * 60 // interval + 1):  # over two hours, crossing the boundary
        fire = expr.next_fire(fire)
        assert fire == expected_first + timedelta(minutes=k * interval)
        assert fire.minute in minutes


def test_cron_is_written_in_local_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A half-hour zone shows that the minutes are local: 09:47 UTC is 15:17 in UTC+05:30."""
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    schedule = _schedule(10)
    assert schedule.cron_create is not None and schedule.next_check_at is not None
    assert schedule.cron_create.cron == "17,37,57 * * * *"
    assert schedule.next_check_at == NOW + timedelta(minutes=20)
    assert schedule.next_check_at.utcoffset() == timedelta(hours=5, minutes=30)
    assert schedule.summary.endswith("at 15:37 IST")


def test_naive_now_is_local_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    schedule = _schedule(20, C, now=datetime(2026, 3, 4, 9, 47))
    assert schedule.next_check_at == datetime(
        2026, 3, 4, 10, 17, tzinfo=timezone(timedelta(hours=5, minutes=30))
    )
    assert schedule.cron_create is not None and schedule.cron_create.cron == "17,47 * * * *"


# --------------------------------------------------------------------------- the matcher


def _utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


@pytest.mark.parametrize(
    ("cron", "after", "fires"),
    [
        ("7,27,47 * * * *", _utc(2026, 3, 4, 9, 47, 30), _utc(2026, 3, 4, 10, 7)),
        ("47 * * * *", _utc(2026, 3, 4, 9, 47), _utc(2026, 3, 4, 10, 47)),
        ("*/15 * * * *", _utc(2026, 3, 4, 10, 59), _utc(2026, 3, 4, 11, 0)),
        ("0 0 1 1 *", _utc(2026, 6, 1), _utc(2027, 1, 1)),
        ("30 9-17/4 * * 1-5", _utc(2026, 1, 2, 17, 31), _utc(2026, 1, 5, 9, 30)),  # Friday evening → Monday
        ("0 12 13 * 5", _utc(2026, 1, 10), _utc(2026, 1, 13, 12)),  # the 13th OR a Friday
        ("0 0 * * 7", _utc(2026, 1, 1), _utc(2026, 1, 4)),  # 7 is Sunday
        ("0 0 * * 0", _utc(2026, 1, 1), _utc(2026, 1, 4)),
        ("0 0 29 2 *", _utc(2026, 3, 1), _utc(2028, 2, 29)),
        ("59 23 31 12 *", _utc(2026, 12, 31, 23, 58, 59), _utc(2026, 12, 31, 23, 59)),
    ],
)
def test_next_fire(cron: str, after: datetime, fires: datetime) -> None:
    expr = CronExpr.parse(cron)
    assert expr.next_fire(after) == fires
    assert expr.matches(fires)


@pytest.mark.parametrize(
    ("cron", "message"),
    [
        ("*/60 * * * *", "fires only at 0"),
        ("0 0 */40 * *", "fires only at 1"),
        ("*/45 * * * *", "does not divide 60"),
        ("0 */5 * * *", "does not divide 24"),
        ("5/15 * * * *", "N/S is not supported"),
        ("60 * * * *", "outside 0-59"),
        ("0 24 * * *", "outside 0-23"),
        ("0 0 0 * *", "outside 1-31"),
        ("10-5 * * * *", "outside 0-59"),
        ("* * * *", "needs 5"),
        ("0 0 * JAN *", "not a number"),
        ("0 0 L * *", "not a number"),
        ("0 0 ? * *", "not a number"),
    ],
)
def test_invalid_cron_is_refused(cron: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CronExpr.parse(cron)


def test_cron_that_never_fires_is_reported() -> None:
    with pytest.raises(ValueError, match="never fires"):
        CronExpr.parse("0 0 31 2 *").next_fire(_utc(2026, 1, 1))
