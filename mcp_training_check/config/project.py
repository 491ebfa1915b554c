"""The project file, ``training-check.toml``: run aliases, metric roles, baselines, how to stop a run.

Where it is found, first match wins:
  1. ``$TRAINING_CHECK_CONFIG`` when set (the file must exist, otherwise `ConfigError`);
  2. ``./training-check.toml`` in the working directory;
  3. the same name in each parent directory, up to the git root (a directory holding ``.git``) or ``/``;
  4. none: built-in defaults and no runs.

Example (every key is optional except ``run`` in each ``[runs.NAME]``)::

    [defaults]
    notes = "TRAINING_NOTES.md"        # Markdown file incidents are appended to
    wandb_timeout_seconds = 10         # bound on every request to a W&B server (a tool call must not hang)
    ssh_timeout_seconds = 10           # bound on each SSH step: connect, banner, login, every read or command
    [defaults.review]                  # the reviewer of unsure verdicts
    backend = "openai"                 # anthropic | openai | agent; left out: from the environment, else agent
    model = "claude-sonnet-5-5"        # else $LLM_MODEL, else this default (anthropic)
    timeout_seconds = 60               # hard wall-clock bound on one review, retries and chart included
    enabled = true
    image = true                       # false: send the numbers without the run's chart
    [defaults.judge]                   # detector threshold overrides, passed through as given
    spike_ratio = 3.0

    [runs.bert]                        # an alias: tools accept run="bert"
    run = "wandb/latest-run"           # path / W&B URL / entity/project/id / ssh://host/path
    roles = { "train/loss" = "train_loss", "val/acc" = "eval_higher" }
    # roles: train_loss, eval, eval_lower, eval_higher, learning_rate, grad_norm, other, ignore
    baselines = { "val/acc" = 0.71 }
    log_fallback = "logs/train.log"    # read when the primary source is unreachable
    notes = "notes/bert.md"            # overrides defaults.notes for this run
    total_steps = 100000               # hints for the judge when the run's own config lacks them:
    learning_rate = 3e-4               #   peak LR, warmup, schedule name and clipping norm
    warmup_steps = 2000
    lr_schedule = "cosine"
    max_grad_norm = 1.0
    num_classes = 30522                # vocabulary or class count: ln of it is the untrained loss
    [runs.bert.judge]                  # merged key by key over defaults.judge
    trend_divergence_ratio = 3.0
    [runs.bert.stop]                   # without this table stop_run cannot stop the run locally
    pid_file = "train.pid"             # or: pid = 12345
    signal = "TERM"                    # TERM | INT | KILL
    grace_seconds = 30                 # wait this long for the process to exit before KILL
    kill_after_grace = true

    [runs.llm]                         # a run on a W&B server
    run = "acme/llm/ab12cd34"
    [runs.llm.stop]
    method = "wandb"                   # send W&B's StopRun, then wait for the run to leave `running`
    verify_seconds = 60                # how long to wait before saying "requested, not confirmed"

    [runs.remote]                      # a log on another machine, read over SSH (~/.ssh/config applies)
    run = "ssh://gpu-box/home/me/run1/train.log"
    [runs.remote.stop]
    method = "ssh"                     # kill the process on the run's host: pid_file is a path there
    pid_file = "/home/me/run1/train.pid"

    [runs.tm.stop]                     # what holds the training (run and the rest as above):
    method = "tmux"                    # the processes in a tmux session (or one window of it)
    session = "exp1"                   # names: letters, digits, _ . - (tmux: no '.'), at most 64
    window = "train"                   # optional
    remote = true                      # on the host of the run's ssh:// URL (or log_fallback), not here
    [runs.sc.stop]
    method = "screen"                  # the processes in a screen session (`screen -dmS exp1 ...`)
    session = "exp1"
    [runs.sl.stop]
    method = "slurm"                   # scancel --full --signal=TERM, then KILL; verified in squeue/sacct
    job_id = "123456"                  # or "123456_7" (an array task), or: job_name = "exp1"
    [runs.cmd.stop]
    method = "command"                 # for launchers training-check does not know; argv lists, no shell
    command = ["docker", "kill", "--signal", "{signal}", "exp1"]  # {signal}: TERM, INT or KILL
    check = ["docker", "top", "exp1"]  # exits 0 while the training runs, non-zero once it is gone

``log_fallback`` may also be an ``ssh://host/path`` URL: a W&B run whose log is on its training machine.

Relative local paths (``run``, ``notes``, ``log_fallback``, ``pid_file`` unless ``method = "ssh"``) are
relative to the directory of the file, so the file means the same thing whatever directory a tool runs in.
Symlinks such as ``wandb/latest-run`` are kept unresolved: they must be followed anew at every check.

Every mistake is reported as ``FILE:LINE: table.key: what is wrong and how to fix it``. tomllib gives line
numbers only for syntax errors, so `key_lines` (in ``toml_lines``) scans the text for table headers, dotted
keys and inline tables and maps the location of a pydantic error back to the line that wrote it; the
messages themselves are written by ``config.messages``.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any, cast, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
)

from ..errors import ConfigError
from .messages import syntax_message, validation_message
from .runref import RUN_ID, WANDB_RUN_PATH
from .schema import (
    DEFAULT_REVIEW_MODEL,
    DEFAULT_SSH_TIMEOUT_SECONDS,
    DEFAULT_WANDB_TIMEOUT_SECONDS,
    ConfigFile,
    Defaults,
    JudgeValue,
    ReviewSettings,
    RoleName,
    RunEntry,
    StopSettings,
)
from .toml_lines import MAX_NESTING, key_lines, table_key, too_deep_at

__all__ = [
    "CONFIG_ENV",
    "CONFIG_NAME",
    "DEFAULT_REVIEW_MODEL",
    "Defaults",
    "ProjectConfig",
    "ResolvedRunConfig",
    "ReviewSettings",
    "RoleName",
    "RunEntry",
    "StopSettings",
    "apply_overrides",
    "key_lines",
    "load_config",
]

CONFIG_NAME = "training-check.toml"
CONFIG_ENV = "TRAINING_CHECK_CONFIG"


# --------------------------------------------------------------------------- results


class ResolvedRunConfig(BaseModel):
    """Everything the tools need for one run: defaults merged, paths absolute."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alias: str | None = Field(description="The [runs.NAME] entry that matched, or None.")
    run: str = Field(description="The run string to read: the entry's `run` (local paths made absolute).")
    config_path: Path | None
    roles: dict[str, RoleName] = Field(default_factory=dict)
    baselines: dict[str, float] = Field(default_factory=dict)
    log_fallback: Path | str | None = Field(default=None, description="A local path, or an ssh://host/path URL.")
    notes: Path
    total_steps: int | None = None
    learning_rate: float | None = None
    warmup_steps: int | None = None
    lr_schedule: str | None = None
    max_grad_norm: float | None = None
    num_classes: int | None = None
    review: ReviewSettings = ReviewSettings()
    judge: dict[str, JudgeValue] = Field(default_factory=dict)
    stop: StopSettings | None = Field(default=None, description="None: the file says nothing about stopping.")
    wandb_timeout_seconds: float = DEFAULT_WANDB_TIMEOUT_SECONDS
    ssh_timeout_seconds: float = DEFAULT_SSH_TIMEOUT_SECONDS

    def judge_hints(self) -> dict[str, int | float | str]:
        """Facts about the run the judge uses like the run's own config (a plain log has none), under
        the names a training config uses; they win over the run's config, since the owner wrote them."""
        hints = {
            "total_steps": self.total_steps,
            "learning_rate": self.learning_rate,
            "warmup_steps": self.warmup_steps,
            "lr_scheduler_type": self.lr_schedule,
            "max_grad_norm": self.max_grad_norm,
            "num_classes": self.num_classes,
        }
        return {key: value for key, value in hints.items() if value is not None}


