"""Turn the one ``run`` string every tool takes into a `RunRef`.

Accepted forms, tried in this order:
  ssh://[user@]host[:port]/path/to/train.log      a log on another machine
  https://<wandb host>/<entity>/<project>/runs/<id> a run URL pasted from the browser
  https://<wandb host>/<entity>/<project>/sweeps/<id> a sweep URL: every running run of the sweep
  wandb:<entity>/<project>/<id>                     a W&B run on the configured server
  wandb:<entity>/<project>/sweeps/<id>              a W&B sweep
  an existing local path                            W&B run dir / .wandb file / training log /
                                                    TensorBoard log dir or event file
  <entity>/<project>/<id>                           a W&B run (when no such local path exists)
  <entity>/<project>/sweeps/<id>                    a W&B sweep
  <entity>/<project>                                every running run of a W&B project
  <id>                                              with WANDB_ENTITY and WANDB_PROJECT set

A URL of a self-hosted server also names the server: its origin becomes ``RunRef.host`` (the API base
URL), so a pasted URL works without WANDB_BASE_URL. W&B cloud URLs leave ``host`` unset (the client's
own default or WANDB_BASE_URL applies).
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from urllib.parse import urlparse

from ..errors import RunNotFound, RunRefError
from ..files import describe_os_error
from ..models import RunKind, RunRef

RUN_ID = r"[A-Za-z0-9_\-.]+"
WANDB_RUN_PATH = re.compile(rf"^({RUN_ID})/({RUN_ID})/(?:runs/)?({RUN_ID})$")
_URL_RUN = re.compile(rf"^/(?:wandb/)?({RUN_ID})/({RUN_ID})/(runs|sweeps)/({RUN_ID})(?:/.*)?$")
_WANDB_SWEEP = re.compile(rf"^({RUN_ID})/({RUN_ID})/sweeps/({RUN_ID})$")
_WANDB_PROJECT = re.compile(rf"^({RUN_ID})/({RUN_ID})$")
_SAAS_HOSTS = ("wandb.ai", "forge.coreweave.com")
_BARE_ID = re.compile(r"^[a-z0-9]{6,16}$")

_FORMS_HELP = (
    "pass a local path (W&B run directory, run-<id>.wandb file, training log, TensorBoard log directory or "
    "events.out.tfevents.* file), "
    "'entity/project/run_id', 'wandb:entity/project/run_id', a W&B run URL, or 'ssh://host/path/to/log'"
)


def parse_run(raw: str, *, base_dir: Path | None = None, missing_path_ok: bool = False) -> RunRef:
    """Parse ``raw``; relative local paths are resolved against ``base_dir`` (default: cwd).

    ``missing_path_ok``: a local path that is gone is still the run it named (its state key is the path),
    for a caller that does not read it: a stop kills what the config's stop table names, and a training
    whose log was deleted or rotated away still runs."""
    text = raw.strip()
    if not text:
        raise RunRefError(f"`run` is empty: {_FORMS_HELP}.")
    if "\0" in text:
        raise RunRefError(f"`run` {raw[:80]!r} holds a NUL character, which no path or URL can: {_FORMS_HELP}.")
    if text.startswith("ssh://"):
        return _parse_ssh(raw, text)
    _refuse_a_mistyped_scheme(raw, text, base_dir)
    if text.startswith(("http://", "https://")):
        return _parse_url(raw, text)
    if text.startswith("wandb:"):
        return _parse_wandb_path(raw, text.removeprefix("wandb:").strip("/"))
    local = _local_path(text, base_dir)
    if local is not None:
        return _parse_local(raw, local)
    wandb_dir = _names_a_wandb_dir(text)
    if wandb_dir or _looks_like_path(text) or _under_local_dir(text, base_dir):
        if missing_path_ok:
            return _parse_local(raw, _absolute(text, base_dir))
        raise RunNotFound(_missing_path_message(raw, text, base_dir, wandb_dir=wandb_dir))
    if WANDB_RUN_PATH.match(text.strip("/")) or _WANDB_SWEEP.match(text.strip("/")):
        return _parse_wandb_path(raw, text.strip("/"))
    if _WANDB_PROJECT.match(text.strip("/")):
        entity, project = text.strip("/").split("/")
        return RunRef(raw=raw, kind=RunKind.WANDB_PROJECT, entity=entity, project=project)
    if _BARE_ID.match(text) and os.environ.get("WANDB_ENTITY") and os.environ.get("WANDB_PROJECT"):
        return RunRef(
            raw=raw,
            kind=RunKind.WANDB_API,
            entity=os.environ["WANDB_ENTITY"],
            project=os.environ["WANDB_PROJECT"],
            run_id=text,
        )
    typo = _close_names(_absolute(text, base_dir))
    raise RunRefError(f"`run` {raw!r} is not an existing path or a known run form: {_FORMS_HELP}.{typo}")


def _missing_path_message(raw: str, text: str, base_dir: Path | None, *, wandb_dir: bool) -> str:
    """No such path: where a relative one was looked for (an absolute one was told "resolved against" the
    working directory and "pass an absolute one"), and the close names in its directory (a typo)."""
    path = _absolute(text, base_dir)
    relative = not Path(os.path.expanduser(text)).is_absolute()
    resolved = f" (resolved against {base_dir or Path.cwd()})" if relative else ""
    where = "; wandb/ is written in the directory the training ran in: run this there" if wandb_dir else ""
    fix = "Check the path, or pass an absolute one" if relative else "Check the path"
    missing_dir = "" if wandb_dir or path.parent.is_dir() else f" {path.parent} does not exist either."
    return (
        f"`run` {raw!r}: no such file or directory{resolved}{where}.{missing_dir}{_close_names(path)} "
        f"{fix}; for a W&B run or project, write 'wandb:' before it."
    )


MAX_LISTED_ENTRIES = 2000
"""Entries of a directory compared with a missing name (a huge directory is not listed whole)."""


def _close_names(path: Path) -> str:
    """" Did you mean …?" with the entries of ``path``'s directory closest to its name (a typo), else ""."""
    names = [entry.name for entry in _entries(path.parent)]
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.7)
    return f" Did you mean {' or '.join(repr(str(path.parent / name)) for name in close)}?" if close else ""


