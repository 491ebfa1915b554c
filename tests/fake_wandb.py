"""An in-process W&B server for tests: the real `wandb` 0.31 client (and its Go helper `wandb-core`)
talks to it over HTTP on 127.0.0.1 exactly as it would talk to the W&B cloud.

    with FakeWandb() as server:
        run = server.add_run("ent", "proj", "abc123", config={"lr": 0.1})
        run.log(0, loss=1.0)
        api = wandb.Api(overrides={"base_url": server.url}, api_key=server.api_key, timeout=5)
        api.run("ent/proj/abc123").history(keys=["loss"], pandas=False)

What wandb 0.31.0 really sends (captured against this server; tests/test_fake_wandb.py proves it):

* Public API (`wandb.Api`): everything goes through wandb-core as POST /graphql with
  `Authorization: Basic base64("api:<key>")`. `operationName` is often "", so the name is read from
  the query text. `Viewer` (login), `GetDefaultEntity`, `GetViewer` (api.viewer), `Run` (RunFragment),
  `RunSampledHistory` (run.history(keys=...)), `RunFullHistory` (run.history()), `RunHistoryKeys`
  (run.lastHistoryStep), `Runs` (api.runs, LightweightRunFragment, filters as a JSON string),
  `GetSweep` + `Runs` with `{"$and": [{"sweep": id}]}` (api.sweep), `StopRun` (run.stop()).
  scan_history: `RunHistoryKeys`, `RunParquetHistory(liveKeys: ["_step"])`, then per page
  `SampledHistoryPage` (spec {"keys", "minStep", "maxStep": minStep+pageSize-1, "samples"}) when keys
  are given, else `HistoryPage(minStep, maxStep exclusive, pageSize)`.
* An online training process (`wandb.init(mode="online")`): `UpsertBucket` (creates the run),
  `OrganizationCoreWeaveOrganizationID`, `ServerFeaturesQuery`, a second `UpsertBucket` (metadata),
  `CreateRunFiles` + PUT of each file to the returned upload URL, and
  POST /files/<entity>/<project>/<run>/file_stream every ~15 s (history, summary, console, system
  events; `complete`/`exitcode` at the end). There is no stop-status query in 0.31: the stop reaches
  the process through the file_stream *response* `{"stopped": true}`; wandb-core hands it to the
  Python side's 15 s stop poll, which raises KeyboardInterrupt in the main thread.
* Telemetry: POST /sdk/otel/v1/metrics|logs without auth: answered 200 and ignored.

Wire details that matter: non-finite floats in JSON values are the strings "NaN", "Infinity",
"-Infinity" (wandb-core's Go decoder rejects bare NaN); a wrong key gets HTTP 401 (the client
raises AuthenticationError at once, no retry); HTTP 500s and hangs are retried by wandb-core until
the Api's `timeout`, then CommError; a missing run is `{"project": {"run": null}}` (CommError
"Could not find run"). The GraphQL documents are parsed and executed field by field (a small
executor below), so every response holds exactly the fields the query asked for.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import math
import re
import secrets
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tests.loopback import LoopbackServer, TrackedHandler

__all__ = ["FakeRun", "FakeWandb", "GraphQLError"]

_INTERNAL_KEYS = ("_step", "_runtime", "_timestamp")


class GraphQLError(Exception):
    """Raised by a resolver: becomes an entry of the response's `errors` list."""