MAX_ALIASES_NAMED = 8
"""Aliases an error about an unknown run lists when none is close to what was typed."""


class ProjectConfig(BaseModel):
    """The loaded file (``path`` None: built-in defaults)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Path | None
    base_dir: Path = Field(description="Relative paths in the file are relative to this directory.")
    cwd: Path = Field(description="Relative paths given by a caller are relative to this directory.")
    defaults: Defaults = Defaults()
    runs: dict[str, RunEntry] = Field(default_factory=dict)

    def for_run(self, run: str) -> ResolvedRunConfig:
        """Settings for ``run``: an alias name, or any spelling of an entry's ``run`` value, or neither."""
        alias = run.strip() if run.strip() in self.runs else self._alias_by_value(run)
        if alias is None:  # not in the file: defaults only, and the caller's string unchanged
            return self._resolve(None, run, RunEntry.model_construct(run=run))
        entry = self.runs[alias]
        return self._resolve(alias, _effective_run(entry.run, self.base_dir), entry)

    def where_run_came_from(self, run: str, alias: str | None) -> str:
        """For an error about ``run``: the entry it came from, or the aliases close to what was typed."""
        if alias is not None:
            return f" (runs.{table_key(alias)}.run in {self.path})"
        close = difflib.get_close_matches(run.strip(), list(self.runs), n=3, cutoff=0.6)
        if close:
            return f" Or did you mean the alias {' or '.join(map(repr, close))} of {self.path}?"
        names = sorted(self.runs)
        if not names:
            return ""
        more = f" and {len(names) - MAX_ALIASES_NAMED} more" if len(names) > MAX_ALIASES_NAMED else ""
        return f" The runs {self.path} names: {', '.join(names[:MAX_ALIASES_NAMED])}{more}."

    def only_run(self, command: str) -> str:
        """The run a command given none means: the file's only entry. None or several are an error that says
        which to name (a shortcut for a person: the MCP tools always take ``run``)."""
        names = sorted(self.runs)
        if len(names) == 1:
            return names[0]
        if len(names) > 1:
            more = f" and {len(names) - MAX_ALIASES_NAMED} more" if len(names) > MAX_ALIASES_NAMED else ""
            listed = ", ".join(names[:MAX_ALIASES_NAMED]) + more
            raise ConfigError(f"{self.path} names {len(names)} runs ({listed}): say which, e.g. "
                              f"training-check {command} {names[0]}")
        where = f"{self.path} names no runs" if self.path else f"no {CONFIG_NAME} was found from {self.cwd}"
        raise ConfigError(f"{where}, so name the run: training-check {command} RUN (a log path, a W&B run or "
                          "ssh://host/path), or add it to the project with `training-check init NAME RUN`")

    def _alias_by_value(self, run: str) -> str | None:
        wanted = {_run_key(run, self.cwd), _run_key(run, self.base_dir)}
        found = [name for name, entry in self.runs.items() if _run_key(entry.run, self.base_dir) in wanted]
        if len(found) > 1:
            names = ", ".join(f"runs.{table_key(name)}" for name in found)
            raise ConfigError(f"{self.path}: {names} all have run = {run!r}; pass the alias name instead.")
        return found[0] if found else None

    def _resolve(self, alias: str | None, run: str, entry: RunEntry) -> ResolvedRunConfig:
        stop = entry.stop
        if stop is not None and stop.pid_file is not None and stop.method != "ssh":  # ssh: a path on that host
            stop = stop.model_copy(update={"pid_file": self._absolute(stop.pid_file)})
        return ResolvedRunConfig(
            alias=alias,
            run=run,
            config_path=self.path,
            roles=dict(entry.roles),
            baselines=dict(entry.baselines),
            log_fallback=_fallback(entry.log_fallback, self.base_dir),
            notes=self._absolute(entry.notes or self.defaults.notes),
            total_steps=entry.total_steps,
            learning_rate=entry.learning_rate,
            warmup_steps=entry.warmup_steps,
            lr_schedule=entry.lr_schedule,
            max_grad_norm=entry.max_grad_norm,
            num_classes=entry.num_classes,
            review=self.defaults.review,
            judge={**self.defaults.judge, **entry.judge},
            stop=stop,
            wandb_timeout_seconds=self.defaults.wandb_timeout_seconds,
            ssh_timeout_seconds=self.defaults.ssh_timeout_seconds,
        )

    def _absolute(self, path: Path) -> Path:
        return _absolute(str(path), self.base_dir)


