"""The product's operations as plain functions: what the MCP tools and the CLI both call.

    read_metrics  source → state → snapshot
    judge         stored history → verdict (recorded as a check)
    schedule_next latest check → next interval and CronCreate arguments
    check         all three in one call, for cron fires
    check_many    `check` over every running run of a W&B sweep or project, bad runs first
    stop_run      kill the training (local pid or W&B StopRun), verify, keep the evidence

`Monitor` holds the two things that live longer than one call: the state store and the project
config. Everything else is read fresh at every call.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from . import sources
from .config import ProjectConfig, ResolvedRunConfig, apply_overrides, load_config
from .errors import ConfigError, RunRefError, SourceError, StopError, TrainingCheckError
from .judge import JudgeSettings, judge
from .models import (
    CheckReport,
    DataSource,
    Decision,
    GroupReport,
    MetricSnapshot,
    RunInfo,
    RunKind,
    RunLine,
    RunRef,
    RunStatus,
    Schedule,
    Severity,
    StopMethod,
    StopOutcome,
    StopResult,
    Verdict,
)
from .roles import RoleInfo, assign_roles
from .runref import parse_run
from .schedule import next_schedule
from .snapshot import build_snapshot
from .sources.wandb_api import list_running_runs
from .state import StateStore
from .stop import Incident, stop_local_process, write_incident_note
from .stop_wandb import stop_wandb_run

PREVIOUS_VERDICTS = 5
"""Earlier verdicts handed to the judge as evidence across checks."""

KEY_METRICS_IN_INCIDENT = 6
"""Metrics copied into an incident: the judged ones come first in a snapshot."""

GROUP_WORKERS = 4
"""Runs of a sweep or project checked at once (each holds a W&B request and its own run lock)."""

GROUP_LINES = 20
"""Runs listed in a sweep/project result; the rest are counted in `omitted` (the result stays < ~1,500 tokens)."""

LINE_CHARS = 160
"""Longest per-run summary in a sweep/project result."""

HEALTHY_LINE_CHARS = 100
"""Longest summary of a run judged continue: the healthy ones need the least explaining."""

_GROUP_ORDER = {"stop_run": 0, "escalate_review": 1, "continue_monitoring": 2, "end_monitoring": 3, "fix_source": 4}


@dataclass
class RunContext:
    """Everything one call needs to know about one run."""

    ref: RunRef
    settings: ResolvedRunConfig

    @property
    def key(self) -> str:
        return self.ref.key


class Monitor:
    def __init__(self, *, home: Path | None = None, config: ProjectConfig | None = None) -> None:
        self.store = StateStore(home)
        self._config = config

    @property
    def config(self) -> ProjectConfig:
        if self._config is None:
            self._config = load_config()
        return self._config

    def close(self) -> None:
        self.store.close()

    # ------------------------------------------------------------------ resolving a run

    def context(
        self,
        run: str,
        *,
        roles: Mapping[str, str] | None = None,
        baselines: Mapping[str, float] | None = None,
    ) -> RunContext:
        resolved = self.config.for_run(run)
        resolved = apply_overrides(resolved, roles=dict(roles or {}), baselines=dict(baselines or {}))
        ref = parse_run(resolved.run, base_dir=self.config.base_dir)
        ref = ref.model_copy(update={"alias": resolved.alias, "raw": run})
        return RunContext(ref=ref, settings=resolved)

    # ------------------------------------------------------------------ read

    def read_metrics(
        self,
        run: str,
        *,
        roles: Mapping[str, str] | None = None,
        baselines: Mapping[str, float] | None = None,
    ) -> MetricSnapshot:
        ctx = self.context(run, roles=roles, baselines=baselines)
        with self.store.run_lock(ctx.key):
            return self._read(ctx)

    def _read(self, ctx: RunContext) -> MetricSnapshot:
        outcome = sources.read_with_fallback(ctx.ref, ctx.settings, self.store.get_cursor(ctx.key))
        if outcome.batch is not None:
            self.store.apply_batch(ctx.key, outcome.batch)
        history = self.store.load_history(ctx.key)
        info = self.store.load_info(ctx.key) or RunInfo()
        info = self._with_stop_status(ctx, info)
        batch = outcome.batch
        return build_snapshot(
            run=ctx.ref.raw,
            history=history,
            roles=self._roles(ctx, history.metrics),
            data_source=outcome.data_source,
            info=info,
            new_points=batch.new_points if batch else 0,
            skipped_chunks=batch.skipped_chunks if batch else 0,
            restarted=batch.restarted if batch else False,
            warnings=outcome.warnings,
        )

    def _roles(self, ctx: RunContext, names: Mapping[str, object]) -> dict[str, RoleInfo]:
        return assign_roles(names, ctx.settings.roles)

    def _with_stop_status(self, ctx: RunContext, info: RunInfo) -> RunInfo:
        incident = self.store.find_incident(ctx.key)
        if incident is not None and incident.get("verified"):
            return info.model_copy(update={"status": RunStatus.STOPPED})
        return info

    # ------------------------------------------------------------------ judge

    def judge(
        self,
        run: str,
        *,
        roles: Mapping[str, str] | None = None,
        baselines: Mapping[str, float] | None = None,
    ) -> Verdict:
        ctx = self.context(run, roles=roles, baselines=baselines)
        with self.store.run_lock(ctx.key):
            if self.store.get_cursor(ctx.key) is None:
                self._read(ctx)
            verdict = self._judge(ctx)
            self.store.record_check(
                ctx.key, verdict=verdict, data_source="stored", interval_minutes=None, monitoring=True
            )
            return verdict

    def _judge(self, ctx: RunContext) -> Verdict:
        history = self.store.load_history(ctx.key)
        info = self.store.load_info(ctx.key) or RunInfo()
        previous = [c.verdict for c in self.store.recent_checks(ctx.key, limit=PREVIOUS_VERDICTS) if c.verdict]
        return judge(
            history,
            self._roles(ctx, history.metrics),
            baselines=ctx.settings.baselines,
            previous=previous,
            run_config={**info.config, **ctx.settings.judge_hints()},
            settings=self._judge_settings(ctx),
        )

    def _judge_settings(self, ctx: RunContext) -> JudgeSettings:
        try:
            return JudgeSettings.model_validate(ctx.settings.judge)
        except ValidationError as exc:
            where = ctx.settings.config_path or "training-check.toml"
            first = exc.errors()[0]
            raise ConfigError(
                f"{where}: judge settings for {ctx.ref.raw!r}: {first['msg']}. "
                "Fix the [defaults.judge] or [runs.<name>.judge] table."
            ) from exc

    # ------------------------------------------------------------------ schedule

    def schedule_next(self, run: str, *, review: str | None = None, now: datetime | None = None) -> Schedule:
        """Next check after the latest one; ``review`` is the reviewer's STOP/CONTINUE/WAIT if any."""
        ctx = self.context(run)
        with self.store.run_lock(ctx.key):
            checks = self.store.recent_checks(ctx.key, limit=PREVIOUS_VERDICTS)
            latest = next((c.verdict for c in checks if c.verdict), None)
            read_failed = bool(checks) and checks[0].data_source == DataSource.UNREACHABLE.value
            schedule = self._schedule(ctx, latest, review=review, read_failed=read_failed, now=now)
            self.store.record_check(
                ctx.key,
                verdict=None,
                data_source="schedule",
                interval_minutes=schedule.interval_minutes,
                monitoring=schedule.monitoring,
            )
            return schedule

    def _schedule(
        self,
        ctx: RunContext,
        verdict: Verdict | None,
        *,
        review: str | None,
        read_failed: bool,
        now: datetime | None,
    ) -> Schedule:
        info = self._with_stop_status(ctx, self.store.load_info(ctx.key) or RunInfo())
        previous_interval = next(
            (c.interval_minutes for c in self.store.recent_checks(ctx.key, limit=50) if c.interval_minutes),
            None,
        )
        return next_schedule(
            run=ctx.ref.raw,
            decision=verdict.decision if verdict else None,
            previous_interval_minutes=previous_interval,
            anomaly=_is_anomaly(verdict),
            review_wait=(review or "").upper() == "WAIT",
            read_failed=read_failed,
            run_ended=info.status.has_ended,
            run_status=info.status,
            now=now,
        )

    # ------------------------------------------------------------------ check

    def check(
        self,
        run: str,
        *,
        roles: Mapping[str, str] | None = None,
        baselines: Mapping[str, float] | None = None,
        now: datetime | None = None,
    ) -> CheckReport:
        ctx = self.context(run, roles=roles, baselines=baselines)
        with self.store.run_lock(ctx.key):
            return self._check(ctx, now)

    def _check(self, ctx: RunContext, now: datetime | None) -> CheckReport:
        snapshot = self._read(ctx)
        readable = snapshot.data_source is not DataSource.UNREACHABLE
        verdict = self._judge(ctx) if readable and snapshot.metrics else None
        schedule = self._schedule(ctx, verdict, review=None, read_failed=not readable, now=now)
        self.store.record_check(
            ctx.key,
            verdict=verdict,
            data_source=snapshot.data_source.value,
            interval_minutes=schedule.interval_minutes,
            monitoring=schedule.monitoring,
        )
        return _report(ctx.ref.raw, snapshot, verdict, schedule)

    # ------------------------------------------------------------------ check_many

    def check_many(
        self,
        run: str,
        *,
        roles: Mapping[str, str] | None = None,
        baselines: Mapping[str, float] | None = None,
        now: datetime | None = None,
    ) -> GroupReport:
        """`check` over every running run of a W&B sweep or project, GROUP_WORKERS at a time."""
        ctx = self.context(run, roles=roles, baselines=baselines)
        if ctx.ref.kind not in (RunKind.WANDB_SWEEP, RunKind.WANDB_PROJECT):
            raise RunRefError(
                f"check_many takes a W&B sweep or project ('entity/project', 'entity/project/sweeps/<id>' or a "
                f"sweep URL), not {run!r}: call check for a single run."
            )
        members = list_running_runs(ctx.ref, timeout_seconds=ctx.settings.wandb_timeout_seconds)
        with ThreadPoolExecutor(max_workers=GROUP_WORKERS) as pool:
            results = list(pool.map(lambda ref: self._check_member(ctx, ref, now), members))
        return _group_report(ctx, results, now)

    def _check_member(self, group: RunContext, ref: RunRef, now: datetime | None) -> tuple[RunLine, Schedule | None]:
        """One run of a group, with the group's roles, baselines and judge settings (never its stop)."""
        settings = group.settings.model_copy(update={"alias": None, "run": ref.raw, "log_fallback": None, "stop": None})
        ctx = RunContext(ref=ref, settings=settings)
        try:
            with self.store.run_lock(ctx.key):
                report = self._check(ctx, now)
        except TrainingCheckError as exc:
            return RunLine(run=ref.raw, decision=None, summary=_clip(str(exc)), next_action="fix_source"), None
        decision = report.verdict.decision if report.verdict else None
        head = report.verdict.summary if report.verdict else report.snapshot.summary
        if report.snapshot.data_source is DataSource.UNREACHABLE:
            head = "; ".join(report.snapshot.warnings) or head
        if decision is not None and head.upper().startswith(f"{decision.value.upper()}:"):
            head = head[len(decision.value) + 1 :]  # the line's `decision` already says it
        limit = HEALTHY_LINE_CHARS if decision is Decision.CONTINUE else LINE_CHARS
        line = RunLine(run=ref.raw, decision=decision, summary=_clip(head, limit), next_action=report.next_action)
        return line, report.schedule

    # ------------------------------------------------------------------ stop

    def stop_run(self, run: str, *, confirm: bool, reason: str) -> StopResult:
        if not confirm:
            raise StopError(
                "stop_run kills the training process: call it again with confirm=true once the verdict is stop "
                "(or the reviewer said STOP)."
            )
        if not reason.strip():
            raise StopError("stop_run needs a `reason`: one sentence that will go into the incident record.")
        ctx = self.context(run)
        with self.store.run_lock(ctx.key):
            return self._stop(ctx, reason.strip())

    def _stop(self, ctx: RunContext, reason: str) -> StopResult:
        previous = self.store.find_incident(ctx.key)
        if previous is not None and previous.get("verified"):
            return _already_stopped(ctx, previous)
        stop = ctx.settings.stop
        if stop is None:
            raise StopError(_no_stop_configured(ctx))
        if stop.method == "wandb":
            return self._stop_wandb(ctx, reason)
        attempt = stop_local_process(
            pid=stop.pid,
            pid_file=stop.pid_file,
            signal_name=stop.signal,
            grace_seconds=stop.grace_seconds,
            kill_after_grace=stop.kill_after_grace,
        )
        return self._record_stop(
            ctx,
            reason,
            method=StopMethod.LOCAL_PID,
            outcome=attempt.outcome,
            verified=attempt.verified,
            message=attempt.message,
            signals_sent=attempt.signals_sent,
            pid=attempt.pid,
        )

    def _stop_wandb(self, ctx: RunContext, reason: str) -> StopResult:
        """StopRun for the entry's own W&B run (the target comes from the config, never from arguments)."""
        if ctx.ref.kind is not RunKind.WANDB_API:
            raise StopError(
                f'[runs.{ctx.settings.alias}.stop] method = "wandb" needs a W&B run (entity/project/run_id or '
                f"a run URL) as the entry's `run`, not {ctx.settings.run!r}; use pid_file for a local process."
            )
        stop = ctx.settings.stop
        assert stop is not None
        attempt = stop_wandb_run(
            ctx.ref, verify_seconds=stop.verify_seconds, timeout_seconds=ctx.settings.wandb_timeout_seconds
        )
        return self._record_stop(
            ctx,
            reason,
            method=StopMethod.WANDB,
            outcome=attempt.outcome,
            verified=attempt.verified,
            message=attempt.message,
            signals_sent=attempt.signals_sent,
            pid=None,
        )

    def _record_stop(
        self,
        ctx: RunContext,
        reason: str,
        *,
        method: StopMethod,
        outcome: StopOutcome,
        verified: bool,
        message: str,
        signals_sent: list[str],
        pid: int | None,
    ) -> StopResult:
        incident = self._incident(ctx, reason, method=method, outcome=outcome, verified=verified, pid=pid)
        incident_id = self.store.record_incident(ctx.key, incident.model_dump(mode="json"))
        notes_path = ctx.settings.notes
        write_incident_note(notes_path, incident.model_copy(update={"incident_id": incident_id}))
        self.store.record_check(
            ctx.key,
            verdict=None,
            data_source="stop",
            interval_minutes=None,
            monitoring=not verified,
        )
        return StopResult(
            run=ctx.ref.raw,
            summary=_stop_summary(outcome, message, notes_path),
            outcome=outcome,
            method=method,
            verified=verified,
            signals_sent=signals_sent,
            incident_id=incident_id,
            notes_path=str(notes_path),
            run_url=incident.run_url,
        )

    def _incident(
        self,
        ctx: RunContext,
        reason: str,
        *,
        method: StopMethod,
        outcome: StopOutcome,
        verified: bool,
        pid: int | None,
    ) -> Incident:
        history = self.store.load_history(ctx.key)
        info = self.store.load_info(ctx.key) or RunInfo()
        roles = self._roles(ctx, history.metrics)
        checks = self.store.recent_checks(ctx.key, limit=PREVIOUS_VERDICTS)
        verdict = next((c.verdict for c in checks if c.verdict), None)
        snapshot = build_snapshot(
            run=ctx.ref.raw, history=history, roles=roles, data_source=DataSource.LOG, info=info, new_points=0
        )
        return Incident(
            run=ctx.ref.raw,
            run_url=info.url or (ctx.ref.path and f"file://{ctx.ref.path}"),
            reason=reason,
            decision=verdict.decision if verdict else None,
            summary=verdict.summary if verdict else snapshot.summary,
            key_metrics=dict(list(Incident.metrics_from(snapshot).items())[:KEY_METRICS_IN_INCIDENT]),
            signals=verdict.signals if verdict else [],
            stopped_at=datetime.now(UTC),
            method=method,
            outcome=outcome,
            verified=verified,
            pid=pid,
        )


