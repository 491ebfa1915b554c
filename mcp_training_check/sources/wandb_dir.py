"""Find the ``run-<id>.wandb`` file behind whatever local path a user passes.

wandb 0.31 lays a project out as ``<project>/wandb/{run,offline-run}-<date>_<time>-<id>/run-<id>.wandb``
with ``wandb/latest-run`` a symlink to the newest run directory. Users paste any level of that tree,
so every level is accepted. Resolution is repeated at every check (it costs a few ``stat`` calls) so
that ``latest-run`` keeps following the newest run.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from ..errors import RunNotFound
from ..files import file_kind

RUN_FILE_SUFFIX = ".wandb"
LATEST_RUN_LINK = "latest-run"
WANDB_DIR_NAME = "wandb"
# run-20261130_093017-ad7wkxn8 or offline-run-20261130_093017-ad7wkxn8
_RUN_DIR_NAME = re.compile(r"^(?:offline-)?run-(\d{8}_\d{6})-(.+)$")

_ACCEPTED = (
    "pass a run-<id>.wandb file, a run directory (wandb/run-* or wandb/offline-run-*), "
    "wandb/latest-run, a wandb/ directory, or the project directory that contains wandb/"
)


def is_wandb_path(path: str | Path) -> bool:
    """Cheap routing test: does ``path`` look like a W&B run file or directory (no file is read)?

    True for a name ending in ``.wandb`` (even before the file exists, so a starting run routes
    here), a run directory, a ``wandb/`` directory, or a directory holding ``wandb/``.
    """
    p = Path(path).expanduser()
    if p.name.endswith(RUN_FILE_SUFFIX):
        return True
    if not p.is_dir():
        return False
    return _is_run_dir(p) or _is_wandb_dir(p) or (p / WANDB_DIR_NAME).is_dir()


def resolve_wandb_path(path: str | Path) -> Path:
    """Return the ``run-<id>.wandb`` file that ``path`` designates; `RunNotFound` says how to fix it."""
    p = Path(path).expanduser()
    if p.is_file():
        if p.name.endswith(RUN_FILE_SUFFIX):
            return p.resolve()
        raise RunNotFound(f"{p} is a file but not a W&B run file (run-<id>.wandb): {_ACCEPTED}.")
    if not p.exists():
        if _loops(p):
            raise RunNotFound(f"symlink loop at {p}: fix or remove the link, or {_ACCEPTED}.")
        dangling = " (a symlink to a deleted run)" if p.is_symlink() else ""
        raise RunNotFound(f"{p} does not exist{dangling}: {_ACCEPTED}.")
    if not p.is_dir():  # a FIFO, a device, a socket: never opened
        raise RunNotFound(f"{p} is {file_kind(p.stat().st_mode)}, not a W&B run file or directory: {_ACCEPTED}.")
    if _is_run_dir(p):
        return _run_file_in(p)
    if _is_wandb_dir(p):
        return _run_file_in(_latest_run_dir(p))
    if (p / WANDB_DIR_NAME).is_dir():
        return _run_file_in(_latest_run_dir(p / WANDB_DIR_NAME))
    raise RunNotFound(
        f"{p} is a directory without W&B runs (no run-*.wandb file, no latest-run, no wandb/ inside): "
        f"{_ACCEPTED}; or a TensorBoard log directory (one holding events.out.tfevents.* files, directly or in "
        "run subdirectories such as lightning_logs/version_0) or a training log. W&B runs are written where "
        "wandb.init(dir=...) points, by default the training script's working directory."
    )


def _loops(p: Path) -> bool:
    try:
        os.stat(p)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def _is_run_dir(p: Path) -> bool:
    return bool(_RUN_DIR_NAME.match(p.resolve().name)) or any(p.glob(f"run-*{RUN_FILE_SUFFIX}"))


def _is_wandb_dir(p: Path) -> bool:
    return (p / LATEST_RUN_LINK).is_symlink() or any(_run_dirs(p))


def _run_dirs(parent: Path) -> list[Path]:
    """Real run directories (not the latest-run link) directly under ``parent``."""
    return [d for d in parent.iterdir() if _RUN_DIR_NAME.match(d.name) and d.is_dir() and not d.is_symlink()]


def _latest_run_dir(wandb_dir: Path) -> Path:
    """``latest-run`` when it points somewhere, else the run that started last (timestamp in the name)."""
    link = wandb_dir / LATEST_RUN_LINK
    if link.is_dir():
        return link
    runs = _run_dirs(wandb_dir)
    if not runs:
        raise RunNotFound(
            f"{wandb_dir} holds no run directory (run-* or offline-run-*) and no valid latest-run link: "
            "start the training run first, or pass the path of an existing run."
        )
    return max(runs, key=_start_key)


def _start_key(run_dir: Path) -> tuple[str, float]:
    match = _RUN_DIR_NAME.match(run_dir.name)
    return (match.group(1) if match else "", run_dir.stat().st_mtime)


def _run_file_in(run_dir: Path) -> Path:
    """The run's transaction log; when several exist prefer ``run-<id>.wandb`` for the directory's id."""
    run_dir = run_dir.resolve()
    files = sorted(run_dir.glob(f"run-*{RUN_FILE_SUFFIX}"))
    if not files:
        raise RunNotFound(
            f"run directory {run_dir} holds no run-<id>.wandb file yet: the run may still be starting "
            "(wait a few seconds and check again), or it was written by a wandb version older than 0.10."
        )
    match = _RUN_DIR_NAME.match(run_dir.name)
    if match:
        own = run_dir / f"run-{match.group(2)}{RUN_FILE_SUFFIX}"
        if own in files:
            return own
    return max(files, key=lambda f: f.stat().st_mtime)
