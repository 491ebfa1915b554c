"""Stored reviews: the LLM reviewer's answers, each tied to the check whose unsure verdict it answered.

A review is only meaningful for the verdict it read: `schedule_next` and `stop_run` use the latest review
only while its ``check_id`` is still the run's latest verdict (a newer check makes it stale). Plain SQL on
the connection ``StateStore`` hands in, inside its transaction; the table comes with schema version 2.
"""

from __future__ import annotations

import sqlite3

from ..models import ReviewResult

__all__ = ["MAX_REVIEWS_PER_RUN", "MIGRATION", "insert_review", "latest_review"]

MAX_REVIEWS_PER_RUN = 100
"""Older reviews are deleted; only the latest one is ever read back, the rest is history for people."""

MIGRATION: tuple[str, ...] = (
    """CREATE TABLE reviews (
        id INTEGER PRIMARY KEY AUTOINCREMENT, run_key TEXT NOT NULL, check_id INTEGER NOT NULL,
        at TEXT NOT NULL, decision TEXT NOT NULL, data TEXT NOT NULL)""",
    "CREATE INDEX reviews_by_run ON reviews (run_key, id)",
)


def insert_review(conn: sqlite3.Connection, run_key: str, review: ReviewResult, *, at: str) -> int:
    """Store one review and prune the run's oldest beyond MAX_REVIEWS_PER_RUN."""
    cur = conn.execute(
        "INSERT INTO reviews (run_key, check_id, at, decision, data) VALUES (?, ?, ?, ?, ?)",
        (run_key, review.check_id, at, review.decision, review.model_dump_json()),
    )
    conn.execute(
        """DELETE FROM reviews WHERE run_key = ? AND id <= (
               SELECT id FROM reviews WHERE run_key = ? ORDER BY id DESC LIMIT 1 OFFSET ?)""",
        (run_key, run_key, MAX_REVIEWS_PER_RUN),
    )
    return int(cur.lastrowid or 0)


def latest_review(conn: sqlite3.Connection, run_key: str) -> ReviewResult | None:
    row = conn.execute("SELECT data FROM reviews WHERE run_key = ? ORDER BY id DESC LIMIT 1", (run_key,)).fetchone()
    return ReviewResult.model_validate_json(row[0]) if row else None
