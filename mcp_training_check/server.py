"""The MCP server: a thin table of tools over `service.Monitor`.

Each tool converts its arguments, calls one `Monitor` method and returns its pydantic model (so the
SDK publishes an output schema and `structuredContent`). Every error this package raises on purpose
becomes a `ToolError` whose text says what to fix; anything else is a bug and surfaces as one.
"""

from __future__ import annotations

import base64
import contextlib
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

import anyio.from_thread
import anyio.lowlevel
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import Field, StrictBool

from . import __version__
from .errors import TrainingCheckError
from .models import (
    CheckReport,
    GroupReport,
    MetricSnapshot,
    PlotResult,
    ReviewResult,
    Schedule,
    StopResult,
    Verdict,
)
from .serving import Deferred, ToolServer
from .serving.http import serve_http  # noqa: F401  (cli: `serve --http`)

if TYPE_CHECKING:  # the service (numpy, the sources, the judge) loads at the first tool call, not at start
    from .service import Monitor
    from .sources.base import ThrottledProgress

INSTRUCTIONS = """\
Watches the quality of running ML training jobs. For a scheduled check call `check` with the run;
act on its `next_action`: stop_run (when the verdict is stop), escalate_review (unsure; then stop_run
on its STOP, else schedule_next), or nothing. Then, unless `monitoring` is false, follow the latest
schedule's `cron_action`: keep the run's cron job, or CronDelete it and CronCreate(cron_create) (replace;
recreate: before Claude Code expires it). Pass the same `run` string to every tool.
For a whole W&B sweep or project call `check_many` instead of `check`."""

RunArg = Annotated[
    str,
    Field(
        description="Log, .wandb file or W&B run dir, entity/project/run_id, W&B URL, ssh://host/path or "
        "a config alias; same for every tool.",
        min_length=1,
        max_length=1000,
    ),
]
GroupArg = Annotated[
    str,
    Field(
        description="A W&B sweep or project: entity/project/sweeps/<sweep_id>, a sweep URL, entity/project, "
        "or an alias from training-check.toml naming one.",
        min_length=1,
        max_length=1000,
    ),
]
RolesArg = Annotated[
    dict[str, str] | None,
    Field(
        description='Metric role overrides, e.g. {"val/acc": "eval_higher"}.',
    ),
]
BaselinesArg = Annotated[
    dict[str, float] | None,
    Field(description='Eval baselines, e.g. {"eval/acc": 0.71}.'),
]

T = TypeVar("T")

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=True)


