"""The pydantic models passed from step to step: source → snapshot → signals → verdict → schedule.

Everything a tool returns is one of these, so the MCP output schema, the CLI's ``--json`` and the
tests all see the same shapes. Models reject unknown fields so that a typo never passes silently.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


# --------------------------------------------------------------------------- enums


class MetricRole(StrEnum):
    """What a metric means to the judge."""

    TRAIN_LOSS = "train_loss"
    EVAL = "eval"
    LEARNING_RATE = "learning_rate"
    GRAD_NORM = "grad_norm"
    OTHER = "other"


class Direction(StrEnum):
    """Which way is better."""

    LOWER = "lower"
    HIGHER = "higher"


class Decision(StrEnum):
    STOP = "stop"
    CONTINUE = "continue"
    UNSURE = "unsure"


class Severity(StrEnum):
    """How much a signal weighs: ``critical`` alone is enough to stop; ``warning`` makes the verdict
    unsure (worth a review); ``watch`` is an anomaly that the next checks will settle (a spike not back
    yet, a loss episode seen once): the verdict stays continue, but the interval drops back to 10 min."""

    INFO = "info"
    WATCH = "watch"
    WARNING = "warning"
    CRITICAL = "critical"


class SignalKind(StrEnum):
    NON_FINITE = "non_finite"
    DIVERGENCE = "divergence"
    SPIKE = "spike"
    SPIKE_RECOVERED = "spike_recovered"
    FLAT = "flat"
    IMPROVING = "improving"
    EVAL_BELOW_BASELINE = "eval_below_baseline"
    EVAL_DEGRADING = "eval_degrading"
    LR_ANOMALY = "lr_anomaly"
    GRAD_EXPLODING = "grad_exploding"
    GRAD_VANISHING = "grad_vanishing"
    NO_NEW_DATA = "no_new_data"
    RUN_ENDED = "run_ended"
    TOO_FEW_POINTS = "too_few_points"


class RunStatus(StrEnum):
    """Lifecycle of the training run as far as the source can tell."""

    RUNNING = "running"
    FINISHED = "finished"
    CRASHED = "crashed"
    FAILED = "failed"
    KILLED = "killed"
    PREEMPTING = "preempting"
    PREEMPTED = "preempted"
    PENDING = "pending"
    STOPPED = "stopped"  # stopped by this tool
    UNKNOWN = "unknown"

    @property
    def has_ended(self) -> bool:
        return self in _ENDED


_ENDED = {
    RunStatus.FINISHED,
    RunStatus.CRASHED,
    RunStatus.FAILED,
    RunStatus.KILLED,
    RunStatus.PREEMPTED,
    RunStatus.STOPPED,
}


class DataSource(StrEnum):
    """Where this check's numbers came from."""

    WANDB = "wandb"
    WANDB_FILE = "wandb_file"
    LOG = "log"
    TENSORBOARD = "tensorboard"  # TensorBoard event files: a log directory, or one events.out.tfevents.* file
    LOG_FALLBACK = "log_fallback"
    SSH = "ssh"
    UNREACHABLE = "unreachable"


# --------------------------------------------------------------------------- run reference


class RunKind(StrEnum):
    WANDB_DIR = "wandb_dir"  # a directory holding a run-*.wandb file (or wandb/ with latest-run)
    WANDB_FILE = "wandb_file"  # a run-<id>.wandb transaction log
    LOG_FILE = "log_file"  # a text training log (JSONL, CSV, HF Trainer, printed) or one TensorBoard event file
    TENSORBOARD_DIR = "tensorboard_dir"  # a TensorBoard log directory (events.out.tfevents.* files) without W&B runs
    WANDB_API = "wandb_api"  # entity/project/run_id on W&B cloud or a self-hosted server
    WANDB_SWEEP = "wandb_sweep"  # every running run of a W&B sweep: entity/project/sweeps/<id>
    WANDB_PROJECT = "wandb_project"  # every running run of a W&B project: entity/project
    SSH = "ssh"  # ssh://host/path to a log on another machine


