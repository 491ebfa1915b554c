"""JudgeSettings: every threshold overridable by name, unknown names rejected, detectors switchable off."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from mcp_training_check.errors import ConfigError
from mcp_training_check.judge import JudgeSettings
from mcp_training_check.judge.settings import judge_settings
from mcp_training_check.models import SignalKind
from tests.test_judge_helpers import decay_loss, kinds, make_series, run_judge

# `loss`: a level in the loss's own units (a GAN discriminator's loss near zero, `game_won_loss`)
UNITS = re.compile(
    r"_(points|steps|ratio|z|fraction|margin|change|evals|checks|share|sigma|signals|spikes|episodes|samples|loss|classes)$"
)


def test_every_threshold_name_carries_its_unit():
    names = [k for k, v in JudgeSettings.flat_defaults().items() if not isinstance(v, bool)]
    assert len(names) > 40
    bad = [n for n in names if not UNITS.search(n)]
    assert not bad


@pytest.mark.parametrize(
    ("raw", "section", "field", "value"),
    [
        ({"divergence_ratio": 3.0}, "trend", "divergence_ratio", 3.0),
        ({"trend_divergence_ratio": 3.0}, "trend", "divergence_ratio", 3.0),
        ({"spikes_window_points": 30}, "spikes", "window_points", 30),
        ({"grad_norm_window_points": 30}, "grad_norm", "window_points", 30),
        ({"trend": {"confirm_checks": 4}}, "trend", "confirm_checks", 4),
        ({"max_signals": 5}, "policy", "max_signals", 5),
    ],
)
def test_flat_and_nested_keys_are_routed(raw, section, field, value):
    settings = JudgeSettings.model_validate(raw)
    assert getattr(getattr(settings, section), field) == value


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"window_points": 30}, "ambiguous; write one of"),
        ({"divergence_ratoi": 3.0}, "did you mean trend_divergence_ratio"),
        ({"trend": {"nope": 1}}, "Extra inputs are not permitted"),
        ({"divergence_ratio": 0.5}, "greater than 1"),
    ],
)
def test_bad_settings_are_rejected_with_a_hint(raw, message):
    with pytest.raises(ValidationError, match=message):
        JudgeSettings.model_validate(raw)


def test_a_threshold_override_changes_the_verdict():
    loss = decay_loss(500, seed=1)
    loss[-5:] *= 2.5
    series = make_series("loss", loss)
    assert SignalKind.DIVERGENCE in kinds(run_judge(series))
    lenient = JudgeSettings.model_validate({"divergence_ratio": 4.0})
    assert SignalKind.DIVERGENCE not in kinds(run_judge(series, settings=lenient))


def test_none_turns_a_detector_off():
    loss = decay_loss(500, seed=1)
    loss[400] *= 3
    series = make_series("loss", loss)
    assert SignalKind.SPIKE_RECOVERED in kinds(run_judge(series))
    assert SignalKind.SPIKE_RECOVERED not in kinds(run_judge(series, settings=JudgeSettings(spikes=None)))


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"trend_divergence_ratio": 0.5}, "'x': trend_divergence_ratio = 0.5: Input should be greater than 1. Fix"),
        ({"divergence_ratoi": 3.0}, "did you mean trend_divergence_ratio, "),
        ({"no_such_threshold": 3}, "'no_such_threshold' is unknown; the README's detector table lists every one"),
    ],
)
def test_a_config_error_names_the_setting_as_written(table, message):
    """Before, an out-of-range value said only "Input should be greater than 1" (which setting?) and an unknown
    name pointed a CLI user at a Python classmethod."""
    with pytest.raises(ConfigError) as caught:
        judge_settings(table, where="training-check.toml", run="x")
    assert message in str(caught.value) and "Value error" not in str(caught.value)
