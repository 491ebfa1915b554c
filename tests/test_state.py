"""StateStore: round trips, bounded history, rewrites, locking across real processes, corruption."""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import sqlite3
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcp_training_check.errors import StateError
from mcp_training_check.models import Decision, RunInfo, RunStatus, Severity, Signal, SignalKind, Verdict
from mcp_training_check.sources.base import ReadBatch, SeriesChunk
from mcp_training_check.state import (
    DB_FILENAME,
    MAX_CHECKS_PER_RUN,
    SCHEMA_VERSION,
    StateStore,
)

RUN = "file:/runs/a/train.log"
MAX_STATE_BYTES = 5 * 1024 * 1024
SPAWN = multiprocessing.get_context("spawn")  # a fresh interpreter, like a second MCP server


def _batch(
    series: Mapping[str, tuple[Any, Any]],
    cursor: dict | None = None,
    *,
    restarted: bool = False,
    info: RunInfo | None = None,
) -> ReadBatch:
    chunks = {
        name: SeriesChunk(np.asarray(steps, dtype=np.int64), np.asarray(values, dtype=np.float64))
        for name, (steps, values) in series.items()
    }
    return ReadBatch(series=chunks, cursor=cursor or {}, info=info or RunInfo(), restarted=restarted)


def _points(store: StateStore, metric: str = "loss", run: str = RUN) -> tuple[list[int], list[float]]:
    series = store.load_history(run).metrics[metric]
    return series.steps.tolist(), series.values.tolist()


# --------------------------------------------------------------------------- round trips


def test_round_trip_survives_close_and_reopen(isolated_home: Path) -> None:
    info = RunInfo(status=RunStatus.RUNNING, name="gpt-small", config={"lr": 3e-4})
    with StateStore() as store:
        store.apply_batch(RUN, _batch({"loss": ([1, 2, 3], [3.0, 2.5, 2.0])}, {"offset": 120}, info=info))
    assert (isolated_home / DB_FILENAME).is_file()
    with StateStore(isolated_home) as store:
        assert store.get_cursor(RUN) == {"offset": 120}
        assert store.load_info(RUN) == info
        history = store.load_history(RUN)
        loss = history.metrics["loss"]
        assert history.info == info
        assert loss.steps.tolist() == [1, 2, 3] and loss.values.tolist() == [3.0, 2.5, 2.0]
        assert (loss.total_points, loss.new_points, loss.first_step, loss.raw_from) == (3, 3, 1, 0)
        assert (loss.min_value, loss.min_step, loss.max_value, loss.max_step) == (2.0, 3, 3.0, 1)


def test_unknown_run_has_no_state() -> None:
    with StateStore() as store:
        assert store.get_cursor(RUN) is None
        assert store.load_info(RUN) is None
        assert store.load_history(RUN).metrics == {}


def _write_in_child(home: str) -> None:
    with StateStore(Path(home)) as store:
        store.apply_batch(RUN, _batch({"loss": ([10, 20], [1.5, 1.25])}, {"offset": 7}))


def _read_in_child(home: str) -> tuple[dict | None, list[int]]:
    with StateStore(Path(home)) as store:
        return store.get_cursor(RUN), store.load_history(RUN).metrics["loss"].steps.tolist()


def test_another_process_reads_what_one_wrote(isolated_home: Path) -> None:
    writer = SPAWN.Process(target=_write_in_child, args=(str(isolated_home),))
    writer.start()
    writer.join(60)
    assert writer.exitcode == 0
    with StateStore() as store:
        assert _points(store) == ([10, 20], [1.5, 1.25])
        store.apply_batch(RUN, _batch({"loss": ([30], [1.0])}, {"offset": 9}))
    with SPAWN.Pool(1) as pool:
        assert pool.apply(_read_in_child, (str(isolated_home),)) == ({"offset": 9}, [10, 20, 30])


# --------------------------------------------------------------------------- history semantics


