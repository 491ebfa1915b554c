"""The cron job in force for each run: the CronCreate arguments last handed out, and since when.

Claude Code deletes a recurring CronCreate job by itself some days after it was created, and CronList
shows no creation time. So the server remembers when it first handed out the cron now in force for a
run (or a sweep): `schedule.next_schedule` keeps that cron while the interval is unchanged and says to
re-create it before it expires. A row is rewritten at every hand-out (with what the skill was told
to do, and the check row that told it) and deleted when monitoring ends. Plain SQL on the connection
``StateStore`` hands in, inside its transaction; the table comes with schema version 3.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import NamedTuple, cast, get_args

from ..models import CronAction
from .cells import stored_time

__all__ = ["MIGRATION", "HandedOutCron", "delete_cron", "read_cron", "write_cron"]

MIGRATION: tuple[str, ...] = (
    """CREATE TABLE crons (
        run_key TEXT PRIMARY KEY, cron TEXT NOT NULL, prompt TEXT NOT NULL,
        interval_minutes INTEGER NOT NULL, handed_out_at TEXT NOT NULL,
        action TEXT NOT NULL, check_id INTEGER)""",
)


class HandedOutCron(NamedTuple):
    """CronCreate arguments the skill was told to create, when that was first said, what it was told to do
    with its job the last time (``action``) and by which check row (``check_id``; None for a sweep)."""

    cron: str
    prompt: str
    interval_minutes: int
    handed_out_at: datetime  # aware, UTC
    action: CronAction = "replace"
    check_id: int | None = None


def read_cron(conn: sqlite3.Connection, run_key: str) -> HandedOutCron | None:
    row = conn.execute(
        "SELECT cron, prompt, interval_minutes, handed_out_at, action, check_id FROM crons WHERE run_key = ?",
        (run_key,),
    ).fetchone()
    if row is None:
        return None
    if row[4] not in get_args(CronAction) or not isinstance(row[2], int) or not isinstance(row[5], int | None):
        raise ValueError(f"the stored cron of {run_key} is not one this code wrote")
    return HandedOutCron(row[0], row[1], row[2], stored_time(row[3]), cast(CronAction, row[4]), row[5])


def write_cron(conn: sqlite3.Connection, run_key: str, cron: HandedOutCron) -> None:
    conn.execute(
        """INSERT OR REPLACE INTO crons (run_key, cron, prompt, interval_minutes, handed_out_at, action, check_id)
           VALUES (?, ?, ?, ?, ?, ?, ?)""",
        (
            run_key,
            cron.cron,
            cron.prompt,
            cron.interval_minutes,
            _utc_text(cron.handed_out_at),
            cron.action,
            cron.check_id,
        ),
    )


def delete_cron(conn: sqlite3.Connection, run_key: str) -> None:
    conn.execute("DELETE FROM crons WHERE run_key = ?", (run_key,))


def _utc_text(at: datetime) -> str:
    """Fixed-width UTC ISO text; a naive time is taken as local."""
    return at.astimezone(UTC).isoformat(timespec="microseconds")
