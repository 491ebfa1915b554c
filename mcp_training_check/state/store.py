"""Per-run state on disk: read cursor, bounded metric history, check log and incidents (SQLite).

One file, ``$TRAINING_CHECK_HOME/state.sqlite3``, shared by the CLI and the MCP server's worker
threads and by several processes at once (WAL mode, ``busy_timeout``). A batch of new points is
applied in one ``BEGIN IMMEDIATE`` transaction, so a crash leaves the previous state intact.

Bounded history, per metric (``stored_series.StoredSeries``): the newest ``recent_points`` values at
full resolution, older ones folded into at most ``max_buckets`` buckets that keep exact counts and
extremes. Each metric is one row of numpy blobs, so applying a batch rewrites only the rows of the
metrics it touched.

While a source fills in a long run's older history, the exact points it re-reads are kept apart until
the fill arrives (`metrics`). The file itself (opening, migrating, transactions and their errors) is
`database`'s; the runs and series rows `metrics`'; the check log and incidents `checklog`'s; this module
is the one class every stage calls, each method one transaction.

Schema (version in ``meta``; ``MIGRATIONS[v]`` upgrades v-1 → v)::

    runs(run_key, cursor, info, batch_seq, last_check_at, ...)
    series(run_key, metric, counts and extremes, raw_steps, raw_values, buckets)
    checks(id, run_key, at, decision, verdict, data_source, interval_minutes, monitoring)
    incidents(id, run_key, at, data)
    reviews(id, run_key, check_id, at, decision, data)        (v2, state.reviews)
    crons(run_key, cron, prompt, interval_minutes, handed_out_at, action, check_id)  (v3, state.crons)
    meta(key, value)   the schema version; per run, a fill-in's first exact step and whether its last
                       verified stop still holds (``live_after_incident:<run_key>``, state.stops)
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel

from ..errors import StateError
from ..models import ReviewResult, RunInfo, RunStatus, Verdict
from ..sources.base import Cursor, ReadBatch
from . import metrics
from .cells import decoding, stored_time, utc_text
from .checklog import CheckRecord, insert_check, insert_incident, read_checks, read_incidents
from .crons import HandedOutCron, delete_cron, read_cron, write_cron
from .database import DB_FILENAME, HOME_ENV, open_database, state_home, transaction, unusable_home
from .history import RunHistory
from .lock import DEFAULT_LOCK_TIMEOUT_SECONDS, LOCKS_DIRNAME, RunLock, run_lock
from .reviews import insert_review, latest_review
from .stops import LIVE_AFTER_META, mark_live, read_live_after, stop_in_force

DEFAULT_RECENT_POINTS = 2048
DEFAULT_MAX_BUCKETS = 1024


class RunListing(NamedTuple):
    run_key: str
    last_check_at: datetime | None


class StateStore:
    """The state database of one home directory. Safe to share between threads."""

    def __init__(
        self,
        home: Path | None = None,
        *,
        recent_points: int = DEFAULT_RECENT_POINTS,
        max_buckets: int = DEFAULT_MAX_BUCKETS,
    ) -> None:
        if recent_points < 1 or max_buckets < 2:
            raise ValueError(f"recent_points={recent_points} must be ≥ 1 and max_buckets={max_buckets} ≥ 2")
        self.home = state_home(home)
        self.path = self.home / DB_FILENAME
        self.recent_points = recent_points
        self.max_buckets = max_buckets
        self._lock = threading.RLock()
        try:
            self.home.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            from_env = home is None and bool(os.environ.get(HOME_ENV))
            raise StateError(unusable_home(self.home, exc, from_env=from_env)) from exc
        self._conn = open_database(self.path)

    # ------------------------------------------------------------------ connection

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _transaction(self, action: str, *, write: bool) -> AbstractContextManager[sqlite3.Connection]:
        """One transaction on the shared connection (`database.transaction`): errors name ``action``."""
        return transaction(self._conn, self._lock, self.path, action, write=write)

    # ------------------------------------------------------------------ per-run lock

    def run_lock(self, run_key: str, timeout_seconds: float = DEFAULT_LOCK_TIMEOUT_SECONDS) -> RunLock:
        """Hold the run's lock across processes, so two checks of one run take turns (not reentrant)."""
        return run_lock(self.home / LOCKS_DIRNAME, run_key, timeout_seconds)

    # ------------------------------------------------------------------ metrics

    def get_cursor(self, run_key: str) -> Cursor | None:
        with self._transaction("read the cursor", write=False) as conn:
            return metrics.read_cursor(conn, run_key)

    def load_info(self, run_key: str) -> RunInfo | None:
        with self._transaction("read the run info", write=False) as conn:
            return metrics.read_info(conn, run_key)

    def run_info(self, run_key: str) -> RunInfo:
        """The stored run info; a run this tool stopped (verified, and not relaunched since: `stop_in_force`)
        counts as stopped."""
        info = self.load_info(run_key) or RunInfo()
        if self.find_stop_in_force(run_key) is not None:
            return info.model_copy(update={"status": RunStatus.STOPPED})
        return info

    def apply_batch(self, run_key: str, batch: ReadBatch, *, marks_live: bool = True) -> None:
        """Store one incremental read: new points, cursor and run info, all or nothing. ``marks_live``: new
        points (of a source a relaunch may append to: not ``one_writer``) or a restart end the stops recorded
        so far (`stops.stop_in_force`); False for the read of what a process just stopped left behind."""
        with self._transaction("apply a batch", write=True) as conn:
            metrics.apply_batch(
                conn, run_key, batch, marks_live=marks_live, recent_points=self.recent_points,
                max_buckets=self.max_buckets,
            )  # fmt: skip

    def fill_points(self, run_key: str) -> int:
        """Values a fill-in under way has re-read so far (0 when none is)."""
        with self._transaction("read the fill-in", write=False) as conn:
            return metrics.fill_points(conn, run_key)

    def load_history(self, run_key: str) -> RunHistory:
        """Everything stored for the run, ready for the judge (empty when the run is unknown)."""
        with self._transaction("load the history", write=False) as conn:
            return metrics.load_history(conn, run_key)

    # ------------------------------------------------------------------ checks and incidents

    def record_check(
        self,
        run_key: str,
        *,
        verdict: Verdict | None,
        data_source: str,
        interval_minutes: int | None,
        monitoring: bool,
        at: datetime | None = None,
    ) -> int:
        """Log one check; only the newest MAX_CHECKS_PER_RUN of a run are kept."""
        when = utc_text(at)
        with self._transaction("record a check", write=True) as conn:
            self._touch_run(conn, run_key, last_check_at=when)
            return insert_check(
                conn, run_key, at=when, verdict=verdict, data_source=data_source,
                interval_minutes=interval_minutes, monitoring=monitoring,
            )  # fmt: skip

    def recent_checks(self, run_key: str, limit: int = 10) -> list[CheckRecord]:
        """The run's latest checks, most recent first."""
        with self._transaction("read the check log", write=False) as conn:
            return read_checks(conn, run_key, limit)

    def record_incident(self, run_key: str, incident: dict[str, Any] | BaseModel) -> int:
        with self._transaction("record an incident", write=True) as conn:
            self._touch_run(conn, run_key)
            return insert_incident(conn, run_key, incident, at=utc_text())

    def find_incident(self, run_key: str) -> dict[str, Any] | None:
        """The run's latest incident (see `list_incidents` for its shape)."""
        found = self.list_incidents(run_key, limit=1)
        return found[0] if found else None

    def latest_stop(self, run_key: str) -> tuple[dict[str, Any] | None, bool]:
        """The run's latest incident, and whether it is a verified stop that still holds (`stops.stop_in_force`:
        no read since brought new points or a restart); one read for a stop that needs both."""
        with self._transaction("read the run's latest stop", write=False) as conn:
            found = read_incidents(conn, run_key, 1)
            live_after = read_live_after(conn, run_key)
        incident = found[0] if found else None
        return incident, stop_in_force(incident, live_after)

    def find_stop_in_force(self, run_key: str) -> dict[str, Any] | None:
        """The run's latest incident when it is a verified stop that still holds, else None."""
        incident, holds = self.latest_stop(run_key)
        return incident if holds else None

    def list_incidents(self, run_key: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Incidents of one run (or of all runs), most recent first: the stored JSON plus the
        store's own ``incident_id``, ``run_key`` and ``recorded_at`` (these override stored keys)."""
        with self._transaction("read incidents", write=False) as conn:
            return read_incidents(conn, run_key, limit)

    def record_review(self, run_key: str, review: ReviewResult) -> int:
        with self._transaction("record a review", write=True) as conn:
            return insert_review(conn, run_key, review, at=utc_text())

    def latest_review(self, run_key: str) -> ReviewResult | None:
        """The run's most recent review, whichever check it answered."""
        with self._transaction("read reviews", write=False) as conn, decoding("the latest review"):
            return latest_review(conn, run_key)

    def cron_in_force(self, run_key: str) -> HandedOutCron | None:
        """The cron last handed out for the run (or sweep) and when it was first handed out."""
        with self._transaction("read the cron in force", write=False) as conn, decoding("the cron in force"):
            return read_cron(conn, run_key)

    def set_cron_in_force(self, run_key: str, cron: HandedOutCron | None) -> None:
        """Remember the cron just handed out (None: monitoring ended, no job should exist)."""
        with self._transaction("record the cron in force", write=True) as conn:
            if cron is None:
                delete_cron(conn, run_key)
            else:
                write_cron(conn, run_key, cron)

    # ------------------------------------------------------------------ runs

    @staticmethod
    def _touch_run(conn: sqlite3.Connection, run_key: str, *, last_check_at: str | None = None) -> None:
        conn.execute(
            """INSERT INTO runs (run_key, created_at, last_check_at) VALUES (?, ?, ?)
               ON CONFLICT (run_key) DO UPDATE SET
                   last_check_at = coalesce(excluded.last_check_at, last_check_at)""",
            (run_key, utc_text(), last_check_at),
        )

    def list_runs(self) -> list[RunListing]:
        """Every run with state, most recently checked first (never-checked runs last)."""
        with self._transaction("list runs", write=False) as conn:
            rows = conn.execute(
                "SELECT run_key, last_check_at FROM runs ORDER BY last_check_at DESC NULLS LAST, run_key"
            ).fetchall()
            with decoding("the list of runs"):
                return [RunListing(key, stored_time(at) if at else None) for key, at in rows]

    def stored_for(self, run_key: str) -> RunFootprint:
        """What is stored for the run: what `forget_run` deletes, and the incidents it keeps."""
        with self._transaction("count what is stored for a run", write=False) as conn:
            counts = {
                table: int(conn.execute(f"SELECT count(*) FROM {table} WHERE run_key = ?", (run_key,)).fetchone()[0])
                for table in (*FORGOTTEN_TABLES, "incidents")
            }
        return RunFootprint(
            read_position=counts["runs"] > 0, metrics=counts["series"], checks=counts["checks"],
            reviews=counts["reviews"], cron=counts["crons"] > 0, incidents=counts["incidents"],
        )  # fmt: skip

    def forget_run(self, run_key: str) -> bool:
        """Delete what is stored for the run (cursor and info, history, checks, reviews, cron) so the next
        check starts fresh; False if there was none. Its incidents are kept (the evidence of what was stopped),
        and no longer stop the run: a fresh start is a new process (`stops`)."""
        with self._transaction("forget a run", write=True) as conn:
            deleted = sum(
                conn.execute(f"DELETE FROM {table} WHERE run_key = ?", (run_key,)).rowcount
                for table in FORGOTTEN_TABLES
            )
            metrics.end_fill(conn, run_key)
            if conn.execute("SELECT 1 FROM incidents WHERE run_key = ?", (run_key,)).fetchone():
                mark_live(conn, run_key)
            else:
                conn.execute("DELETE FROM meta WHERE key = ?", (LIVE_AFTER_META + run_key,))
        return deleted > 0


FORGOTTEN_TABLES = ("runs", "series", "checks", "reviews", "crons")
"""The tables `forget_run` clears of a run; ``incidents`` is not one of them."""


class RunFootprint(NamedTuple):
    """What is stored for one run (`StateStore.stored_for`)."""

    read_position: bool
    metrics: int
    checks: int
    reviews: int
    cron: bool
    incidents: int

    @property
    def forgettable(self) -> bool:
        return self.read_position or self.metrics > 0 or self.checks > 0 or self.reviews > 0 or self.cron