def apply_overrides(
    resolved: ResolvedRunConfig,
    *,
    roles: dict[str, str] | None = None,
    baselines: dict[str, float] | None = None,
    log_fallback: Path | str | None = None,
) -> ResolvedRunConfig:
    """Apply tool/CLI arguments: roles and baselines merge key by key over the file, log_fallback replaces.

    There is deliberately no way to override the stop settings (pid, signal, grace) from arguments:
    stop_run kills processes, and an agent that could pass any pid could kill any process of the user.
    Only the project owner's file says what may be stopped and how.
    """
    update: dict[str, Any] = {}
    if roles:
        update["roles"] = {**resolved.roles, **_checked_roles(roles)}
    if baselines:
        update["baselines"] = {**resolved.baselines, **_checked_baselines(baselines)}
    if log_fallback is not None:
        if not str(log_fallback).strip():
            raise ConfigError("argument log_fallback: empty path; pass a log file path or leave it out.")
        update["log_fallback"] = _fallback(str(log_fallback).strip(), Path.cwd())
    return resolved.model_copy(update=update) if update else resolved


def _checked_roles(roles: dict[str, str]) -> dict[str, RoleName]:
    allowed = get_args(RoleName)
    for metric, role in roles.items():
        if role not in allowed:
            raise ConfigError(f"argument roles[{metric!r}]: {role!r} is not one of {', '.join(allowed)}.")
    return cast(dict[str, RoleName], dict(roles))


def _checked_baselines(baselines: dict[str, float]) -> dict[str, float]:
    for metric, value in baselines.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ConfigError(f"argument baselines[{metric!r}]: expected a number, got {value!r}.")
    return {metric: float(value) for metric, value in baselines.items()}


