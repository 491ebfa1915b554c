"""What happened to a run, appended one row at a time: its checks (the newest `MAX_CHECKS_PER_RUN` kept) and
its incidents (every one kept: the evidence of what was stopped).

Each function works inside a transaction its caller (`store.StateStore`) holds.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..models import Decision, Verdict
from .cells import decoding, json_object, stored_time

MAX_CHECKS_PER_RUN = 500


class CheckRecord(BaseModel):
    """One past check of a run, as `record_check` stored it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int
    at: datetime
    decision: Decision | None
    verdict: Verdict | None
    data_source: str
    interval_minutes: int | None
    monitoring: bool


def last_interval(checks: Sequence[CheckRecord]) -> int | None:
    """The interval of the latest check that set one (``checks`` most recent first; judge-only and stop rows
    carry none), since monitoring last ended: a run watched again after a stop or an end (relaunched under
    the same entry, a resumed W&B run) climbs the ladder from its first rung, like a new run."""
    for check in checks:
        if not check.monitoring:
            return None
        if check.interval_minutes:
            return check.interval_minutes
    return None


def to_json(value: Any) -> str:
    """JSON that keeps NaN/Inf (Python's json extension): a verdict's evidence may hold them."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="python")
    return json.dumps(value, default=str)


def insert_check(
    conn: sqlite3.Connection,
    run_key: str,
    *,
    at: str,
    verdict: Verdict | None,
    data_source: str,
    interval_minutes: int | None,
    monitoring: bool,
) -> int:
    """Append one check at ``at`` (`cells.utc_text`), dropping the run's checks beyond the newest
    MAX_CHECKS_PER_RUN; its id."""
    decision = verdict.decision.value if verdict else None
    cur = conn.execute(
        """INSERT INTO checks (run_key, at, decision, verdict, data_source, interval_minutes,
               monitoring) VALUES (?, ?, ?, ?, ?, ?, ?)""",
        (run_key, at, decision, to_json(verdict) if verdict else None, str(data_source),
         interval_minutes, int(monitoring)),
    )  # fmt: skip
    conn.execute(
        """DELETE FROM checks WHERE run_key = ? AND id <= (
               SELECT id FROM checks WHERE run_key = ? ORDER BY id DESC LIMIT 1 OFFSET ?)""",
        (run_key, run_key, MAX_CHECKS_PER_RUN),
    )
    return int(cur.lastrowid or 0)


def read_checks(conn: sqlite3.Connection, run_key: str, limit: int) -> list[CheckRecord]:
    """The run's latest ``limit`` checks, most recent first."""
    rows = conn.execute(
        """SELECT id, at, decision, verdict, data_source, interval_minutes, monitoring FROM checks
           WHERE run_key = ? ORDER BY id DESC LIMIT ?""",
        (run_key, limit),
    ).fetchall()
    with decoding("the check log"):
        return [
            CheckRecord(
                id=row[0], at=stored_time(row[1]), decision=row[2],
                verdict=Verdict.model_validate(json.loads(row[3])) if row[3] else None,
                data_source=row[4], interval_minutes=row[5], monitoring=bool(row[6]),
            )
            for row in rows
        ]  # fmt: skip


def insert_incident(conn: sqlite3.Connection, run_key: str, incident: dict[str, Any] | BaseModel, *, at: str) -> int:
    cur = conn.execute(
        "INSERT INTO incidents (run_key, at, data) VALUES (?, ?, ?)",
        (run_key, at, to_json(incident)),
    )
    return int(cur.lastrowid or 0)


def read_incidents(conn: sqlite3.Connection, run_key: str | None, limit: int) -> list[dict[str, Any]]:
    """Incidents of one run (or of all runs), most recent first: the stored JSON plus the store's own
    ``incident_id``, ``run_key`` and ``recorded_at`` (these override stored keys)."""
    where, args = ("WHERE run_key = ?", (run_key,)) if run_key is not None else ("", ())
    rows = conn.execute(
        f"SELECT id, run_key, at, data FROM incidents {where} ORDER BY id DESC LIMIT ?", (*args, limit)
    ).fetchall()
    with decoding("incidents"):
        return [
            {**json_object(data, "incident"), "incident_id": id_, "run_key": key, "recorded_at": at}
            for id_, key, at, data in rows
        ]
