"""A short or malformed W&B API key (issue 10, item 8) reads as such, not as an unreachable server:
wandb checks the key's form before any request, against the fake W&B server on 127.0.0.1."""

from __future__ import annotations

import pytest

from tests import wandb_api_fixtures
from tests.wandb_api_fixtures import wandb_monitor

server = wandb_api_fixtures.server

MALFORMED = "the API key looks malformed (W&B keys are 40+ chars) — set WANDB_API_KEY / run wandb login"


@pytest.mark.parametrize("key", ["short", "x" * 39, "has spaces and is long enough to pass the length test"])
def test_a_malformed_key_is_named_as_such(tmp_path, server, monkeypatch, key):
    monkeypatch.setenv("WANDB_API_KEY", key)
    snapshot = wandb_monitor(tmp_path).read_metrics(f"{server.default_entity}/proj/abcd1234")
    assert snapshot.data_source.value == "unreachable"
    assert any(MALFORMED in warning for warning in snapshot.warnings), snapshot.warnings
    assert not any("did not answer usably" in warning for warning in snapshot.warnings)
    assert all(key not in warning for warning in snapshot.warnings), "the key itself is never shown"
