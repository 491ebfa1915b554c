"""The schema of ``training-check.toml``: its sections, their limits and defaults, and the validators
that turn a typo into an error naming the key (see `config` for where the file is found and what it means).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, model_validator

from ..models import ReviewBackend

DEFAULT_NOTES = "TRAINING_NOTES.md"
DEFAULT_REVIEW_MODEL = "claude-sonnet-5-5"  # anthropic 2.14 lists claude-sonnet-4-5 as ending 2026-11-30
DEFAULT_REVIEW_TIMEOUT_SECONDS = 60.0
MAX_REVIEW_TIMEOUT_SECONDS = 600.0
DEFAULT_GRACE_SECONDS = 30.0
DEFAULT_WANDB_TIMEOUT_SECONDS = 10.0  # a tool call must not hang: wandb's own default is 19 s per try
MAX_WANDB_TIMEOUT_SECONDS = 120.0
DEFAULT_SSH_TIMEOUT_SECONDS = 10.0  # per SSH step; the same default as ssh_connect's
MAX_SSH_TIMEOUT_SECONDS = 120.0
DEFAULT_WANDB_VERIFY_SECONDS = 60.0  # the training process polls its stop flag every ~15 s
MAX_WANDB_VERIFY_SECONDS = 600.0
MAX_GRACE_SECONDS = 3600.0  # longer than any sane checkpoint save; beyond it the stop tool would hang

StopSignal = Literal["TERM", "INT", "KILL"]
StopMethodName = Literal["local_pid", "wandb", "ssh", "tmux", "screen", "slurm", "command"]
TARGET_METHODS = ("tmux", "screen", "slurm", "command")
"""Stop targets that hold the training (a session, a job, a command) rather than one pid."""
NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
"""Session, window and job names: no shell metacharacters, no leading '-' that a program would read as an option."""
TMUX_NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$"
"""tmux reads '.' and ':' in a target as pane and window separators, so a tmux name has neither."""
SLURM_JOB_ID_PATTERN = r"^[0-9]{1,12}(_[0-9]{1,9})?$"
"""A job id, or an array task as ``JOBID_TASK``."""
COMMAND_PLACEHOLDERS = ("{signal}",)
"""What a stop command's arguments may contain in braces: ``{signal}`` becomes TERM, INT or KILL."""
MAX_COMMAND_ARGS = 64
MAX_COMMAND_ARG_CHARS = 4096
# The role names users may write; the same keys as roles.OVERRIDE_ROLES, which says what each one means.
RoleName = Literal["train_loss", "eval", "eval_lower", "eval_higher", "learning_rate", "grad_norm", "other", "ignore"]
JudgeValue = float | int | bool

# --------------------------------------------------------------------------- file schema