# --------------------------------------------------------------------------------------------------
# A minimal GraphQL parser and executor: fields, aliases, arguments, variables, named fragments,
# inline fragments. Enough for every document the wandb client sends.
# --------------------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>[\s,\ufeff]+|\#[^\n]*)
  | (?P<spread>\.\.\.)
  | (?P<punct>[!$()\[\]{}:=@|&])
  | (?P<name>[_A-Za-z][_0-9A-Za-z]*)
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<block>\"\"\"(?:.|\n)*?\"\"\")
  | (?P<string>"(?:[^"\\\n]|\\.)*")
    """,
    re.VERBOSE,
)


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise GraphQLError(f"Syntax Error: unexpected character {text[pos]!r} at {pos}")
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        tokens.append((kind or "", m.group()))
    tokens.append(("eof", ""))
    return tokens


@dataclass
class _Field:
    name: str
    alias: str
    args: dict[str, Any]
    selections: list[Any] | None


@dataclass
class _Spread:
    fragment: str


@dataclass
class _Inline:
    selections: list[Any]


@dataclass
class _Var:
    name: str


@dataclass
class _Operation:
    kind: str
    name: str
    selections: list[Any]
    defaults: dict[str, Any] = field(default_factory=dict)


class _Parser:
    def __init__(self, text: str):
        self.tokens = _tokenize(text)
        self.i = 0

    def peek(self, value: str | None = None, kind: str | None = None) -> bool:
        k, v = self.tokens[self.i]
        return (value is None or v == value) and (kind is None or k == kind)

    def take(self, value: str | None = None, kind: str | None = None) -> str:
        k, v = self.tokens[self.i]
        if (value is not None and v != value) or (kind is not None and k != kind):
            raise GraphQLError(f"Syntax Error: expected {value or kind}, found {v or k!r}")
        self.i += 1
        return v

    def document(self) -> tuple[list[_Operation], dict[str, list[Any]]]:
        operations, fragments = [], {}
        while not self.peek(kind="eof"):
            if self.peek("{"):
                operations.append(_Operation("query", "", self.selection_set()))
            elif self.peek("fragment"):
                self.take()
                name = self.take(kind="name")
                self.take("on")
                self.take(kind="name")
                self.directives()
                fragments[name] = self.selection_set()
            else:
                kind = self.take(kind="name")
                name = self.take(kind="name") if self.peek(kind="name") else ""
                defaults = self.variable_definitions() if self.peek("(") else {}
                self.directives()
                operations.append(_Operation(kind, name, self.selection_set(), defaults))
        return operations, fragments

    def variable_definitions(self) -> dict[str, Any]:
        defaults = {}
        self.take("(")
        while not self.peek(")"):
            self.take("$")
            name = self.take(kind="name")
            self.take(":")
            self.type_ref()
            if self.peek("="):
                self.take()
                defaults[name] = self.value()
            self.directives()
        self.take(")")
        return defaults

    def type_ref(self) -> None:
        if self.peek("["):
            self.take()
            self.type_ref()
            self.take("]")
        else:
            self.take(kind="name")
        if self.peek("!"):
            self.take()

    def directives(self) -> None:
        while self.peek("@"):
            self.take()
            self.take(kind="name")
            if self.peek("("):
                self.arguments()

    def selection_set(self) -> list[Any]:
        self.take("{")
        selections: list[Any] = []
        while not self.peek("}"):
            if self.peek("..."):
                self.take()
                if self.peek("on"):
                    self.take()
                    self.take(kind="name")
                    self.directives()
                    selections.append(_Inline(self.selection_set()))
                elif self.peek("{") or self.peek("@"):
                    self.directives()
                    selections.append(_Inline(self.selection_set()))
                else:
                    selections.append(_Spread(self.take(kind="name")))
                    self.directives()
                continue
            alias = name = self.take(kind="name")
            if self.peek(":"):
                self.take()
                name = self.take(kind="name")
            args = self.arguments() if self.peek("(") else {}
            self.directives()
            subs = self.selection_set() if self.peek("{") else None
            selections.append(_Field(name, alias, args, subs))
        self.take("}")
        return selections

    def arguments(self) -> dict[str, Any]:
        args = {}
        self.take("(")
        while not self.peek(")"):
            name = self.take(kind="name")
            self.take(":")
            args[name] = self.value()
        self.take(")")
        return args

    def value(self) -> Any:
        kind, v = self.tokens[self.i]
        if v == "$":
            self.take()
            return _Var(self.take(kind="name"))
        if v == "[":
            self.take()
            items = []
            while not self.peek("]"):
                items.append(self.value())
            self.take("]")
            return items
        if v == "{" and kind == "punct":
            self.take()
            obj = {}
            while not self.peek("}"):
                key = self.take(kind="name")
                self.take(":")
                obj[key] = self.value()
            self.take("}")
            return obj
        self.i += 1
        if kind == "number":
            return float(v) if any(c in v for c in ".eE") else int(v)
        if kind == "string":
            return json.loads(v)
        if kind == "block":
            return v[3:-3]
        if kind == "name":
            return {"true": True, "false": False, "null": None}.get(v, v)
        raise GraphQLError(f"Syntax Error: unexpected {v!r}")


def _bind(value: Any, variables: dict[str, Any]) -> Any:
    if isinstance(value, _Var):
        return variables.get(value.name)
    if isinstance(value, list):
        return [_bind(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: _bind(v, variables) for k, v in value.items()}
    return value


class _Node:
    """An object type: `resolve_<field>(**args)` methods answer fields, `fixed` holds the fields whose
    answer never changes; unknown fields are null."""

    typename = "Object"
    fixed: ClassVar[dict[str, Any]] = {}

    def resolve(self, name: str, args: dict[str, Any]) -> Any:
        if name == "__typename":
            return self.typename
        if name in self.fixed:
            return self.fixed[name]
        method = getattr(self, f"resolve_{name}", None)
        if method is None:
            return None
        return method(**args)


def _execute(value: Any, selections: list[Any] | None, fragments: dict, variables: dict) -> Any:
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return [_execute(v, selections, fragments, variables) for v in value]
    if selections is None:
        return value
    out: dict[str, Any] = {}
    for sel in _flatten(selections, fragments):
        args = {k: _bind(v, variables) for k, v in sel.args.items()}
        if isinstance(value, _Node):
            child = value.resolve(sel.name, args)
        elif isinstance(value, dict):
            child = value.get(sel.name)
        else:
            child = None
        out[sel.alias] = _execute(child, sel.selections, fragments, variables)
    return out


def _flatten(selections: list[Any], fragments: dict) -> list[_Field]:
    fields: list[_Field] = []
    for sel in selections:
        if isinstance(sel, _Field):
            fields.append(sel)
        elif isinstance(sel, _Spread):
            if sel.fragment not in fragments:
                raise GraphQLError(f'Unknown fragment "{sel.fragment}".')
            fields.extend(_flatten(fragments[sel.fragment], fragments))
        else:
            fields.extend(_flatten(sel.selections, fragments))
    return fields


# --------------------------------------------------------------------------------------------------
# The data model
# --------------------------------------------------------------------------------------------------


def _storage_id(kind: str, *parts: str) -> str:
    """W&B's GraphQL ids are base64 of e.g. `Run:v1:<run name>:<project>:<entity>`."""
    return base64.b64encode(":".join((kind, "v1", *parts)).encode()).decode()


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts))