_MISTYPED_SCHEME = re.compile(r"^(ssh|https?):/?(?!/)(.+)$", re.IGNORECASE)


def _refuse_a_mistyped_scheme(raw: str, text: str, base_dir: Path | None) -> None:
    """``ssh:/host/path`` or ``https:/wandb.ai/...``: a URL missing a slash, not a local path (a file name with
    a colon is still read when it exists: it is looked up first)."""
    mistyped = _MISTYPED_SCHEME.match(text)
    if mistyped and not text.lower().startswith(("ssh://", "http://", "https://")):
        meant = f"{mistyped[1].lower()}://{mistyped[2].lstrip('/')}"
        if not os.path.lexists(_absolute(text, base_dir)):
            raise RunRefError(f"`run` {raw!r} is not a URL ('//' after '{mistyped[1]}:'): did you mean {meant!r}?")


_PATH_SUFFIXES = (".log", ".txt", ".jsonl", ".json", ".csv", ".tsv", ".out", ".wandb")


def _looks_like_path(text: str) -> bool:
    """A string that can only mean a local path, even when nothing is there (yet)."""
    return text.startswith(("/", "~", "./", "../")) or text.lower().endswith(_PATH_SUFFIXES)


_WANDB_RUN_DIR = re.compile(r"^(latest-run|(offline-)?run-\d{8}_\d{6}-[A-Za-z0-9]+)$")


