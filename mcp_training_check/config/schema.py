"""The schema of ``training-check.toml``: its sections, their limits and defaults, and the validators
that turn a typo into an error naming the key (see `config` for where the file is found and what it means).
"""

from __future__ import annotations

import math
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
StopMethodName = Literal["local_pid", "wandb", "ssh"]
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
    is then a path on that host); or, with ``method = "wandb"``, W&B's StopRun for the entry's own W&B run
    (then no pid is taken)."""

    method: StopMethodName = "local_pid"
    pid_file: ConfigPath | None = None
    pid: int | None = Field(default=None, gt=1)
    signal: Annotated[StopSignal, BeforeValidator(_signal_name)] = "TERM"
    grace_seconds: float = Field(default=DEFAULT_GRACE_SECONDS, ge=0, le=MAX_GRACE_SECONDS)
    kill_after_grace: bool = True
    verify_seconds: float = Field(default=DEFAULT_WANDB_VERIFY_SECONDS, ge=0, le=MAX_WANDB_VERIFY_SECONDS)

    @model_validator(mode="after")
    def _one_pid_source(self) -> StopSettings:
        if self.method == "wandb":
            if self.pid_file is not None or self.pid is not None:
                raise ValueError('method = "wandb" stops the run through W&B: remove pid_file / pid')
            return self
        if (self.pid_file is None) == (self.pid is None):
            raise ValueError('set exactly one of pid_file = "train.pid" or pid = 12345 (or method = "wandb")')
        return self


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
    judge: Thresholds = Field(default_factory=dict)
    stop: StopSettings | None = None


class ConfigFile(_Section):
    defaults: Defaults = Defaults()
    runs: dict[str, RunEntry] = Field(default_factory=dict)
