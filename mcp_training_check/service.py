"""The product's operations as plain functions: what the MCP tools and the CLI both call.

    read_metrics  source → state → snapshot
    judge         stored history → verdict (recorded as a check)
    schedule_next latest check (and its stored review) → next interval and CronCreate arguments
    escalate_review the latest unsure verdict → a reviewer's STOP / CONTINUE / WAIT, stored (review)
    record_review the agent backend's reply to the prompt escalate_review handed over, stored the same way
    plot          stored history + the latest verdict's flagged points → a PNG on disk (plot)
    check         all three in one call, for cron fires
    check_many    `check` over every running run of a W&B sweep or project, bad runs first (group_check)
    forget        delete a run's stored state but its incidents, so the next check starts fresh (CLI only)
    stop_run      kill the training (a pid, a tmux/screen session, a Slurm job, a command, here or over SSH;
                  or W&B StopRun), verify, keep the evidence (stop.dispatch)

`Monitor` holds the two things that live longer than one call: the state store and the project
config (re-read whenever the file changes). Everything else is read fresh at every call.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from . import sources
from .config import ProjectConfig, ReloadingConfig, ResolvedRunConfig, apply_overrides, parse_run
from .errors import (
    ConfigError,
    NotCheckedYet,
    RunNotFound,
    RunRefError,
    SourceError,
    StateError,
    StopError,
    TrainingCheckError,
)
from .group_check import (
    GROUP_LINES,
    GROUP_WORKERS,
    check_members,
    group_report,
    member_line,
    member_settings,
    require_group,
    unreadable_line,
)
from .judge import judge, judge_settings, judged_facts
from .models import (
    CheckReport,
    DataSource,
    GroupReport,
    MetricSnapshot,
    PlotResult,
    ReviewResult,
    RunInfo,
    RunLine,
    RunRef,
    Schedule,
    StopResult,
    Verdict,
)
from .roles import RoleInfo, assign_roles
from .schedule import check_report, handed_out, schedule_after, stalled_unsure
from .snapshot import build_snapshot, unmatched_overrides_note
from .sources import Progress
from .state import CheckRecord, HandedOutCron, RunFootprint, RunHistory, StateStore, last_interval

if TYPE_CHECKING:  # a check of a local log runs no review, plot, stop nor W&B reader: they are imported where used
    from .review import ReviewFacts
    from .stop import Incident, SentStop

PREVIOUS_VERDICTS = 5
"""Earlier verdicts handed to the judge as evidence across checks."""

INTERVAL_LOOKBACK_CHECKS = 50
"""Recent check records searched for the last interval (judge-only and stop rows carry none)."""

RUNS_NAMED_IN_ERRORS = 10
"""Runs with state listed in the error for a run with none (the rest are counted)."""


@dataclass
class Stored:
    """A run's stored history and info (stop status applied), loaded once per call."""

    history: RunHistory
    info: RunInfo


@dataclass
class RunContext:
    """Everything one call needs to know about one run."""

    ref: RunRef
    settings: ResolvedRunConfig

    @property
    def key(self) -> str:
        return self.ref.key


