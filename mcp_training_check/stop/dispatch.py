"""`Monitor.stop_run`'s decisions, apart from the state store: which stop the config asks for, sending
it, and the incident and result that describe what happened.

Stop settings come only from ``training-check.toml`` (``[runs.<name>.stop]``), never from a tool argument,
so a call can never pick which process or W&B run is stopped. ``send_stop`` kills the local process
(``local.stop_local_process``), the process on the run's SSH host (``ssh.stop_remote_process``), what
a tmux/screen session, Slurm job or configured command holds, here or on that host
(``targets.escalate_target``), or sends W&B's StopRun (``wandb.stop_wandb_run``); the rest builds the
records ``Monitor`` stores and returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..config import ResolvedRunConfig, parse_run
from ..config.schema import TARGET_METHODS
from ..config.toml_lines import table_key
from ..errors import StopError
from ..models import MetricSnapshot, ReviewResult, RunKind, RunRef, StopMethod, StopOutcome, StopResult, Verdict
from .hosts import Host, LocalHost
from .incidents import Incident
from .local import StopAttempt, signal_key, stop_local_process
from .targets import TargetAttempt, escalate_target, make_target
from .wandb import WandbStopAttempt, stop_wandb_run

__all__ = [
    "KEY_METRICS_IN_INCIDENT",
    "SentStop",
    "already_stopped",
    "gone_since_signalled",
    "incident_for",
    "no_stop_configured",
    "send_stop",
    "stop_result",
]

KEY_METRICS_IN_INCIDENT = 6
"""Metrics copied into an incident: the judged ones come first in a snapshot."""


@dataclass(frozen=True)
class SentStop:
    """What one stop attempt did, whichever way it was sent."""

    method: StopMethod
    outcome: StopOutcome
    verified: bool
    message: str
    signals_sent: list[str]
    pid: int | None
    target: str | None = None

    @classmethod
    def of(
        cls, method: StopMethod, attempt: StopAttempt | WandbStopAttempt | TargetAttempt, *, pid: int | None
    ) -> SentStop:
        return cls(
            method=method,
            outcome=attempt.outcome,
            verified=attempt.verified,
            message=attempt.message,
            signals_sent=attempt.signals_sent,
            pid=pid,
            target=attempt.target if isinstance(attempt, TargetAttempt) else None,
        )


def send_stop(ref: RunRef, settings: ResolvedRunConfig) -> SentStop:
    """Stop the run the way its config entry says; StopError when it says nothing usable."""
    stop = settings.stop
    if stop is None:
        raise StopError(no_stop_configured(ref))
    if stop.method == "wandb":
        return _send_wandb_stop(ref, settings)
    if stop.method == "ssh":
        return _send_ssh_stop(ref, settings)
    if stop.method in TARGET_METHODS:
        return _send_target_stop(ref, settings)
    attempt = stop_local_process(
        pid=stop.pid,
        pid_file=stop.pid_file,
        signal_name=stop.signal,
        grace_seconds=stop.grace_seconds,
        kill_after_grace=stop.kill_after_grace,
    )
    return SentStop.of(StopMethod.LOCAL_PID, attempt, pid=attempt.pid)


def _send_wandb_stop(ref: RunRef, settings: ResolvedRunConfig) -> SentStop:
    """StopRun for the entry's own W&B run (the target comes from the config, never from arguments)."""
    if ref.kind is not RunKind.WANDB_API:
        table = f"[runs.{table_key(settings.alias or 'NAME')}.stop]"
        raise StopError(
            f'{table} method = "wandb" needs a W&B run (entity/project/run_id or '
            f"a run URL) as the entry's `run`, not {settings.run!r}; use pid_file for a local process."
        )
    stop = settings.stop
    assert stop is not None
    attempt = stop_wandb_run(ref, verify_seconds=stop.verify_seconds, timeout_seconds=settings.wandb_timeout_seconds)
    return SentStop.of(StopMethod.WANDB, attempt, pid=None)