def _names_a_wandb_dir(text: str) -> bool:
    """``wandb/...`` or a run directory's own name (``latest-run``, ``run-20260101_000000-<id>``): what wandb
    writes locally, never a W&B entity/project/run (the entity ``wandb`` is W&B's own; ``wandb:`` reaches it)."""
    parts = text.strip("/").split("/")
    return len(parts) > 1 and (parts[0] == "wandb" or any(_WANDB_RUN_DIR.match(part) for part in parts))


def _under_local_dir(text: str, base_dir: Path | None) -> bool:
    """``runs/exp1`` while ``runs/`` exists here: a missing path, not the W&B project ``exp1`` of an
    entity that happens to share the directory's name (``wandb:`` says that)."""
    first = text.split("/", 1)[0]
    if "/" not in text or not first or first in (".", ".."):
        return False
    return ((base_dir or Path.cwd()) / first).is_dir()


def _absolute(text: str, base_dir: Path | None) -> Path:
    path = Path(os.path.expanduser(text))
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    # keep symlinks such as wandb/latest-run unresolved: they must be followed at every check
    return Path(os.path.abspath(path))


def _local_path(text: str, base_dir: Path | None) -> Path | None:
    path = _absolute(text, base_dir)
    try:
        os.lstat(path)  # the path itself, or a link (a dangling or looping one is reported when read)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        shown = text if len(text) <= 80 else f"{text[:40]}…{text[-40:]}"
        problem = describe_os_error(exc, path, what="path", fix="check the path, or pass a shorter one")
        raise RunRefError(f"`run` {shown!r}: {problem}") from exc
    return path


def _parse_local(raw: str, path: Path) -> RunRef:
    if path.is_dir():
        kind = RunKind.TENSORBOARD_DIR if holds_event_files(path) and not _holds_wandb(path) else RunKind.WANDB_DIR
    elif path.suffix == ".wandb":
        kind = RunKind.WANDB_FILE
    else:
        kind = RunKind.LOG_FILE
    return RunRef(raw=raw, kind=kind, path=str(path))


EVENT_FILE_MARKER = "tfevents"
"""In the name of every TensorBoard event file (``events.out.tfevents.<time>.<host>...``), as TensorBoard
itself finds them."""

TENSORBOARD_SPLITS = ("train", "validation", "val", "eval", "test", "valid")
"""Subdirectories that hold one split of a run's scalars (Keras writes ``logs/train`` and ``logs/validation``)."""


def is_event_file_name(name: str) -> bool:
    return EVENT_FILE_MARKER in name


def _entries(path: Path) -> list[os.DirEntry[str]]:
    """The first `MAX_LISTED_ENTRIES` entries of a directory ([] when it cannot be listed)."""
    try:
        with os.scandir(path) as found:
            return [entry for _, entry in zip(range(MAX_LISTED_ENTRIES), found, strict=False)]
    except OSError:
        return []


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


MAX_SCANNED_ENTRIES = 10_000
"""Entries looked at in all when asking whether a directory holds event files (a home directory passed by
mistake is not walked whole)."""


def holds_event_files(path: Path, *, depth: int = 2) -> bool:
    """Whether TensorBoard event files are in ``path``, or within ``depth`` levels under it: a run directory, its
    splits (``train/``), a directory of runs (Lightning's ``lightning_logs/version_0``, HF's ``runs/<date>``) and
    their splits. Looks at most `MAX_SCANNED_ENTRIES` entries."""
    budget = [MAX_SCANNED_ENTRIES]

    def walk(here: Path, depth: int) -> bool:
        entries = _entries(here)[: max(budget[0], 0)]
        budget[0] -= len(entries)
        if any(is_event_file_name(entry.name) for entry in entries):
            return True
        return depth > 0 and any(_is_dir(e) and walk(Path(e.path), depth - 1) for e in entries)

    return walk(path, depth)


def _holds_wandb(path: Path) -> bool:
    """A W&B run directory, a wandb/ directory or a project holding one: W&B keeps priority over TensorBoard
    files beside it (the W&B reader then says what it found)."""
    if _WANDB_RUN_DIR.match(path.name):
        return True
    return any(e.name == "wandb" or e.name.endswith(".wandb") or _WANDB_RUN_DIR.match(e.name) for e in _entries(path))


