"""Runs on a W&B server (cloud or self-hosted), read through the public `wandb.Api`.

Incremental and exact (a long run's first read excepted: see `wandb_api_overview`):

* The cursor holds, per metric, the last step read and its raw value, plus the run's storage id.
  A check asks only for rows from that step on: one ``sampledHistory`` spec per metric (a spec with
  several keys returns only rows holding *all* of them), all specs in one request, joined on
  ``_step``. Each spec covers at most `PAGE_STEPS` steps and asks for that many samples, so the
  server never has a reason to sample rows away; longer ranges are paged.
* The first row of each spec is the last row already stored (one row per metric of overhead): if it
  is gone or changed, or the run's last step went back, the run was resumed from an earlier step
  (rewound), and the run is re-read from its start with ``restarted`` set. Rewinds are rare; reading
  everything once then is the only exact answer, since W&B does not say where a resume began.
* NaN and ±Inf come back as the strings "NaN", "Infinity", "-Infinity" and are kept as floats.

One `wandb.Api` per process and server (`shared_api`), with a short timeout; ``api.flush()`` before
every read so a live run is read fresh. Every wandb exception is translated here, in
`_wandb_errors`: a refused key or an unreachable server becomes `SourceUnavailable` (so the
fallback chain takes over), a missing run `RunNotFound`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
from collections.abc import Callable, Iterator
from functools import partial
from itertools import islice
from typing import TYPE_CHECKING, Any

from ..errors import RunNotFound, SourceUnavailable
from ..models import RunInfo, RunKind, RunRef, RunStatus
from .base import Cursor, FillBatch, Progress, ReadBatch, SeriesBuilder, no_progress
from .wandb_api_overview import FIRST_READ_EXACT_REQUESTS, exact_requests, fill_range, key_counts, overview_specs
from .wandb_probe import refuse_fast

if TYPE_CHECKING:
    import wandb

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "ApiFactory",
    "WandbApiSource",
    "list_running_runs",
    "shared_api",
    "wandb_errors",
]

DEFAULT_TIMEOUT_SECONDS = 10.0
"""Per request to the W&B server; wandb's own default (19 s, retried) is too long for a tool call."""

PAGE_STEPS = 10_000
"""Steps covered by one spec: the spec asks for as many samples, so nothing is sampled away."""

SPECS_PER_REQUEST = 50
"""Metrics read in one request; runs with hundreds of keys take several."""

SUMMARY_VALUES = 8
"""Numeric summary values kept in RunInfo (every value costs the agent tokens)."""

MAX_GROUP_RUNS = 500
"""Running runs of a sweep or project checked in one call. Each costs about two requests (its run, its new
rows), GROUP_WORKERS at a time: 200 take ~20 s against a loopback server (benchmarks/bench_first_check.py);
the result lists GROUP_LINES of them whatever the count."""

