"""Per-run state on disk: read cursor, bounded metric history, check log and incidents (SQLite).

One file, ``$TRAINING_CHECK_HOME/state.sqlite3``, shared by the CLI and the MCP server's worker
threads and by several processes at once (WAL mode, ``busy_timeout``). A batch of new points is
applied in one ``BEGIN IMMEDIATE`` transaction, so a crash leaves the previous state intact.

Bounded history, per metric (``stored_series.StoredSeries``): the newest ``recent_points`` values at
full resolution, older ones folded into at most ``max_buckets`` buckets that keep exact counts and
extremes. Each metric is one row of numpy blobs, so applying a batch rewrites only the rows of the
metrics it touched.

While a source fills in a long run's older history (``sources.base.FillBatch``), the exact points
it re-reads are kept as series of a shadow key (`fill_key`) and replace the run's series when the
fill arrives; the first exactly read step is a ``meta`` row (``exact_from:<run_key>``) until then.

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

import json
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import platformdirs
from pydantic import BaseModel, ConfigDict

from ..errors import StateError
from ..files import file_kind
from ..models import Decision, ReviewResult, RunInfo, RunStatus, Verdict
from ..sources.base import Cursor, FillBatch, ReadBatch
from .cells import (
    CellDamage,
    decoding,
    float_or_none,
    int_cell,
    int_or_none,
    json_object,
    raw_points,
    stored_time,
    text_cell,
)
from .crons import HandedOutCron, delete_cron, read_cron, write_cron
from .history import MetricSeries, RunHistory
from .lock import DEFAULT_LOCK_TIMEOUT_SECONDS, LOCKS_DIRNAME, RunLock, run_lock
from .reviews import insert_review, latest_review
from .schema import MIGRATIONS, SCHEMA_VERSION, schema_version
from .stops import LIVE_AFTER_META, mark_live, read_live_after, stop_in_force
from .stored_series import BUCKET_DTYPE, StoredSeries
from .stored_series import SeriesStats as SeriesStats  # re-exported: it lived here before

HOME_ENV = "TRAINING_CHECK_HOME"
DB_FILENAME = "state.sqlite3"
BUSY_TIMEOUT_SECONDS = 30.0  # how long a write waits for another process's transaction
DEFAULT_RECENT_POINTS = 2048
DEFAULT_MAX_BUCKETS = 1024
MAX_CHECKS_PER_RUN = 500
WAL_AUTOCHECKPOINT_PAGES = 256  # keeps the -wal file near 1 MB instead of SQLite's 4 MB default
FILL_KEY_SUFFIX = "\x00fill"  # no run key holds a NUL: a shadow key never names a real run
EXACT_FROM_META = "exact_from:"


NOT_DAMAGE = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_FULL",
              "SQLITE_PERM", "SQLITE_NOMEM", "SQLITE_INTERRUPT", "SQLITE_PROTOCOL", "SQLITE_AUTH")  # fmt: skip
"""SQLite errors about access to the file (a lock, permissions, a full disk), not about what it holds."""


def is_damage(exc: BaseException) -> bool:
    """A stored cell or page this code did not write, as opposed to a problem of access."""
    if isinstance(exc, CellDamage):
        return True
    name = getattr(exc, "sqlite_errorname", None) or ""
    return isinstance(exc, sqlite3.DatabaseError) and not name.startswith(NOT_DAMAGE)


def damaged(path: Path, detail: object) -> StateError:
    """The one error for a state database that cannot be read back: what was wrong and the way out."""
    return StateError(
        f"state database {path} is damaged ({detail}): move it aside (mv '{path}' '{path}.bad') and the next "
        "check starts fresh"
    )


def fill_key(run_key: str) -> str:
    """The key under which a run's fill-in series are kept until they replace its own."""
    return run_key + FILL_KEY_SUFFIX


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


class RunListing(NamedTuple):
    run_key: str
    last_check_at: datetime | None


def state_home(home: Path | None = None) -> Path:
    """``home``, else ``$TRAINING_CHECK_HOME``, else the platform's user state directory."""
    if home is not None:
        return Path(home)
    env = os.environ.get(HOME_ENV)
    return Path(env) if env else Path(platformdirs.user_state_dir("training-check"))