def _send_ssh_stop(ref: RunRef, settings: ResolvedRunConfig) -> SentStop:
    """Signal the process on the host of the entry's ``ssh://`` run, or else of its ``ssh://`` log_fallback."""
    from .ssh import stop_remote_process  # paramiko only for an SSH stop

    stop = settings.stop
    assert stop is not None
    attempt = stop_remote_process(
        _ssh_host(ref, settings),
        pid=stop.pid,
        pid_file=str(stop.pid_file) if stop.pid_file is not None else None,
        signal_name=stop.signal,
        grace_seconds=stop.grace_seconds,
        kill_after_grace=stop.kill_after_grace,
        timeout_seconds=settings.ssh_timeout_seconds,
    )
    return SentStop.of(StopMethod.SSH, attempt, pid=attempt.pid)


LOCAL_POLL_SECONDS = 0.1
REMOTE_POLL_SECONDS = 0.5
"""Pause between "is it gone" probes: over SSH each one is a round trip or two."""


def _send_target_stop(ref: RunRef, settings: ResolvedRunConfig) -> SentStop:
    """The tmux/screen session, Slurm job or configured command of the entry, here or on its SSH host."""
    stop = settings.stop
    assert stop is not None
    if not stop.remote:
        return _stop_target_on(LocalHost(), settings, LOCAL_POLL_SECONDS)
    from .remote import remote_host  # paramiko only for a remote stop

    with remote_host(_ssh_host(ref, settings), timeout_seconds=settings.ssh_timeout_seconds) as host:
        return _stop_target_on(host, settings, REMOTE_POLL_SECONDS)


def _stop_target_on(host: Host, settings: ResolvedRunConfig, poll_seconds: float) -> SentStop:
    stop = settings.stop
    assert stop is not None
    attempt = escalate_target(
        make_target(host, stop),
        signal_key(stop.signal),
        grace_seconds=stop.grace_seconds,
        kill_after_grace=stop.kill_after_grace,
        poll_seconds=poll_seconds,
    )
    return SentStop.of(StopMethod(stop.method), attempt, pid=None)


def _ssh_host(ref: RunRef, settings: ResolvedRunConfig) -> str:
    if ref.kind is RunKind.SSH and ref.host:
        return ref.host
    fallback = settings.log_fallback
    if isinstance(fallback, str) and fallback.startswith("ssh://"):
        host = parse_run(fallback).host
        if host:
            return host
    needs = 'method = "ssh"' if settings.stop and settings.stop.method == "ssh" else "remote = true"
    table = f"[runs.{table_key(settings.alias or 'NAME')}.stop]"
    raise StopError(
        f"{table} {needs} needs a machine: make the entry's `run` or its "
        f"log_fallback an ssh://host/path URL (it is {settings.run!r}), or stop it on this machine."
    )


def incident_for(
    ref: RunRef,
    reason: str,
    sent: SentStop,
    *,
    snapshot: MetricSnapshot,
    verdict: Verdict | None,
    url: str | None,
    review: ReviewResult | None = None,
) -> Incident:
    """The incident record: the latest verdict (if any) and the reviewer's answer to it, the key metrics,
    and how the stop went."""
    return Incident(
        run=ref.raw,
        run_url=url or (ref.key if ref.kind is RunKind.SSH else ref.path and f"file://{ref.path}"),
        reason=reason,
        decision=verdict.decision if verdict else None,
        summary=verdict.summary if verdict else snapshot.summary,
        key_metrics=dict(list(Incident.metrics_from(snapshot).items())[:KEY_METRICS_IN_INCIDENT]),
        signals=verdict.signals if verdict else [],
        review=f"{review.decision} by {review.model}: {review.reason}" if review else None,
        stopped_at=datetime.now(UTC),
        method=sent.method,
        outcome=sent.outcome,
        verified=sent.verified,
        pid=sent.pid,
        target=sent.target,
    )


def stop_result(
    ref: RunRef,
    sent: SentStop,
    incident: Incident,
    incident_id: int,
    notes_path: Path | None,
    *,
    warnings: list[str] | None = None,
) -> StopResult:
    """What the stop did comes first, then any ``warnings`` (``notes_path`` None: the notes could not be
    written); the warnings go into the summary, which every caller shows."""
    summary = f"{sent.outcome.value}: {sent.message.rstrip('.')}"  # the message may end a sentence; ';' follows
    summary += f"; evidence appended to {notes_path}" if notes_path is not None else ""
    summary += "".join(f"; WARNING: {warning}" for warning in warnings or [])
    return StopResult(
        run=ref.raw,
        summary=summary,
        outcome=sent.outcome,
        method=sent.method,
        verified=sent.verified,
        signals_sent=sent.signals_sent,
        incident_id=incident_id,
        notes_path=str(notes_path) if notes_path is not None else None,
        run_url=incident.run_url,
    )


