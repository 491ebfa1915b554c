"""A run's metrics on disk: its ``runs`` row (read cursor, run info, batch count) and one ``series`` row per
metric, a batch applied whole, and the `RunHistory` read back from them.

While a source fills in a long run's older history (``sources.base.FillBatch``), the exact points it re-reads
are kept as series of a shadow key (`fill_key`) and replace the run's series when the fill arrives; the first
exactly read step is a ``meta`` row (``exact_from:<run_key>``) until then.

Each function works inside a transaction its caller (`store.StateStore`) holds.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import numpy as np

from ..models import RunInfo
from ..sources.base import Cursor, FillBatch, ReadBatch
from .cells import decoding, float_or_none, int_cell, int_or_none, json_object, raw_points, text_cell, utc_text
from .history import MetricSeries, RunHistory
from .stops import mark_live
from .stored_series import BUCKET_DTYPE, StoredSeries

FILL_KEY_SUFFIX = "\x00fill"  # no run key holds a NUL: a shadow key never names a real run
EXACT_FROM_META = "exact_from:"


def fill_key(run_key: str) -> str:
    """The key under which a run's fill-in series are kept until they replace its own."""
    return run_key + FILL_KEY_SUFFIX


def read_cursor(conn: sqlite3.Connection, run_key: str) -> Cursor | None:
    row = conn.execute("SELECT cursor FROM runs WHERE run_key = ?", (run_key,)).fetchone()
    with decoding("the cursor"):
        return json_object(row[0], "cursor") if row and row[0] is not None else None


def read_info(conn: sqlite3.Connection, run_key: str) -> RunInfo | None:
    row = conn.execute("SELECT info FROM runs WHERE run_key = ?", (run_key,)).fetchone()
    with decoding("the run info"):
        return RunInfo.model_validate_json(row[0]) if row and row[0] is not None else None


def apply_batch(
    conn: sqlite3.Connection, run_key: str, batch: ReadBatch, *, marks_live: bool, recent_points: int, max_buckets: int
) -> None:
    """Store one incremental read (`StateStore.apply_batch`), each series kept to ``recent_points`` exact points
    and ``max_buckets`` buckets."""
    if marks_live and (batch.restarted or (batch.new_points and not batch.one_writer)):
        mark_live(conn, run_key)
    seq = _bump_run(conn, run_key, batch)
    if batch.restarted and batch.restart_drops_read_metrics_only:
        conn.executemany(
            "DELETE FROM series WHERE run_key = ? AND metric = ?", [(run_key, m) for m in batch.series]
        )
    elif batch.restarted:
        conn.execute("DELETE FROM series WHERE run_key = ?", (run_key,))
        end_fill(conn, run_key)
    bounds = (recent_points, max_buckets)
    _append_series(conn, run_key, batch.series, seq, bounds)
    if batch.fill is not None:
        _apply_fill(conn, run_key, batch, batch.fill, seq, bounds)


def _append_series(
    conn: sqlite3.Connection, run_key: str, series: dict[str, Any], seq: int, bounds: tuple[int, int]
) -> None:
    for metric, chunk in series.items():
        if len(chunk) == 0:
            continue
        stored = _read_series(conn, run_key, metric) or StoredSeries.empty()
        stored.append(chunk.steps, chunk.values)
        stored.evict(*bounds)
        _write_series(conn, run_key, metric, stored, seq, len(chunk))


def _apply_fill(
    conn: sqlite3.Connection, run_key: str, batch: ReadBatch, fill: FillBatch, seq: int, bounds: tuple[int, int]
) -> None:
    """Grow the shadow series; when the fill arrived, they replace the run's (keeping this read's counts)."""
    shadow = fill_key(run_key)
    if fill.first:
        end_fill(conn, run_key)
    _append_series(conn, shadow, fill.series, seq, bounds)
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
    end_fill(conn, run_key)


def end_fill(conn: sqlite3.Connection, run_key: str) -> None:
    """Drop a fill-in under way: its shadow series and its first exact step."""
    conn.execute("DELETE FROM series WHERE run_key = ?", (fill_key(run_key),))
    conn.execute("DELETE FROM meta WHERE key = ?", (EXACT_FROM_META + run_key,))


def fill_points(conn: sqlite3.Connection, run_key: str) -> int:
    """Values a fill-in under way has re-read so far (0 when none is)."""
    row = conn.execute("SELECT sum(total_points) FROM series WHERE run_key = ?", (fill_key(run_key),)).fetchone()
    with decoding("the fill-in"):
        return int(row[0] or 0)


def _exact_from(conn: sqlite3.Connection, run_key: str) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (EXACT_FROM_META + run_key,)).fetchone()
    with decoding("the fill-in's first exact step"):
        return int(row[0]) if row else None


def _bump_run(conn: sqlite3.Connection, run_key: str, batch: ReadBatch) -> int:
    now = utc_text()
    row = conn.execute(
        """INSERT INTO runs (run_key, cursor, info, batch_seq, created_at, updated_at)
           VALUES (?, ?, ?, 1, ?, ?)
           ON CONFLICT (run_key) DO UPDATE SET cursor = excluded.cursor, info = excluded.info,
               batch_seq = batch_seq + 1, updated_at = excluded.updated_at
           RETURNING batch_seq""",
        (run_key, json.dumps(batch.cursor), batch.info.model_dump_json(), now, now),
    ).fetchone()
    return int(row[0])


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


def load_history(conn: sqlite3.Connection, run_key: str) -> RunHistory:
    """Everything stored for the run, ready for the judge (empty when the run is unknown)."""
    run = conn.execute("SELECT info, batch_seq FROM runs WHERE run_key = ?", (run_key,)).fetchone()
    rows = conn.execute(
        """SELECT metric, batch_seq, new_points, total_points, non_finite, first_step, min_value,
                  min_step, max_value, max_step, raw_steps, raw_values, buckets
           FROM series WHERE run_key = ? ORDER BY metric""",
        (run_key,),
    ).fetchall()
    history = RunHistory(run_key=run_key, exact_from=_exact_from(conn, run_key))
    if run is None:
        return history
    with decoding("the history"):
        if run[0] is not None:
            history.info = RunInfo.model_validate_json(run[0])
        for row in rows:
            history.metrics[text_cell(row[0])] = _metric_series(row, latest_batch=run[1])
    return history


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