class Monitor:
    def __init__(
        self,
        *,
        home: Path | None = None,
        config: ProjectConfig | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        """``clock``: the time a call without ``now`` schedules from (default: the wall clock); a test or
        `training-check watch` with a compressed clock passes its own."""
        self.store = StateStore(home)
        self._configs = ReloadingConfig(config)
        self._clock = clock

    def _now(self, now: datetime | None) -> datetime | None:
        return now if now is not None or self._clock is None else self._clock()

    @property
    def config(self) -> ProjectConfig:
        """The project file as it is now: re-read when it changed since the last call (a Monitor lives as
        long as the server, and an edit, above all a removed ``[runs.NAME.stop]``, must count at once)."""
        return self._configs.current()

    def close(self) -> None:
        self.store.close()

    # ------------------------------------------------------------------ resolving a run

    def context(
        self,
        run: str,
        *,
        roles: Mapping[str, str] | None = None,
        baselines: Mapping[str, float] | None = None,
        missing_path_ok: bool = False,
    ) -> RunContext:
        """``missing_path_ok``: see `parse_run`; only for a call that need not read the run."""
        config = self.config  # once: the whole call sees one version of the file
        resolved = config.for_run(run)
        resolved = apply_overrides(resolved, roles=dict(roles or {}), baselines=dict(baselines or {}))
        try:
            ref = parse_run(resolved.run, base_dir=config.base_dir, missing_path_ok=missing_path_ok)
        except (RunRefError, RunNotFound) as exc:
            hint = config.where_run_came_from(run, resolved.alias)
            if not hint:
                raise
            raise type(exc)(f"{str(exc).rstrip('.')}.{hint}") from exc
        ref = ref.model_copy(update={"alias": resolved.alias, "raw": run})
        return RunContext(ref=ref, settings=resolved)

    # ------------------------------------------------------------------ read

    def read_metrics(
        self,
        run: str,
        *,
        roles: Mapping[str, str] | None = None,
        baselines: Mapping[str, float] | None = None,
        progress: Progress | None = None,
    ) -> MetricSnapshot:
        """``progress`` hears of a long read (a long run's first check, its fill-in)."""
        ctx = self.context(run, roles=roles, baselines=baselines)
        with self.store.run_lock(ctx.key):
            return self._read(ctx, progress)[0]

    def _read(self, ctx: RunContext, progress: Progress | None = None) -> tuple[MetricSnapshot, Stored]:
        cursor = self.store.get_cursor(ctx.key)
        outcome = sources.read_with_fallback(ctx.ref, ctx.settings, cursor, progress)
        if outcome.batch is not None:
            self.store.apply_batch(ctx.key, outcome.batch)
        stored = self._load(ctx)
        batch = outcome.batch
        snapshot = build_snapshot(
            run=ctx.ref.raw,
            history=stored.history,
            roles=self._roles(ctx, stored.history.metrics),
            data_source=outcome.data_source,
            info=_shown(stored.info, ctx.settings),
            new_points=batch.new_points if batch else 0,
            skipped_chunks=batch.skipped_chunks if batch else 0,
            restarted=batch.restarted if batch else False,
            warnings=[
                *outcome.warnings,
                *unmatched_overrides_note(stored.history.metrics, ctx.settings.roles, ctx.settings.baselines),
            ],
        )
        return snapshot, stored

    def _load(self, ctx: RunContext) -> Stored:
        """The history carries the info the snapshot shows: after a verified stop the judge read the source's
        own status ("no new points ..., status unknown") beside a snapshot saying the run was stopped."""
        history, info = self.store.load_history(ctx.key), self.store.run_info(ctx.key)
        history.info = info
        return Stored(history, info)

    def _roles(self, ctx: RunContext, names: Mapping[str, object]) -> dict[str, RoleInfo]:
        return assign_roles(names, ctx.settings.roles)

    # ------------------------------------------------------------------ judge

    def judge(
        self,
        run: str,
        *,
        roles: Mapping[str, str] | None = None,
        baselines: Mapping[str, float] | None = None,
        progress: Progress | None = None,
    ) -> Verdict:
        ctx = self.context(run, roles=roles, baselines=baselines)
        with self.store.run_lock(ctx.key):
            never_read = self.store.get_cursor(ctx.key) is None
            stored = self._read(ctx, progress)[1] if never_read else self._load(ctx)
            checks = self.store.recent_checks(ctx.key, limit=PREVIOUS_VERDICTS)
            verdict = self._judge(ctx, stored, checks)
            self.store.record_check(
                ctx.key, verdict=verdict, data_source="stored", interval_minutes=None, monitoring=True
            )
            return verdict

    def _judge(self, ctx: RunContext, stored: Stored, checks: Sequence[CheckRecord]) -> Verdict:
        """``checks``: the run's recent checks, most recent first; their verdicts are evidence."""
        previous = [c.verdict for c in checks[:PREVIOUS_VERDICTS] if c.verdict]
        return judge(
            stored.history,
            self._roles(ctx, stored.history.metrics),
            baselines=ctx.settings.baselines,
            previous=previous,
            run_config=_run_config(stored.info, ctx.settings),
            settings=judge_settings(ctx.settings.judge, where=ctx.settings.config_path, run=ctx.ref.raw),
        )

    # ------------------------------------------------------------------ schedule

    def schedule_next(self, run: str, *, review: str | None = None, now: datetime | None = None) -> Schedule:
        """Next check after the latest one; ``review`` is the reviewer's STOP/CONTINUE/WAIT, by default
        the stored answer of escalate_review to the latest verdict (if it was asked)."""
        from .review import latest_verdict_check

        ctx, now = self.context(run), self._now(now)
        with self.store.run_lock(ctx.key):
            if self.store.get_cursor(ctx.key) is None:
                raise NotCheckedYet(_not_checked_yet(run))
            checks = self.store.recent_checks(ctx.key, limit=INTERVAL_LOOKBACK_CHECKS)
            latest_check = latest_verdict_check(checks[:PREVIOUS_VERDICTS])
            latest = latest_check.verdict if latest_check else None
            stored_review = self._current_review(ctx, checks[:PREVIOUS_VERDICTS])
            review = review or (stored_review.decision if stored_review else None)
            read_failed = bool(checks) and checks[0].data_source == DataSource.UNREACHABLE.value
            in_force = self.store.cron_in_force(ctx.key)
            schedule = self._schedule(
                ctx, latest, self.store.run_info(ctx.key), checks, review=review, read_failed=read_failed, now=now,
                in_force=in_force, same_fire=_handed_out_this_fire(in_force, checks),
            )  # fmt: skip
            check_id = self.store.record_check(
                ctx.key,
                verdict=None,
                data_source="schedule",
                interval_minutes=schedule.interval_minutes,
                monitoring=schedule.monitoring,
            )
            self.store.set_cron_in_force(ctx.key, handed_out(schedule, check_id))
            return schedule

    def _schedule(
        self,
        ctx: RunContext,
        verdict: Verdict | None,
        info: RunInfo,
        checks: Sequence[CheckRecord],
        *,
        review: str | None,
        read_failed: bool,
        now: datetime | None,
        in_force: HandedOutCron | None,
        same_fire: bool = False,
    ) -> Schedule:
        """``checks``: the run's recent checks, most recent first; the last interval comes from them.
        ``in_force``: the cron last handed out for the run (None for a sweep member: it has no job);
        ``same_fire``: it was handed out since the latest read, so the skill has not acted on it yet."""
        return schedule_after(
            run=ctx.ref.raw, verdict=verdict, previous_interval_minutes=last_interval(checks), review=review,
            read_failed=read_failed, run_status=info.status, now=now, in_force=in_force, same_fire=same_fire,
        )  # fmt: skip

    # ------------------------------------------------------------------ review

    def escalate_review(self, run: str, *, image: bool = True) -> ReviewResult:
        """The reviewer's STOP / CONTINUE / WAIT on the latest verdict, which must be unsure; stored for
        schedule_next and stop_run. Reviewer failures come back as WAIT, never as errors; the agent
        backend's WAIT carries the prompt for record_review. ``image=False`` sends no chart."""
        from .review import run_review

        ctx = self.context(run)
        with self.store.run_lock(ctx.key):
            facts = self._review_facts(ctx)
        settings = ctx.settings.review
        if not image:
            settings = settings.model_copy(update={"image": False})
        result = run_review(facts, settings)  # outside the lock: it may take timeout_seconds
        self.store.record_review(ctx.key, result)
        return result

    def record_review(self, run: str, answer: str, *, reviewer: str | None = None) -> ReviewResult:
        """The agent's reviewer's reply to the latest unsure verdict, parsed and stored like a backend's
        answer (not exactly one decision: a failed review, WAIT)."""
        from .review import record_reply

        ctx = self.context(run)
        with self.store.run_lock(ctx.key):
            result = record_reply(self._review_facts(ctx), answer, reviewer)
            self.store.record_review(ctx.key, result)
            return result

    def _review_facts(self, ctx: RunContext) -> ReviewFacts:
        from .review import review_facts, unsure_check

        checks = self.store.recent_checks(ctx.key, limit=INTERVAL_LOOKBACK_CHECKS)
        check = unsure_check(ctx.ref.raw, checks)  # first: a run with nothing to review costs no load
        stored = self._load(ctx)
        return review_facts(
            ctx.ref.raw, check, checks, self._stored_snapshot(ctx, stored),
            latest_review=self.store.latest_review(ctx.key), settings=ctx.settings,
            history=stored.history, roles=self._roles(ctx, stored.history.metrics),
        )  # fmt: skip

    def _current_review(self, ctx: RunContext, checks: Sequence[CheckRecord]) -> ReviewResult | None:
        """The stored review of the latest verdict in ``checks`` (None if none, or a newer check came)."""
        from .review import current_review

        return current_review(checks, self.store.latest_review(ctx.key))

    def _stored_snapshot(self, ctx: RunContext, stored: Stored) -> MetricSnapshot:
        """The metric summaries of the stored history, as a snapshot (its data_source means nothing)."""
        return build_snapshot(
            run=ctx.ref.raw, history=stored.history, roles=self._roles(ctx, stored.history.metrics),
            data_source=DataSource.LOG, info=_shown(stored.info, ctx.settings), new_points=0,
        )  # fmt: skip

    # ------------------------------------------------------------------ plot

    def plot(
        self, run: str, *, output: Path | None = None, roles: Mapping[str, str] | None = None
    ) -> tuple[PlotResult, bytes]:
        """The run's chart from the stored history (read first if never read), the latest verdict's
        flagged points marked; written to ``output`` (default: under the state directory). ``roles`` as for
        `check`: a metric only a role override names as a loss is drawn too."""
        from .plot import plot_path, plot_result, render_chart, save_chart
        from .review import latest_verdict_check

        ctx = self.context(run, roles=roles)
        path = plot_path(output, self.store.home, ctx.key)  # a wrong name is refused before the read
        with self.store.run_lock(ctx.key):
            stored = self._read(ctx)[1] if self.store.get_cursor(ctx.key) is None else self._load(ctx)
            latest = latest_verdict_check(self.store.recent_checks(ctx.key, limit=PREVIOUS_VERDICTS))
        verdict = latest.verdict if latest else None
        assigned = self._roles(ctx, stored.history.metrics)
        chart = render_chart(stored.history, assigned, verdict.signals if verdict else [], title=ctx.ref.raw)
        path = save_chart(chart, path)
        return plot_result(ctx.ref.raw, chart, path, verdict), chart.png

    # ------------------------------------------------------------------ check

    def check(
        self,
        run: str,
        *,
        roles: Mapping[str, str] | None = None,
        baselines: Mapping[str, float] | None = None,
        now: datetime | None = None,
        progress: Progress | None = None,
    ) -> CheckReport:
        ctx = self.context(run, roles=roles, baselines=baselines)
        with self.store.run_lock(ctx.key):
            return self._check(ctx, self._now(now), hands_out_cron=True, progress=progress)

    def _check(
        self, ctx: RunContext, now: datetime | None, *, hands_out_cron: bool, progress: Progress | None = None
    ) -> CheckReport:
        """``hands_out_cron``: the schedule goes to the skill as this run's cron job (not for a sweep member);
        ``progress`` hears of a long read."""
        snapshot, stored = self._read(ctx, progress)
        checks = self.store.recent_checks(ctx.key, limit=INTERVAL_LOOKBACK_CHECKS)
        readable = snapshot.data_source is not DataSource.UNREACHABLE
        verdict = self._judge(ctx, stored, checks) if readable and snapshot.metrics else None
        in_force = self.store.cron_in_force(ctx.key) if hands_out_cron else None
        schedule = self._schedule(
            ctx, verdict, stored.info, checks, review=None, read_failed=not readable, now=now, in_force=in_force
        )
        check_id = self.store.record_check(
            ctx.key,
            verdict=verdict,
            data_source=snapshot.data_source.value,
            interval_minutes=schedule.interval_minutes,
            monitoring=schedule.monitoring,
        )
        if hands_out_cron:
            self.store.set_cron_in_force(ctx.key, handed_out(schedule, check_id))
        reviewed = verdict is not None and stalled_unsure(verdict) and self._answered(ctx, checks)
        return check_report(ctx.ref.raw, snapshot, verdict, schedule, same_evidence_reviewed=reviewed)

    def _answered(self, ctx: RunContext, checks: Sequence[CheckRecord]) -> bool:
        """A reviewer answered CONTINUE or WAIT (not a failure, not an agent prompt still unanswered; a STOP
        not acted on is asked again) about the points this check judged again: the latest review's check is
        among ``checks`` (most recent first) and every check since read no new points."""
        review = self.store.latest_review(ctx.key)
        if review is None or review.reviewer_failed or review.next_action != "schedule_next":
            return False
        since = [c for c in checks if c.id > review.check_id]
        return len(since) < len(checks) and all(c.verdict is not None and stalled_unsure(c.verdict) for c in since)

    # ------------------------------------------------------------------ check_many

    def check_many(
        self,
        run: str,
        *,
        roles: Mapping[str, str] | None = None,
        baselines: Mapping[str, float] | None = None,
        now: datetime | None = None,
        progress: Progress | None = None,
    ) -> GroupReport:
        """`check` over every running run of a W&B sweep or project, GROUP_WORKERS at a time; ``progress``
        hears of each run checked."""
        from .sources.wandb_api import list_running_runs

        ctx, now = self.context(run, roles=roles, baselines=baselines), self._now(now)
        require_group(ctx.ref, run)
        members = list_running_runs(ctx.ref, timeout_seconds=ctx.settings.wandb_timeout_seconds)
        results = check_members(members, lambda ref: self._check_member(ctx, ref, now), progress)
        with self.store.run_lock(ctx.key):
            report = group_report(ctx.ref, results, now, in_force=self.store.cron_in_force(ctx.key))
            self.store.set_cron_in_force(ctx.key, handed_out(report.schedule))
        return report

    def _check_member(self, group: RunContext, ref: RunRef, now: datetime | None) -> tuple[RunLine, Schedule | None]:
        """One run of a group, with the group's roles, baselines and judge settings (never its stop)."""
        ctx = RunContext(ref=ref, settings=member_settings(group.settings, ref))
        try:
            with self.store.run_lock(ctx.key):
                report = self._check(ctx, now, hands_out_cron=False)
        except TrainingCheckError as exc:
            return unreadable_line(ref, exc), None
        return member_line(ref, report), report.schedule

    # ------------------------------------------------------------------ forget

    def forget(self, run: str, *, dry_run: bool) -> tuple[str, RunFootprint]:
        """What is stored for ``run`` (its state key and counts), deleted unless ``dry_run``: cursor, history,
        checks, reviews, cron; the incidents stay (`StateStore.forget_run`). ``run`` is what `check` was given,
        or a state key as listed; a run with nothing stored at all is an error naming the runs that have state."""
        key = self._state_key(run)
        with self.store.run_lock(key):
            stored = self.store.stored_for(key)
            if not stored.forgettable and not stored.incidents:
                raise ConfigError(self._nothing_stored(run, key))
            if not dry_run:
                self.store.forget_run(key)
        return key, stored

    def _state_key(self, run: str) -> str:
        """A stored key as given, else the key of the run ``run`` names (a log deleted since cannot be named
        by its path any more: its key, from the error's list, still can)."""
        if run in {listing.run_key for listing in self.store.list_runs()}:
            return run
        try:
            return self.context(run).key
        except (RunRefError, SourceError) as exc:
            raise ConfigError(self._nothing_stored(run, None)) from exc

    def _nothing_stored(self, run: str, key: str | None) -> str:
        """The error for a run without state: the runs that have some, by alias where the project file has one."""
        aliases: dict[str, str] = {}
        for alias in self.config.runs:
            try:
                aliases.setdefault(self.context(alias).key, alias)
            except TrainingCheckError:
                continue  # an entry `check` could not use either; it has no state to list
        known = [listing.run_key for listing in self.store.list_runs()]
        named = [f"{aliases[k]} ({k})" if k in aliases else k for k in known[:RUNS_NAMED_IN_ERRORS]]
        more = f" and {len(known) - len(named)} more" if len(known) > len(named) else ""
        listing = f"runs with state: {', '.join(named)}{more}" if named else f"no run has state in {self.store.home}"
        which = f" (state key {key!r})" if key else ""
        return (
            f"nothing is stored for run {run!r}{which}, so there is nothing to forget; {listing}. Name the run as "
            "`check` was given it (an alias from training-check.toml, its path or URL) or by its state key."
        )

    # ------------------------------------------------------------------ stop

    def stop_run(self, run: str, *, confirm: bool, reason: str) -> StopResult:
        if confirm is not True and confirm is not False:  # "yes", 1: a caller that did not mean a boolean
            raise StopError(
                f"stop_run: `confirm` must be the JSON boolean true, got {type(confirm).__name__} "
                f"{str(confirm)[:20]!r}; call it again with confirm=true once the verdict is stop."
            )
        if not confirm:
            raise StopError(
                "stop_run kills the training process: call it again with confirm=true once the verdict is stop "
                "(or the reviewer said STOP)."
            )
        if not reason.strip():
            raise StopError("stop_run needs a `reason`: one sentence that will go into the incident record.")
        ctx = self.context(run, missing_path_ok=True)  # a deleted log does not stop the training
        with self.store.run_lock(ctx.key):
            return self._stop(ctx, reason.strip())

    def _stop(self, ctx: RunContext, reason: str) -> StopResult:
        """Nothing is sent again while the run's verified stop holds (`state.stop_in_force`: not once a
        relaunch under the same entry was read)."""
        from .stop import already_stopped, gone_since_signalled, send_stop

        latest, holds = self.store.latest_stop(ctx.key)  # read once, under the run lock
        if holds and latest is not None:
            return already_stopped(ctx.ref, latest)
        sent = send_stop(ctx.ref, ctx.settings)
        return self._record_stop(ctx, reason, gone_since_signalled(sent, latest))

    def _record_stop(self, ctx: RunContext, reason: str, sent: SentStop) -> StopResult:
        """The stop was sent: record it in the state database first, then in the notes file; a verified stop
        then reads what the run logged last. An unusable notes file or a failed read is a warning on the
        result, never an error that would hide that the process was killed."""
        from .stop import stop_result, write_incident_note

        incident = self._incident(ctx, reason, sent)
        incident_id = self.store.record_incident(ctx.key, incident.model_dump(mode="json"))
        self.store.record_check(
            ctx.key,
            verdict=None,
            data_source="stop",
            interval_minutes=None,
            monitoring=not sent.verified,
        )
        notes_path: Path | None = ctx.settings.notes
        warnings: list[str] = []
        try:
            write_incident_note(ctx.settings.notes, incident.model_copy(update={"incident_id": incident_id}))
        except StateError as exc:
            warnings.append(f"the incident is kept in the state database (#{incident_id}) but not in the notes: {exc}")
            notes_path = None
        if sent.verified:  # after the evidence is kept: this read may take a source's timeout
            warnings += self._read_what_was_left(ctx)
        return stop_result(ctx.ref, sent, incident, incident_id, notes_path, warnings=warnings)

    def _read_what_was_left(self, ctx: RunContext) -> list[str]:
        """Read the points the stopped process logged since the last check, as part of the stopped run (they
        are no relaunch: `state.stops`); a failed read is a warning, the stop itself was verified."""
        try:
            outcome = sources.read_with_fallback(ctx.ref, ctx.settings, self.store.get_cursor(ctx.key))
            if outcome.batch is not None:
                self.store.apply_batch(ctx.key, outcome.batch, marks_live=False)
                return []
            failure = "; ".join(outcome.warnings) or "the source was unreachable"
        except TrainingCheckError as exc:
            failure = str(exc)
        return [
            f"could not read what the stopped run logged last ({failure}); if the next check reads points it "
            "logged before the stop, it takes them for a relaunch and watches the run again"
        ]

    def _incident(self, ctx: RunContext, reason: str, sent: SentStop) -> Incident:
        from .review import latest_verdict_check
        from .stop import incident_for

        stored = self._load(ctx)
        checks = self.store.recent_checks(ctx.key, limit=PREVIOUS_VERDICTS)
        latest = latest_verdict_check(checks)
        return incident_for(
            ctx.ref, reason, sent, snapshot=self._stored_snapshot(ctx, stored),
            verdict=latest.verdict if latest else None, review=self._current_review(ctx, checks),
            url=stored.info.url,
        )  # fmt: skip


_READ_SOURCES = frozenset(source.value for source in DataSource)
"""The data_source of a check row written by a read (a `check`): each starts a cron fire."""


def _not_checked_yet(run: str) -> str:
    """A schedule follows a check: before any, a cron would put the run's first look 10 minutes off and
    a "next" check after none. The user wants the run looked at, and `check` does that and schedules."""
    return (
        f"run {run!r} has no check yet, so there is no next check to schedule: call `check` first "
        f"(`training-check check {shlex.quote(run)}` on the command line); it reads and judges the run now "
        "and returns the schedule (cron_create) in the same result."
    )


def _handed_out_this_fire(in_force: HandedOutCron | None, checks: Sequence[CheckRecord]) -> bool:
    """True when ``in_force`` was handed out at or after the latest read (``checks`` most recent first): a
    schedule_next after that check's review, before the skill acted on the check's cron_action."""
    fire_start = next((c.id for c in checks if c.data_source in _READ_SOURCES), None)
    return in_force is not None and in_force.check_id is not None and fire_start is not None and (
        in_force.check_id >= fire_start
    )


def _run_config(info: RunInfo, settings: ResolvedRunConfig) -> dict[str, object]:
    """The run's config as the judge reads it: training-check.toml's hints over the run's own config."""
    return {**info.config, **settings.judge_hints()}


def _shown(info: RunInfo, settings: ResolvedRunConfig) -> RunInfo:
    """Run info as a snapshot shows it: the config the judge reads (`_run_config`, so a hint in force is seen)
    reduced to the facts it uses."""
    return info.model_copy(update={"config": judged_facts(_run_config(info, settings))})


__all__ = ["GROUP_LINES", "GROUP_WORKERS", "Monitor", "SourceError"]
