"""The labelled corpus run, shared by the replay and the baseline rules (so neither imports the other).

A corpus file is gzipped JSONL, one run a line (format: corpus/README.md). `Run` holds one run's metrics as
(steps, values) arrays, its label, fault and the config the judge may be given.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus" / "runs.jsonl.gz"
CORPUS_REAL = ROOT / "corpus_real" / "runs.jsonl.gz"
HOLDOUT_SEED_MODULUS = 3  # runs whose seed is divisible by this are held out (about a third of each class)
# what a training-check.toml run entry can state besides baselines (config.RunEntry's judge hints)
CONFIG_HINT_KEYS = ("total_steps", "learning_rate", "warmup_steps", "lr_scheduler_type", "max_grad_norm")

Series = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Run:
    id: str
    label: str
    fault: str
    fault_step: int | None
    config: dict[str, Any]
    baselines: dict[str, float]
    metrics: dict[str, Series]
    # the corpus's own split (corpus_real/ assigns one per run from a hash of its id); else from the seed
    given_split: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)  # source, licence, label_reason when given

    @property
    def seed(self) -> int:
        return int(self.config.get("seed", 0))

    @property
    def split(self) -> str:
        if self.given_split is not None:
            return self.given_split
        return "holdout" if self.seed % HOLDOUT_SEED_MODULUS == 0 else "train"

    @property
    def last_step(self) -> int:
        return max(int(steps[-1]) for steps, _ in self.metrics.values() if steps.size)

    @property
    def first_step(self) -> int:
        return min(int(steps[0]) for steps, _ in self.metrics.values() if steps.size)

    def run_config(self, mode: str) -> dict[str, Any]:
        """The config the judge gets: the run's own (``full``) or only the toml hints (``hints``)."""
        if mode == "full":
            return dict(self.config)
        return {k: self.config[k] for k in CONFIG_HINT_KEYS if k in self.config}

    def upto(self, step: int) -> dict[str, Series]:
        """Every metric cut at ``step`` (inclusive)."""
        out = {}
        for name, (steps, values) in self.metrics.items():
            k = int(np.searchsorted(steps, step, side="right"))
            out[name] = (steps[:k], values[:k])
        return out


SPLITS = ("train", "holdout")
PROVENANCE_KEYS = ("source", "licence", "label_reason")


def parse_run(obj: Mapping[str, Any]) -> Run:
    split = obj.get("split")
    if split is not None and split not in SPLITS:
        raise ValueError(f"run {obj.get('id')!r}: split {split!r} is not one of {SPLITS}")
    metrics = {}
    for name, points in obj["metrics"].items():
        arr = np.asarray([[p[0], np.nan if p[1] is None else p[1]] for p in points], dtype=np.float64)
        arr = arr.reshape(-1, 2)
        metrics[name] = (arr[:, 0].astype(np.int64), arr[:, 1])
    return Run(
        id=str(obj["id"]),
        label=str(obj["label"]),
        fault=str(obj.get("fault") or "none"),
        fault_step=None if obj.get("fault_step") is None else int(obj["fault_step"]),
        config=dict(obj.get("config") or {}),
        baselines={k: float(v) for k, v in (obj.get("baselines") or {}).items()},
        metrics=metrics,
        given_split=split,
        provenance={k: obj[k] for k in PROVENANCE_KEYS if k in obj},
    )


def load_corpus(path: Path = CORPUS) -> list[Run]:
    with gzip.open(path, "rt") as fh:
        return [parse_run(json.loads(line)) for line in fh if line.strip()]
