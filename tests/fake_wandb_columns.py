"""A run of millions of steps for `FakeWandb`: its history kept as numpy columns, rows built only when served.

`FakeRun` keeps one dict per row: fine for thousands of steps, not for the 5,000,000-step runs the
first-check benchmark reads (gigabytes, and every ``sampledHistory`` spec would scan them all). A
`ColumnarRun` answers the same GraphQL fields the same way (`sampled` uses the same range rule and
the same evenly spaced sampling as `FakeRun`), from one (steps, values) pair per metric:

    steps = np.arange(1_000_000)
    run = add_columnar_run(server, "ent", "proj", "big", {"loss": (steps, losses), "eval/acc": (steps[::1000], accs)})

It is read-only: logging to it is refused with a message saying to use `FakeWandb.add_run`.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from tests.fake_wandb import FakeRun, FakeWandb

__all__ = ["ColumnarRun", "add_columnar_run"]

Column = tuple[np.ndarray, np.ndarray]  # steps (int64, increasing), values (float64)


def sample_indices(n: int, samples: int | None) -> np.ndarray:
    """`fake_wandb._sample`'s picks, vectorised: evenly spaced, first and last kept."""
    if samples is None or samples <= 0 or n <= samples:
        return np.arange(n)
    if samples == 1:
        return np.asarray([n - 1])
    return np.unique(np.round(np.arange(samples) * (n - 1) / (samples - 1)).astype(np.int64))


class ColumnarRun(FakeRun):
    def __init__(
        self, server: FakeWandb, entity: str, project: str, run_id: str, columns: dict[str, Column], **kw: Any
    ) -> None:
        super().__init__(server, entity, project, run_id, **kw)
        self.columns = {  # np.asarray keeps an int64 / float64 array as it is (shared steps stay shared)
            name: (np.asarray(steps, dtype=np.int64), np.asarray(values, dtype=np.float64))
            for name, (steps, values) in columns.items()
        }

    @cached_property
    def _all_steps(self) -> np.ndarray:
        arrays = [steps for steps, _ in self.columns.values()]
        if arrays and all(a is arrays[0] for a in arrays):  # metrics logged together share one array
            return arrays[0]
        return np.unique(np.concatenate(arrays)) if arrays else np.zeros(0, np.int64)

    def log(self, step: int, **metrics: Any) -> dict[str, Any]:
        raise TypeError("a ColumnarRun is read-only: log to a run made with FakeWandb.add_run")

    def resume_from(self, step: int) -> None:
        raise TypeError("a ColumnarRun is read-only: resume a run made with FakeWandb.add_run")

    def _row(self, step: int, keys: list[str] | None = None) -> dict[str, Any]:
        row: dict[str, Any] = {"_step": step}
        for name in keys if keys is not None else list(self.columns):
            steps, values = self.columns[name]
            i = int(np.searchsorted(steps, step))
            if i < steps.size and steps[i] == step:
                row[name] = float(values[i])
        return row

    def row_count(self) -> int:
        return int(self._all_steps.size)

    def tail_rows(self, n: int) -> list[dict[str, Any]]:
        return [self._row(int(step)) for step in self._all_steps[-n:]]

    def sampled(self, spec: dict[str, Any]) -> list[dict[str, Any]]:
        keys = [k for k in spec.get("keys") or [] if k != "_step"]
        if any(k not in self.columns for k in keys):
            return []
        steps = self.columns[keys[0]][0] if keys else self._all_steps  # rows holding a key: the key's steps
        for key in keys[1:]:
            steps = np.intersect1d(steps, self.columns[key][0], assume_unique=True)
        lo = 0 if spec.get("minStep") is None else int(np.searchsorted(steps, spec["minStep"], side="left"))
        hi = steps.size if spec.get("maxStep") is None else int(np.searchsorted(steps, spec["maxStep"], side="right"))
        picked = steps[lo:hi][sample_indices(hi - lo, spec.get("samples", 500))]
        out: list[dict[str, Any]] = [{"_step": int(step)} for step in picked.tolist()]
        for key in keys:
            col_steps, col_values = self.columns[key]
            values = col_values[np.searchsorted(col_steps, picked)].tolist()
            for row, value in zip(out, values, strict=True):
                row[key] = value
        return out

    @property
    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"_step": int(self._all_steps[-1]) if self._all_steps.size else None}
        out.update({name: float(values[-1]) for name, (_, values) in self.columns.items() if values.size})
        out.update(self.summary_overrides)
        return out

    def history_keys(self) -> dict[str, Any]:
        keys = {"_step": {"typeCounts": [{"type": "number", "count": self.row_count()}]}}
        for name, (steps, _) in self.columns.items():
            keys[name] = {"typeCounts": [{"type": "number", "count": int(steps.size)}]}
        return {"keys": keys, "lastStep": int(self._all_steps[-1]) if self._all_steps.size else -1}


def add_columnar_run(
    server: FakeWandb, entity: str, project: str, run_id: str, columns: dict[str, Column], **kw: Any
) -> ColumnarRun:
    with server.lock:
        run = ColumnarRun(server, entity, project, run_id, columns, **kw)
        server.runs_by_path[(entity, project, run_id)] = run
        server.projects.add((entity, project))
        return run