def _translate_errors(fn: Callable[..., T]) -> Callable[..., T]:
    """Turn this package's errors into ToolError texts the model can act on."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except TrainingCheckError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    return wrapper


def mcp_progress(ctx: Context, after_seconds: float | None = None) -> ThrottledProgress:
    """MCP progress notifications for the current tool call, sendable from its worker thread or any other
    (check_many's pool). A client that asked for none gets none; one that went away does not fail the call."""
    token = anyio.from_thread.run_sync(anyio.lowlevel.current_token)

    def show(count: int, text: str) -> None:
        with contextlib.suppress(Exception):  # progress is a courtesy: never let it break a check
            anyio.from_thread.run(ctx.report_progress, count, None, text, token=token)

    from .sources.base import PROGRESS_AFTER_SECONDS, ThrottledProgress  # numpy: not at server start

    after = PROGRESS_AFTER_SECONDS if after_seconds is None else after_seconds
    return ThrottledProgress(show, after_seconds=after)


def build_server(
    monitor: Monitor | None = None, *, progress_after_seconds: float | None = None
) -> ToolServer:
    """The server with its tools bound to ``monitor`` (a fresh one on the default state dir if None);
    reads running longer than ``progress_after_seconds`` (default: `sources.PROGRESS_AFTER_SECONDS`) send MCP
    progress notifications."""
    mon = monitor or cast("Monitor", Deferred(_default_monitor))
    server = ToolServer(name="training-check", version=__version__, instructions=INSTRUCTIONS)
    _add_step_tools(server, mon, progress_after_seconds)
    _add_check_tools(server, mon, progress_after_seconds)
    _add_review_tool(server, mon)
    _add_record_review_tool(server, mon)
    _add_plot_tool(server, mon)
    _add_stop_tool(server, mon)
    return server


def _default_monitor() -> Monitor:
    from .service import Monitor

    return Monitor()


def _add_step_tools(server: ToolServer, mon: Monitor, after: float | None) -> None:
    """The three steps of a check, one tool each: read_metrics, judge, schedule_next."""

    @server.tool(title="Read new metrics", annotations=_READ_ONLY)
    @_translate_errors
    def read_metrics(
        run: RunArg, ctx: Context, roles: RolesArg = None, baselines: BaselinesArg = None
    ) -> MetricSnapshot:
        """Read the run's metrics new since the last check (state on disk): each metric's role, last and best
        value, recent checkpoints, NaN/Inf count. Next: `judge` (or `check` for all three steps)."""
        return mon.read_metrics(run, roles=roles, baselines=baselines, progress=mcp_progress(ctx, after))

    @server.tool(title="Judge the run", annotations=_READ_ONLY)
    @_translate_errors
    def judge(run: RunArg, ctx: Context, roles: RolesArg = None, baselines: BaselinesArg = None) -> Verdict:
        """Decide from the stored metrics: stop (clearly bad), continue (healthy) or unsure (flat, noisy, below
        baseline early), with the signals. Next: stop_run on stop, escalate_review on unsure, then
        schedule_next."""
        return mon.judge(run, roles=roles, baselines=baselines, progress=mcp_progress(ctx, after))

    @server.tool(title="Schedule the next check", annotations=_READ_ONLY)
    @_translate_errors
    def schedule_next(
        run: RunArg,
        review: Annotated[
            str | None,
            Field(
                description="The reviewer's answer, STOP, CONTINUE or WAIT; leave it out after escalate_review "
                "(its stored answer is used).",
                pattern=r"(?i)^(stop|continue|wait)$",
            ),
        ] = None,
    ) -> Schedule:
        """When to check the run next, after the latest judge: 10 → 20 → 30 → 60 min while healthy, 10 after
        any anomaly, unchanged on WAIT or when nothing could be read. Returns `cron_create`, the exact
        CronCreate arguments, or monitoring=false once the run has ended or was stopped (delete the job)."""
        return mon.schedule_next(run, review=review)


def _add_check_tools(server: ToolServer, mon: Monitor, after: float | None) -> None:
    """The three steps in one call: check for one run, check_many for a W&B sweep or project."""

    @server.tool(title="Check a training run", annotations=_READ_ONLY)
    @_translate_errors
    def check(run: RunArg, ctx: Context, roles: RolesArg = None, baselines: BaselinesArg = None) -> CheckReport:
        """One scheduled check: read new metrics, judge them and schedule the next check. Act on
        `next_action`: stop_run, escalate_review, fix_source, end_monitoring or continue_monitoring; then pass
        `schedule.cron_create` to CronCreate."""
        return mon.check(run, roles=roles, baselines=baselines, progress=mcp_progress(ctx, after))

    @server.tool(title="Check a sweep or project", annotations=_READ_ONLY)
    @_translate_errors
    def check_many(
        run: GroupArg, ctx: Context, roles: RolesArg = None, baselines: BaselinesArg = None
    ) -> GroupReport:
        """`check` for every running run of a W&B sweep or project: one line per run, bad ones first, and one
        schedule for the group. Act on each line's next_action with its `run`; pass `schedule.cron_create`
        to CronCreate."""
        return mon.check_many(run, roles=roles, baselines=baselines, progress=mcp_progress(ctx, after))


def _add_review_tool(server: ToolServer, mon: Monitor) -> None:
    """escalate_review: a second opinion on an unsure verdict (Anthropic, OpenAI-compatible, or the agent)."""

    @server.tool(
        title="Ask an LLM reviewer",
        annotations=ToolAnnotations(
            read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=True
        )
    )
    @_translate_errors
    def escalate_review(
        run: RunArg,
        image: Annotated[bool, Field(description="false: send the reviewer the numbers without the chart.")] = True,
    ) -> ReviewResult:
        """Ask a reviewer for STOP, CONTINUE or WAIT on the latest unsure verdict, with metrics and chart.
        next_action record_review (agent backend): put `prompt` to mcp__llm-chat__chat, else to a fresh
        strict subagent, then call record_review. A reviewer failure is WAIT (`error` names the fix).
        Next: STOP → stop_run; else schedule_next."""
        return mon.escalate_review(run, image=image)


def _add_record_review_tool(server: ToolServer, mon: Monitor) -> None:
    """record_review: the agent backend's reply, stored like any reviewer's answer."""

    @server.tool(  # read-only as `check` is: it records state, never acts on the world
        annotations=ToolAnnotations(
            read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=False
        )
    )
    @_translate_errors
    def record_review(
        run: RunArg,
        answer: Annotated[
            str,
            Field(
                description="The reviewer's reply to escalate_review's `prompt`, verbatim: it must start with "
                "exactly one of STOP / CONTINUE / WAIT.",
                min_length=1,
                max_length=20000,
            ),
        ],
        reviewer: Annotated[
            str | None,
            Field(description="Who answered, e.g. the llm-chat model or 'subagent'.", max_length=200),
        ] = None,
    ) -> ReviewResult:
        """Record the reply to escalate_review's `prompt`, stored like an API reviewer's answer; a reply
        that is not exactly one decision is WAIT. Next: STOP → stop_run (confirm=true, reason = this
        result's reason); else schedule_next."""
        return mon.record_review(run, answer, reviewer=reviewer)


def _add_plot_tool(server: ToolServer, mon: Monitor) -> None:
    """plot: the run's chart as an image, and the PNG's path."""

    @server.tool(annotations=_READ_ONLY)
    @_translate_errors
    def plot(run: RunArg, roles: RolesArg = None) -> Annotated[CallToolResult, PlotResult]:
        """Chart of the stored metrics (loss on a log scale, evals, LR, grad norm; flagged steps marked) as an
        image, saved at `path` (give the user the path: a terminal shows no image)."""
        result, png = mon.plot(run, roles=roles)  # no path argument: a tool call must not overwrite any file
        return CallToolResult(
            content=[
                ImageContent(type="image", data=base64.b64encode(png).decode("ascii"), mime_type="image/png"),
                TextContent(type="text", text=result.summary),
            ],
            structured_content=result.model_dump(mode="json"),
        )


def _add_stop_tool(server: ToolServer, mon: Monitor) -> None:
    """stop_run, the one destructive tool."""

    @server.tool(
        title="Stop the training run",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=True
        )
    )
    @_translate_errors
    def stop_run(
        run: RunArg,
        confirm: Annotated[StrictBool, Field(description="JSON true: this kills the training process.")],
        reason: Annotated[
            str, Field(description="One sentence for the incident record, e.g. the verdict's summary.", max_length=2000)
        ],
    ) -> StopResult:
        """Stop the training as training-check.toml configures it, verify it ended, and record an incident
        and a notes entry. Only after a stop verdict or a STOP review. `requested_not_confirmed`: asked, not
        seen to end. Stopping twice is harmless."""
        return mon.stop_run(run, confirm=confirm, reason=reason)