def _is_anomaly(verdict: Verdict | None) -> bool:
    if verdict is None:
        return False
    if verdict.decision is not Decision.CONTINUE:
        return True
    return any(s.severity is not Severity.INFO for s in verdict.signals)


def _next_action(snapshot: MetricSnapshot, verdict: Verdict | None, schedule: Schedule) -> str:
    if not schedule.monitoring:
        return "end_monitoring"
    if snapshot.data_source is DataSource.UNREACHABLE:
        return "fix_source"
    if verdict is None:
        return "continue_monitoring"
    if verdict.decision is Decision.STOP:
        return "stop_run"
    if verdict.decision is Decision.UNSURE:
        return "escalate_review"
    return "continue_monitoring"


def _report(run: str, snapshot: MetricSnapshot, verdict: Verdict | None, schedule: Schedule) -> CheckReport:
    action = _next_action(snapshot, verdict, schedule)
    head = verdict.summary if verdict else snapshot.summary
    return CheckReport(
        run=run,
        summary=f"{head.rstrip('.')}; {schedule.summary}",
        snapshot=snapshot,
        verdict=verdict,
        schedule=schedule,
        next_action=action,  # type: ignore[arg-type]
    )


def _already_stopped(ctx: RunContext, incident: Mapping[str, object]) -> StopResult:
    return StopResult(
        run=ctx.ref.raw,
        summary=f"already stopped at {incident.get('stopped_at')} (incident #{incident.get('incident_id')}); "
        "nothing sent",
        outcome=StopOutcome.ALREADY_STOPPED,
        method=StopMethod(str(incident.get("method", StopMethod.LOCAL_PID.value))),
        verified=True,
        incident_id=incident.get("incident_id"),  # type: ignore[arg-type]
        run_url=incident.get("run_url"),  # type: ignore[arg-type]
    )