_NON_FINITE = {"NaN": math.nan, "nan": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_INTERNAL_PREFIX = "_"

ApiFactory = Callable[[], "wandb.Api"]

_APIS: dict[tuple[str | None, str | None, float], wandb.Api] = {}
_APIS_LOCK = threading.Lock()


def shared_api(*, base_url: str | None = None, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> wandb.Api:
    """The process's `wandb.Api` for this server and key (created on first use).

    ``base_url`` None: WANDB_BASE_URL or the client's default (W&B cloud). The key is WANDB_API_KEY,
    else whatever `wandb login` stored in ~/.netrc for that host (the client reads it itself).
    """
    base = base_url or os.environ.get("WANDB_BASE_URL") or None
    refuse_fast(base, timeout_seconds)
    key = os.environ.get("WANDB_API_KEY") or None
    cache_key = (base, key, float(timeout_seconds))
    with _APIS_LOCK:
        api = _APIS.get(cache_key)
        if api is not None:
            return api
    import wandb

    overrides = {"base_url": base} if base else None
    with wandb_errors(where=base or "the W&B server", timeout_seconds=timeout_seconds):
        api = wandb.Api(overrides=overrides, api_key=key, timeout=timeout_seconds)  # type: ignore[arg-type]
    with _APIS_LOCK:
        return _APIS.setdefault(cache_key, api)


def default_api_factory(ref: RunRef, timeout_seconds: float) -> ApiFactory:
    return partial(shared_api, base_url=ref.host, timeout_seconds=timeout_seconds)


# --------------------------------------------------------------------------- errors


_SERVICE_ENV = "WANDB_SERVICE"


@contextlib.contextmanager
def _private_service() -> Iterator[None]:
    """wandb.Api starts wandb-core and exports WANDB_SERVICE so that child processes attach to it. A
    training job we start later (the demo, a test's child) must run its own wandb-core: a shared one does
    not finish the run's file when that job dies. So the variable is removed again unless it was there."""
    had = _SERVICE_ENV in os.environ
    try:
        yield
    finally:
        if not had:
            os.environ.pop(_SERVICE_ENV, None)


@contextlib.contextmanager
def wandb_errors(*, where: str, timeout_seconds: float, run: str | None = None) -> Iterator[None]:
    """Translate wandb's exceptions into this package's, with what to do about them."""
    from wandb.errors import AuthenticationError, CommError, Error, UsageError

    try:
        with _private_service():
            yield
    except AuthenticationError as exc:
        status = _http_status(exc.__cause__)
        if status in (401, 403):
            raise SourceUnavailable(
                f"W&B at {where} refused the API key ({exc}); set WANDB_API_KEY or run `wandb login` "
                "(`wandb login --host URL` for a self-hosted server)."
            ) from exc
        if status is None and "API key" in str(exc):  # wandb checks the key's form before any request
            raise SourceUnavailable(
                f"the API key looks malformed (W&B keys are 40+ chars) — set WANDB_API_KEY / run wandb login "
                f"(wandb said: {exc})"
            ) from exc
        raise _unreachable(where, timeout_seconds, exc) from exc
    except UsageError as exc:
        raise SourceUnavailable(f"no W&B API key for {where} ({exc}); set WANDB_API_KEY or run `wandb login`.") from exc
    except CommError as exc:
        if "Could not find" in str(exc) and run is not None:
            raise RunNotFound(
                f"W&B has no run {run} at {where} ({exc}). The id is the 8-character id in the run's URL "
                "(…/<entity>/<project>/runs/<id>), not its display name; check entity and project too."
            ) from exc
        raise _unreachable(where, timeout_seconds, exc) from exc
    except Error as exc:
        raise _unreachable(where, timeout_seconds, exc) from exc


def _unreachable(where: str, timeout_seconds: float, exc: BaseException) -> SourceUnavailable:
    return SourceUnavailable(
        f"W&B at {where} did not answer usably within {timeout_seconds:g} s ({exc}); check the network, "
        "WANDB_BASE_URL and the server's status, or set log_fallback for this run in training-check.toml."
    )


def _http_status(exc: BaseException | None) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "http_status", None)
    return int(status) if status else None


# --------------------------------------------------------------------------- the source


class WandbApiSource:
    """One run on a W&B server; ``read(cursor)`` returns the rows logged after the cursor."""

    def __init__(
        self,
        ref: RunRef,
        *,
        api_factory: ApiFactory | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        progress: Progress | None = None,
    ) -> None:
        if ref.kind is not RunKind.WANDB_API:
            raise ValueError(f"WandbApiSource reads one W&B run, not {ref.kind.value}")
        self.ref = ref
        self.timeout_seconds = timeout_seconds
        self._api_factory = api_factory or default_api_factory(ref, timeout_seconds)
        self.path = f"{ref.entity}/{ref.project}/{ref.run_id}"
        self.progress = progress or no_progress

    def _errors(self) -> contextlib.AbstractContextManager[None]:
        where = self.ref.host or "the W&B server"
        return wandb_errors(where=where, timeout_seconds=self.timeout_seconds, run=self.path)

    def read(self, cursor: Cursor | None) -> ReadBatch:
        api = self._api_factory()
        with self._errors():
            api.flush()  # api.run() is cached per path: a live run must be read fresh
            run = api.run(self.path)
            info = run_info(run)
            storage_id = str(run.storage_id)
            history_keys = run.history_keys or {}
            last_step = int(history_keys.get("lastStep", -1) if isinstance(history_keys, dict) else -1)
            keys = _numeric_keys(history_keys)
        stored = cursor or {}
        previous, restarted, warnings = self._previous(stored, storage_id, last_step)
        keys = sorted(set(keys) | set(previous))
        if previous:
            rows = self._fetch(api, {k: int(previous[k][0]) if k in previous else 0 for k in keys}, last_step)
            if _overlap_intact(rows, previous, last_step):
                batch = _batch(rows, previous, storage_id, last_step, info, restarted, warnings)
                self._fill(api, stored.get("fill"), keys, last_step, batch)
                return batch
            restarted = True
            warnings.append(
                f"run {self.path}: the last row read before changed (resumed from an earlier step); "
                "re-read from the start"
            )
        counts = key_counts(history_keys, keys)
        if exact_requests(len(keys), last_step, PAGE_STEPS, SPECS_PER_REQUEST) <= FIRST_READ_EXACT_REQUESTS:
            rows = self._fetch(api, dict.fromkeys(keys, 0), last_step)
            return _batch(rows, {}, storage_id, last_step, info, restarted, warnings)
        return self._first_read(api, counts, last_step, storage_id, info, restarted, warnings)

    def _previous(
        self, stored: Cursor, storage_id: str, last_step: int
    ) -> tuple[dict[str, list[Any]], bool, list[str]]:
        """The last row read of each key, unless the run was replaced or went back (then a restart)."""
        previous: dict[str, list[Any]] = dict(stored.get("keys") or {})
        if stored.get("storage_id") not in (None, storage_id):
            return {}, True, [f"run {self.path} was replaced on the server (new storage id); read from the start"]
        if previous and last_step < int(stored.get("last_step", -1)):
            return {}, True, [
                f"run {self.path} went back from step {stored.get('last_step')} to {last_step} (resumed from an "
                "earlier step); re-read from the start"
            ]
        return previous, False, []

    def _first_read(
        self,
        api: wandb.Api,
        counts: dict[str, int],
        last_step: int,
        storage_id: str,
        info: RunInfo,
        restarted: bool,
        warnings: list[str],
    ) -> ReadBatch:
        """A long run: an overview of the older history and the recent rows exactly, in few requests."""
        specs, exact_from = overview_specs(counts, last_step)
        rows: dict[str, list[tuple[int, Any]]] = {key: [] for key in counts}
        for start in range(0, len(specs), SPECS_PER_REQUEST):
            page = specs[start : start + SPECS_PER_REQUEST]
            with self._errors():
                answers = sampled_history(api, self.ref, [spec for _, spec in page])
            for (key, _), answer in zip(page, answers, strict=True):
                rows[key].extend((int(row["_step"]), row.get(key)) for row in answer if row.get("_step") is not None)
            self.progress(start + len(page), len(specs), f"reading an overview of {self.path}, specs")
        for series in rows.values():
            series.sort(key=lambda row: row[0])
        batch = _batch(rows, {}, storage_id, last_step, info, restarted, warnings)
        batch.fill = FillBatch({}, exact_from, first=True)
        batch.cursor["fill"] = {"next_step": 0, "exact_from": exact_from}
        return batch

    def _fill(self, api: wandb.Api, fill: Any, keys: list[str], last_step: int, batch: ReadBatch) -> None:
        """Re-read the next pages of exact history (see `wandb_api_overview`), into ``batch``."""
        if not isinstance(fill, dict):
            return
        first, last = fill_range(fill, last_step, PAGE_STEPS, len(keys))
        rows = self._fetch(api, dict.fromkeys(keys, first), last) if first <= last else {}
        builder = SeriesBuilder()
        for key, series in rows.items():
            for step, raw in series:
                value = to_float(raw)
                if value is not None:
                    builder.add(key, step, value)
        done = last >= last_step
        exact_from = int(fill["exact_from"])
        batch.fill = FillBatch(builder.build(), None if done else exact_from, done=done)
        if not done:
            batch.cursor["fill"] = {"next_step": last + 1, "exact_from": exact_from}
        self.progress(last + 1, last_step + 1, f"re-reading older history of {self.path} exactly (fill-in), steps")

    def _fetch(self, api: wandb.Api, starts: dict[str, int], last_step: int) -> dict[str, list[tuple[int, Any]]]:
        """Rows of each key with step in [start, last_step], paged so that none is sampled away."""
        out: dict[str, list[tuple[int, Any]]] = {key: [] for key in starts}
        pending = {key: start for key, start in starts.items() if start <= last_step}
        while pending:
            page = list(pending.items())[:SPECS_PER_REQUEST]
            ends = [min(start + PAGE_STEPS - 1, last_step) for _, start in page]
            specs: list[dict[str, Any]] = [
                {"keys": ["_step", key], "samples": end - start + 1, "minStep": start, "maxStep": end}
                for (key, start), end in zip(page, ends, strict=True)
            ]
            with self._errors():
                answers = sampled_history(api, self.ref, specs)
            for (key, _start), end, answer in zip(page, ends, answers, strict=True):
                out[key].extend((int(row["_step"]), row.get(key)) for row in answer if row.get("_step") is not None)
                if end >= last_step:
                    del pending[key]
                else:
                    pending[key] = end + 1
        for series in out.values():
            series.sort(key=lambda row: row[0])
        return out


_SAMPLED_HISTORY = """
query RunSampledHistory($project: String!, $entity: String!, $name: String!, $specs: [JSONString!]!) {
    project(name: $project, entityName: $entity) {
        run(name: $name) { sampledHistory(specs: $specs) }
    }
}
"""


def sampled_history(api: wandb.Api, ref: RunRef, specs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """One `RunSampledHistory` request with several specs.

    PRIVATE wandb API, isolated here on purpose: wandb 0.31's public `Run.history(keys=...)` sends
    this same query but with a single spec and no minStep/maxStep, and `Run.scan_history` first asks
    for the run's parquet export (the whole history, once exported). Only the GraphQL call itself
    goes through `Api._service_api.execute_graphql`; if it moves, this is the one place to change.
    """
    from wandb.errors import CommError

    variables = {
        "entity": ref.entity,
        "project": ref.project,
        "name": ref.run_id,
        "specs": [json.dumps(spec) for spec in specs],
    }
    try:
        data: dict[str, Any] = api._service_api.execute_graphql(_SAMPLED_HISTORY, variables)
    except Exception as exc:  # WandbApiFailedError lives in a private module too
        raise CommError(str(exc), exc) from exc
    run = ((data or {}).get("project") or {}).get("run")
    if run is None:
        raise CommError(f"Could not find run {ref.entity}/{ref.project}/{ref.run_id}")
    answers = run.get("sampledHistory") or []
    return [[row for row in answer if isinstance(row, dict)] for answer in answers]


# --------------------------------------------------------------------------- helpers


def _numeric_keys(history_keys: Any) -> list[str]:
    """History keys holding numbers (media, tables and histograms are not metrics)."""
    keys = history_keys.get("keys") if isinstance(history_keys, dict) else None
    out = []
    for name, meta in (keys or {}).items():
        if name.startswith(_INTERNAL_PREFIX):
            continue
        types = {t.get("type") for t in (meta or {}).get("typeCounts") or [] if isinstance(t, dict)}
        if "number" in types or not types:
            out.append(name)
    return out


def _overlap_intact(rows: dict[str, list[tuple[int, Any]]], previous: dict[str, list[Any]], last_step: int) -> bool:
    """Each key's first row must be the last one stored, with the same value: else the run was rewound."""
    for key, (step, value) in previous.items():
        if int(step) > last_step:
            return False
        got = rows.get(key) or []
        if not got or got[0][0] != int(step) or not _same(got[0][1], value):
            return False
    return True


def _same(a: Any, b: Any) -> bool:
    fa, fb = to_float(a), to_float(b)
    if fa is None or fb is None:
        return a == b
    return fa == fb or (math.isnan(fa) and math.isnan(fb))


def to_float(value: Any) -> float | None:
    """A history value as a float (NaN/Inf kept); None for what is not a number."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return _NON_FINITE.get(value)
    return None


def _batch(
    rows: dict[str, list[tuple[int, Any]]],
    previous: dict[str, list[Any]],
    storage_id: str,
    last_step: int,
    info: RunInfo,
    restarted: bool,
    warnings: list[str],
) -> ReadBatch:
    builder = SeriesBuilder()
    cursor_keys = dict(previous)
    for key, series in rows.items():
        skip_first = key in previous and series and series[0][0] == int(previous[key][0])
        for step, raw in series[1:] if skip_first else series:
            value = to_float(raw)
            if value is not None:
                builder.add(key, step, value)
        if series:
            cursor_keys[key] = [series[-1][0], series[-1][1]]
    cursor: Cursor = {"storage_id": storage_id, "last_step": last_step, "keys": cursor_keys}
    return ReadBatch(series=builder.build(), cursor=cursor, info=info, restarted=restarted, warnings=warnings)


_STATUSES = {status.value: status for status in RunStatus}


def run_info(run: Any) -> RunInfo:
    """State, names, URL, config (values unwrapped) and a few numeric summary values."""
    state = str(run.state or "").lower()
    return RunInfo(
        status=_STATUSES.get(state, RunStatus.UNKNOWN),
        status_watched=True,
        name=run.name,
        run_id=run.id,
        url=run.url,
        config=_unwrap(dict(run.config or {})),
        summary=_summary(run.summary),
    )


def _unwrap(config: dict[str, Any]) -> dict[str, Any]:
    """W&B stores config entries as {"value": v, "desc": ...}; the client usually unwraps them."""
    out = {}
    for key, value in config.items():
        if key == "_wandb":
            continue
        if isinstance(value, dict) and "value" in value and set(value) <= {"value", "desc"}:
            value = value["value"]
        out[key] = value
    return out


def _summary(summary: Any) -> dict[str, float | None]:
    try:
        items = dict(summary or {}).items()
    except (TypeError, ValueError):
        return {}
    numeric = {key: to_float(value) for key, value in items if to_float(value) is not None or value == "NaN"}
    chosen = [key for key in ("_runtime", "_step") if key in numeric]
    chosen += sorted(key for key in numeric if not key.startswith(_INTERNAL_PREFIX))[: SUMMARY_VALUES - len(chosen)]
    return {key: (numeric[key] if math.isfinite(numeric[key] or 0.0) else None) for key in chosen}


# --------------------------------------------------------------------------- sweeps and projects


def list_running_runs(ref: RunRef, *, api_factory: ApiFactory | None = None, timeout_seconds: float) -> list[RunRef]:
    """The running runs of a sweep or project, as run references (at most `MAX_GROUP_RUNS`)."""
    factory = api_factory or default_api_factory(ref, timeout_seconds)
    api = factory()
    state = {"state": "running"}
    filters = {"$and": [{"sweep": ref.sweep_id}, state]} if ref.kind is RunKind.WANDB_SWEEP else state
    where = ref.host or "the W&B server"
    found: list[RunRef] = []
    with wandb_errors(where=where, timeout_seconds=timeout_seconds, run=f"{ref.entity}/{ref.project}"):
        api.flush()
        try:
            runs = list(islice(api.runs(f"{ref.entity}/{ref.project}", filters=filters, per_page=50), MAX_GROUP_RUNS))
        except ValueError as exc:  # wandb's paginator says "Could not find project X" this way
            raise RunNotFound(
                f"W&B has no project {ref.entity}/{ref.project} at {where} ({exc}); check the entity and project "
                "names in the project's URL."
            ) from exc
        for run in runs:
            found.append(
                RunRef(
                    raw=f"wandb:{ref.entity}/{ref.project}/{run.id}",
                    kind=RunKind.WANDB_API,
                    entity=ref.entity,
                    project=ref.project,
                    run_id=run.id,
                    host=ref.host,
                )
            )
            if len(found) >= MAX_GROUP_RUNS:
                break
    return found