@pytest.mark.parametrize(
    ("batches", "steps", "values"),
    [
        pytest.param(
            [([1, 2, 3], [1, 2, 3]), ([4, 5], [4, 5])], [1, 2, 3, 4, 5], [1, 2, 3, 4, 5], id="append"
        ),
        pytest.param([([5, 5, 5], [1, 2, 3])], [5], [3], id="repeated-step-keeps-last"),
        pytest.param([([1, 2, 3], [1, 2, 3]), ([3], [9])], [1, 2, 3], [1, 2, 9], id="repeat-across-batches"),
        pytest.param(
            [([0, 1, 2, 3, 1, 2], [0, 1, 2, 3, 8, 9])], [0, 1, 2], [0, 8, 9], id="back-within-a-chunk"
        ),
        pytest.param(
            [([0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5]), ([3, 4], [7, 7])],
            [0, 1, 2, 3, 4],
            [0, 1, 2, 7, 7],
            id="resumed-from-step-3-drops-5",
        ),
        pytest.param([([10, 11], [1, 1]), ([2, 3], [5, 6])], [2, 3], [5, 6], id="back-before-first-step"),
    ],
)
def test_steps_repeat_and_go_back(batches: list, steps: list[int], values: list[float]) -> None:
    with StateStore() as store:
        for batch_steps, batch_values in batches:
            store.apply_batch(RUN, _batch({"loss": (batch_steps, batch_values)}))
        loss = store.load_history(RUN).metrics["loss"]
        assert (loss.steps.tolist(), loss.values.tolist()) == (steps, values)
        assert loss.total_points == len(steps)
        assert loss.first_step == steps[0]


def test_going_back_recomputes_the_extremes() -> None:
    with StateStore() as store:
        store.apply_batch(RUN, _batch({"loss": ([1, 2, 3], [5.0, 99.0, -7.0])}))
        store.apply_batch(RUN, _batch({"loss": ([2], [4.0])}))
        loss = store.load_history(RUN).metrics["loss"]
        assert (loss.min_value, loss.min_step, loss.max_value, loss.max_step) == (4.0, 2, 5.0, 1)


def test_restart_drops_every_stored_series() -> None:
    with StateStore() as store:
        store.apply_batch(
            RUN, _batch({"loss": ([1, 2], [1, 2]), "acc": ([1, 2], [0.1, 0.2])}, {"offset": 50})
        )
        store.apply_batch(RUN, _batch({"loss": ([1], [7.0])}, {"offset": 3}, restarted=True))
        history = store.load_history(RUN)
        assert set(history.metrics) == {"loss"}
        assert _points(store) == ([1], [7.0])
        assert store.get_cursor(RUN) == {"offset": 3}


def test_nan_and_inf_are_kept_counted_and_skipped_by_extremes() -> None:
    with StateStore() as store:
        store.apply_batch(RUN, _batch({"loss": ([1, 2, 3, 4], [2.0, math.nan, math.inf, 1.0])}))
        loss = store.load_history(RUN).metrics["loss"]
        assert np.isnan(loss.values[1]) and np.isposinf(loss.values[2])
        assert (loss.non_finite, loss.total_points) == (2, 4)
        assert (loss.min_value, loss.min_step, loss.max_value, loss.max_step) == (1.0, 4, 2.0, 1)


def test_all_nan_metric_has_no_extremes() -> None:
    with StateStore() as store:
        store.apply_batch(RUN, _batch({"loss": ([1, 2], [math.nan, -math.inf])}))
        loss = store.load_history(RUN).metrics["loss"]
        assert (loss.non_finite, loss.min_value, loss.max_value, loss.min_step) == (2, None, None, None)


def test_new_points_count_only_the_latest_batch() -> None:
    with StateStore() as store:
        store.apply_batch(RUN, _batch({"loss": ([1, 2, 3], [1, 1, 1]), "acc": ([1], [0.5])}))
        store.apply_batch(RUN, _batch({"loss": ([4, 5], [1, 1]), "acc": ([], [])}))
        metrics = store.load_history(RUN).metrics
        assert (metrics["loss"].new_points, metrics["acc"].new_points) == (2, 0)