def _judge_value(value: object) -> JudgeValue:
    """Threshold values are numbers or booleans; anything else is a typo the judge would choke on later."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value!r}: nan or inf as a threshold compares false always")
    if isinstance(value, bool | int | float):
        return value
    shown = "a table" if isinstance(value, dict) else "an array" if isinstance(value, list) else repr(value)[:60]
    raise ValueError(f"expected a number or true/false, got {shown}")


def _signal_name(value: object) -> object:
    """Accept ``SIGTERM`` and ``term`` for ``TERM``: the meaning is unambiguous."""
    if isinstance(value, str):
        return value.strip().upper().removeprefix("SIG")
    return value


def _non_empty(value: object) -> object:
    """An empty path would silently mean "this directory"."""
    if isinstance(value, str) and not value.strip():
        raise ValueError("a path must not be empty; remove the key to use the default")
    return value


def _job_id(value: object) -> object:
    """A job id may be written as a number or a string ("123", "123_4" for an array task)."""
    value = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    return _safe(SLURM_JOB_ID_PATTERN, "a Slurm job id is digits, or JOBID_TASK for an array task")(value)


def _safe(pattern: str, rule: str) -> Callable[[object], object]:
    """A validator that refuses a name the pattern does not match, saying what a name may hold (the field's
    own ``pattern`` then checks it once more)."""

    def check(value: object) -> object:
        if isinstance(value, str) and not re.fullmatch(pattern, value):
            raise ValueError(f"{value!r} is refused: {rule}")
        return value

    return check


_NAME_RULE = "a name is 1-64 letters, digits, '_', '.' or '-', not starting with '-'; rename it"
_TMUX_RULE = "a tmux name is 1-64 letters, digits, '_' or '-' (tmux reads '.' and ':' as separators); rename it"
SafeName = Annotated[str | None, BeforeValidator(_safe(NAME_PATTERN, _NAME_RULE))]
TmuxName = Annotated[str | None, BeforeValidator(_safe(TMUX_NAME_PATTERN, _TMUX_RULE))]


def _argv(value: object) -> object:
    """A command is an argv list (no shell): every argument a non-empty string without NUL, and braces only
    around a documented placeholder."""
    if not isinstance(value, list) or not value:
        raise ValueError('write the command as a list of arguments, e.g. ["docker", "kill", "-s", "{signal}", "t"]')
    if len(value) > MAX_COMMAND_ARGS:
        raise ValueError(f"at most {MAX_COMMAND_ARGS} arguments")
    for arg in value:
        if not isinstance(arg, str) or not arg or "\x00" in arg or len(arg) > MAX_COMMAND_ARG_CHARS:
            limit = MAX_COMMAND_ARG_CHARS
            raise ValueError(f"each argument must be a non-empty string (no NUL, ≤ {limit} chars): {arg!r}")
        unknown = set(re.findall(r"\{[^{}]*\}", arg)) - set(COMMAND_PLACEHOLDERS)
        if unknown:
            raise ValueError(f"{arg!r} holds {sorted(unknown)}; the only placeholder is {{signal}}")
    return value


# Paths are strings in TOML; strict mode would refuse a str for Path, so paths alone are lax.
ConfigPath = Annotated[Path, BeforeValidator(_non_empty), Field(strict=False)]


def _log_fallback(value: object) -> Path | str:
    """A local log path, or an ``ssh://`` URL kept as written (a Path would fold its ``//``)."""
    _non_empty(value)
    if isinstance(value, str) and value.strip().startswith("ssh://"):
        url = urlparse(value.strip())
        if not url.hostname or url.path in ("", "/"):
            raise ValueError(f"{value!r}: an ssh log needs a host and a path, e.g. ssh://gpu-box/home/me/train.log")
        return value.strip()
    if not isinstance(value, str | Path):
        raise ValueError(f"expected a path or an ssh://host/path URL, got {value!r}")
    return Path(value)


LogFallback = Annotated[Path | str, PlainValidator(_log_fallback)]
Thresholds = dict[str, Annotated[JudgeValue, PlainValidator(_judge_value)]]


class _Section(BaseModel):
    """Strict: TOML has real types, so "30" for a number is a mistake, and unknown keys are typos."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class ReviewSettings(_Section):
    """Who answers escalate_review: ``backend`` "anthropic" (ANTHROPIC_API_KEY), "openai" (any
    OpenAI-compatible endpoint: LLM_API_KEY, LLM_BASE_URL, LLM_MODEL) or "agent" (no key: the calling
    agent puts the prompt to a model and records the reply); left out, the first whose settings are in
    the environment, else "agent". ``image = false`` leaves the run's chart out of API requests."""

    backend: ReviewBackend | None = None
    model: str = Field(default=DEFAULT_REVIEW_MODEL, min_length=1)
    timeout_seconds: float = Field(default=DEFAULT_REVIEW_TIMEOUT_SECONDS, gt=0, le=MAX_REVIEW_TIMEOUT_SECONDS)
    enabled: bool = True
    image: bool = True


