"""The state database as a file: where it lives, opening it (WAL, migrations), one transaction at a time, and
the one error for each way it fails: damage (a cell or page this code did not write: move the file aside) vs
access (a lock, permissions, a full disk: the message says how to find the holder or fix the path).

`store.StateStore` holds one connection from `open_database` and runs every read and write in `transaction`.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import platformdirs

from ..errors import StateError
from ..files import file_kind
from .cells import CellDamage, decoding
from .schema import MIGRATIONS, SCHEMA_VERSION, schema_version

HOME_ENV = "TRAINING_CHECK_HOME"
DB_FILENAME = "state.sqlite3"
BUSY_TIMEOUT_SECONDS = 30.0  # how long a write waits for another process's transaction
WAL_AUTOCHECKPOINT_PAGES = 256  # keeps the -wal file near 1 MB instead of SQLite's 4 MB default


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


def state_home(home: Path | None = None) -> Path:
    """``home``, else ``$TRAINING_CHECK_HOME``, else the platform's user state directory."""
    if home is not None:
        return Path(home)
    env = os.environ.get(HOME_ENV)
    return Path(env) if env else Path(platformdirs.user_state_dir("training-check"))


def unusable_home(home: Path, exc: OSError, *, from_env: bool) -> str:
    """Why the state directory cannot be made, and the fix: it said "set TRAINING_CHECK_HOME" when that was
    what named the unusable path."""
    why = exc.strerror or str(exc)
    fix = (
        f"it comes from {HOME_ENV}: point that at a directory this user may create and write"
        if from_env
        else f"set {HOME_ENV} to a directory this user may create and write"
    )
    return f"cannot create the state directory {home} ({why}): {fix}"


def open_database(path: Path) -> sqlite3.Connection:
    """A connection to the state database at ``path`` in WAL mode, checked and migrated to `SCHEMA_VERSION`."""
    _refuse_special_file(path)
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StateError(f"cannot open the state database {path} ({exc}); check its permissions") from exc
    try:
        _use_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
        problems = [row[0] for row in conn.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise sqlite3.DatabaseError("; ".join(problems[:3]))
        with decoding("the schema version"):
            _migrate(conn, path)
    except (sqlite3.Error, CellDamage) as exc:
        conn.close()
        if is_damage(exc):
            raise damaged(path, f"not a usable SQLite state database: {_first_line(exc)}") from exc
        raise StateError(f"cannot open the state database {path}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _refuse_special_file(path: Path) -> None:
    """A FIFO, a device or a directory where the database goes: SQLite would say only "disk I/O error"."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing (it is created), or SQLite says why it cannot open it
    if not stat.S_ISREG(mode):
        raise StateError(
            f"state database {path} is {file_kind(mode)}, not a regular file: move it aside "
            f"(mv '{path}' '{path}.bad') and the next check starts fresh, or set {HOME_ENV}"
        )


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
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
                f"{path} has schema version {current}, newer than this mcp-training-check "
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


@contextmanager
def transaction(
    conn: sqlite3.Connection, lock: threading.RLock, path: Path, action: str, *, write: bool
) -> Iterator[sqlite3.Connection]:
    """One transaction on the shared connection, under ``lock``; SQLite errors become StateError naming ``action``.

    Every stored cell is decoded inside one of these (under `cells.decoding`), so a cell this code did not
    write (a bit flip, a hand edit) surfaces here, once, as `damaged`."""
    with lock:
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
                raise damaged(path, f"cannot {action}: {_first_line(exc)}") from exc
            raise StateError(
                f"state database {path}: cannot {action} ({exc}); if another process holds it "
                f"for more than {BUSY_TIMEOUT_SECONDS:.0f}s, find it with `fuser {path}`"
            ) from exc


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
