"""A cron job never lapses: the cron in force is kept while the interval holds, re-created before Claude
Code's expiry, and remembered in the state database (schema v3) across processes and upgrades."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mcp_training_check.group_check import CRON_JOBS_PER_SESSION, group_report
from mcp_training_check.models import Decision, RunKind, RunLine, RunRef, Schedule
from mcp_training_check.schedule import CRON_MAX_AGE, CRON_RENEW_MARGIN, handed_out, next_schedule
from mcp_training_check.service import Monitor
from mcp_training_check.state import HandedOutCron, StateStore
from mcp_training_check.state.schema import MIGRATIONS, SCHEMA_VERSION

NOW = datetime(2026, 3, 4, 9, 47, tzinfo=UTC)
RUN = "ent/proj/abc123"
PROMPT = f"/training-check {RUN}"


pytestmark = pytest.mark.usefixtures("utc_local_zone")


def healthy(previous: int | None, now: datetime, in_force: HandedOutCron | None, run: str = RUN) -> Schedule:
    return next_schedule(
        run=run, decision=Decision.CONTINUE, previous_interval_minutes=previous, anomaly=False,
        review_wait=False, read_failed=False, run_ended=False, now=now, in_force=in_force,
    )  # fmt: skip


def in_force(cron: str = "47 * * * *", interval: int = 60, age: timedelta = timedelta(0)) -> HandedOutCron:
    return HandedOutCron(cron, PROMPT, interval, NOW - age)


# --------------------------------------------------------------------------- what the schedule says


def test_first_schedule_replaces_and_expires_seven_days_later() -> None:
    schedule = healthy(None, NOW, None)
    assert schedule.cron_action == "replace"
    assert schedule.cron_expires_at == NOW + timedelta(days=7)
    assert schedule.cron_create is not None and schedule.cron_create.durable is True
    assert handed_out(schedule) == HandedOutCron("7,17,27,37,47,57 * * * *", PROMPT, 10, NOW)


def test_same_interval_keeps_the_cron_and_its_phase() -> None:
    """At the cap, a fire that came 13 minutes late (Claude Code's per-job jitter) keeps the job: the next
    fire is the job's own, and the expiry is counted from when the job was first handed out."""
    late_fire = NOW + timedelta(days=2, minutes=13)
    schedule = healthy(60, late_fire, in_force(age=timedelta(0)))
    assert schedule.cron_action == "keep"
    assert schedule.cron_create is not None and schedule.cron_create.cron == "47 * * * *"
    assert schedule.next_check_at == NOW + timedelta(days=2, hours=1)
    assert schedule.cron_expires_at == NOW + CRON_MAX_AGE
    assert schedule.summary.endswith("; keep the cron job")
    assert "keep it" in schedule.reason
    # the job fires 47 minutes on: "next check in 60 min … at <its fire>" read as a promise of an hour
    clock = f"{schedule.next_check_at.astimezone():%H:%M %Z}".strip()
    assert schedule.summary.startswith(f"next check at {clock} (every 60 min: healthy, at the 60-min cap)")


@pytest.mark.parametrize(
    ("age", "action"),
    [
        (CRON_MAX_AGE - CRON_RENEW_MARGIN - timedelta(minutes=1), "keep"),
        (CRON_MAX_AGE - CRON_RENEW_MARGIN, "recreate"),
        (CRON_MAX_AGE - timedelta(minutes=5), "recreate"),
        (CRON_MAX_AGE + timedelta(days=3), "recreate"),  # the skill missed it: re-create whatever happened
    ],
)
def test_a_job_near_its_expiry_is_recreated_now(age: timedelta, action: str) -> None:
    schedule = healthy(60, NOW, in_force(age=age))
    assert schedule.cron_action == action
    assert schedule.cron_create is not None and schedule.cron_create.cron == "47 * * * *"
    if action == "recreate":
        assert schedule.summary.endswith("re-create the cron job now, it expires soon")
        assert "re-create it now" in schedule.reason and "CronDelete" in schedule.reason
        assert schedule.cron_expires_at == NOW + CRON_MAX_AGE  # counted from this re-creation
        stored = handed_out(schedule)
        assert stored is not None and stored.handed_out_at == NOW
    else:
        assert schedule.cron_expires_at == NOW - age + CRON_MAX_AGE


def test_healthy_for_a_week_never_lets_the_job_expire() -> None:
    """Fires every hour (13 min late, as jitter does) for 10 days, the skill doing what each schedule says:
    the job in force is never older than CRON_MAX_AGE when it fires."""
    stored: HandedOutCron | None = None
    created: datetime | None = None
    now, previous, oldest, recreations = NOW, None, timedelta(0), 0
    while now < NOW + timedelta(days=10):
        schedule = healthy(previous, now, stored)
        if schedule.cron_action != "keep":
            created, recreations = now, recreations + (schedule.cron_action == "recreate")
        assert created is not None and schedule.next_check_at is not None
        stored, previous = handed_out(schedule), schedule.interval_minutes
        now = schedule.next_check_at + timedelta(minutes=13)
        oldest = max(oldest, now - created)
    assert recreations == 1
    assert oldest < CRON_MAX_AGE - CRON_RENEW_MARGIN + timedelta(hours=2)


@pytest.mark.parametrize(
    "stored",
    [
        in_force(cron="7,27,47 * * * *", interval=20),  # the interval climbed: a new cron
        HandedOutCron("47 * * * *", "/training-check other-run", 60, NOW),  # another prompt
        in_force(cron="*/60 * * * *"),  # unreadable stored cron: never handed out again
    ],
)
def test_another_interval_or_prompt_replaces_the_job(stored: HandedOutCron) -> None:
    schedule = healthy(30, NOW + timedelta(minutes=5), stored)
    assert schedule.interval_minutes == 60
    assert schedule.cron_action == "replace"
    assert schedule.cron_create is not None and schedule.cron_create.cron == "52 * * * *"
    assert schedule.cron_expires_at == NOW + timedelta(minutes=5) + CRON_MAX_AGE


def test_ended_run_has_no_job_to_keep() -> None:
    schedule = next_schedule(
        run=RUN, decision=Decision.CONTINUE, previous_interval_minutes=60, anomaly=False, review_wait=False,
        read_failed=False, run_ended=True, now=NOW, in_force=in_force(),
    )  # fmt: skip
    assert schedule.monitoring is False and schedule.cron_action is None
    assert handed_out(schedule) is None


def test_a_sweep_has_one_job_that_is_kept_and_names_the_limit() -> None:
    group = RunRef(raw="ent/proj/sweeps/sw1", kind=RunKind.WANDB_SWEEP, entity="ent", project="proj", sweep_id="sw1")
    runs = [f"wandb:ent/proj/r{i}" for i in range(CRON_JOBS_PER_SESSION + 10)]
    members = [
        (RunLine(run=run, decision=Decision.CONTINUE, summary="ok", next_action="continue_monitoring"),
         healthy(30, NOW, None, run=run))
        for run in runs
    ]  # fmt: skip
    first = group_report(group, members, NOW, in_force=None).schedule
    assert first.cron_action == "replace" and first.interval_minutes == 60
    assert first.cron_create is not None and first.cron_create.prompt == "/training-check ent/proj/sweeps/sw1"
    assert f"never one per run (Claude Code allows {CRON_JOBS_PER_SESSION} jobs a session)" in first.reason
    later = group_report(group, members, NOW + timedelta(hours=1, minutes=2), in_force=handed_out(first)).schedule
    assert later.cron_action == "keep" and later.cron_create == first.cron_create
    assert later.summary.endswith("; keep the cron job")


# --------------------------------------------------------------------------- stored


def test_cron_in_force_round_trips_and_is_forgotten(isolated_home: Path) -> None:
    cron = HandedOutCron("7,27,47 * * * *", PROMPT, 20, NOW)
    with StateStore() as store:
        assert store.cron_in_force("k") is None
        store.set_cron_in_force("k", cron)
    with StateStore() as store:  # another open, as another process would
        assert store.cron_in_force("k") == cron
        store.set_cron_in_force("k", None)
        assert store.cron_in_force("k") is None
        store.set_cron_in_force("k", cron)
        assert store.forget_run("k") and store.cron_in_force("k") is None


def test_a_version_2_database_is_upgraded_keeping_its_data(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    db = sqlite3.connect(isolated_home / "state.sqlite3")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for version in (1, 2):
        for statement in MIGRATIONS[version]:
            db.execute(statement)
    db.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    db.execute(
        "INSERT INTO checks (run_key, at, data_source, interval_minutes, monitoring) VALUES ('k', ?, 'log', 30, 1)",
        (NOW.isoformat(),),
    )
    db.commit()
    db.close()
    with StateStore() as store:
        assert store.recent_checks("k")[0].interval_minutes == 30
        assert store.cron_in_force("k") is None
        store.set_cron_in_force("k", HandedOutCron("47 * * * *", PROMPT, 60, NOW))
    db = sqlite3.connect(isolated_home / "state.sqlite3")
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    assert db.execute("SELECT cron FROM crons WHERE run_key = 'k'").fetchone() == ("47 * * * *",)
    db.close()


# --------------------------------------------------------------------------- through Monitor


def test_a_review_in_the_same_fire_repeats_the_recreate_and_the_next_fire_keeps(tmp_path: Path) -> None:
    """check says recreate; escalate_review → schedule_next in the same fire must still say recreate (the
    skill has not re-created the job yet), and the next fire's check keeps the new job."""
    log = tmp_path / "train.jsonl"
    clock = [NOW]
    monitor = Monitor(clock=lambda: clock[0])
    step = 0

    def fire(after: timedelta) -> Schedule:
        nonlocal step
        clock[0] += after
        with log.open("a") as handle:
            for _ in range(40):
                handle.write(json.dumps({"step": step, "loss": 3.0 / (1 + step / 100) ** 0.5, "lr": 3e-4}) + "\n")
                step += 1
        return monitor.check(str(log)).schedule

    actions = [fire(timedelta(minutes=m)).cron_action for m in (0, 10, 20, 30, 60)]
    assert actions == ["replace", "replace", "replace", "replace", "keep"]
    hourly = monitor.store.cron_in_force(f"file:{log}")
    assert hourly is not None and hourly.handed_out_at == NOW + timedelta(minutes=60)
    renewal = fire(CRON_MAX_AGE - CRON_RENEW_MARGIN)
    assert renewal.cron_action == "recreate"
    after_review = monitor.schedule_next(str(log), review="WAIT")
    assert after_review.cron_action == "recreate" and after_review.cron_create == renewal.cron_create
    assert after_review.cron_expires_at == renewal.cron_expires_at == clock[0] + CRON_MAX_AGE
    assert fire(timedelta(hours=1)).cron_action == "keep"
    monitor.close()