# --------------------------------------------------------------------------- run strings
# Spellings are normalised here, not by parse_run: that one rejects a path that does not exist yet,
# and a run whose log is not written yet must still find its entry.

_WANDB_URL = re.compile(rf"^https?://[^/]+/({RUN_ID})/({RUN_ID})/runs/({RUN_ID})(?:[/?#].*)?$")


def _absolute(text: str, base: Path) -> Path:
    """Absolute, normalised, symlinks kept (``wandb/latest-run`` must be followed at every read)."""
    return Path(os.path.abspath(Path(base, os.path.expanduser(text))))


def _fallback(value: Path | str | None, base: Path) -> Path | str | None:
    """An ``ssh://`` log fallback as written; a local one made absolute."""
    if value is None or (isinstance(value, str) and value.startswith("ssh://")):
        return value
    return _absolute(str(value), base)


def _is_local(text: str, base: Path) -> bool:
    """A local path unless it is a URL, a ``wandb:`` reference or an entity/project/id with no such file."""
    if "://" in text or text.startswith("wandb:"):
        return False
    if WANDB_RUN_PATH.match(text.strip("/")) and not text.startswith(("/", "~", ".")):
        return os.path.lexists(_absolute(text, base))
    return True


def _effective_run(text: str, base: Path) -> str:
    text = text.strip()
    return str(_absolute(text, base)) if _is_local(text, base) else text


def _run_key(text: str, base: Path) -> str:
    """One spelling per run, to find an entry by its ``run`` value however the caller wrote it."""
    text = text.strip()
    if _is_local(text, base):
        return f"file:{_absolute(text, base)}"
    bare = text.removeprefix("wandb:").strip("/")
    match = _WANDB_URL.match(text) or WANDB_RUN_PATH.match(bare)
    if match:
        return "wandb:{}/{}/{}".format(*match.groups())
    return text.rstrip("/")


# --------------------------------------------------------------------------- loading


def load_config(path: Path | None = None, *, cwd: Path | None = None) -> ProjectConfig:
    """Load ``path``, or find the project file (see the module docstring); none found: defaults."""
    cwd = Path(os.path.abspath(cwd or Path.cwd()))
    found = find_config(path, cwd)
    if found is None:
        return ProjectConfig(path=None, base_dir=cwd, cwd=cwd)
    text = read_config_text(found)
    parsed = parse_config_text(text, found, cwd)
    return ProjectConfig(path=found, base_dir=found.parent, cwd=cwd, defaults=parsed.defaults, runs=parsed.runs)


def find_config(path: Path | None, cwd: Path) -> Path | None:
    """The file `load_config` would read (``path`` given: that one, which must exist); None: none found."""
    if path is not None:
        return _must_exist(_absolute(str(path), cwd), "the config path")
    env = os.environ.get(CONFIG_ENV, "").strip()
    if env:
        return _must_exist(_absolute(env, cwd), f"{CONFIG_ENV}={env!r}" if len(env) <= 80 else CONFIG_ENV)
    for directory in (cwd, *cwd.parents):
        candidate = directory / CONFIG_NAME
        if candidate.is_file():
            return candidate
        if (directory / ".git").exists():
            return None
    return None


def _must_exist(path: Path, what: str) -> Path:
    fix = f"point it at an existing {CONFIG_NAME} or unset it"
    try:
        regular = stat.S_ISREG(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        regular = False
    except OSError as exc:  # a name too long, a symlink loop, a directory this user may not search
        shown = str(path) if len(str(path)) <= 80 else f"{str(path)[:40]}…{str(path)[-40:]}"
        raise ConfigError(f"{what}: {shown}: {exc.strerror}; {fix}.") from exc
    if not regular:
        raise ConfigError(f"{what}: {path} is not a file; point it at an existing {CONFIG_NAME} or unset it.")
    return path


def read_config_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason}); save it as UTF-8.") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror}); check its permissions.") from exc


def parse_config_text(text: str, path: Path, cwd: Path) -> ConfigFile:
    """``text`` as the file ``path`` would be loaded: a bad value is a ``FILE:LINE: key: fix`` ConfigError."""
    shown = _display(path, cwd)
    deep = too_deep_at(text)
    if deep is not None:
        raise ConfigError(
            f"{shown}:{deep}: nesting too deep at line {deep} (more than {MAX_NESTING} levels of arrays, inline "
            "tables or dotted key parts); no setting is written that deep: write it flatter."
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(syntax_message(str(exc), shown, text)) from exc
    try:
        return ConfigFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, shown, key_lines(text), ConfigFile)) from exc


def _display(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)
