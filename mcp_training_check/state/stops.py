"""Whether a run's stop still holds: the one rule `stop_run` (send again?) and the schedule (monitor?) share.

A verified stop ends the run *as it was when it was stopped*, not its entry. The entry (``[runs.NAME]``, its
log path, its pid file, its tmux session) outlives the process: a person fixes the config and relaunches
under the same entry, and that new process must be watched and, if it goes bad, stopped like the first.

The rule is decided by what the run did, never by how long ago the stop was: the stop holds until a read
after it brings new points, or the source reports a restart (the log was truncated or replaced, another
W&B file, a rewound W&B history). Only a new process can do that once the old one was seen gone: the stop
reads what the stopped process left before anyone else does (``apply_batch(..., marks_live=False)``), so
the points it logged after the last check and before the kill do not count as a relaunch. A `.wandb` file
has one writer, whose wandb-core may still flush blocks after the kill: there only a restart counts
(``ReadBatch.one_writer``).

The fact is kept as a ``meta`` row per run (`LIVE_AFTER_META`): the newest incident id of the run when a
read last brought new points or a restart. A stop holds while its incident id is above it. Incidents are
never deleted for this (they are the evidence); forgetting a run moves the row past them instead.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from ..models import StopOutcome
from .cells import decoding, text_cell

LIVE_AFTER_META = "live_after_incident:"


def is_verified_stop(incident: Mapping[str, Any] | None) -> bool:
    """Whether a stored incident is the run's stop: one this tool sent and saw end.

    An incident that found nothing to stop (the pid was not running: a stale pid file, or a wrong pid) says
    nothing about the run, so it must not end monitoring or block a later stop; older databases stored those
    as ``verified`` too, hence the check of the outcome. W&B's own word that the run has already ended is
    about the run itself, so it counts.
    """
    if incident is None or incident.get("verified") is not True:
        return False
    outcome = incident.get("outcome")
    ended_on_wandb = outcome == StopOutcome.ALREADY_STOPPED.value and incident.get("method") == "wandb"
    return outcome == StopOutcome.STOPPED.value or ended_on_wandb


def stop_in_force(incident: Mapping[str, Any] | None, live_after: int | None) -> bool:
    """Whether ``incident`` (the run's latest) is a verified stop that still holds: no read since it was
    recorded brought new points or a restart (``live_after``: the newest incident id when one last did,
    None if none ever did since this row exists). An incident without an id (not from the store) holds."""
    if incident is None or not is_verified_stop(incident):
        return False
    incident_id = incident.get("incident_id")
    return live_after is None or not isinstance(incident_id, int) or incident_id > live_after


def read_live_after(conn: sqlite3.Connection, run_key: str) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (LIVE_AFTER_META + run_key,)).fetchone()
    with decoding("the run's last read after a stop"):
        return int(text_cell(row[0])) if row else None


def mark_live(conn: sqlite3.Connection, run_key: str) -> None:
    """A read brought new points or a restart: every stop recorded so far applies to a process before this one."""
    conn.execute(
        """INSERT OR REPLACE INTO meta (key, value)
           SELECT ?, coalesce(max(id), 0) FROM incidents WHERE run_key = ?""",
        (LIVE_AFTER_META + run_key, run_key),
    )
