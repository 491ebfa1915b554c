"""What is kept between checks, on disk: the read cursor, a bounded history, the checks, reviews, incidents.

    store           `StateStore`: one SQLite file under ``$TRAINING_CHECK_HOME`` (WAL, shared by processes),
                    each method one transaction over the modules below
    database        the file: where it lives, opening and migrating it, transactions, damage vs access errors
    metrics         a run's cursor, info and series rows, a batch applied whole, the history read back;
                    keeps a fill-in's exact series apart until they replace an overview
    checklog        the checks (the newest kept) and the incidents of a run
    history         `RunHistory` / `MetricSeries`: the in-memory view of a run's stored metrics
    stored_series   bounded per-metric storage: recent points exact, older ones as bucket means
    reviews         the reviewer's stored answers, each tied to the check it answered
    crons           the cron job in force per run: CronCreate arguments last handed out, and since when
    stops           whether a run's verified stop still holds (not once the run was relaunched)
    schema, lock    the tables and their migrations; the per-run lock

Reads batches from `sources` (their cursor and points); knows nothing of judging, reviewing or stopping.
"""

from .checklog import MAX_CHECKS_PER_RUN, CheckRecord, last_interval
from .crons import HandedOutCron
from .database import DB_FILENAME, HOME_ENV, state_home
from .history import MetricSeries, RunHistory
from .lock import DEFAULT_LOCK_TIMEOUT_SECONDS, run_lock
from .schema import SCHEMA_VERSION
from .stops import is_verified_stop, stop_in_force
from .store import RunFootprint, RunListing, StateStore
from .stored_series import SeriesStats, StoredSeries

__all__ = [
    "DB_FILENAME",
    "DEFAULT_LOCK_TIMEOUT_SECONDS",
    "HOME_ENV",
    "MAX_CHECKS_PER_RUN",
    "SCHEMA_VERSION",
    "CheckRecord",
    "HandedOutCron",
    "MetricSeries",
    "RunFootprint",
    "RunHistory",
    "RunListing",
    "SeriesStats",
    "StateStore",
    "StoredSeries",
    "is_verified_stop",
    "last_interval",
    "run_lock",
    "state_home",
    "stop_in_force",
]
