"""Every threshold of the judge in one validated model, so a project config can override any of them.

Each section is the detector itself (a pydantic model whose fields are its thresholds), so defaults
are written once, next to the docstring line that justifies them. ``None`` turns a detector off.
Unknown keys are rejected.

Project configs are flat tables of numbers (``[defaults.judge]`` in ``training-check.toml``), so
besides nested sections (``{"trend": {"divergence_ratio": 3}}``) a flat key is accepted in two
spellings: ``trend_divergence_ratio`` (section prefix) or ``divergence_ratio`` when only one detector
has a threshold of that name (``window_points`` is ambiguous and needs its prefix).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import ConfigError
from .context import Detector
from .evals import EvalDetector
from .evaltrend import EvalTrendDetector
from .gradnorm import GradNormDetector
from .lr import LrDetector
from .nonfinite import NonFiniteDetector
from .spikes import SpikeDetector
from .trend import TrendDetector


class PolicySettings(BaseModel):
    """How signals become a decision.

    - ``max_signals``: at most this many signals in a verdict, most severe first (8 keeps a verdict
      readable in one screen; repeats of a kind on a metric are merged first).
    - ``converged_floor_fraction``: a loss whose last points sit at or below this share of its first points
      (0.1 %: a cross-entropy at ln 113 = 4.7 down to 0.005, every prediction ≥ 99.5 % sure and right) has
      converged to its floor; there a rise by ratio (1e-7 → 1e-4, "1,000× its best") is float rounding and one
      memorised sample changing its mind, not a divergence, so the loss's divergence, spike and eval-degrading
      findings are information (`policy.converged_floor`).
    - ``converged_floor_peak_fraction``: only while nothing in the finding's own points reached this share of the
      loss's first level (5 %; first and recent levels are medians of 3 points): a loss that really leaves its
      floor, or one step that explodes to the scale the run began at (a beamline MSE at 4e-4 jumping to 192 from a
      start of 0.28, log-lo-nsls-ii-1, ambiguous; a CodeBERT's train loss at 1e-3 jumping to 0.18, 25 % of its
      start, log-codebert-tacticas-1, ambiguous), is read as it is. On corpus_real's train split no bad run has a
      finding at the floor; a grokking transformer (log-js-carloslfu-1, healthy: train loss 3e-7 with jumps to at
      most 0.023, 2 % of its start, eval loss 1e-4 to 1e-3 at accuracy 1.0) was stopped at 12 of its 20 checks by
      them, and is now stopped only at its first (its eval loss 4.8 → 16.9 while it memorises: a real overfit).

    A run that has ended is judged like any other (a finished run ending in NaN is ``stop``: clearly
    bad); the schedule then ends monitoring, and the summary says there is nothing left to stop.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_signals: int = Field(default=8, ge=1)
    converged_floor_fraction: float = Field(default=1e-3, ge=0.0, lt=1.0)
    converged_floor_peak_fraction: float = Field(default=0.05, ge=0.0, lt=1.0)


class JudgeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    nonfinite: NonFiniteDetector | None = NonFiniteDetector()
    trend: TrendDetector | None = TrendDetector()
    spikes: SpikeDetector | None = SpikeDetector()
    evals: EvalDetector | None = EvalDetector()
    eval_trend: EvalTrendDetector | None = EvalTrendDetector()
    lr: LrDetector | None = LrDetector()
    grad_norm: GradNormDetector | None = GradNormDetector()
    policy: PolicySettings = PolicySettings()

    @model_validator(mode="before")
    @classmethod
    def _route_flat_keys(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        routed: dict[str, Any] = {}
        for key, value in data.items():
            if key in cls.model_fields:
                if isinstance(value, Mapping):
                    routed.setdefault(key, {}).update(value)
                else:
                    routed[key] = value
                continue
            section, name = _locate(str(key))
            target = routed.setdefault(section, {})
            if not isinstance(target, dict):
                raise ValueError(f"judge setting {key!r} given while section {section!r} is set as a whole")
            target[name] = value
        return routed

    @classmethod
    def flat_defaults(cls) -> dict[str, float | int | bool | None]:
        """Every threshold under its prefixed flat name, with its default (for docs and configs)."""
        out: dict[str, float | int | bool | None] = {}
        for section, model in _section_models().items():
            for name, field in model.model_fields.items():
                out[f"{section}_{name}"] = field.default
        return out

    def detectors(self) -> list[Detector]:
        found = (self.nonfinite, self.trend, self.spikes, self.evals, self.eval_trend, self.lr, self.grad_norm)
        return [d for d in found if d is not None]


def _section_models() -> dict[str, type[BaseModel]]:
    return {
        "nonfinite": NonFiniteDetector,
        "trend": TrendDetector,
        "spikes": SpikeDetector,
        "evals": EvalDetector,
        "eval_trend": EvalTrendDetector,
        "lr": LrDetector,
        "grad_norm": GradNormDetector,
        "policy": PolicySettings,
    }


def _locate(key: str) -> tuple[str, str]:
    """(section, field) for a flat key: ``trend_divergence_ratio`` or a bare unique ``divergence_ratio``."""
    models = _section_models()
    for section in sorted(models, key=len, reverse=True):
        rest = key.removeprefix(f"{section}_")
        if rest != key and rest in models[section].model_fields:
            return section, rest
    owners = [section for section, model in models.items() if key in model.model_fields]
    if len(owners) == 1:
        return owners[0], key
    if owners:
        options = ", ".join(f"{s}_{key}" for s in owners)
        raise ValueError(f"judge setting {key!r} is ambiguous; write one of {options}")
    known = list(JudgeSettings.flat_defaults())
    close = difflib.get_close_matches(key, known, n=3)
    hint = (
        f"; did you mean {', '.join(close)}?"
        if close
        else "; the README's detector table lists every one (its name is the detector's prefix and the threshold: "
        "trend_divergence_ratio)"
    )
    raise ValueError(f"judge setting {key!r} is unknown{hint}")


def judge_settings(table: Mapping[str, Any], *, where: object | None, run: str) -> JudgeSettings:
    """The judge settings of a run's ``[defaults.judge]`` / ``[runs.<name>.judge]`` table, or a `ConfigError`
    naming the file, the run and the fix."""
    try:
        return JudgeSettings.model_validate(table)
    except ValidationError as exc:
        detail = _setting_error(exc.errors()[0])
        stop = "" if detail.endswith("?") else "."
        raise ConfigError(
            f"{where or 'training-check.toml'}: judge settings for {run!r}: {detail}{stop} "
            "Fix the [defaults.judge] or [runs.<name>.judge] table."
        ) from exc


def _setting_error(error: Mapping[str, Any]) -> str:
    """One validation error as the user wrote the setting: ``trend_divergence_ratio = 0.5: Input should be
    greater than 1``; an unknown or ambiguous name says so by itself."""
    msg = str(error["msg"]).removeprefix("Value error, ")
    loc = [str(part) for part in error.get("loc", ())]
    if not loc:
        return msg
    return f"{'_'.join(loc)} = {error.get('input')!r}: {msg}"