def _unusable_home(home: Path, exc: OSError, *, from_env: bool) -> str:
    """Why the state directory cannot be made, and the fix: it said "set TRAINING_CHECK_HOME" when that was
    what named the unusable path."""
    why = exc.strerror or str(exc)
    fix = (
        f"it comes from {HOME_ENV}: point that at a directory this user may create and write"
        if from_env
        else f"set {HOME_ENV} to a directory this user may create and write"
    )
    return f"cannot create the state directory {home} ({why}): {fix}"


def _utc_text(at: datetime | None = None) -> str:
    """Fixed-width UTC ISO text, so text order is time order. Naive times are taken as local."""
    return (at or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="microseconds")


def _to_json(value: Any) -> str:
    """JSON that keeps NaN/Inf (Python's json extension): a verdict's evidence may hold them."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="python")
    return json.dumps(value, default=str)


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
            raise StateError(_unusable_home(self.home, exc, from_env=from_env)) from exc
        self._conn = self._open()

    # ------------------------------------------------------------------ connection

    def _open(self) -> sqlite3.Connection:
        self._refuse_special_file()
        try:
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StateError(f"cannot open the state database {self.path} ({exc}); check its permissions") from exc
        try:
            _use_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
            problems = [row[0] for row in conn.execute("PRAGMA quick_check")]
            if problems != ["ok"]:
                raise sqlite3.DatabaseError("; ".join(problems[:3]))
            with decoding("the schema version"):
                self._migrate(conn)
        except (sqlite3.Error, CellDamage) as exc:
            conn.close()
            if is_damage(exc):
                raise damaged(self.path, f"not a usable SQLite state database: {_first_line(exc)}") from exc
            raise StateError(f"cannot open the state database {self.path}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _refuse_special_file(self) -> None:
        """A FIFO, a device or a directory where the database goes: SQLite would say only "disk I/O error"."""
        try:
            mode = os.stat(self.path).st_mode
        except OSError:
            return  # missing (it is created), or SQLite says why it cannot open it
        if not stat.S_ISREG(mode):
            raise StateError(
                f"state database {self.path} is {file_kind(mode)}, not a regular file: move it aside "
                f"(mv '{self.path}' '{self.path}.bad') and the next check starts fresh, or set {HOME_ENV}"
            )

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Bring the schema to SCHEMA_VERSION; inside one write transaction so racing opens agree."""
        if schema_version(conn) == SCHEMA_VERSION:
            return  # the common case takes no write lock
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            current = schema_version(conn)
            if current == 0 and conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone():
                raise sqlite3.DatabaseError("its tables exist but its schema version is gone")
            if current > SCHEMA_VERSION:
                raise StateError(
                    f"{self.path} has schema version {current}, newer than this mcp-training-check "
                    f"understands ({SCHEMA_VERSION}); upgrade it or point {HOME_ENV} elsewhere"
                )
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    conn.execute(statement)
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self, action: str, *, write: bool) -> Iterator[sqlite3.Connection]:
        """One transaction on the shared connection; SQLite errors become StateError naming ``action``.

        Every stored cell is decoded inside one of these (under `cells.decoding`), so a cell this code did not
        write (a bit flip, a hand edit) surfaces here, once, as `damaged`."""
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except (sqlite3.Error, CellDamage) as exc:  # every stored cell is decoded in here
                if is_damage(exc):
                    raise damaged(self.path, f"cannot {action}: {_first_line(exc)}") from exc
                raise StateError(
                    f"state database {self.path}: cannot {action} ({exc}); if another process holds it "
                    f"for more than {BUSY_TIMEOUT_SECONDS:.0f}s, find it with `fuser {self.path}`"
                ) from exc

    # ------------------------------------------------------------------ per-run lock

    def run_lock(self, run_key: str, timeout_seconds: float = DEFAULT_LOCK_TIMEOUT_SECONDS) -> RunLock:
        """Hold the run's lock across processes, so two checks of one run take turns (not reentrant)."""
        return run_lock(self.home / LOCKS_DIRNAME, run_key, timeout_seconds)

    # ------------------------------------------------------------------ metrics

    def get_cursor(self, run_key: str) -> Cursor | None:
        with self._transaction("read the cursor", write=False) as conn:
            row = conn.execute("SELECT cursor FROM runs WHERE run_key = ?", (run_key,)).fetchone()
            with decoding("the cursor"):
                return json_object(row[0], "cursor") if row and row[0] is not None else None

    def load_info(self, run_key: str) -> RunInfo | None:
        with self._transaction("read the run info", write=False) as conn:
            row = conn.execute("SELECT info FROM runs WHERE run_key = ?", (run_key,)).fetchone()
            with decoding("the run info"):
                return RunInfo.model_validate_json(row[0]) if row and row[0] is not None else None

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
            if marks_live and (batch.restarted or (batch.new_points and not batch.one_writer)):
                mark_live(conn, run_key)
            seq = self._bump_run(conn, run_key, batch)
            if batch.restarted and batch.restart_drops_read_metrics_only:
                conn.executemany(
                    "DELETE FROM series WHERE run_key = ? AND metric = ?", [(run_key, m) for m in batch.series]
                )
            elif batch.restarted:
                conn.execute("DELETE FROM series WHERE run_key = ?", (run_key,))
                self._end_fill(conn, run_key)
            self._append_series(conn, run_key, batch.series, seq)
            if batch.fill is not None:
                self._apply_fill(conn, run_key, batch, batch.fill, seq)

    def _append_series(self, conn: sqlite3.Connection, run_key: str, series: dict[str, Any], seq: int) -> None:
        for metric, chunk in series.items():
            if len(chunk) == 0:
                continue
            stored = self._read_series(conn, run_key, metric) or StoredSeries.empty()
            stored.append(chunk.steps, chunk.values)
            stored.evict(self.recent_points, self.max_buckets)
            self._write_series(conn, run_key, metric, stored, seq, len(chunk))

    def _apply_fill(self, conn: sqlite3.Connection, run_key: str, batch: ReadBatch, fill: FillBatch, seq: int) -> None:
        """Grow the shadow series; when the fill arrived, they replace the run's (keeping this read's counts)."""
        shadow = fill_key(run_key)
        if fill.first:
            self._end_fill(conn, run_key)
        self._append_series(conn, shadow, fill.series, seq)
        if not fill.done:
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                (EXACT_FROM_META + run_key, str(fill.exact_from)),
            )
            return
        conn.execute(
            "DELETE FROM series WHERE run_key = ? AND metric IN (SELECT metric FROM series WHERE run_key = ?)",
            (run_key, shadow),
        )
        conn.execute(
            "UPDATE series SET run_key = ?, batch_seq = ?, new_points = 0 WHERE run_key = ?", (run_key, seq, shadow)
        )
        conn.executemany(
            "UPDATE series SET new_points = ? WHERE run_key = ? AND metric = ?",
            [(len(chunk), run_key, metric) for metric, chunk in batch.series.items()],
        )
        self._end_fill(conn, run_key)

    @staticmethod
    def _end_fill(conn: sqlite3.Connection, run_key: str) -> None:
        conn.execute("DELETE FROM series WHERE run_key = ?", (fill_key(run_key),))
        conn.execute("DELETE FROM meta WHERE key = ?", (EXACT_FROM_META + run_key,))

    def fill_points(self, run_key: str) -> int:
        """Values a fill-in under way has re-read so far (0 when none is)."""
        with self._transaction("read the fill-in", write=False) as conn:
            row = conn.execute(
                "SELECT sum(total_points) FROM series WHERE run_key = ?", (fill_key(run_key),)
            ).fetchone()
            with decoding("the fill-in"):
                return int(row[0] or 0)

    @staticmethod
    def _exact_from(conn: sqlite3.Connection, run_key: str) -> int | None:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (EXACT_FROM_META + run_key,)).fetchone()
        with decoding("the fill-in's first exact step"):
            return int(row[0]) if row else None

    @staticmethod
    def _bump_run(conn: sqlite3.Connection, run_key: str, batch: ReadBatch) -> int:
        now = _utc_text()
        row = conn.execute(
            """INSERT INTO runs (run_key, cursor, info, batch_seq, created_at, updated_at)
               VALUES (?, ?, ?, 1, ?, ?)
               ON CONFLICT (run_key) DO UPDATE SET cursor = excluded.cursor, info = excluded.info,
                   batch_seq = batch_seq + 1, updated_at = excluded.updated_at
               RETURNING batch_seq""",
            (run_key, json.dumps(batch.cursor), batch.info.model_dump_json(), now, now),
        ).fetchone()
        return int(row[0])

    @staticmethod
    def _read_series(conn: sqlite3.Connection, run_key: str, metric: str) -> StoredSeries | None:
        row = conn.execute(
            """SELECT raw_steps, raw_values, buckets, bucket_width, first_step FROM series
               WHERE run_key = ? AND metric = ?""",
            (run_key, metric),
        ).fetchone()
        if row is None:
            return None
        with decoding(f"the series {metric!r}"):
            raw_steps, raw_values = raw_points(row[0], row[1])
            return StoredSeries(
                raw_steps=raw_steps,
                raw_values=raw_values,
                buckets=np.frombuffer(row[2], dtype=BUCKET_DTYPE),
                bucket_width=int_cell(row[3]),
                first_step=int_or_none(row[4]),
            )

    @staticmethod
    def _write_series(
        conn: sqlite3.Connection, run_key: str, metric: str, stored: StoredSeries, seq: int, new_points: int
    ) -> None:
        stats = stored.stats()
        conn.execute(
            """INSERT OR REPLACE INTO series (run_key, metric, batch_seq, new_points, total_points,
                   non_finite, first_step, min_value, min_step, max_value, max_step, bucket_width,
                   raw_steps, raw_values, buckets)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                run_key, metric, seq, new_points, stats.total_points, stats.non_finite, stored.first_step,
                stats.min_value, stats.min_step, stats.max_value, stats.max_step, stored.bucket_width,
                stored.raw_steps.astype("<i8").tobytes(), stored.raw_values.astype("<f8").tobytes(),
                stored.buckets.tobytes(),
            ),
        )  # fmt: skip

    def load_history(self, run_key: str) -> RunHistory:
        """Everything stored for the run, ready for the judge (empty when the run is unknown)."""
        with self._transaction("load the history", write=False) as conn:
            run = conn.execute("SELECT info, batch_seq FROM runs WHERE run_key = ?", (run_key,)).fetchone()
            rows = conn.execute(
                """SELECT metric, batch_seq, new_points, total_points, non_finite, first_step, min_value,
                          min_step, max_value, max_step, raw_steps, raw_values, buckets
                   FROM series WHERE run_key = ? ORDER BY metric""",
                (run_key,),
            ).fetchall()
            exact_from = self._exact_from(conn, run_key)
            history = RunHistory(run_key=run_key, exact_from=exact_from)
            if run is None:
                return history
            with decoding("the history"):
                if run[0] is not None:
                    history.info = RunInfo.model_validate_json(run[0])
                for row in rows:
                    history.metrics[text_cell(row[0])] = _metric_series(row, latest_batch=run[1])
            return history

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
        when = _utc_text(at)
        decision = verdict.decision.value if verdict else None
        with self._transaction("record a check", write=True) as conn:
            self._touch_run(conn, run_key, last_check_at=when)
            cur = conn.execute(
                """INSERT INTO checks (run_key, at, decision, verdict, data_source, interval_minutes,
                       monitoring) VALUES (?, ?, ?, ?, ?, ?, ?)""",
                (run_key, when, decision, _to_json(verdict) if verdict else None, str(data_source),
                 interval_minutes, int(monitoring)),
            )  # fmt: skip
            conn.execute(
                """DELETE FROM checks WHERE run_key = ? AND id <= (
                       SELECT id FROM checks WHERE run_key = ? ORDER BY id DESC LIMIT 1 OFFSET ?)""",
                (run_key, run_key, MAX_CHECKS_PER_RUN),
            )
        return int(cur.lastrowid or 0)

    def recent_checks(self, run_key: str, limit: int = 10) -> list[CheckRecord]:
        """The run's latest checks, most recent first."""
        with self._transaction("read the check log", write=False) as conn:
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

    def record_incident(self, run_key: str, incident: dict[str, Any] | BaseModel) -> int:
        with self._transaction("record an incident", write=True) as conn:
            self._touch_run(conn, run_key)
            cur = conn.execute(
                "INSERT INTO incidents (run_key, at, data) VALUES (?, ?, ?)",
                (run_key, _utc_text(), _to_json(incident)),
            )
        return int(cur.lastrowid or 0)

    def find_incident(self, run_key: str) -> dict[str, Any] | None:
        """The run's latest incident (see `list_incidents` for its shape)."""
        found = self.list_incidents(run_key, limit=1)
        return found[0] if found else None

    def latest_stop(self, run_key: str) -> tuple[dict[str, Any] | None, bool]:
        """The run's latest incident, and whether it is a verified stop that still holds (`stops.stop_in_force`:
        no read since brought new points or a restart); one read for a stop that needs both."""
        with self._transaction("read the run's latest stop", write=False) as conn:
            found = _incidents(conn, run_key, 1)
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
            return _incidents(conn, run_key, limit)

    def record_review(self, run_key: str, review: ReviewResult) -> int:
        with self._transaction("record a review", write=True) as conn:
            return insert_review(conn, run_key, review, at=_utc_text())

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
            (run_key, _utc_text(), last_check_at),
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
            self._end_fill(conn, run_key)
            if conn.execute("SELECT 1 FROM incidents WHERE run_key = ?", (run_key,)).fetchone():
                mark_live(conn, run_key)
            else:
                conn.execute("DELETE FROM meta WHERE key = ?", (LIVE_AFTER_META + run_key,))
        return deleted > 0


def _incidents(conn: sqlite3.Connection, run_key: str | None, limit: int) -> list[dict[str, Any]]:
    where, args = ("WHERE run_key = ?", (run_key,)) if run_key is not None else ("", ())
    rows = conn.execute(
        f"SELECT id, run_key, at, data FROM incidents {where} ORDER BY id DESC LIMIT ?", (*args, limit)
    ).fetchall()
    with decoding("incidents"):
        return [
            {**json_object(data, "incident"), "incident_id": id_, "run_key": key, "recorded_at": at}
            for id_, key, at, data in rows
        ]


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


def _metric_series(row: tuple[Any, ...], *, latest_batch: int) -> MetricSeries:
    """One ``series`` row → MetricSeries: bucket means, then the full-resolution points. Raises a `CELL_DAMAGE`
    error on a cell this code did not write."""
    buckets = np.frombuffer(row[12], dtype=BUCKET_DTYPE)
    raw_steps, raw_values = raw_points(row[10], row[11])
    return MetricSeries(
        name=row[0],
        steps=np.concatenate([buckets["step"], raw_steps]).astype(np.int64),
        values=np.concatenate([StoredSeries.bucket_means(buckets), raw_values]).astype(np.float64),
        raw_from=int(buckets.size),
        total_points=int_cell(row[3]),
        non_finite=int_cell(row[4]),
        new_points=int_cell(row[2]) if row[1] == latest_batch else 0,
        first_step=int_or_none(row[5]),
        min_value=float_or_none(row[6]),
        min_step=int_or_none(row[7]),
        max_value=float_or_none(row[8]),
        max_step=int_or_none(row[9]),
    )


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else ""


def _use_wal(conn: sqlite3.Connection) -> None:
    """Put the database in WAL mode, waiting up to ``BUSY_TIMEOUT_SECONDS`` for other connections. Switching
    a new database's journal mode needs it to itself, and SQLite answers a racing open's switch with
    "database is locked" at once rather than after its busy timeout: four checks opening a new state
    directory together lost one to it. Once in WAL mode (kept in the file) the pragma takes no lock."""
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)
