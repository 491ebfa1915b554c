"""MLPerf's log lines (``:::MLLOG {json}``, mlperf-logging v0.7 and later) as metrics.

An MLPerf reference or submission logs each measurement as one event: its ``key`` (``eval_accuracy``,
``train_loss``, ``tracked_stats``), its ``value`` and a ``metadata`` dict that places it on the run's axis
(``samples_count``, ``step_num``, ``epoch_num``). Hyperparameters are events too, with no axis: they are
settings, not metrics. ``eval_accuracy`` holds each benchmark's own quality metric, and several are
lower-is-better; the ``submission_benchmark`` event, logged at the start, says which benchmark it is, and
the metric is then named after what it holds, so its direction reads from its name like any other.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["MLLOG_MARKER", "QUALITY_NAME", "MllogEvent", "parse_mllog_line"]

MLLOG_MARKER = ":::MLLOG"

QUALITY_NAME = {
    "rnnt": "eval_wer",
    "gpt3": "eval_log_perplexity",
    "llama31_405b": "eval_log_perplexity",
    "llama31_8b": "eval_log_perplexity",
    "llama2_70b_lora": "eval_loss",
    "flux1": "eval_loss",
}
"""What ``eval_accuracy`` holds where it is not higher-is-better, by ``submission_benchmark`` (the quality
metrics of the MLPerf Training rules: RNN-T's word error rate, GPT-3's and Llama 3.1's log perplexity,
Llama 2 LoRA's and FLUX.1's validation loss). The other benchmarks' accuracy, mAP, Dice, AUC and BLEU keep
the name ``eval_accuracy``, which reads as higher-is-better."""

FINE_AXES = ("samples_count", "step_num", "step", "iteration")
EPOCH_AXES = ("epoch_num", "epoch_count")


@dataclass(frozen=True)
class MllogEvent:
    """One ``:::MLLOG`` line: its measurements and where its metadata places them (``fine``: a sample or
    step count; ``epoch``: an epoch number, which may be fractional or stuck), or the benchmark it names."""

    metrics: dict[str, float]
    fine: int | None = None
    epoch: float | None = None
    benchmark: str | None = None


def parse_mllog_line(text: str, benchmark: str | None) -> MllogEvent | None:
    """The event on an ``:::MLLOG`` line, or None when the line holds none (not MLLOG, not JSON)."""
    at = text.find(MLLOG_MARKER)
    if at < 0:
        return None
    try:
        event = json.loads(text[at + len(MLLOG_MARKER) :])
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    key, value = str(event.get("key", "")), event.get("value")
    if key == "submission_benchmark" and isinstance(value, str):
        return MllogEvent(metrics={}, benchmark=value.strip().lower())
    found = event.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    fine, epoch = _axis(metadata, FINE_AXES), _axis(metadata, EPOCH_AXES)
    if str(event.get("event_type", "")).startswith("INTERVAL") or (fine is None and epoch is None):
        return MllogEvent(metrics={})  # run/epoch/block start and stop; a hyperparameter (no axis)
    metrics = _measurements(key, value, metadata, benchmark)
    lr = _number(metadata.get("lr"))
    if metrics and lr is not None:  # FLUX.1 and Llama 3.1 put the learning rate in the metadata
        metrics["lr"] = lr
    return MllogEvent(metrics, _whole(fine), epoch)


def _measurements(key: str, value: Any, metadata: dict[str, Any], benchmark: str | None) -> dict[str, float]:
    if key == "eval_accuracy":
        key = QUALITY_NAME.get(benchmark or "", key)
        if isinstance(metadata.get("metric"), str):  # stable diffusion: FID and CLIP score at each eval
            key = f"{key}/{metadata['metric']}"
    if _number(value) is not None:
        return {key: float(value)}
    if isinstance(value, dict):  # Mask R-CNN's {"BBOX": .., "SEGM": ..}; tracked_stats {"loss": .., "lr": ..}
        return {f"{key}/{name}": float(v) for name, v in value.items() if _number(v) is not None}
    return {}


def _axis(metadata: dict[str, Any], names: tuple[str, ...]) -> float | None:
    for name in names:
        found = _number(metadata.get(name))
        if found is not None and math.isfinite(found):
            return found
    return None


def _whole(value: float | None) -> int | None:
    return int(value) if value is not None and value == int(value) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
