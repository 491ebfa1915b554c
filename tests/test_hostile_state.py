"""A damaged state database gives one error: "state database … is damaged (…): move it aside (mv …) and the next
check starts fresh", never a JSONDecodeError, ValueError or TypeError from deep inside. Every cell of every
table of a real state (checks, an incident, a review, a cron in force) is garbled in turn, and the file is
bit-flipped; the run lock's directory cannot be created. A stored read position only its source understands
is read again from the start instead."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_training_check.errors import StateError
from mcp_training_check.models import ReviewResult
from mcp_training_check.service import Monitor
from mcp_training_check.state import DB_FILENAME, StateStore

from .runs import outcome_as_nobody

GARBAGE: list[object] = ["{", "x", '"text"', "[]", "null", 123, -1, b"\x01\x02\x03", "2026-13-45", '{"a": 1}']
DAMAGED = r"state database .* is damaged \(.*\): move it aside \(mv '.*' '.*\.bad'\) and the next check starts fresh"


def good_log(path: Path, steps: int = 300) -> Path:
    path.write_text("".join(json.dumps({"step": s, "loss": 2.0 - s / 1000}) + "\n" for s in range(steps)))
    return path


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """A state database with every table filled by the real code: (the log it watched, the file's bytes)."""
    base = tmp_path_factory.mktemp("state")
    log = good_log(base / "metrics.jsonl")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRAINING_CHECK_HOME", str(base / "home"))
        monitor = Monitor()
        monitor.check(str(log))
        report = monitor.check(str(log))
        key = monitor.context(str(log)).key
        check_id = monitor.store.recent_checks(key, 1)[0].id
        monitor.store.record_incident(key, {"outcome": "stopped", "verified": False, "reason": "test"})
        monitor.store.record_review(key, review(str(log), check_id))
        assert report.schedule is not None and monitor.store.cron_in_force(key) is not None
        monitor.close()
    return log, (base / "home" / DB_FILENAME).read_bytes()


def review(run: str, check_id: int) -> ReviewResult:
    return ReviewResult(
        run=run, summary="WAIT", decision="WAIT", reason="r", model="m", backend="agent", reviewer_failed=False,
        latency_seconds=0.1, check_id=check_id, next_action="schedule_next",
    )  # fmt: skip


def every_read(log: Path) -> None:
    """Each way a tool reads the state back."""
    monitor = Monitor()
    try:
        key = monitor.context(str(log)).key
        monitor.store.list_incidents()
        monitor.store.latest_review(key)
        monitor.store.list_runs()
        monitor.check(str(log))
        monitor.schedule_next(str(log))
    finally:
        monitor.close()


def cells(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return [
            (table, column[1])
            for table in tables
            if table != "sqlite_sequence"
            for column in conn.execute(f"PRAGMA table_info({table})")
            if column[1] not in ("run_key", "id")
        ]
    finally:
        conn.close()


def outcome(call: Callable[[], object]) -> str:
    try:
        call()
    except StateError as exc:
        return f"StateError: {exc}"
    return "no error"


def test_every_garbled_cell_is_the_one_damaged_error_or_harmless(
    pristine: tuple[Path, bytes], isolated_home: Path
) -> None:
    log, data = pristine
    db = isolated_home / DB_FILENAME
    isolated_home.mkdir(parents=True)
    db.write_bytes(data)
    damaged, harmless = [], []
    for table, column in cells(db):
        for garbage in GARBAGE:
            db.write_bytes(data)
            conn = sqlite3.connect(db)
            try:
                conn.execute(f"UPDATE {table} SET {column} = ?", (garbage,))
                conn.commit()
            except sqlite3.Error:
                continue  # a constraint refuses it: this garbage cannot be stored there
            finally:
                conn.close()
            result = outcome(lambda: every_read(log))  # any other exception fails the test here
            where = f"{table}.{column} = {garbage!r}"
            if result == "no error":
                harmless.append(where)
            elif "newer than this mcp-training-check understands" not in result:  # meta value 123: a version
                assert re.search(DAMAGED, result), (where, result)
                damaged.append(where)
    assert len(damaged) > 80, damaged  # most garbage is caught; the rest (a cron text, a decision) is just data
    assert "checks.verdict = '{'" in damaged and "runs.cursor = 'x'" in damaged
    assert "series.raw_steps = b'\\x01\\x02\\x03'" in damaged and "crons.handed_out_at = 'x'" in damaged


@pytest.mark.parametrize(
    ("cursor", "noted"),
    [
        ('{"log": {"offset": "x"}}', True),
        ('{"log": 5}', True),
        ('{"log": {"offset": 1e400}}', True),
        ('{"log": {"offset": 10, "identity": 5, "parser": 7}}', False),  # the log reader sees another file
    ],
)
def test_a_read_position_its_source_cannot_use_is_read_again_from_the_start(
    pristine: tuple[Path, bytes], isolated_home: Path, cursor: str, noted: bool
) -> None:
    log, data = pristine
    isolated_home.mkdir(parents=True)
    (isolated_home / DB_FILENAME).write_bytes(data)
    conn = sqlite3.connect(isolated_home / DB_FILENAME)
    conn.execute("UPDATE runs SET cursor = ?", (cursor,))
    conn.commit()
    conn.close()
    report = Monitor().check(str(log))
    assert report.snapshot.restarted and report.snapshot.last_step == 299
    assert report.snapshot.metrics[0].points == 300, "nothing counted twice"
    assert any("read again from the start" in w for w in report.snapshot.warnings) is noted


def test_random_bit_flips_give_the_damaged_error_or_a_working_state(
    pristine: tuple[Path, bytes], isolated_home: Path
) -> None:
    log, data = pristine
    isolated_home.mkdir(parents=True)
    db = isolated_home / DB_FILENAME
    rng = random.Random(10)
    results = []
    for _ in range(150):
        flipped = bytearray(data)
        at = rng.randrange(len(flipped))
        flipped[at] ^= 1 << rng.randrange(8)
        db.write_bytes(bytes(flipped))
        for extra in isolated_home.glob(f"{DB_FILENAME}-*"):
            extra.unlink()
        result = outcome(lambda: every_read(log))
        assert result == "no error" or re.search(DAMAGED, result) or "newer than" in result, (at, result)
        results.append(result)
    assert any(r != "no error" for r in results)


def test_a_file_that_is_not_a_database_names_the_mv(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    (isolated_home / DB_FILENAME).write_bytes(b"not a database\n" * 300)
    with pytest.raises(StateError, match=DAMAGED):
        StateStore()


def test_locks_directory_that_cannot_be_made_is_a_state_error(isolated_home: Path, tmp_path: Path) -> None:
    """Root may write anywhere, so the locks directory is made impossible another way: a file in its place."""
    log = good_log(tmp_path / "metrics.jsonl")
    isolated_home.mkdir(parents=True)
    (isolated_home / "locks").write_text("a file where the locks directory goes\n")
    with pytest.raises(StateError, match=r"cannot create the lock file .*locks.*: .*TRAINING_CHECK_HOME"):
        Monitor().check(str(log))


def test_unwritable_locks_directory_as_another_user() -> None:
    home = Path(tempfile.mkdtemp(prefix="tc-locks-"))
    try:
        home.chmod(0o777)  # the database's -wal and -shm files are made beside it
        StateStore(home).close()
        (home / "locks").mkdir()
        os.chmod(home / DB_FILENAME, 0o666)
        for extra in home.glob(f"{DB_FILENAME}-*"):
            os.chmod(extra, 0o666)
        log = good_log(home / "metrics.jsonl")
        log.chmod(0o644)

        def check_as_this_user() -> None:
            Monitor(home=home).check(str(log))

        if os.geteuid() == 0:
            result = outcome_as_nobody(check_as_this_user)
        else:
            (home / "locks").chmod(0o555)
            result = outcome(check_as_this_user)
        assert result.startswith("StateError: cannot create the lock file"), result
        assert "permission denied" in result.lower() and "TRAINING_CHECK_HOME" in result
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_a_state_database_that_is_not_a_regular_file_is_named(isolated_home: Path, kind: str) -> None:
    isolated_home.mkdir(parents=True)
    path = isolated_home / DB_FILENAME
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    words = {"fifo": "a FIFO (named pipe)", "device": "a character device", "directory": "a directory"}[kind]
    with pytest.raises(StateError, match=rf"state database .* is {re.escape(words)}, not a regular file: move it"):
        StateStore()
