"""The few training-config values the judge uses, read leniently from whatever the run logged.

Configs come from W&B (``{"key": {"value": ...}}`` wrappers), HF ``TrainingArguments``, Megatron
(``train_iters``, ``lr_warmup_iters``, ``clip_grad``) or a hand-written dict, flat or nested one level
(``{"optimizer": {"lr": ...}}``). Unset sentinels such as HF's ``max_steps=-1`` count as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_TOTAL_KEYS = ("total_steps", "max_steps", "num_training_steps", "train_iters", "max_iters", "total_iters")
_LR_KEYS = ("learning_rate", "lr", "peak_lr", "max_lr", "base_lr")
_WARMUP_KEYS = ("warmup_steps", "lr_warmup_steps", "warmup_iters", "lr_warmup_iters", "num_warmup_steps")
_WARMUP_RATIO_KEYS = ("warmup_ratio", "lr_warmup_fraction", "warmup_fraction")
_SCHEDULE_KEYS = (
    "lr_scheduler_type",
    "schedule",
    "lr_scheduler",
    "lr_decay_style",
    "scheduler",
    "lr_schedule",
)
# how many outcomes a cross-entropy loss chooses among: an untrained model's loss sits at ln of it
_CLASS_COUNT_KEYS = ("vocab_size", "padded_vocab_size", "n_vocab", "num_labels", "num_classes", "n_classes")
_CLIP_KEYS = ("max_grad_norm", "gradient_clipping", "clip_grad", "grad_clip", "clip_grad_norm")

_RESTART_WORDS = ("restart", "sgdr", "cyclic", "cycle", "warm_restarts")
_MONOTONE_WORDS = ("linear", "cosine", "constant", "inverse_sqrt", "polynomial", "exponential", "wsd", "step")


@dataclass(frozen=True)
class RunConfig:
    total_steps: int | None = None
    peak_lr: float | None = None
    warmup_steps: int | None = None
    schedule: str | None = None
    max_grad_norm: float | None = None
    class_count: int | None = None  # vocabulary or class count: ln of it is the untrained model's loss

    @property
    def restarts_expected(self) -> bool | None:
        """True for SGDR/cyclic schedules, False for known single-cycle ones, None when unknown."""
        if self.schedule is None:
            return None
        name = self.schedule.lower()
        if any(w in name for w in _RESTART_WORDS):
            return True
        if any(w in name for w in _MONOTONE_WORDS):
            return False
        return None

    def progress(self, step: int | None) -> float | None:
        """Fraction of the run done at ``step``, when the total is known."""
        if step is None or not self.total_steps:
            return None
        return step / self.total_steps


def _unwrap(value: Any) -> Any:
    if isinstance(value, Mapping) and "value" in value:
        return value["value"]
    return value


def _lookup(config: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in config:
            return _unwrap(config[key])
    for nested in config.values():
        nested = _unwrap(nested)
        if isinstance(nested, Mapping):
            for key in keys:
                if key in nested:
                    return _unwrap(nested[key])
    return None


def _positive_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 and number != float("inf") else None


def _positive_int(value: Any) -> int | None:
    number = _positive_float(value)
    return int(number) if number is not None else None


def parse_run_config(config: Mapping[str, Any] | None) -> RunConfig:
    if not config:
        return RunConfig()
    total = _positive_int(_lookup(config, _TOTAL_KEYS))
    warmup = _positive_int(_lookup(config, _WARMUP_KEYS))
    ratio = _positive_float(_lookup(config, _WARMUP_RATIO_KEYS))
    if warmup is None and ratio is not None and ratio < 1 and total:
        warmup = int(ratio * total)
    schedule = _lookup(config, _SCHEDULE_KEYS)
    return RunConfig(
        total_steps=total,
        peak_lr=_positive_float(_lookup(config, _LR_KEYS)),
        warmup_steps=warmup,
        schedule=str(schedule) if schedule not in (None, "") else None,
        max_grad_norm=_positive_float(_lookup(config, _CLIP_KEYS)),
        class_count=_class_count(_lookup(config, _CLASS_COUNT_KEYS)),
    )


def _class_count(value: Any) -> int | None:
    """A vocabulary or class count of at least 2 (one class has no chance level to sit at)."""
    number = _positive_int(value)
    return number if number is not None and number >= 2 else None


def judged_facts(config: Mapping[str, Any]) -> dict[str, object]:
    """Only the config facts the judge uses (what a snapshot shows): a full training config can run to kilobytes."""
    parsed = parse_run_config(config)
    facts = {
        "total_steps": parsed.total_steps,
        "peak_lr": parsed.peak_lr,
        "warmup_steps": parsed.warmup_steps,
        "schedule": parsed.schedule,
        "max_grad_norm": parsed.max_grad_norm,
        "class_count": parsed.class_count,
    }
    return {key: value for key, value in facts.items() if value is not None}
