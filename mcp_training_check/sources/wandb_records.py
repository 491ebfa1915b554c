"""The records of a wandb 0.31 ``.wandb`` file: metric points (`Decoder`) and run facts (`RunState`).

Each record payload is a serialized ``wandb_internal_pb2.Record``. ``history`` records become metric
points; ``run``, ``config`` and ``exit`` records the run's identity, config and exit status. How the
payloads are cut out of the file is ``wandb_framing``'s business, which part of the file is read
``wandb_file``'s.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError

from ..errors import SourceError
from ..files import open_regular
from ..models import RunInfo, RunStatus
from .base import STEP_RANGE, Cursor, SeriesBuilder


def protobuf_module() -> Any:
    """wandb's generated Record module. Importing it imports the whole ``wandb`` package (about 0.5 s),
    so it happens at the first ``.wandb`` file read, never for a log. The generated module re-exports one
    of three versioned builds with ``import *``: no static types."""
    return importlib.import_module("wandb.proto.wandb_internal_pb2")


def __getattr__(name: str) -> Any:
    """``wandb_records.pb``: the Record protobuf module, imported on first use."""
    if name == "pb":
        return protobuf_module()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["Decoder", "RunState", "protobuf_module"]

# Record field tags (field << 3 | wire type 2) whose records never carry metrics, run info or exit
# status: summary, output, files, stats, artifact, tbrecord, alert, telemetry, metric, output_raw.
# Checking the first tag skips their protobuf decoding, which is most of a real file's records.
_SKIPPED_FIELDS = (3, 4, 6, 7, 8, 9, 10, 11, 12, 13)
_SKIPPED_TAGS = frozenset((number << 3) | 2 for number in _SKIPPED_FIELDS)
_NUM_TAG = 0x08  # Record.num, varint, written first when non-zero


# --------------------------------------------------------------------------- decoding


class Decoder:
    """Turns record payloads into metric points (into a `SeriesBuilder`) and run facts (into `RunState`)."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        self.builder = SeriesBuilder()
        self.undecodable = 0
        self._record = protobuf_module().Record()

    def feed(self, payloads: list[bytes]) -> None:
        record = self._record
        parse, which = record.ParseFromString, record.WhichOneof
        for payload in payloads:
            if not payload:
                continue
            i = 0
            if payload[0] == _NUM_TAG:  # skip Record.num to reach the first oneof tag
                i = 1
                while i < len(payload) and payload[i] & 0x80:
                    i += 1
                i += 1
            if i < len(payload) and payload[i] in _SKIPPED_TAGS:
                continue
            try:
                parse(payload)
            except DecodeError:
                self.undecodable += 1
                continue
            kind = which("record_type")
            if kind == "history":
                self._history(record.history)
            elif kind is not None:
                self.state.apply(kind, record)

    def _history(self, history: Any) -> None:
        """Numeric items become points; ``_step`` gives their step, else a running counter does."""
        step: int | None = None
        names: list[str] = []
        values: list[float] = []
        for item in history.item:
            key = item.key
            if not key:  # 0.31 writes every key as nested_key, usually of one part
                nested = item.nested_key
                key = nested[0] if len(nested) == 1 else "/".join(nested)  # join on upb lists is slow
            if key.startswith("_"):
                if key == "_step":
                    step = _parse_step(item.value_json)
                continue
            try:
                number = float(item.value_json)  # JSON numbers, and NaN / Infinity / -Infinity as written
            except ValueError:  # a string, bool, null, list: not a metric (or a typed value, see below)
                typed = _typed_value(item)
                if typed is None:
                    continue
                number = typed
            names.append(key)
            values.append(number)
        state = self.state
        if step is None:
            step = history.step.num if history.HasField("step") else state.step_counter
        state.step_counter = step + 1
        state.last_step = step
        add = self.builder.add
        for name, number in zip(names, values, strict=True):
            add(name, step, number)


def _parse_step(text: str) -> int | None:
    """``_step`` as written; None (the record's own step is used) when it is not a number or outside int64."""
    try:
        step = int(text)
    except ValueError:
        try:
            step = int(float(text))
        except (ValueError, OverflowError):
            return None
    return step if STEP_RANGE[0] <= step <= STEP_RANGE[1] else None


def _typed_value(item: Any) -> float | None:
    """A value in the typed ``value`` oneof (unused by 0.31 writers, kept for newer ones)."""
    if item.value_json:
        return None
    kind = item.WhichOneof("value")
    if kind in ("integer", "number"):
        return float(getattr(item, kind))
    if kind == "json":
        try:
            parsed = json.loads(item.json)
        except ValueError:
            return None
        return float(parsed) if isinstance(parsed, int | float) and not isinstance(parsed, bool) else None
    return None


# --------------------------------------------------------------------------- run facts

EXIT_CODE_OK = 0
EXIT_CODE_INTERRUPTED = 255  # wandb's exit code for a KeyboardInterrupt (Ctrl-C, a W&B stop, SIGINT)
CONFIG_MAX_JSON_BYTES = 8 * 1024  # the cursor is stored per check: keep it small
CONFIG_MAX_STRING_CHARS = 256
DEBUG_LOG_SCAN_BYTES = 64 * 1024
# wandb's own run log names the training process: "... Configure stats pid to 3974"
_STATS_PID = re.compile(rb"Configure stats pid to (\d+)")
_APP_URL = "https://wandb.ai"
_CLOUD_API_URL = "https://api.wandb.ai"