class StopSettings(_Section):
    """How to stop the run: its local process (exactly one of ``pid_file`` or ``pid``); with
    ``method = "ssh"`` the process on the host of the entry's ``ssh://`` run or log_fallback (``pid_file``
    is then a path on that host); with ``method = "wandb"``, W&B's StopRun for the entry's own W&B run
    (then no pid is taken); or the processes a target holds: ``method = "tmux"`` (``session``, optional
    ``window``), ``"screen"`` (``session``), ``"slurm"`` (``job_id`` or ``job_name``) or ``"command"``
    (``command`` and ``check`` argv lists), on this machine or, with ``remote = true``, on the run's SSH host."""

    method: StopMethodName = "local_pid"
    pid_file: ConfigPath | None = None
    pid: int | None = Field(default=None, gt=1, lt=2**31)  # pid_t; larger overflows kill(2)
    signal: Annotated[StopSignal, BeforeValidator(_signal_name)] = "TERM"
    grace_seconds: float = Field(default=DEFAULT_GRACE_SECONDS, ge=0, le=MAX_GRACE_SECONDS)
    kill_after_grace: bool = True
    verify_seconds: float = Field(default=DEFAULT_WANDB_VERIFY_SECONDS, ge=0, le=MAX_WANDB_VERIFY_SECONDS)
    remote: bool = False
    session: SafeName = Field(default=None, pattern=NAME_PATTERN)
    window: TmuxName = Field(default=None, pattern=TMUX_NAME_PATTERN)
    job_id: Annotated[str | None, BeforeValidator(_job_id)] = Field(default=None, pattern=SLURM_JOB_ID_PATTERN)
    job_name: SafeName = Field(default=None, pattern=NAME_PATTERN)
    command: Annotated[list[str] | None, BeforeValidator(_argv)] = None
    check: Annotated[list[str] | None, BeforeValidator(_argv)] = None

    @model_validator(mode="after")
    def _one_target(self) -> StopSettings:
        _refuse_keys_of_other_methods(self)
        if self.method == "wandb":
            if self.pid_file is not None or self.pid is not None:
                raise ValueError('method = "wandb" stops the run through W&B: remove pid_file / pid')
            return self
        if self.method in TARGET_METHODS:
            _require_target(self)
            return self
        if (self.pid_file is None) == (self.pid is None):
            raise ValueError('set exactly one of pid_file = "train.pid" or pid = 12345 (or method = "wandb")')
        return self


_KEYS_OF_METHOD = {
    "pid_file": ("local_pid", "ssh"),
    "pid": ("local_pid", "ssh"),
    "remote": TARGET_METHODS,
    "session": ("tmux", "screen"),
    "window": ("tmux",),
    "job_id": ("slurm",),
    "job_name": ("slurm",),
    "command": ("command",),
    "check": ("command",),
}


def _refuse_keys_of_other_methods(stop: StopSettings) -> None:
    for key, methods in _KEYS_OF_METHOD.items():
        if key in stop.model_fields_set and stop.method not in methods:
            raise ValueError(f"{key} belongs to method = {' or '.join(repr(m) for m in methods)}, not {stop.method!r}")


def _require_target(stop: StopSettings) -> None:
    if stop.method in ("tmux", "screen") and stop.session is None:
        raise ValueError(f'method = "{stop.method}" needs session = "NAME" (the session the training runs in)')
    if stop.method == "slurm" and (stop.job_id is None) == (stop.job_name is None):
        raise ValueError('method = "slurm" needs exactly one of job_id = "12345" or job_name = "NAME"')
    if stop.method == "command" and (stop.command is None or stop.check is None):
        raise ValueError(
            'method = "command" needs command = [argv that signals the training, may use "{signal}"] and '
            "check = [argv that exits 0 while the training still runs]"
        )
    if stop.method == "tmux" and stop.session is not None and not re.match(TMUX_NAME_PATTERN, stop.session):
        raise ValueError(f"tmux session {stop.session!r}: tmux reads '.' and ':' as separators; rename it")


class Defaults(_Section):
    notes: ConfigPath = Path(DEFAULT_NOTES)
    wandb_timeout_seconds: float = Field(default=DEFAULT_WANDB_TIMEOUT_SECONDS, gt=0, le=MAX_WANDB_TIMEOUT_SECONDS)
    ssh_timeout_seconds: float = Field(default=DEFAULT_SSH_TIMEOUT_SECONDS, gt=0, le=MAX_SSH_TIMEOUT_SECONDS)
    review: ReviewSettings = ReviewSettings()
    judge: Thresholds = Field(default_factory=dict)


class RunEntry(_Section):
    run: str = Field(min_length=1)
    roles: dict[str, RoleName] = Field(default_factory=dict)
    baselines: dict[str, float] = Field(default_factory=dict)
    log_fallback: LogFallback | None = None
    notes: ConfigPath | None = None
    total_steps: int | None = Field(default=None, gt=0)
    learning_rate: float | None = Field(default=None, gt=0)
    warmup_steps: int | None = Field(default=None, ge=0)
    lr_schedule: str | None = Field(default=None, min_length=1)
    max_grad_norm: float | None = Field(default=None, gt=0)
    num_classes: int | None = Field(default=None, ge=2)
    judge: Thresholds = Field(default_factory=dict)
    stop: StopSettings | None = None


class ConfigFile(_Section):
    defaults: Defaults = Defaults()
    runs: dict[str, RunEntry] = Field(default_factory=dict)