def gone_since_signalled(sent: SentStop, previous: Mapping[str, object] | None) -> SentStop:
    """A pid found not running is the run's verified stop only when an earlier stop of this run signalled
    that same pid and could not yet see it end (TERM without KILL, or a KILL stuck in the kernel): the
    process has exited since. Otherwise it stays "nothing to stop", which proves nothing about the run."""
    if sent.outcome is not StopOutcome.ALREADY_STOPPED or sent.verified or sent.pid is None or previous is None:
        return sent
    signalled = previous.get("outcome") in (StopOutcome.REQUESTED.value, StopOutcome.FAILED.value)
    if not signalled or previous.get("pid") != sent.pid or previous.get("method") != sent.method.value:
        return sent
    message = (
        f"pid {sent.pid}, signalled by the earlier stop (incident #{previous.get('incident_id')}), has exited "
        "since; verified gone."
    )
    return SentStop(sent.method, StopOutcome.STOPPED, True, message, sent.signals_sent, sent.pid)


def already_stopped(ref: RunRef, incident: Mapping[str, object]) -> StopResult:
    """The result of stopping a run whose stop was already verified: nothing is sent again."""
    return StopResult(
        run=ref.raw,
        summary=f"already stopped at {incident.get('stopped_at')} (incident #{incident.get('incident_id')}); "
        "nothing sent",
        outcome=StopOutcome.ALREADY_STOPPED,
        method=StopMethod(str(incident.get("method", StopMethod.LOCAL_PID.value))),
        verified=True,
        incident_id=incident.get("incident_id"),  # type: ignore[arg-type]
        run_url=incident.get("run_url"),  # type: ignore[arg-type]
    )


def no_stop_configured(ref: RunRef) -> str:
    """What to add to the config. A run named by its alias has its entry already: the message names its stop
    table (it said "add a [runs.<name>.stop] table" to `stop bert`, as if bert had no entry)."""
    if ref.alias is not None:
        return (
            f"no way to stop run {ref.raw!r} is configured: add a [runs.{table_key(ref.alias)}.stop] table to its "
            f"entry in training-check.toml with {_stop_fields(ref)} (stop settings come only from that file)."
        )
    if ref.kind is RunKind.WANDB_API:
        return (
            f"no way to stop W&B run {ref.raw!r} is configured: add to training-check.toml a [runs.<name>] "
            f'entry with run = "{ref.entity}/{ref.project}/{ref.run_id}" and a [runs.<name>.stop] '
            f"table with {_stop_fields(ref)}. Stop settings come only from that file, so a tool argument can never "
            "pick which run is stopped."
        )
    if ref.kind is RunKind.SSH:
        return (
            f"no way to stop run {ref.raw!r} is configured: add to training-check.toml a [runs.<name>] entry with "
            f'run = "{ref.key}" and a [runs.<name>.stop] table with {_stop_fields(ref)}. Stop settings come only '
            "from that file."
        )
    return (
        f"no way to stop run {ref.raw!r} is configured: add a [runs.<name>.stop] table with "
        'pid_file = "..." or pid = N to training-check.toml, or method = "tmux" / "screen" with session = '
        '"NAME", method = "slurm" with job_id, or method = "command" (stop settings come only from that file).'
    )


def _stop_fields(ref: RunRef) -> str:
    """The stop table's fields that fit the run's kind, as the messages above name them."""
    if ref.kind is RunKind.WANDB_API:
        return 'method = "wandb" (W&B\'s StopRun), or pid_file = "..." to kill its local process'
    if ref.kind is RunKind.SSH:
        return f'method = "ssh" and pid_file = "<path on {ref.host}>" (or pid = N)'
    return (
        'pid_file = "..." or pid = N, method = "tmux" / "screen" with session = "NAME", method = "slurm" with '
        'job_id, or method = "command"'
    )
