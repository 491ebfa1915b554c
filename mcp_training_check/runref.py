"""Turn the one ``run`` string every tool takes into a `RunRef`.

Accepted forms, tried in this order:
  ssh://[user@]host[:port]/path/to/train.log      a log on another machine
  https://<wandb host>/<entity>/<project>/runs/<id> a run URL pasted from the browser
  wandb:<entity>/<project>/<id>                     a W&B run on the configured server
  an existing local path                            W&B run dir / .wandb file / training log
  <entity>/<project>/<id>                           a W&B run (when no such local path exists)
  <id>                                              with WANDB_ENTITY and WANDB_PROJECT set
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlparse

from .errors import RunNotFound, RunRefError
from .models import RunKind, RunRef

_RUN_ID = r"[A-Za-z0-9_\-.]+"
_WANDB_PATH = re.compile(rf"^({_RUN_ID})/({_RUN_ID})/(?:runs/)?({_RUN_ID})$")
_URL_RUN = re.compile(rf"^/({_RUN_ID})/({_RUN_ID})/runs/({_RUN_ID})(?:/.*)?$")
_BARE_ID = re.compile(r"^[a-z0-9]{6,16}$")

_FORMS_HELP = (
    "pass a local path (W&B run directory, run-<id>.wandb file or training log), "
    "'entity/project/run_id', 'wandb:entity/project/run_id', a W&B run URL, or 'ssh://host/path/to/log'"
)


def parse_run(raw: str, *, base_dir: Path | None = None) -> RunRef:
    """Parse ``raw``; relative local paths are resolved against ``base_dir`` (default: cwd)."""
    text = raw.strip()
    if not text:
        raise RunRefError(f"`run` is empty: {_FORMS_HELP}.")
    if text.startswith("ssh://"):
        return _parse_ssh(raw, text)
    if text.startswith(("http://", "https://")):
        return _parse_url(raw, text)
    if text.startswith("wandb:"):
        return _parse_wandb_path(raw, text.removeprefix("wandb:").strip("/"))
    local = _local_path(text, base_dir)
    if local is not None:
        return _parse_local(raw, local)
    if _looks_like_path(text):
        raise RunNotFound(
            f"`run` {raw!r}: no such file or directory (resolved against {base_dir or Path.cwd()}). "
            "Check the path, or pass an absolute one."
        )
    if _WANDB_PATH.match(text.strip("/")):
        return _parse_wandb_path(raw, text.strip("/"))
    if _BARE_ID.match(text) and os.environ.get("WANDB_ENTITY") and os.environ.get("WANDB_PROJECT"):
        return RunRef(
            raw=raw,
            kind=RunKind.WANDB_API,
            entity=os.environ["WANDB_ENTITY"],
            project=os.environ["WANDB_PROJECT"],
            run_id=text,
        )
    raise RunRefError(f"`run` {raw!r} is not an existing path or a known run form: {_FORMS_HELP}.")


_PATH_SUFFIXES = (".log", ".txt", ".jsonl", ".json", ".csv", ".tsv", ".out", ".wandb")


def _looks_like_path(text: str) -> bool:
    """A string that can only mean a local path, even when nothing is there (yet)."""
    return text.startswith(("/", "~", "./", "../")) or text.lower().endswith(_PATH_SUFFIXES)


def _local_path(text: str, base_dir: Path | None) -> Path | None:
    path = Path(os.path.expanduser(text))
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    # keep symlinks such as wandb/latest-run unresolved: they must be followed at every check
    path = Path(os.path.abspath(path))
    return path if path.exists() or path.is_symlink() else None


def _parse_local(raw: str, path: Path) -> RunRef:
    if path.is_dir() or path.suffix == ".wandb":
        kind = RunKind.WANDB_FILE if path.is_file() else RunKind.WANDB_DIR
    else:
        kind = RunKind.LOG_FILE
    return RunRef(raw=raw, kind=kind, path=str(path))


def _parse_ssh(raw: str, text: str) -> RunRef:
    url = urlparse(text)
    if not url.hostname or not url.path or url.path == "/":
        raise RunRefError(f"`run` {raw!r}: an ssh run needs a host and a path, e.g. ssh://gpu-box/home/me/train.log.")
    host = url.hostname
    if url.username:
        host = f"{url.username}@{host}"
    if url.port:
        host = f"{host}:{url.port}"
    return RunRef(raw=raw, kind=RunKind.SSH, host=host, path=url.path)


def _parse_url(raw: str, text: str) -> RunRef:
    url = urlparse(text)
    match = _URL_RUN.match(url.path)
    if not match:
        raise RunRefError(
            f"`run` {raw!r} is a URL but not a W&B run URL: expected "
            "https://<host>/<entity>/<project>/runs/<run_id> (copy it from the run page)."
        )
    entity, project, run_id = match.groups()
    return RunRef(raw=raw, kind=RunKind.WANDB_API, entity=entity, project=project, run_id=run_id)


def _parse_wandb_path(raw: str, path: str) -> RunRef:
    match = _WANDB_PATH.match(path)
    if not match:
        raise RunRefError(f"`run` {raw!r}: a W&B run is written 'entity/project/run_id' (the 8-character id).")
    entity, project, run_id = match.groups()
    return RunRef(raw=raw, kind=RunKind.WANDB_API, entity=entity, project=project, run_id=run_id)