def test_failed_batch_leaves_the_previous_state_intact() -> None:
    with StateStore() as store:
        store.apply_batch(RUN, _batch({"a": ([1], [1.0]), "b": ([1], [1.0])}, {"offset": 1}))
        bad = ReadBatch(
            series={
                "a": SeriesChunk(np.array([2], dtype=np.int64), np.array([2.0])),
                "b": SeriesChunk(np.array([2, 3], dtype=np.int64), np.array([2.0])),  # lengths differ
            },
            cursor={"offset": 2},
        )
        with pytest.raises(ValueError, match="one length"):
            store.apply_batch(RUN, bad)
        assert store.get_cursor(RUN) == {"offset": 1}
        assert _points(store, "a") == ([1], [1.0])


# --------------------------------------------------------------------------- downsampling


def test_old_points_become_bucket_means_with_exact_counts() -> None:
    with StateStore(recent_points=4, max_buckets=4) as store:
        store.apply_batch(RUN, _batch({"loss": (np.arange(20), np.arange(20.0))}))
        loss = store.load_history(RUN).metrics["loss"]
        assert loss.raw_from == 4
        assert loss.steps.tolist() == [3, 7, 11, 15, 16, 17, 18, 19]
        assert loss.values.tolist() == [1.5, 5.5, 9.5, 13.5, 16.0, 17.0, 18.0, 19.0]
        assert (loss.total_points, loss.min_value, loss.min_step, loss.max_value, loss.max_step) == (
            20,
            0,
            0,
            19,
            19,
        )


def test_point_by_point_matches_one_batch() -> None:
    """Pairwise merging keeps buckets aligned, so how the points arrived does not change them."""
    values = np.random.default_rng(0).normal(size=37)
    with StateStore(recent_points=5, max_buckets=4) as store:
        store.apply_batch("one", _batch({"loss": (np.arange(37), values)}))
        for step in range(37):
            store.apply_batch("many", _batch({"loss": ([step], [values[step]])}))
        one, many = store.load_history("one").metrics["loss"], store.load_history("many").metrics["loss"]
        assert one.steps.tolist() == many.steps.tolist()
        np.testing.assert_allclose(one.values, many.values, rtol=1e-12)
        assert (
            (one.min_value, one.min_step)
            == (many.min_value, many.min_step)
            == (values.min(), values.argmin())
        )


def test_nan_inside_buckets_is_counted_and_an_all_nan_bucket_is_nan() -> None:
    values = [math.nan, math.nan, 1.0, math.inf, 5.0, 6.0]
    with StateStore(recent_points=2, max_buckets=2) as store:
        store.apply_batch(RUN, _batch({"loss": (range(6), values)}))
        loss = store.load_history(RUN).metrics["loss"]
        assert loss.raw_from == 2 and loss.steps.tolist() == [1, 3, 4, 5]
        assert math.isnan(loss.values[0]) and loss.values[1] == 1.0
        assert (loss.non_finite, loss.total_points, loss.min_value, loss.min_step) == (3, 6, 1.0, 2)


def test_going_back_into_the_buckets_drops_the_reaching_bucket() -> None:
    """A bucket spanning the resume step goes whole (its step is its last step, past the resume)."""
    with StateStore(recent_points=2, max_buckets=2) as store:
        store.apply_batch(RUN, _batch({"loss": (range(10), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])}))
        store.apply_batch(RUN, _batch({"loss": ([5], [50.0])}))
        loss = store.load_history(RUN).metrics["loss"]
        assert loss.steps.tolist() == [3, 5] and loss.values.tolist() == [1.5, 50.0]
        assert (loss.total_points, loss.first_step, loss.max_value, loss.max_step) == (5, 0, 50.0, 5)


