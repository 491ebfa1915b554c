"""The state database's tables, and the migrations that make them: ``MIGRATIONS[v]`` upgrades v-1 → v.

The version lives in the ``meta`` table; `StateStore` applies the missing migrations in one transaction
and refuses a database newer than this code.
"""

from __future__ import annotations

import sqlite3

from .crons import MIGRATION as CRONS_MIGRATION
from .reviews import MIGRATION as REVIEWS_MIGRATION

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE runs (
            run_key TEXT PRIMARY KEY, cursor TEXT, info TEXT,
            batch_seq INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL,
            updated_at TEXT, last_check_at TEXT)""",
        # scalars first, blobs last: reading the counts never walks the blobs' overflow pages
        """CREATE TABLE series (
            run_key TEXT NOT NULL, metric TEXT NOT NULL,
            batch_seq INTEGER NOT NULL, new_points INTEGER NOT NULL,
            total_points INTEGER NOT NULL, non_finite INTEGER NOT NULL, first_step INTEGER,
            min_value REAL, min_step INTEGER, max_value REAL, max_step INTEGER,
            bucket_width INTEGER NOT NULL,
            raw_steps BLOB NOT NULL, raw_values BLOB NOT NULL, buckets BLOB NOT NULL,
            PRIMARY KEY (run_key, metric))""",
        """CREATE TABLE checks (
            id INTEGER PRIMARY KEY AUTOINCREMENT, run_key TEXT NOT NULL, at TEXT NOT NULL,
            decision TEXT, verdict TEXT, data_source TEXT NOT NULL,
            interval_minutes INTEGER, monitoring INTEGER NOT NULL)""",
        "CREATE INDEX checks_by_run ON checks (run_key, id)",
        """CREATE TABLE incidents (
            id INTEGER PRIMARY KEY AUTOINCREMENT, run_key TEXT NOT NULL, at TEXT NOT NULL,
            data TEXT NOT NULL)""",
        "CREATE INDEX incidents_by_run ON incidents (run_key, id)",
    ),
    2: REVIEWS_MIGRATION,
    3: CRONS_MIGRATION,
}
SCHEMA_VERSION = max(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    """The stored schema version; 0 for a new (empty) database."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is None:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0