def _dumps(value: Any) -> str:
    """JSON as the W&B backend writes it: NaN and ±Infinity as the bare literals `NaN`, `Infinity`."""
    return json.dumps(value, allow_nan=True, separators=(",", ":"))


def _safe(value: Any) -> Any:
    """Non-finite floats as the W&B backend puts them in JSON values: the strings "NaN", "Infinity",
    "-Infinity" (bare NaN literals are not JSON; wandb-core's Go decoder rejects them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_safe(v) for v in value]
    return value


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "nil"
    if isinstance(value, dict):
        return value.get("_type", "map")
    return "list"


class FakeRun:
    """One run held by the server. Mutate it from the test; the client sees the changes live."""

    def __init__(
        self,
        server: FakeWandb,
        entity: str,
        project: str,
        run_id: str,
        *,
        name: str | None = None,
        state: str = "running",
        config: dict[str, Any] | None = None,
        sweep: str | None = None,
    ):
        self._server = server
        self.entity = entity
        self.project = project
        self.run_id = run_id
        self.name = name or run_id
        self.state = state
        self.config: dict[str, Any] = dict(config or {})
        self.sweep = sweep
        self.rows: list[dict[str, Any]] = []
        self.summary_overrides: dict[str, Any] = {}
        self.stopped = False
        self.storage_id = _storage_id("Run", run_id, project, entity)
        self.created_at = time.time()
        self.heartbeat_at = self.created_at
        self.tags: list[str] = []
        self.group: str | None = None
        self.job_type: str | None = None
        self.notes: str | None = None
        self.exitcode: int | None = None
        self.console: list[str] = []
        self.file_stream_posts = 0
        self._stream_offsets: dict[str, int] = {}

    @property
    def path(self) -> str:
        return f"{self.entity}/{self.project}/{self.run_id}"

    # -- writing ---------------------------------------------------------------------------------

    def log(self, step: int, **metrics: Any) -> dict[str, Any]:
        """Append one history row at `step` holding only these metrics (plus `_step`, `_runtime`,
        `_timestamp`, as every real row has). Values may be NaN or ±inf."""
        with self._server.lock:
            now = time.time()
            row = {"_step": step, "_runtime": now - self.created_at, "_timestamp": now, **metrics}
            self._append(row)
            return row

    def _append(self, row: dict[str, Any]) -> None:
        step = row.get("_step")
        if self.rows and step is not None and self.rows[-1].get("_step") == step:
            self.rows[-1].update(row)  # a second log() at the same step merges, like wandb
        else:
            self.rows.append(row)
        self.heartbeat_at = time.time()

    def resume_from(self, step: int) -> None:
        """A resumed run rewound to `step`: rows at or after it are gone, later logs replace them."""
        with self._server.lock:
            self.rows = [r for r in self.rows if r.get("_step", -1) < step]

    def set_state(self, state: str) -> None:
        with self._server.lock:
            self.state = state

    @property
    def summary(self) -> dict[str, Any]:
        """Last logged value of every key, as W&B keeps it, plus explicit `summary_overrides`."""
        with self._server.lock:
            out: dict[str, Any] = {}
            for row in self.rows:
                out.update(row)
            out.update(self.summary_overrides)
            return out

    def row_count(self) -> int:
        return len(self.rows)

    def tail_rows(self, n: int) -> list[dict[str, Any]]:
        return self.rows[-n:]

    def sampled(self, spec: dict[str, Any]) -> list[dict[str, Any]]:
        """One `sampledHistory` spec: rows holding all its keys, in [minStep, maxStep], sampled to `samples`."""
        keys = spec.get("keys") or []
        rows = [
            {k: r[k] for k in keys}
            for r in self.rows
            if all(k in r for k in keys) and _in_range(r, spec.get("minStep"), spec.get("maxStep"), max_inclusive=True)
        ]
        return _sample(rows, spec.get("samples", 500))

    def history_keys(self) -> dict[str, Any]:
        keys: dict[str, dict[str, Counter]] = {}
        for row in self.rows:
            for k, v in row.items():
                keys.setdefault(k, {"types": Counter()})["types"][_type_name(v)] += 1
        return {
            "keys": {
                k: {"typeCounts": [{"type": t, "count": n} for t, n in info["types"].items()]}
                for k, info in keys.items()
            },
            "lastStep": max((r.get("_step", -1) for r in self.rows), default=-1),
        }

    def config_json(self) -> str:
        """The config as the server returns it: a JSON string of `{"key": {"value": v, "desc": null}}`."""
        return _dumps({k: {"value": v, "desc": None} for k, v in self.config.items()})


# --------------------------------------------------------------------------------------------------
# GraphQL schema: the part of W&B's schema that the client uses
# --------------------------------------------------------------------------------------------------


def _sample(rows: list[dict[str, Any]], samples: int | None) -> list[dict[str, Any]]:
    """Evenly spaced subset keeping the first and the last row (the server's sampling is its own)."""
    if samples is None or samples <= 0 or len(rows) <= samples:
        return rows
    if samples == 1:
        return [rows[-1]]
    picks = sorted({round(i * (len(rows) - 1) / (samples - 1)) for i in range(samples)})
    return [rows[i] for i in picks]


def _in_range(row: dict[str, Any], min_step: Any, max_step: Any, *, max_inclusive: bool) -> bool:
    step = row.get("_step")
    if step is None:
        return False
    if min_step is not None and step < min_step:
        return False
    if max_step is None:
        return True
    return step <= max_step if max_inclusive else step < max_step


def _matches(run: FakeRun, flt: Any) -> bool:
    """The subset of W&B's Mongo-style run filters used in practice."""
    if not flt:
        return True
    for key, cond in flt.items():
        if key == "$and":
            if not all(_matches(run, f) for f in cond):
                return False
            continue
        if key == "$or":
            if not any(_matches(run, f) for f in cond):
                return False
            continue
        value = _field_value(run, key)
        if isinstance(cond, dict) and any(k.startswith("$") for k in cond):
            for op, arg in cond.items():
                ok = {
                    "$eq": lambda a, v=value: v == a,
                    "$ne": lambda a, v=value: v != a,
                    "$in": lambda a, v=value: v in a,
                    "$nin": lambda a, v=value: v not in a,
                    "$gt": lambda a, v=value: v is not None and v > a,
                    "$gte": lambda a, v=value: v is not None and v >= a,
                    "$lt": lambda a, v=value: v is not None and v < a,
                    "$lte": lambda a, v=value: v is not None and v <= a,
                    "$exists": lambda a, v=value: (v is not None) == bool(a),
                    "$regex": lambda a, v=value: isinstance(v, str) and re.search(a, v) is not None,
                }.get(op)
                if ok is None or not ok(arg):
                    return False
        elif value != cond:
            return False
    return True


def _field_value(run: FakeRun, key: str) -> Any:
    simple = {
        "state": run.state,
        "sweep": run.sweep,
        "name": run.run_id,
        "displayName": run.name,
        "display_name": run.name,
        "group": run.group,
        "jobType": run.job_type,
        "tags": run.tags,
    }
    if key in simple:
        return simple[key]
    if key.startswith("config."):
        value: Any = run.config
        for part in key.split(".")[1:]:
            if part == "value" and not isinstance(value, dict):
                continue
            value = value.get(part) if isinstance(value, dict) else None
        return value
    if key.startswith("summary_metrics."):
        return run.summary.get(key.split(".", 1)[1])
    return None


class _RunNode(_Node):
    typename = "Run"
    fixed: ClassVar[dict[str, Any]] = {
        "systemMetrics": "{}",
        "readOnly": False,
        "eventsLineCount": 0,
        "eventsTail": "[]",
        "events": [],
    }
    # fields answered by an attribute of the FakeRun as it is now
    run_attributes: ClassVar[dict[str, str]] = {
        "id": "storage_id",
        "name": "run_id",
        "displayName": "name",
        "state": "state",
        "sweepName": "sweep",
        "group": "group",
        "jobType": "job_type",
        "notes": "notes",
        "description": "notes",
        "stopped": "stopped",
        "shouldStop": "stopped",
        "exitcode": "exitcode",
    }

    def __init__(self, server: FakeWandb, run: FakeRun, op: str):
        self.s, self.run, self.op = server, run, op

    def resolve(self, name: str, args: dict[str, Any]) -> Any:
        if name in self.run_attributes:
            return getattr(self.run, self.run_attributes[name])
        return super().resolve(name, args)

    def resolve_config(self):
        return self.run.config_json()

    def resolve_summaryMetrics(self):
        return _dumps(self.run.summary)

    def resolve_historyLineCount(self):
        return self.run.row_count()

    def resolve_historyKeys(self, **_):
        return self.run.history_keys()

    def resolve_projectId(self):
        return self.s.project_internal_id(self.run.entity, self.run.project)

    def resolve_tags(self):
        return list(self.run.tags)

    def resolve_createdAt(self):
        return _iso(self.run.created_at)

    def resolve_heartbeatAt(self):
        return _iso(self.run.heartbeat_at)

    def resolve_updatedAt(self):
        return _iso(self.run.heartbeat_at)

    def resolve_user(self):
        return {"name": self.s.username, "username": self.s.username, "id": _storage_id("User", "1")}

    def resolve_running(self):
        return self.run.state == "running"

    def resolve_failed(self):
        return self.run.state in ("failed", "crashed")

    def resolve_logLineCount(self):
        return len(self.run.console)

    def resolve_historyTail(self):
        return _dumps([_dumps(r) for r in self.run.tail_rows(10)])

    def resolve_wandbConfig(self, keys=None):
        return _dumps({})

    def resolve_project(self):
        return _ProjectNode(self.s, self.run.entity, self.run.project, self.op)

    def resolve_sampledHistory(self, specs=(), **_):
        result = []
        for spec_text in specs or ():
            spec = json.loads(spec_text) if isinstance(spec_text, str) else spec_text
            rows = self.run.sampled(spec)
            self.s.count_rows(self.op, len(rows))
            result.append(rows)
        return result

    def resolve_history(self, samples=500, minStep=None, maxStep=None, **_):
        rows = [r for r in self.run.rows if _in_range(r, minStep, maxStep, max_inclusive=False)]
        if minStep is not None or maxStep is not None:
            rows = rows[:samples] if samples else rows  # a page: the first rows of the range
        else:
            rows = _sample(rows, samples)
        self.s.count_rows(self.op, len(rows))
        return [_dumps(r) for r in rows]

    def resolve_parquetHistory(self, liveKeys=None, **_):
        # Nothing is ever exported to parquet here: every row is "live". wandb-core asks only for
        # liveKeys=["_step"] and then reads the rows through HistoryPage / SampledHistoryPage.
        keys = liveKeys or []
        rows = [{k: r[k] for k in keys if k in r} for r in self.run.rows]
        self.s.count_rows(self.op, len(rows), total=False)
        return {"parquetUrls": [], "liveData": rows}


class _SweepNode(_Node):
    typename = "Sweep"
    fixed: ClassVar[dict[str, Any]] = {"displayName": None, "method": "random", "runCountExpected": None}

    def __init__(self, server: FakeWandb, entity: str, project: str, sweep_id: str, op: str):
        self.s, self.entity, self.project, self.sweep_id, self.op = server, entity, project, sweep_id, op

    def _runs(self) -> list[FakeRun]:
        return [r for r in self.s.runs_in(self.entity, self.project) if r.sweep == self.sweep_id]

    def resolve_id(self):
        return _storage_id("Sweep", self.sweep_id, self.project, self.entity)

    def resolve_name(self):
        return self.sweep_id

    def resolve_state(self):
        return "RUNNING" if any(r.state == "running" for r in self._runs()) else "FINISHED"

    def resolve_config(self):
        return f"method: random\nname: {self.sweep_id}\n"

    def resolve_runCount(self):
        return len(self._runs())

    def resolve_createdAt(self):
        return _iso(time.time())

    def resolve_updatedAt(self):
        return _iso(time.time())

    def resolve_runs(self, **_):
        return {"edges": [{"node": _RunNode(self.s, r, self.op)} for r in self._runs()]}


class _ProjectNode(_Node):
    typename = "Project"
    fixed: ClassVar[dict[str, Any]] = {"readOnly": False}

    def __init__(self, server: FakeWandb, entity: str, project: str, op: str):
        self.s, self.entity, self.project, self.op = server, entity, project, op

    def resolve_id(self):
        return _storage_id("Project", self.project, self.entity)

    def resolve_name(self):
        return self.project

    def resolve_internalId(self):
        return str(self.s.project_internal_id(self.entity, self.project))

    def resolve_entity(self):
        return {"id": _storage_id("Entity", self.entity), "name": self.entity}

    def resolve_entityName(self):
        return self.entity

    def resolve_run(self, name=None, **_):
        run = self.s.get_run(self.entity, self.project, name)
        return None if run is None else _RunNode(self.s, run, self.op)

    def resolve_bucket(self, name=None, missingOk=False, **_):
        return self.resolve_run(name=name)

    def _filtered(self, filters: Any) -> list[FakeRun]:
        flt = json.loads(filters) if isinstance(filters, str) else filters
        return [r for r in self.s.runs_in(self.entity, self.project) if _matches(r, flt)]

    def resolve_runCount(self, filters=None, **_):
        return len(self._filtered(filters))

    def resolve_runs(self, filters=None, after=None, first=50, order=None, **_):
        runs = self._filtered(filters)
        runs.sort(key=lambda r: r.created_at, reverse=bool(order and order.startswith("-")))
        start = int(after) if after else 0
        first = first or 50
        page = runs[start : start + first]
        edges = [{"node": _RunNode(self.s, r, self.op), "cursor": str(start + i + 1)} for i, r in enumerate(page)]
        return {
            "edges": edges,
            "pageInfo": {
                "endCursor": str(start + len(page)) if page else after,
                "hasNextPage": start + len(page) < len(runs),
            },
            "totalCount": len(runs),
        }

    def resolve_sweep(self, sweepName=None, name=None, **_):
        sweep_id = sweepName or name
        if sweep_id not in self.s.sweeps.get((self.entity, self.project), set()):
            return None
        return _SweepNode(self.s, self.entity, self.project, sweep_id, self.op)


class _QueryRoot(_Node):
    typename = "Query"

    def __init__(self, server: FakeWandb, op: str):
        self.s, self.op = server, op

    def resolve_viewer(self, **_):
        return {
            "id": _storage_id("User", "1"),
            "name": self.s.username,
            "entity": self.s.default_entity,
            "username": self.s.username,
            "email": f"{self.s.username}@example.com",
            "flags": None,
            "admin": False,
            "deletedAt": None,
            "apiKeys": {"edges": [{"node": {"id": "QXBpS2V5OjE=", "name": self.s.api_key[-6:], "description": None}}]},
            "teams": {"edges": [{"node": {"name": self.s.default_entity}}]},
        }

    def resolve_project(self, name=None, entityName=None, **_):
        entity = entityName or self.s.default_entity
        if not self.s.project_exists(entity, name):
            return None
        return _ProjectNode(self.s, entity, name, self.op)

    def resolve_model(self, name=None, entityName=None, **_):
        entity = entityName or self.s.default_entity
        return _ProjectNode(self.s, entity, name, self.op)

    def resolve_serverInfo(self, **_):
        return {"features": [], "cliVersionInfo": {}, "latestLocalVersionInfo": None}


class _MutationRoot(_Node):
    typename = "Mutation"

    def __init__(self, server: FakeWandb, op: str):
        self.s, self.op = server, op

    def resolve_stopRun(self, input=None, **_):
        run = self.s.run_by_storage_id((input or {}).get("id"))
        if run is None:
            raise GraphQLError("run not found")
        with self.s.lock:
            run.stopped = True
            self.s.stop_requests.append(run.path)
        return {"success": True, "clientMutationId": None}

    def resolve_upsertBucket(self, input=None, **_):
        return self.s.upsert_bucket(input or {}, self.op)

    def resolve_createRunFiles(self, input=None, **_):
        inp = input or {}
        run = self.s.get_run(inp.get("entityName"), inp.get("projectName"), inp.get("runName"))
        files = [
            {"name": f, "uploadUrl": f"{self.s.url}/upload/{inp.get('runName')}/{f}", "uploadHeaders": []}
            for f in inp.get("files") or []
        ]
        return {"runID": run.storage_id if run else None, "uploadHeaders": [], "files": files}

    def resolve_markRunFilesUploaded(self, **_):
        return {"success": True}

    def resolve_upsertModel(self, input=None, **_):
        inp = input or {}
        entity = inp.get("entityName") or self.s.default_entity
        self.s.projects.add((entity, inp.get("name")))
        return {"project": _ProjectNode(self.s, entity, inp.get("name"), self.op), "inserted": True}


# --------------------------------------------------------------------------------------------------
# The HTTP server
# --------------------------------------------------------------------------------------------------


@dataclass
class Request:
    method: str
    path: str
    operation: str | None = None
    variables: dict[str, Any] | None = None
    query: str | None = None
    body: Any = None
    status: int | None = None


class FakeWandb(LoopbackServer):
    """A W&B backend on 127.0.0.1 for the real `wandb` client. Use as a context manager."""

    thread_name = "FakeWandb"

    def __init__(self, *, api_key: str | None = None, entity: str = "fake-entity", username: str = "fake-user"):
        self.api_key = api_key or "fake" + secrets.token_hex(20)  # 44 chars: W&B wants ≥ 40
        self.default_entity = entity
        self.username = username
        super().__init__(threading.RLock())
        self.runs_by_path: dict[tuple[str, str, str], FakeRun] = {}
        self.projects: set[tuple[str, str]] = set()
        self.sweeps: dict[tuple[str, str], set[str]] = {}
        self.requests: list[Request] = []
        self.stop_requests: list[str] = []
        self.rows_served: Counter[str] = Counter()  # "total" and per operation name
        self.unknown_paths: list[str] = []
        self.uploads: list[str] = []
        self.fail_with_500 = False
        self.hang = False
        self.file_stream_stop_key = True  # answer file_stream posts with `"stopped": true` after a stop
        self._project_ids: dict[tuple[str, str], int] = {}

    # -- lifecycle ---------------------------------------------------------------------------------

    def handler_class(self) -> type[TrackedHandler]:
        return _Handler

    def release_hung(self) -> None:
        """Let every request held by `hang` go (its connection is closed, no answer); requests that
        arrive later while `hang` is still True are held again."""
        with self.lock:
            event, self.release = self.release, threading.Event()
        event.set()

    # -- data --------------------------------------------------------------------------------------

    def add_run(
        self,
        entity: str,
        project: str,
        run_id: str,
        *,
        name: str | None = None,
        state: str = "running",
        config: dict[str, Any] | None = None,
        sweep: str | None = None,
    ) -> FakeRun:
        with self.lock:
            run = FakeRun(self, entity, project, run_id, name=name, state=state, config=config, sweep=sweep)
            self.runs_by_path[(entity, project, run_id)] = run
            self.projects.add((entity, project))
            if sweep:
                self.add_sweep(entity, project, sweep)
            return run

    def add_sweep(self, entity: str, project: str, sweep_id: str) -> None:
        with self.lock:
            self.sweeps.setdefault((entity, project), set()).add(sweep_id)

    def run(self, path: str) -> FakeRun:
        entity, project, run_id = path.split("/")
        found = self.get_run(entity, project, run_id)
        if found is None:
            raise KeyError(path)
        return found

    def get_run(self, entity: str | None, project: str | None, run_id: str | None) -> FakeRun | None:
        with self.lock:
            return self.runs_by_path.get((entity or self.default_entity, project or "", run_id or ""))

    def runs_in(self, entity: str, project: str) -> list[FakeRun]:
        with self.lock:
            return [r for (e, p, _), r in self.runs_by_path.items() if (e, p) == (entity, project)]

    def run_by_storage_id(self, storage_id: str | None) -> FakeRun | None:
        with self.lock:
            return next((r for r in self.runs_by_path.values() if r.storage_id == storage_id), None)

    def project_exists(self, entity: str, project: str | None) -> bool:
        with self.lock:
            return (entity, project or "") in self.projects

    def project_internal_id(self, entity: str, project: str) -> int:
        with self.lock:
            return self._project_ids.setdefault((entity, project), len(self._project_ids) + 1)

    def count_rows(self, operation: str, n: int, *, total: bool = True) -> None:
        with self.lock:
            if total:
                self.rows_served["total"] += n
            self.rows_served[operation or "<anonymous>"] += n

    def operations(self) -> list[str]:
        """Names of the GraphQL operations received, in order."""
        with self.lock:
            return [r.operation for r in self.requests if r.operation is not None]

    def upsert_bucket(self, inp: dict[str, Any], op: str) -> dict[str, Any]:
        with self.lock:
            run = self.run_by_storage_id(inp.get("id")) if inp.get("id") else None
            inserted = False
            if run is None:
                entity = inp.get("entityName") or self.default_entity
                project = inp.get("modelName") or "uncategorized"
                run_id = inp.get("name") or secrets.token_hex(4)
                run = self.get_run(entity, project, run_id)
                if run is None:
                    run = self.add_run(entity, project, run_id, sweep=inp.get("sweep"))
                    inserted = True
            if inp.get("displayName"):
                run.name = inp["displayName"]
            if inp.get("config"):
                raw = json.loads(inp["config"]) if isinstance(inp["config"], str) else inp["config"]
                run.config.update(
                    {k: v.get("value") if isinstance(v, dict) and "value" in v else v for k, v in raw.items()}
                )
            if inp.get("state"):
                run.state = inp["state"]
            for key, attr in (("groupName", "group"), ("jobType", "job_type"), ("notes", "notes")):
                if inp.get(key) is not None:
                    setattr(run, attr, inp[key])
            if inp.get("tags") is not None:
                run.tags = list(inp["tags"])
            if inp.get("summaryMetrics"):
                run.summary_overrides.update(json.loads(inp["summaryMetrics"]))
            run.heartbeat_at = time.time()
            return {"bucket": _RunNode(self, run, op), "inserted": inserted}

    def file_stream(self, entity: str, project: str, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """Apply one file_stream post: history lines become rows, summary lines the summary,
        `complete` finishes the run. Lines are placed by their `offset`, so a retried post is
        not applied twice."""
        with self.lock:
            run = self.get_run(entity, project, run_id)
            if run is None:
                run = self.add_run(entity, project, run_id)
            run.file_stream_posts += 1
            run.heartbeat_at = time.time()
            for fname, chunk in (body.get("files") or {}).items():
                offset = int(chunk.get("offset", 0))
                lines = chunk.get("content") or []
                seen = run._stream_offsets.get(fname, 0)
                new = lines[max(0, seen - offset) :]
                run._stream_offsets[fname] = max(seen, offset + len(lines))
                if fname == "wandb-history.jsonl":
                    for line in new:
                        run._append(json.loads(line))
                elif fname == "wandb-summary.json":
                    for line in lines:  # the summary is resent whole each time
                        run.summary_overrides.update(json.loads(line))
                elif fname == "output.log":
                    run.console.extend(new)
            if body.get("complete"):
                run.exitcode = body.get("exitcode")
                if run.exitcode in (0, None):
                    run.state = "finished"
                else:
                    run.state = "killed" if run.stopped else "failed"
            response: dict[str, Any] = {"exitcode": None, "limits": {}}
            if run.stopped and self.file_stream_stop_key:
                response["stopped"] = True
            return response

    # -- GraphQL -----------------------------------------------------------------------------------

    def graphql(self, payload: dict[str, Any], record: Request) -> tuple[int, dict[str, Any]]:
        query = payload.get("query") or ""
        variables = payload.get("variables") or {}
        try:
            operations, fragments = _Parser(query).document()
        except GraphQLError as e:
            return 400, {"errors": [{"message": str(e)}]}
        wanted = payload.get("operationName") or None
        op = next((o for o in operations if not wanted or o.name == wanted), None)
        if op is None:
            return 400, {"errors": [{"message": f'Unknown operation named "{wanted}".'}]}
        record.operation = op.name
        record.variables = variables
        bound = {**op.defaults, **variables}
        root = _MutationRoot(self, op.name) if op.kind == "mutation" else _QueryRoot(self, op.name)
        data: dict[str, Any] = {}
        errors = []
        for sel in _flatten(op.selections, fragments):
            try:
                args = {k: _bind(v, bound) for k, v in sel.args.items()}
                data[sel.alias] = _execute(root.resolve(sel.name, args), sel.selections, fragments, bound)
            except GraphQLError as e:
                data[sel.alias] = None
                errors.append({"message": str(e), "path": [sel.alias]})
        out: dict[str, Any] = {"data": data}
        if errors:
            out["errors"] = errors
        return 200, out


class _Handler(TrackedHandler):
    fake: FakeWandb
    server_version = "FakeWandb/0.31"

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding", "").lower() == "gzip" and body:
            body = gzip.decompress(body)
        return body

    def _send(self, status: int, payload: Any, content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(_safe(payload)).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        header = self.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, key = base64.b64decode(header[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        return user == "api" and key == self.fake.api_key

    def _handle(self) -> None:
        path = self.path.split("?", 1)[0]
        record, payload = self._record(path)
        if self._answered_without_auth(path, record):
            return
        if not self._authorized():
            record.status = 401
            self._send(401, {"errors": [{"message": "user is not logged in"}]})
            return
        self._route(path, payload, record)

    def _record(self, path: str) -> tuple[Request, Any]:
        """Log the request (with its GraphQL operation) and return it with its JSON body, if any."""
        body = self._body()
        record = Request(self.command, path)
        payload: Any = None
        if path == "/graphql" or path.endswith("/file_stream"):
            try:
                payload = json.loads(body or b"{}")
            except ValueError:
                payload = None
        if path == "/graphql" and isinstance(payload, dict):
            record.query = payload.get("query")
            record.variables = payload.get("variables") or {}
            record.operation = _operation_name(payload)
        with self.fake.lock:
            self.fake.requests.append(record)
        return record, payload

    def _answered_without_auth(self, path: str, record: Request) -> bool:
        """Telemetry, an injected hang or HTTP 500, and file uploads: answered before any key check."""
        fake = self.fake
        if path.startswith("/sdk/otel/"):
            record.status = 200
            self._send(200, b"", "application/x-protobuf")
            return True
        if fake.hang:
            with fake.lock:
                event = fake.release
            event.wait()
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(2)
            return True
        if fake.fail_with_500:
            record.status = 500
            self._send(500, b"Internal Server Error\n", "text/plain")
            return True
        if path.startswith("/upload/"):
            record.status = 200
            fake.uploads.append(path[len("/upload/") :])
            self._send(200, b"", "text/plain")
            return True
        return False

    def _route(self, path: str, payload: Any, record: Request) -> None:
        """An authorized request: GraphQL, a run's file_stream, or 404."""
        if path == "/graphql" and self.command == "POST":
            if not isinstance(payload, dict):
                record.status = 400
                self._send(400, {"errors": [{"message": "invalid JSON body"}]})
                return
            status, out = self.fake.graphql(payload, record)
            record.status = status
            self._send(status, out)
            return

        m = re.fullmatch(r"/files/([^/]+)/([^/]+)/([^/]+)/file_stream", path)
        if m and self.command == "POST" and isinstance(payload, dict):
            record.body = payload
            record.status = 200
            self._send(200, self.fake.file_stream(*m.groups(), payload))
            return

        self.fake.unknown_paths.append(f"{self.command} {path}")
        record.status = 404
        self._send(404, {"errors": [{"message": f"no route for {self.command} {path}"}]})

    do_GET = do_POST = do_PUT = _handle


def _operation_name(payload: dict[str, Any]) -> str | None:
    """The operation's name: `operationName` when set, else the first one named in the query text
    (wandb-core often sends `"operationName": ""`)."""
    if payload.get("operationName"):
        return payload["operationName"]
    m = re.search(r"\b(?:query|mutation|subscription)\s+([_A-Za-z]\w*)", payload.get("query") or "")
    return m.group(1) if m else ""