class RunRef(Strict):
    """One training run, parsed from the single ``run`` string every tool takes."""

    raw: str = Field(description="The string the caller passed, unchanged.")
    kind: RunKind
    path: str | None = Field(default=None, description="Absolute local path, or the remote path for ssh.")
    host: str | None = Field(
        default=None, description="ssh: [user@]host[:port]; W&B: the API base URL taken from a pasted URL."
    )
    entity: str | None = None
    project: str | None = None
    run_id: str | None = None
    sweep_id: str | None = None
    alias: str | None = Field(default=None, description="Name of the [runs.NAME] entry in the config.")

    @property
    def key(self) -> str:
        """Stable identity for the state database."""
        if self.kind is RunKind.WANDB_API:
            return f"wandb:{self.entity}/{self.project}/{self.run_id}"
        if self.kind is RunKind.WANDB_SWEEP:
            return f"wandb:{self.entity}/{self.project}/sweeps/{self.sweep_id}"
        if self.kind is RunKind.WANDB_PROJECT:
            return f"wandb:{self.entity}/{self.project}"
        if self.kind is RunKind.SSH:
            return f"ssh://{self.host}{self.path}"
        return f"file:{self.path}"


class RunInfo(Strict):
    """What the source knows about the run besides its metrics."""

    status: RunStatus = RunStatus.UNKNOWN
    name: str | None = None
    run_id: str | None = None
    url: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    pid: int | None = Field(default=None, description="Training process id, when the source records it.")
    host: str | None = None
    status_watched: bool = Field(
        default=False, description="The status is a server's that watches the process (W&B), not read from a file."
    )
    summary: dict[str, float | None] = Field(
        default_factory=dict, description="A few numeric summary values from W&B (e.g. _runtime), when known."
    )


# --------------------------------------------------------------------------- snapshot


class MetricSummary(Strict):
    """One metric, compactly: enough for an agent to reason about, never the whole series."""

    name: str
    role: MetricRole
    direction: Direction
    last: float | None = Field(description="Last value; null when it was NaN or Inf.")
    best: float | None = Field(default=None, description="Best finite value so far in `direction`.")
    best_step: int | None = None
    recent: list[tuple[int, float | None]] = Field(
        default_factory=list,
        description="A few recent checkpoints as [step, value] (value null when NaN/Inf); judged metrics only.",
    )
    non_finite: int = Field(default=0, description="Count of NaN/Inf values seen over the whole run.")
    last_step: int | None = None
    points: int = Field(default=0, description="Values seen over the whole run.")


class MetricSnapshot(Strict):
    """The result of read_metrics: what the run looks like now."""

    run: str
    summary: str
    data_source: DataSource
    run_info: RunInfo = Field(default_factory=RunInfo)
    metrics: list[MetricSummary] = Field(default_factory=list)
    new_points: int = Field(default=0, description="Values read in this check (all metrics).")
    last_step: int | None = None
    skipped_chunks: int = Field(default=0, description="Corrupt chunks skipped in this read.")
    restarted: bool = Field(default=False, description="The source shrank or was replaced; read from start.")
    overview_before_step: int | None = Field(
        default=None,
        description="History before this step is so far an overview (sampled), re-read exactly over the next "
        "checks; null when all of it is exact. No stop verdict rests on the overview alone.",
    )
    warnings: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------------- verdict


