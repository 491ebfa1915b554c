"""The readable output of `training-check`: one block per result, and the command that acts on it."""

from __future__ import annotations

import json
import shlex

from pydantic import BaseModel

from ..models import (
    CheckReport,
    DataSource,
    GroupReport,
    MetricSnapshot,
    NextAction,
    PlotResult,
    ReviewResult,
    Schedule,
    StopResult,
    Verdict,
)

__all__ = ["render"]


def render(result: BaseModel, *, stop_note: str | None = None) -> str:
    """``stop_note``: what must be configured before the suggested stop command can work; it is printed under
    that command (a check's or a review's), and nowhere when no stop is suggested."""
    if isinstance(result, CheckReport):
        snap = result.snapshot
        empty = snap.data_source is not DataSource.UNREACHABLE and not snap.metrics
        verdict = [render(snap), render_verdict(result.verdict, read_empty=empty), *_next_command(result, stop_note)]
        return "\n".join([*verdict, render(result.schedule)])
    if isinstance(result, MetricSnapshot):
        return render_snapshot(result)
    if isinstance(result, Verdict):
        return render_verdict(result)
    if isinstance(result, Schedule):
        return render_schedule(result)
    if isinstance(result, StopResult):
        return f"{result.outcome.value.upper()}: {result.summary.removeprefix(f'{result.outcome.value}: ')}"
    if isinstance(result, GroupReport):
        return render_group(result)
    if isinstance(result, ReviewResult):
        return render_review(result, stop_note=stop_note)
    if isinstance(result, PlotResult):
        return f"plot     {result.summary}"
    return json.dumps(result.model_dump(mode="json"), indent=2)


def _next_command(report: CheckReport, stop_note: str | None = None) -> list[str]:
    """The command that acts on the check's `next_action`, which the MCP result carries and the readable
    output left out: a STOP verdict was printed with "next check in 10 min" and no word of stopping."""
    if report.next_action == "fix_source":
        return ["action   the source could not be read: fix what the warnings above name, then check again"]
    reason = report.verdict.summary if report.verdict is not None else report.summary
    action = action_command(report.run, report.next_action, reason)
    if action is None:
        return []
    return [f"action   {action}", *_stop_note_lines(report.next_action, stop_note)]


def _stop_note_lines(next_action: str, stop_note: str | None) -> list[str]:
    return [f"  ! {stop_note}"] if stop_note and next_action == "stop_run" else []


def action_command(run: str, next_action: NextAction, reason: str) -> str | None:
    """What a person at a terminal runs for ``next_action`` (the MCP result names a tool): None when nothing."""
    if next_action == "stop_run":
        from ..watch.loop import stop_command

        return f"stop the run: {stop_command(run, reason)}"
    if next_action == "escalate_review":
        return f"unsure: ask the reviewer with `training-check review {shlex.quote(run)}`"
    if next_action == "fix_source":
        return f"the source could not be read: fix it, then `training-check check {shlex.quote(run)}`"
    return None


def render_group(report: GroupReport) -> str:
    lines = [f"group    {report.run}", f"summary  {report.summary}"]
    for line in report.runs:
        decision = line.decision.value.upper() if line.decision else "-"
        lines.append(f"  {decision:<8} {line.run:<40} {line.summary}")
        action = action_command(line.run, line.next_action, line.summary)
        if action is not None:
            lines.append(f"  {'':<8} → {action}")
    if report.omitted:
        lines.append(f"  … {report.omitted} more run(s) not listed")
    lines.append(render_schedule(report.schedule))
    return "\n".join(lines)


def render_review(review: ReviewResult, *, stop_note: str | None = None) -> str:
    who = f"{review.backend}: {review.model}" if review.model != review.backend else review.backend
    lines = [f"review   {review.decision} ({who}, {review.latency_seconds:.1f} s): {review.reason}"]
    if review.error:
        lines.append(f"  ! reviewer failed: {review.error}")
    if review.prompt:
        lines += ["", review.prompt, ""]
    lines.append(f"next     {_review_next_command(review)}")
    lines.extend(_stop_note_lines(review.next_action, stop_note))
    return "\n".join(lines)


def _review_next_command(review: ReviewResult) -> str:
    """What to run after a review, as a command (the result names the MCP tool)."""
    run = shlex.quote(review.run)
    if review.next_action == "stop_run":
        from ..watch.loop import stop_command

        return f"stop the run: {stop_command(review.run, review.reason)}"
    if review.next_action == "record_review":
        return f"put the prompt above to a reviewer, then: training-check record-review {run} - (its reply on stdin)"
    return f"the next check: training-check schedule {run}"


def render_snapshot(snap: MetricSnapshot) -> str:
    lines = [f"run      {snap.run}  [{snap.data_source.value}, {snap.run_info.status.value}]"]
    lines.append(f"read     {snap.summary}")
    if snap.metrics:
        lines.append(f"  {'metric':<28} {'role':<14} {'last':>11} {'best':>11} {'NaN/Inf':>7}")
        for m in snap.metrics:
            lines.append(
                f"  {m.name[:28]:<28} {m.role.value:<14} {_num(m.last):>11} {_best(m.best):>11} {m.non_finite:>7}"
            )
    lines.extend(f"  ! {warning}" for warning in snap.warnings)
    return "\n".join(lines)


def render_verdict(verdict: Verdict | None, *, read_empty: bool = False) -> str:
    """``read_empty``: the source was read and held no metric yet (an empty log, a run not logging yet): there
    is nothing to judge, which "nothing could be read" misstated as a failed read."""
    if verdict is None:
        return f"verdict  none: {'no metrics logged yet, nothing to judge' if read_empty else 'nothing could be read'}"
    head = verdict.summary
    prefix = f"{verdict.decision.value.upper()}:"
    lines = [f"verdict  {head if head.startswith(prefix) else f'{prefix} {head}'}"]
    lines.extend(f"  - [{s.severity.value}] {s.message}" for s in verdict.signals)
    return "\n".join(lines)


def render_schedule(schedule: Schedule) -> str:
    text = f"next     {schedule.summary}"
    if schedule.cron_create is not None:
        text += f"\n  CronCreate cron={schedule.cron_create.cron!r} prompt={schedule.cron_create.prompt!r}"
    return text


def _best(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _num(value: float | None) -> str:
    return "NaN/Inf" if value is None else f"{value:.4g}"
