"""Incidents: what a stop (or attempted stop) leaves behind in the project's Markdown notes.

`Incident` is the record (run, reason, last verdict, key metrics, how the stop went); `render_incident`
turns it into one Markdown entry headed by an invisible marker; `write_incident_note` appends that entry
to the notes file, never rewriting it, and never twice for the same incident.
"""

from __future__ import annotations

import fcntl
import hashlib
import math
import os
from pathlib import Path

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from ..errors import StateError
from ..models import Decision, MetricSnapshot, Signal, StopMethod, StopOutcome

__all__ = ["Incident", "KeyMetric", "render_incident", "write_incident_note"]


class KeyMetric(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    last: float | None = None
    best: float | None = None


class Incident(BaseModel):
    """One stop (or attempted stop), as recorded in the notes file."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    incident_id: int | None = Field(default=None, description="From the state database; dedupes notes.")
    run: str
    run_url: str | None = None
    reason: str
    decision: Decision | None = Field(default=None, description="The last verdict's decision, if any.")
    summary: str
    key_metrics: dict[str, KeyMetric] = Field(default_factory=dict, description="Name → last and best value.")
    signals: list[Signal] = Field(default_factory=list)
    review: str | None = Field(default=None, description="The LLM reviewer's answer to that verdict, if asked.")
    stopped_at: AwareDatetime
    method: StopMethod
    outcome: StopOutcome
    verified: bool
    pid: int | None = None
    target: str | None = Field(default=None, description="The session, job or command stopped, if not a pid.")

    @property
    def marker(self) -> str:
        """An HTML comment (invisible when rendered) that identifies this incident's entry."""
        if self.incident_id is not None:
            key = str(self.incident_id)
        else:
            key = hashlib.sha256(f"{self.run}|{self.stopped_at.isoformat()}".encode()).hexdigest()[:16]
        return f"<!-- training-check incident {key} -->"

    @staticmethod
    def metrics_from(snapshot: MetricSnapshot) -> dict[str, KeyMetric]:
        """The last and best value of every metric in a snapshot."""
        return {m.name: KeyMetric(last=m.last, best=m.best) for m in snapshot.metrics}


_OUTCOME_TEXT = {
    StopOutcome.STOPPED: "stopped",
    StopOutcome.ALREADY_STOPPED: "nothing to stop (it was not running)",
    StopOutcome.REQUESTED: "stop requested, not confirmed",
    StopOutcome.FAILED: "stop failed",
}


def render_incident(incident: Incident) -> str:
    """The Markdown entry: marker, heading with date and run, facts, metric table, signal bullets."""
    when = incident.stopped_at.strftime("%Y-%m-%d %H:%M %Z")  # in the zone the caller chose
    outcome = _OUTCOME_TEXT[incident.outcome]
    if incident.outcome is StopOutcome.STOPPED:
        outcome += ", verified" if incident.verified else ", not verified"
    decision = incident.decision.value if incident.decision else "none"
    via = incident.method.value + (f", pid {incident.pid}" if incident.pid is not None else "")
    via += f", {_inline(incident.target)}" if incident.target else ""
    lines = [
        incident.marker,
        f"## {when} — {_inline(incident.run)}",
        "",
        f"- **Reason:** {_inline(incident.reason)}",
        f"- **Decision:** {decision}{_unless_said(incident.summary, incident.reason)}",
        f"- **Outcome:** {outcome} ({via})",
    ]
    if incident.review:
        lines.append(f"- **Review:** {_inline(incident.review)}")
    if incident.run_url:
        lines.append(f"- **Run:** {_inline(incident.run_url)}")
    if incident.key_metrics:
        lines += ["", "| metric | last | best |", "| --- | --- | --- |"]
        lines += [
            f"| {_cell(name)} | {_number(m.last)} | {_number(m.best)} |" for name, m in incident.key_metrics.items()
        ]
    if incident.signals:
        lines += ["", "**Signals**", ""]
        lines += [_signal_bullet(s) for s in incident.signals]
    return "\n".join(lines) + "\n"


def _unless_said(summary: str, reason: str) -> str:
    """The decision's " — summary", unless the reason already is it (the skill and the demo pass the verdict's
    summary as the reason)."""
    return "" if summary == reason else f" — {_inline(summary)}"


def _signal_bullet(item: Signal) -> str:
    where = " · ".join(
        part for part in (item.metric and _inline(item.metric), item.step is not None and f"step {item.step:,}") if part
    )
    head = f"{item.severity.value} {item.kind.value}" + (f" ({where})" if where else "")
    return f"- {head}: {_inline(item.message)}"


def _inline(text: str) -> str:
    """One line, and no HTML comment openers that could forge another entry's marker."""
    return " ".join(text.split()).replace("<!--", "&lt;!--")


def _cell(text: str) -> str:
    return _inline(text).replace("|", "\\|")


def _number(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.6g}" if math.isfinite(value) else str(value).replace("nan", "NaN")


def write_incident_note(notes_path: Path, incident: Incident) -> None:
    """Append the incident's entry unless one with its marker is already there.

    One ``write`` of the whole entry on an ``O_APPEND`` descriptor, then ``fsync``; an exclusive
    ``flock`` around read-check-write keeps two writers from both adding the same incident.
    """
    entry = render_incident(incident)
    try:
        notes_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(notes_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StateError(f"notes file {notes_path} cannot be opened ({exc.strerror}); {_NOTES_FIX}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        existing = os.pread(fd, os.fstat(fd).st_size, 0).decode("utf-8", errors="replace")
        if incident.marker in existing:
            return
        _write_all(fd, (_separator(existing) + entry).encode("utf-8"))
        os.fsync(fd)
    except OSError as exc:
        raise StateError(f"notes file {notes_path} cannot be written ({exc.strerror}); {_NOTES_FIX}") from exc
    finally:
        os.close(fd)  # also releases the lock


_NOTES_FIX = "fix `notes` in training-check.toml or the file's permissions"


def _separator(existing: str) -> str:
    """A blank line between the previous content and the new entry."""
    if not existing or existing.endswith("\n\n"):
        return ""
    return "\n" if existing.endswith("\n") else "\n\n"


def _write_all(fd: int, data: bytes) -> None:
    """One write call for a regular file; the loop only guards against a short write."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