class Signal(Strict):
    """One finding, with its numbers: kind, severity, metric, step, and a sentence with the evidence."""

    kind: SignalKind
    severity: Severity
    metric: str | None = None
    step: int | None = None
    message: str
    evidence: dict[str, float] = Field(default_factory=dict)

    def gist(self) -> str:
        """The message's opening, up to the first ": ", "; " or " (" after at least ``GIST_MIN_WORDS`` words
        ("train/loss is NaN at step 2,884"; "loss improving: 2.51 → 2.38"): what a one-line summary says of it,
        the numbers after it staying in ``message`` alone."""
        cuts = [found.start() for found in _CLAUSE_END.finditer(self.message) if found.start() > 0]
        cut = next((i for i in cuts if len(self.message[:i].split()) >= GIST_MIN_WORDS), None)
        return self.message[:cut] if cut is not None else self.message.rstrip(".")

    @field_validator("evidence")
    @classmethod
    def _round_evidence(cls, evidence: dict[str, float]) -> dict[str, float]:
        """Fractions to 6 significant digits (every digit costs the agent tokens); whole numbers such as
        steps and counts stay exact, since later checks compare them."""
        return {key: _compact(value) for key, value in evidence.items()}


_CLAUSE_END = re.compile(r"(?=: |; | \()")  # where a clause ends (a lookahead: "x: (" ends at both marks)
GIST_MIN_WORDS = 5
"""Words a summary's clause needs before it ends: "eval/map50 at step 6" (4) names no finding, "train/loss is NaN
at step 2,884" (6) does; a shorter opening runs on to the next clause end."""


def _compact(value: float) -> float:
    if not math.isfinite(value) or value == int(value):
        return float(value)
    return float(f"{value:.6g}")


class Verdict(Strict):
    decision: Decision
    summary: str = Field(
        description="One line: the decision, its main signal's first clause and how many more share its "
        "severity; the numbers are in the signals."
    )
    signals: list[Signal] = Field(default_factory=list)

    def stated_signal(self) -> Signal | None:
        """The signal ``summary`` names by its first clause, if any."""
        stated = self.summary.split(": ", 1)[-1]
        return next((s for s in self.signals if stated.startswith(s.gist())), None)

    def spelled_out(self) -> str:
        """``summary`` with the signal it names in full (its whole message in place of its first clause): one
        line holding the main reason's numbers, for a reader shown no list of signals (a terminal's line per
        check)."""
        told = self.stated_signal()
        if told is None:
            return self.summary
        return self.summary.replace(told.gist(), told.message.rstrip("."), 1)


# --------------------------------------------------------------------------- schedule


class CronArgs(Strict):
    """Exactly what to pass to Claude Code's CronCreate tool."""

    cron: str
    prompt: str
    recurring: bool = True
    durable: bool = Field(
        default=True, description="Survive a restart of Claude Code (.claude/scheduled_tasks.json); drop it if refused."
    )


CronAction = Literal["replace", "keep", "recreate"]


class Schedule(Strict):
    summary: str
    monitoring: bool = Field(description="False once the run has ended or was stopped: delete the cron job.")
    interval_minutes: int | None = None
    next_check_at: datetime | None = None
    cron_create: CronArgs | None = Field(
        default=None, description="Arguments for CronCreate (replace the previous job with CronDelete first)."
    )
    cron_action: CronAction | None = Field(
        default=None,
        description="replace: CronDelete the run's job, CronCreate(cron_create); keep: the run's job with this cron "
        "stays (create it if CronList has none); recreate: same cron but it expires soon, CronDelete + CronCreate.",
    )
    cron_expires_at: datetime | None = Field(
        default=None, description="When Claude Code deletes the job made from cron_create by itself."
    )
    reason: str


# --------------------------------------------------------------------------- stop


class StopMethod(StrEnum):
    LOCAL_PID = "local_pid"
    WANDB = "wandb"
    SSH = "ssh"
    TMUX = "tmux"
    SCREEN = "screen"
    SLURM = "slurm"
    COMMAND = "command"


class StopOutcome(StrEnum):
    STOPPED = "stopped"  # verified gone
    ALREADY_STOPPED = "already_stopped"
    REQUESTED = "requested_not_confirmed"
    FAILED = "failed"