def _state_bytes(home: Path) -> int:
    return sum(path.stat().st_size for path in home.glob(f"{DB_FILENAME}*"))


def test_million_step_run_stays_small_and_exact(isolated_home: Path) -> None:
    steps_per_batch, batches, metrics = 1_000, 1_000, 10
    rng = np.random.default_rng(7)
    lows: dict[int, list[tuple[float, int]]] = {}
    highs: dict[int, list[tuple[float, int]]] = {}
    peak = 0
    with StateStore() as store:
        for b in range(batches):
            steps = np.arange(b * steps_per_batch, (b + 1) * steps_per_batch, dtype=np.int64)
            series = {}
            for m in range(metrics):
                values = rng.normal(size=steps_per_batch) + m
                if m == 0 and b % 100 == 0:
                    values[0] = math.nan  # 10 NaN in metric m0
                series[f"m{m}"] = (steps, values)
                lows.setdefault(m, []).append((np.nanmin(values), int(steps[np.nanargmin(values)])))
                highs.setdefault(m, []).append((np.nanmax(values), int(steps[np.nanargmax(values)])))
            store.apply_batch(RUN, _batch(series, {"batch": b}))
            if b % 97 == 0:
                peak = max(peak, _state_bytes(isolated_home))
        history = store.load_history(RUN)
    assert peak <= MAX_STATE_BYTES and _state_bytes(isolated_home) <= MAX_STATE_BYTES
    for m in range(metrics):
        stored = history.metrics[f"m{m}"]
        assert stored.total_points == steps_per_batch * batches
        assert stored.non_finite == (10 if m == 0 else 0)
        assert (stored.min_value, stored.min_step) == min(lows[m])
        assert (stored.max_value, stored.max_step) == max(highs[m])
        assert stored.first_step == 0 and stored.last_step == steps_per_batch * batches - 1
        assert stored.raw_steps.size == 2048 and stored.raw_from <= 1024
        assert np.all(np.diff(stored.steps) > 0)


# --------------------------------------------------------------------------- concurrency


def _hammer(home: str, rounds: int, points: int, metrics: int = 1) -> None:
    """One 'check' per round: read the cursor under the run lock and append the next points."""
    names = ["loss"] + [f"m{i}" for i in range(1, metrics)]
    with StateStore(Path(home)) as store:
        for _ in range(rounds):
            with store.run_lock(RUN):
                cursor = store.get_cursor(RUN) or {"next": 0}
                start = cursor["next"]
                steps = np.arange(start, start + points)
                series = {name: (steps, steps * 1.0) for name in names}
                store.apply_batch(RUN, _batch(series, {"next": start + points}))


