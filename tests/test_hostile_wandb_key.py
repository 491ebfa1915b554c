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


def test_a_finished_w_and_b_run_is_stopped_once_not_recorded_again(tmp_path, server):
    """W&B's own word that the run ended is about the run (unlike a local pid found not running): a
    second stop sends nothing and adds no second incident."""
    server.add_run("ent", "proj", "run1", state="finished")
    body = '[runs.r]\nrun = "ent/proj/run1"\nnotes = "notes.md"\n[runs.r.stop]\nmethod = "wandb"\nverify_seconds = 2\n'
    monitor = wandb_monitor(tmp_path, body=body)
    first = monitor.stop_run("r", confirm=True, reason="x")
    assert first.outcome.value == "already_stopped" and first.verified and server.stop_requests == []
    notes = (tmp_path / "notes.md").read_text()
    second = monitor.stop_run("r", confirm=True, reason="y")
    assert second.outcome.value == "already_stopped" and "nothing sent" in second.summary
    assert (tmp_path / "notes.md").read_text() == notes