class StopResult(Strict):
    run: str
    summary: str
    outcome: StopOutcome
    method: StopMethod
    verified: bool
    signals_sent: list[str] = Field(default_factory=list)
    incident_id: int | None = None
    notes_path: str | None = None
    run_url: str | None = None


# --------------------------------------------------------------------------- whole check

NextAction = Literal["continue_monitoring", "stop_run", "escalate_review", "fix_source", "end_monitoring"]


class CheckReport(Strict):
    """read → judge → schedule in one result (what a cron fire needs)."""

    run: str
    summary: str
    snapshot: MetricSnapshot
    verdict: Verdict | None = Field(default=None, description="None when nothing could be read.")
    schedule: Schedule
    next_action: NextAction


# --------------------------------------------------------------------------- review

ReviewDecision = Literal["STOP", "CONTINUE", "WAIT"]
ReviewNextAction = Literal["stop_run", "schedule_next", "record_review"]
ReviewBackend = Literal["anthropic", "openai", "agent"]


class ReviewResult(Strict):
    """The reviewer's answer to one stored UNSURE verdict. Any failure of the reviewer is a WAIT
    with ``reviewer_failed`` set: a second opinion that could not be had must never stop a run."""

    run: str
    summary: str = Field(description="One line: the decision, its reason and what to call next.")
    decision: ReviewDecision = Field(
        description="STOP: the run is bad, stop it; CONTINUE: healthy enough; WAIT: look again at the next check."
    )
    reason: str = Field(description="The reviewer's short reason, or why there is no answer.")
    model: str = Field(description="The model that answered (or that would have been asked).")
    backend: ReviewBackend = Field(
        default="anthropic", description="Who answered: the Anthropic API, an OpenAI-compatible API, or the agent."
    )
    reviewer_failed: bool = Field(description="True: no usable answer, so WAIT; `error` says why and the fix.")
    error: str | None = Field(default=None, description="What failed and how to fix it.")
    latency_seconds: float = Field(description="Wall-clock seconds the review took.")
    check_id: int = Field(description="The stored check whose unsure verdict this answers.")
    image_attached: bool = Field(default=False, description="True: the run's chart went with the numbers.")
    prompt: str | None = Field(
        default=None,
        description="Agent backend: put this prompt to a reviewer and pass its reply to record_review.",
    )
    next_action: ReviewNextAction = Field(
        description="stop_run on STOP; record_review when `prompt` awaits an answer; otherwise schedule_next "
        "(it uses this stored answer)."
    )


class PlotResult(Strict):
    """The run's chart: where the PNG was written and what it shows."""

    run: str
    summary: str = Field(description="One line: what is drawn, the flagged points and the file.")
    path: str = Field(description="The PNG on disk (open it to see the chart; the image also comes inline).")
    panels: list[str] = Field(description="Panels top to bottom: training loss (log), eval, learning rate, grad norm.")
    flagged_steps: list[int] = Field(description="Steps the latest verdict's signals point at, marked on the chart.")
    decision: Decision | None = Field(default=None, description="The latest verdict whose signals are marked.")
    png_bytes: int


# --------------------------------------------------------------------------- whole sweep / project


class RunLine(Strict):
    """One run of a sweep or project check, in one line."""

    run: str = Field(description="wandb:entity/project/run_id: pass it to check or stop_run for this run.")
    decision: Decision | None = Field(description="None when the run could not be read or judged.")
    summary: str = Field(description="The run's verdict or read problem, at most ~160 characters.")
    next_action: NextAction


class GroupReport(Strict):
    """One check over every running run of a W&B sweep or project: the bad runs first."""

    run: str
    summary: str
    runs: list[RunLine] = Field(description="Order: stop, unsure, continue, ended, unreadable.")
    omitted: int = Field(default=0, description="Runs checked but left out of `runs` to keep the result short.")
    counts: dict[str, int] = Field(default_factory=dict, description="Runs per decision (and 'unreadable').")
    schedule: Schedule = Field(description="One schedule for the group: the shortest interval over its runs.")