def test_processes_checking_one_run_take_turns_and_lose_nothing(isolated_home: Path) -> None:
    workers, rounds, points = 4, 25, 40
    procs = [SPAWN.Process(target=_hammer, args=(str(isolated_home), rounds, points)) for _ in range(workers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
    assert [proc.exitcode for proc in procs] == [0] * workers
    total = workers * rounds * points
    with StateStore() as store:
        assert store.get_cursor(RUN) == {"next": total}
        loss = store.load_history(RUN).metrics["loss"]
        assert loss.total_points == total
        assert loss.raw_steps.tolist() == list(range(total - loss.raw_steps.size, total))


def _hold_lock(home: str, ready: object, release: object) -> None:
    with StateStore(Path(home)) as store, store.run_lock(RUN):
        ready.set()  # type: ignore[attr-defined]
        release.wait(60)  # type: ignore[attr-defined]


def test_lock_timeout_names_the_run_and_the_holder(isolated_home: Path) -> None:
    ready, release = SPAWN.Event(), SPAWN.Event()
    holder = SPAWN.Process(target=_hold_lock, args=(str(isolated_home), ready, release))
    holder.start()
    try:
        assert ready.wait(60)
        with StateStore() as store:
            with (
                pytest.raises(StateError, match=f"run {RUN} is locked by pid {holder.pid} "),
                store.run_lock(RUN, 0.2),
            ):
                pass
            with store.run_lock("file:/another/run", 0.2):  # other runs are not blocked
                pass
    finally:
        release.set()
        holder.join(60)
    with StateStore() as store, store.run_lock(RUN, 5):
        pass


def _apply_forever(home: str) -> None:
    _hammer(home, rounds=10**9, points=500, metrics=KILLED_WRITER_METRICS)


KILLED_WRITER_METRICS = 20  # a batch spends most of its time writing metrics: kills land mid-batch


def test_killed_writers_leave_consistent_state(isolated_home: Path) -> None:
    """SIGKILL a writer mid-stream, three times: cursor and every metric still agree afterwards."""
    for kill in range(1, 4):
        writer = SPAWN.Process(target=_apply_forever, args=(str(isolated_home),))
        writer.start()
        target, deadline = kill * 5_000, time.monotonic() + 60
        with StateStore() as store:
            while (store.get_cursor(RUN) or {"next": 0})["next"] < target and time.monotonic() < deadline:
                time.sleep(0.003)
        os.kill(writer.pid or 0, signal.SIGKILL)
        writer.join(30)
        with StateStore() as store:
            cursor = store.get_cursor(RUN)
            assert cursor is not None and cursor["next"] >= target
            metrics = store.load_history(RUN).metrics
            assert len(metrics) == KILLED_WRITER_METRICS
            assert {(s.total_points, s.last_step) for s in metrics.values()} == {
                (cursor["next"], cursor["next"] - 1)
            }


def test_threads_share_one_store() -> None:
    with StateStore() as store, ThreadPoolExecutor(8) as pool:
        runs = [f"file:/runs/{i}" for i in range(16)]
        list(pool.map(lambda run: store.apply_batch(run, _batch({"loss": (range(100), [1.0] * 100)})), runs))
        loaded = list(pool.map(store.load_history, runs))
    assert [history.metrics["loss"].total_points for history in loaded] == [100] * 16


# --------------------------------------------------------------------------- file problems and schema


@pytest.mark.parametrize(
    "content", [b"this is not a database\n" * 200, b"SQLite format 3\x00" + b"\xff" * 4000]
)
def test_corrupt_file_is_reported_never_overwritten(isolated_home: Path, content: bytes) -> None:
    isolated_home.mkdir(parents=True)
    path = isolated_home / DB_FILENAME
    path.write_bytes(content)
    with pytest.raises(StateError, match=r"is damaged .*move it aside") as caught:
        StateStore()
    assert str(path) in str(caught.value)
    assert path.read_bytes() == content


def test_schema_version_is_recorded_and_a_newer_one_refused(isolated_home: Path) -> None:
    StateStore().close()
    db = sqlite3.connect(isolated_home / DB_FILENAME)
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
        str(SCHEMA_VERSION),
    )
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    with pytest.raises(StateError, match="newer than this mcp-training-check"):
        StateStore()


def test_home_comes_from_the_environment(isolated_home: Path) -> None:
    with StateStore() as store:
        assert store.path == isolated_home / DB_FILENAME


# --------------------------------------------------------------------------- checks, incidents, runs


def _verdict(decision: Decision) -> Verdict:
    signal_ = Signal(
        kind=SignalKind.NON_FINITE, severity=Severity.CRITICAL, metric="loss", step=7,
        message="loss is NaN at step 7", evidence={"value": math.nan},
    )  # fmt: skip
    return Verdict(decision=decision, summary=f"{decision.value}: loss NaN", signals=[signal_])


def test_checks_round_trip_most_recent_first() -> None:
    start = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    with StateStore() as store:
        first = store.record_check(
            RUN,
            verdict=_verdict(Decision.STOP),
            data_source="log",
            interval_minutes=10,
            monitoring=True,
            at=start,
        )
        second = store.record_check(
            RUN, verdict=None, data_source="unreachable", interval_minutes=None, monitoring=False,
            at=start + timedelta(minutes=10),
        )  # fmt: skip
        latest, earlier = store.recent_checks(RUN)
    assert (latest.id, earlier.id) == (second, first)
    assert (latest.decision, latest.verdict, latest.monitoring, latest.at) == (
        None, None, False, start + timedelta(minutes=10)
    )  # fmt: skip
    assert earlier.decision is Decision.STOP and earlier.interval_minutes == 10
    assert earlier.verdict is not None and math.isnan(earlier.verdict.signals[0].evidence["value"])


def test_check_log_is_bounded_per_run() -> None:
    with StateStore() as store:
        for i in range(MAX_CHECKS_PER_RUN + 7):
            store.record_check(RUN, verdict=None, data_source="log", interval_minutes=i, monitoring=True)
        store.record_check(
            "file:/other", verdict=None, data_source="log", interval_minutes=1, monitoring=True
        )
        kept = store.recent_checks(RUN, limit=10_000)
        assert len(kept) == MAX_CHECKS_PER_RUN
        assert kept[0].interval_minutes == MAX_CHECKS_PER_RUN + 6 and kept[-1].interval_minutes == 7
        assert len(store.recent_checks("file:/other")) == 1


def test_incidents_runs_and_forgetting() -> None:
    early = datetime(2026, 1, 1, 9, tzinfo=UTC)
    with StateStore() as store:
        store.record_check(
            "file:/old", verdict=None, data_source="log", interval_minutes=10, monitoring=True, at=early
        )
        store.record_check(RUN, verdict=None, data_source="log", interval_minutes=10, monitoring=True)
        store.apply_batch("file:/unchecked", _batch({"loss": ([1], [1.0])}))
        first = store.record_incident(RUN, {"reason": "NaN loss", "verified": False, "incident_id": None})
        second = store.record_incident(RUN, {"reason": "NaN loss again", "verified": True})
        other = store.record_incident(
            "file:/old", Signal(kind=SignalKind.SPIKE, severity=Severity.WARNING, message="x")
        )
        found = store.find_incident(RUN)
        assert found is not None and (found["incident_id"], found["verified"], found["run_key"]) == (
            second,
            True,
            RUN,
        )
        assert [i["incident_id"] for i in store.list_incidents(RUN)] == [second, first]
        assert [i["incident_id"] for i in store.list_incidents()] == [other, second, first]
        assert store.list_incidents("file:/old")[0]["kind"] == "spike"
        runs = store.list_runs()
        assert [r.run_key for r in runs] == [RUN, "file:/old", "file:/unchecked"]
        assert runs[1].last_check_at == early and runs[2].last_check_at is None
        assert store.forget_run(RUN) is True and store.forget_run(RUN) is False
        assert store.recent_checks(RUN) == [] and store.stored_for(RUN).forgettable is False
        found = store.find_incident(RUN)  # the evidence stays
        assert found is not None and found["incident_id"] == second and store.stored_for(RUN).incidents == 2
        assert store.get_cursor(RUN) is None and RUN not in [r.run_key for r in store.list_runs()]


def test_a_wal_switch_answered_locked_at_once_waits_for_the_other_connection(tmp_path: Path) -> None:
    """SQLite refuses a racing journal-mode switch with "database is locked" without waiting its busy
    timeout (a full-suite run lost one of four processes opening a new state directory to it); the open
    retries until the other connection lets go. A connection with no busy timeout makes it happen here."""
    from mcp_training_check.state.database import _use_wal

    db = tmp_path / "state.sqlite3"
    holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    opener = sqlite3.connect(db, timeout=0, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        opener.execute("PRAGMA journal_mode=WAL")  # what the open did: one try, refused at once
    with ThreadPoolExecutor(1) as pool:
        pool.submit(lambda: (time.sleep(0.3), holder.execute("COMMIT")))
        _use_wal(opener)
    assert opener.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    opener.close()
    holder.close()