def _stop_summary(outcome: StopOutcome, message: str, notes_path: Path) -> str:
    return f"{outcome.value}: {message}; evidence appended to {notes_path}"


def _no_stop_configured(ctx: RunContext) -> str:
    if ctx.ref.kind is RunKind.WANDB_API:
        return (
            f"no way to stop W&B run {ctx.ref.raw!r} is configured: add to training-check.toml a [runs.<name>] "
            f'entry with run = "{ctx.ref.entity}/{ctx.ref.project}/{ctx.ref.run_id}" and a [runs.<name>.stop] '
            'table with method = "wandb" (W&B\'s StopRun), or pid_file = "..." to kill its local process. '
            "Stop settings come only from that file, so a tool argument can never pick which run is stopped."
        )
    return (
        f"no way to stop run {ctx.ref.raw!r} is configured: add a [runs.<name>.stop] table with "
        'pid_file = "..." or pid = N to training-check.toml (stop settings come only from that file).'
    )


def _clip(text: str, limit: int = LINE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _group_report(ctx: RunContext, results: list[tuple[RunLine, Schedule | None]], now: datetime | None) -> GroupReport:
    """Bad runs first; one schedule for the group: the shortest interval of any run still monitored."""
    what = "sweep" if ctx.ref.kind is RunKind.WANDB_SWEEP else "project"
    lines = sorted((line for line, _ in results), key=lambda line: (_GROUP_ORDER[line.next_action], line.run))
    counts: dict[str, int] = {}
    for line in lines:
        label = line.decision.value if line.decision else ("unreadable" if line.next_action == "fix_source" else "none")
        counts[label] = counts.get(label, 0) + 1
    live = [s for _, s in results if s is not None and s.monitoring and s.interval_minutes]
    schedule = _group_schedule(ctx, live, len(results), what, now)
    tally = ", ".join(f"{n} {label}" for label, n in sorted(counts.items())) or "none"
    head = f"{len(lines)} running run(s) in {what} {ctx.ref.raw}: {tally}"
    if lines and lines[0].next_action == "stop_run":
        head += f"; stop {lines[0].run} first"
    return GroupReport(
        run=ctx.ref.raw,
        summary=f"{head}; {schedule.summary}",
        runs=lines[:GROUP_LINES],
        omitted=max(len(lines) - GROUP_LINES, 0),
        counts=counts,
        schedule=schedule,
    )


def _group_schedule(ctx: RunContext, live: list[Schedule], checked: int, what: str, now: datetime | None) -> Schedule:
    if not live:
        why = "no running runs" if not checked else "no run left to watch"
        return Schedule(
            summary=f"stop monitoring: {why} in the {what}; delete the cron job",
            monitoring=False,
            reason=f"{why.capitalize()} in {what} {ctx.ref.raw}. Delete its cron job with CronDelete (find the id "
            "with CronList); start again when new runs start.",
        )
    shortest = min(live, key=lambda s: s.interval_minutes or 0)
    interval = shortest.interval_minutes or 0
    schedule = next_schedule(
        run=ctx.ref.raw,
        decision=None,
        previous_interval_minutes=interval,
        anomaly=False,
        review_wait=True,  # "unchanged": keep the shortest interval the runs asked for
        read_failed=False,
        run_ended=False,
        now=now,
    )
    return schedule.model_copy(
        update={
            "summary": f"next check in {interval} min (the shortest over {len(live)} run(s))"
            + (f" at {schedule.next_check_at:%H:%M %Z}".rstrip() if schedule.next_check_at else ""),
            "reason": f"One cron job for the whole {what}: the shortest interval any of its runs needs; replace the "
            "previous job: CronDelete, then CronCreate(cron_create).",
        }
    )


__all__ = ["GROUP_LINES", "GROUP_WORKERS", "Monitor", "SourceError"]
