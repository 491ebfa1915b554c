"""A run entry written into ``training-check.toml`` for a person (`training-check init`).

The entry is appended to the project file (created when there is none) only after the whole new text has
been checked the way every load checks it, so a bad value is the usual ``FILE:LINE: key: fix`` message and
the file is left as it was. The write replaces the file in one rename: a crash leaves the old file or the
new one, never half of it.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError
from ..models import RunKind
from .project import CONFIG_NAME, find_config, parse_config_text, read_config_text
from .runref import parse_run
from .toml_lines import table_key

STOP_FORMS = {
    "pid_file": "pid_file=train.pid (the file the training wrote its pid to)",
    "pid": "pid=12345",
    "tmux": "tmux=SESSION (the tmux session the training runs in)",
    "screen": "screen=SESSION",
    "slurm": "slurm=JOB_ID (or slurm=NAME, a job name)",
    "wandb": "wandb (W&B's own stop, for a run on a W&B server)",
}
HEADER = (
    "# training-check.toml: the runs training-check watches and how it may stop them.\n"
    "# Every key: the README's Configuration section. `training-check init` appends a run.\n"
)


@dataclass(frozen=True)
class NewRun:
    """What ``training-check init`` was told about a run."""

    name: str
    run: str
    log_fallback: str | None = None
    total_steps: int | None = None
    baselines: dict[str, float] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    stop: str | None = None


def add_run(new: NewRun, *, config: Path | None = None, cwd: Path | None = None) -> tuple[Path, str]:
    """Append ``new`` as ``[runs.NAME]`` to the project file (``config``, else the one `load_config` would read,
    else ``./training-check.toml``): the file and the text added."""
    cwd = Path(os.path.abspath(cwd or Path.cwd()))
    path = _target(config, cwd)
    old = read_config_text(path) if path.exists() else ""
    if new.name in parse_config_text(old, path, cwd).runs:
        raise ConfigError(
            f"{path} already has [runs.{table_key(new.name)}]: pick another name, or edit or delete that entry there"
        )
    ref = parse_run(new.run, base_dir=path.parent, missing_path_ok=True)  # a typo'd URL or scheme is refused here
    _check_stop_fits(new, ref.kind)
    entry = entry_text(new, remote=_on_ssh(new))
    text = f"{old.rstrip()}\n\n{entry}" if old.strip() else HEADER + "\n" + entry
    try:
        parse_config_text(text, path, cwd)  # checked as every load checks it, before anything is written
    except ConfigError as exc:
        raise ConfigError(f"{exc} (in the text init would write: nothing was written)") from exc
    _replace(path, text)
    return path, entry


def entry_text(new: NewRun, *, remote: bool = False) -> str:
    """The TOML of one ``[runs.NAME]`` table (and its ``.stop`` table)."""
    table = f"runs.{table_key(new.name)}"
    lines = [f"[{table}]", f"run = {_string(new.run)}"]
    if new.log_fallback:
        lines.append(f"log_fallback = {_string(new.log_fallback)}")
    if new.total_steps is not None:
        lines.append(f"total_steps = {new.total_steps}")
    if new.roles:
        lines.append(f"roles = {_inline({k: _string(v) for k, v in new.roles.items()})}")
    if new.baselines:
        lines.append(f"baselines = {_inline({k: repr(float(v)) for k, v in new.baselines.items()})}")
    if new.stop:
        lines += ["", f"[{table}.stop]", *stop_lines(new.stop, remote=remote)]
    return "\n".join(lines) + "\n"


def stop_lines(spec: str, *, remote: bool = False) -> list[str]:
    """``pid_file=train.pid`` / ``pid=123`` / ``tmux=S`` / ``screen=S`` / ``slurm=JOB`` / ``wandb`` → the stop
    table's keys; ``remote``: the training runs on the host of the entry's ``ssh://`` run or log."""
    method, _, value = (part.strip() for part in spec.partition("="))
    if method not in STOP_FORMS or (method == "wandb") != (value == ""):
        forms = "; ".join(STOP_FORMS.values())
        raise ConfigError(f"--stop {spec!r}: write it as one of {forms}")
    if method == "wandb":
        return ['method = "wandb"']
    if method == "pid" and not value.isdigit():
        raise ConfigError(f"--stop {spec!r}: a pid is a whole number, e.g. pid=12345")
    if method in ("pid_file", "pid"):
        target = f"pid_file = {_string(value)}" if method == "pid_file" else f"pid = {value}"
        return ['method = "ssh"', target] if remote else [target]
    if method == "slurm":
        key = "job_id" if re.match(r"^\d+(_\d+)?$", value) else "job_name"
        return ['method = "slurm"', f"{key} = {_string(value)}"]
    return [f'method = "{method}"', f"session = {_string(value)}", *(["remote = true"] if remote else [])]


def _check_stop_fits(new: NewRun, kind: RunKind) -> None:
    """``--stop wandb`` on a run that is not on a W&B server was written, loaded, and refused only by the
    stop itself ("needs a W&B run"), when the run had to be stopped: refused here instead."""
    if new.stop is not None and new.stop.strip() == "wandb" and kind is not RunKind.WANDB_API:
        raise ConfigError(
            f"--stop wandb stops a run on a W&B server (entity/project/run_id or a run URL), and {new.run!r} is "
            "not one: stop its process instead, e.g. --stop pid_file=train.pid (the file the training writes "
            "its pid to), tmux=SESSION, screen=SESSION or slurm=JOB_ID; nothing was written"
        )


def _on_ssh(new: NewRun) -> bool:
    """The training runs on another machine: its run (or, for a W&B run, its log) is an ``ssh://`` URL."""
    return new.run.strip().startswith("ssh://") or (new.log_fallback or "").strip().startswith("ssh://")


def _target(config: Path | None, cwd: Path) -> Path:
    if config is not None:
        path = Path(os.path.abspath(cwd / config))
        if path.is_dir():
            raise ConfigError(f"--config {config}: a directory; name the file, e.g. {path / CONFIG_NAME}")
        return path
    return find_config(None, cwd) or cwd / CONFIG_NAME


def _replace(path: Path, text: str) -> None:
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise ConfigError(f"{path}: cannot write it ({exc.strerror}); check the directory's permissions") from exc


def _string(value: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's (\\uXXXX included)."""
    return json.dumps(value, ensure_ascii=False)


def _inline(items: dict[str, str]) -> str:
    return "{ " + ", ".join(f"{_string(k)} = {v}" for k, v in items.items()) + " }"