_SSH_EXAMPLE = "e.g. ssh://gpu-box/home/me/train.log or ssh://me@10.0.0.5:2222/home/me/train.log"


def _parse_ssh(raw: str, text: str) -> RunRef:
    try:
        url = urlparse(text)
        port = url.port
        if port == 0:
            raise ValueError("Port out of range 1-65535")
    except ValueError as exc:  # "Invalid IPv6 URL", "Port out of range 0-65535", "Port could not be cast..."
        raise RunRefError(
            f"`run` {raw!r} is not a valid ssh:// URL ({_ssh_url_problem(text, exc)}): {_SSH_EXAMPLE}."
        ) from exc
    if not url.hostname or not url.path or url.path == "/":
        raise RunRefError(f"`run` {raw!r}: an ssh run needs a host and a path, {_SSH_EXAMPLE}.")
    host = url.hostname
    if ":" in host:  # an IPv6 address, written [::1] in the URL
        host = f"[{host}]"
    if url.username:
        host = f"{url.username}@{host}"
    if port:
        host = f"{host}:{port}"
    return RunRef(raw=raw, kind=RunKind.SSH, host=host, path=url.path)


def _ssh_url_problem(text: str, exc: ValueError) -> str:
    if "IPv6" in str(exc):
        return "an IPv6 address needs both brackets: [::1]"
    port = text.removeprefix("ssh://").split("/", 1)[0].rpartition("@")[2].rpartition(":")[2]
    return f"port {port!r} is not a number from 1 to 65535"


def _parse_url(raw: str, text: str) -> RunRef:
    url = urlparse(text)
    match = _URL_RUN.match(url.path)
    if not match:
        raise RunRefError(
            f"`run` {raw!r} is a URL but not a W&B run URL: expected "
            "https://<host>/<entity>/<project>/runs/<run_id> (copy it from the run page) or "
            ".../<entity>/<project>/sweeps/<sweep_id>."
        )
    entity, project, what, ident = match.groups()
    host = _api_base_url(url.scheme, url.netloc)
    if what == "sweeps":
        return RunRef(raw=raw, kind=RunKind.WANDB_SWEEP, entity=entity, project=project, sweep_id=ident, host=host)
    return RunRef(raw=raw, kind=RunKind.WANDB_API, entity=entity, project=project, run_id=ident, host=host)


def _api_base_url(scheme: str, netloc: str) -> str | None:
    """The API base URL of the server a browser URL came from; None for W&B cloud."""
    hostname = netloc.rsplit("@", 1)[-1].split(":", 1)[0].lower()
    if any(hostname == saas or hostname.endswith(f".{saas}") for saas in _SAAS_HOSTS):
        return None
    if hostname.startswith("app."):  # W&B dedicated cloud: app.X serves the UI, api.X the API
        netloc = netloc.replace("app.", "api.", 1)
    return f"{scheme}://{netloc}"


def _parse_wandb_path(raw: str, path: str) -> RunRef:
    sweep = _WANDB_SWEEP.match(path)
    if sweep:
        entity, project, sweep_id = sweep.groups()
        return RunRef(raw=raw, kind=RunKind.WANDB_SWEEP, entity=entity, project=project, sweep_id=sweep_id)
    if _WANDB_PROJECT.match(path):
        entity, project = path.split("/")
        return RunRef(raw=raw, kind=RunKind.WANDB_PROJECT, entity=entity, project=project)
    match = WANDB_RUN_PATH.match(path)
    if not match:
        raise RunRefError(
            f"`run` {raw!r}: a W&B run is written 'entity/project/run_id' (the 8-character id), a project "
            "'entity/project', a sweep 'entity/project/sweeps/id'."
        )
    entity, project, run_id = match.groups()
    return RunRef(raw=raw, kind=RunKind.WANDB_API, entity=entity, project=project, run_id=run_id)