@dataclass
class RunState:
    """What the file says about the run besides metrics; survives between reads inside the cursor."""

    run_id: str | None = None
    name: str | None = None
    host: str | None = None
    entity: str | None = None
    project: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None
    pid: int | None = None
    last_step: int | None = None
    step_counter: int = 0
    warnings: list[str] = field(default_factory=list)

    _CURSOR_FIELDS = (
        "run_id",
        "name",
        "host",
        "entity",
        "project",
        "config",
        "exit_code",
        "pid",
        "last_step",
        "step_counter",
    )

    @classmethod
    def from_cursor(cls, cursor: Cursor | None) -> RunState:
        if not cursor:
            return cls()
        known = {name: cursor[name] for name in cls._CURSOR_FIELDS if cursor.get(name) is not None}
        return cls(**known)

    def to_cursor(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._CURSOR_FIELDS}

    def merge_later(self, later: RunState) -> None:
        """Take in what a later part of the file, read on its own, said (its values win where it has any)."""
        for name in ("run_id", "name", "host", "entity", "project", "exit_code", "pid"):
            value = getattr(later, name)
            if value is not None:
                setattr(self, name, value)
        self.config.update(later.config)
        if later.last_step is not None:
            self.last_step, self.step_counter = later.last_step, later.step_counter
        self.warnings.extend(later.warnings)

    def apply(self, kind: str, record: Any) -> None:
        """Take run identity, config and exit status from the records that carry them."""
        if kind == "run":
            run = record.run
            self.run_id = run.run_id or self.run_id
            self.name = run.display_name or self.name
            self.host = run.host or self.host
            self.entity = run.entity or self.entity
            self.project = run.project or self.project
            _apply_config(self.config, run.config)
        elif kind == "config":
            _apply_config(self.config, record.config)
        elif kind == "exit":
            self.exit_code = record.exit.exit_code

    def finish_read(self, run_dir: Path) -> None:
        """End-of-read upkeep: bound the config's size, look for the training pid once it is logged."""
        if len(json.dumps(self.config, default=str)) > CONFIG_MAX_JSON_BYTES:
            self.config = _scalars_only(self.config)
            self.warnings.append(
                f"run config is over {CONFIG_MAX_JSON_BYTES} bytes as JSON: kept its top-level scalars only"
            )
        if self.pid is None:
            self.pid = _pid_from_debug_log(run_dir)

    def run_info(self) -> RunInfo:
        return RunInfo(
            status=self.status,
            name=self.name,
            run_id=self.run_id,
            url=self._url(),
            config=self.config,
            pid=self.pid,
            host=self.host,
        )

    @property
    def status(self) -> RunStatus:
        """RUNNING until an exit record arrives; a silent file is for the caller to judge."""
        if self.exit_code is None:
            return RunStatus.RUNNING
        if self.exit_code == EXIT_CODE_OK:
            return RunStatus.FINISHED
        if self.exit_code == EXIT_CODE_INTERRUPTED:
            return RunStatus.KILLED
        return RunStatus.FAILED

    def _url(self) -> str | None:
        """Only runs synced to a server have one (offline runs carry no entity)."""
        if not (self.entity and self.project and self.run_id):
            return None
        base = os.environ.get("WANDB_BASE_URL", _CLOUD_API_URL).rstrip("/")
        app = _APP_URL if base == _CLOUD_API_URL else base
        return f"{app}/{self.entity}/{self.project}/runs/{self.run_id}"


def _apply_config(config: dict[str, Any], record: Any) -> None:
    """Merge a config update: plain values, wandb's ``{"value": ...}`` wrapping undone, ``_wandb`` dropped."""
    for item in record.update:
        path = [item.key] if item.key else list(item.nested_key)
        if not path or path[0] == "_wandb":
            continue
        try:
            value = json.loads(item.value_json)
        except ValueError:
            value = item.value_json
        if isinstance(value, dict) and "value" in value and set(value) <= {"value", "desc"}:
            value = value["value"]
        target = config
        for part in path[:-1]:
            child = target.get(part)
            target = target.setdefault(part, {}) if isinstance(child, dict) or child is None else {}
        target[path[-1]] = value
    for item in record.remove:
        config.pop(item.key or "/".join(item.nested_key), None)


def _scalars_only(config: dict[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, str):
            kept[key] = value[:CONFIG_MAX_STRING_CHARS]
        elif value is None or isinstance(value, bool | int | float):
            kept[key] = value
    return kept


def _pid_from_debug_log(run_dir: Path) -> int | None:
    """No 0.31 record carries the pid; wandb's per-run ``logs/debug.log`` does, near its start."""
    try:
        with open_regular(run_dir / "logs" / "debug.log") as log:
            match = _STATS_PID.search(log.read(DEBUG_LOG_SCAN_BYTES))
    except (SourceError, OSError):
        return None
    return int(match.group(1)) if match else None
