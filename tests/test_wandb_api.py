"""The W&B server source, driven through the real `wandb.Api` against the fake server on 127.0.0.1."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from mcp_training_check.config import parse_run
from mcp_training_check.errors import RunNotFound, SourceUnavailable
from mcp_training_check.models import RunStatus
from mcp_training_check.sources import WandbApiSource
from mcp_training_check.sources.base import ReadBatch
from mcp_training_check.state import StateStore
from tests import wandb_api_fixtures
from tests.wandb_api_fixtures import SLACK_SECONDS, TIMEOUT, closed_port

REFUSED_SECONDS = 1.0
"""A refused connection is answered in well under a second (it took the whole W&B timeout)."""

server = wandb_api_fixtures.server  # the fake W&B server fixture


def source(run: str = "ent/proj/run1", timeout: float = TIMEOUT) -> WandbApiSource:
    return WandbApiSource(parse_run(run), timeout_seconds=timeout)


def log_steps(run, steps, nan_at=()):
    """`loss` every step, `val_loss` every 100 steps."""
    for step in steps:
        loss = math.nan if step in nan_at else 1.0 / (step + 1)
        extra = {"val_loss": 2.0 / (step + 1)} if step % 100 == 0 else {}
        run.log(step, loss=loss, **extra)


class Reader:
    """Reads like the service does: cursor in, batch applied to a real state store."""

    def __init__(self, src: WandbApiSource, store: StateStore, key: str = "wandb:ent/proj/run1"):
        self.src, self.store, self.key = src, store, key

    def read(self) -> ReadBatch:
        batch = self.src.read(self.store.get_cursor(self.key))
        self.store.apply_batch(self.key, batch)
        return batch


@pytest.fixture
def store(tmp_path):
    s = StateStore(tmp_path / "state")
    yield s
    s.close()


def test_growing_run_reads_only_new_rows_every_key_fully(server, store):
    run = server.add_run("ent", "proj", "run1", name="bright-sky-1", config={"lr": 0.1, "warmup_steps": 10})
    log_steps(run, range(250), nan_at={5, 6})
    reader = Reader(source(), store)

    first = reader.read()
    assert first.series["loss"].steps.tolist() == list(range(250))
    assert first.series["val_loss"].steps.tolist() == [0, 100, 200]
    assert int(np.isnan(first.series["loss"].values).sum()) == 2
    assert first.info.status is RunStatus.RUNNING
    assert first.info.config == {"lr": 0.1, "warmup_steps": 10}
    assert first.info.name == "bright-sky-1" and first.info.run_id == "run1"
    assert first.info.url == f"{server.url}/ent/proj/runs/run1"

    served = []
    for upto in (260, 400, 401, 1000):
        before = server.rows_served["total"]
        start = store.load_history(reader.key).last_step + 1
        log_steps(run, range(start, upto))
        batch = reader.read()
        new_rows = upto - start + len([s for s in range(start, upto) if s % 100 == 0])
        served.append(server.rows_served["total"] - before)
        assert batch.new_points == new_rows
        assert batch.series["loss"].steps.tolist() == list(range(start, upto))
        assert served[-1] <= new_rows + 2, (served, new_rows)  # + the one overlap row per key
    history = store.load_history(reader.key)
    assert history.metrics["val_loss"].total_points == 10
    assert history.metrics["loss"].total_points == 1000
    assert history.metrics["loss"].non_finite == 2
    print(f"rows served per check: {served}")


def test_no_new_rows_costs_one_row_per_key(server, store):
    run = server.add_run("ent", "proj", "run1")
    log_steps(run, range(120))
    reader = Reader(source(), store)
    reader.read()
    before = server.rows_served["total"]
    again = reader.read()
    assert again.new_points == 0
    assert server.rows_served["total"] - before == 2


def test_nan_and_inf_strings_become_floats_and_are_counted(server, store):
    run = server.add_run("ent", "proj", "run1")
    for step, value in enumerate([1.0, math.nan, math.inf, -math.inf, 0.5]):
        run.log(step, loss=value)
    batch = Reader(source(), store).read()
    values = batch.series["loss"].values
    assert values[0] == 1.0 and math.isnan(values[1]) and values[2] == math.inf and values[3] == -math.inf
    assert store.load_history("wandb:ent/proj/run1").metrics["loss"].non_finite == 3


def test_long_range_is_paged_not_sampled(server, store, monkeypatch):
    from mcp_training_check.sources import wandb_api

    monkeypatch.setattr(wandb_api, "PAGE_STEPS", 100)
    monkeypatch.setattr(wandb_api, "FIRST_READ_EXACT_REQUESTS", 100)  # an exact first read, not an overview
    run = server.add_run("ent", "proj", "run1")
    log_steps(run, range(1050))
    batch = Reader(source(), store).read()
    assert batch.series["loss"].steps.tolist() == list(range(1050))
    assert batch.series["val_loss"].steps.tolist() == list(range(0, 1050, 100))
    assert server.operations().count("RunSampledHistory") == 11


def test_resumed_run_whose_steps_went_back(server, store):
    run = server.add_run("ent", "proj", "run1")
    log_steps(run, range(300))
    reader = Reader(source(), store)
    reader.read()
    run.resume_from(200)
    for step in range(200, 250):
        run.log(step, loss=5.0)
    batch = reader.read()
    assert batch.restarted and "went back" in batch.warnings[0]
    history = store.load_history(reader.key)
    assert history.last_step == 249
    loss = history.metrics["loss"]
    assert loss.total_points == 250
    assert loss.raw_values[-1] == 5.0
    assert history.metrics["val_loss"].steps.tolist() == [0, 100]  # step 200 was rewound and not re-logged


def test_resumed_run_that_already_passed_the_old_last_step(server, store):
    run = server.add_run("ent", "proj", "run1")
    log_steps(run, range(300))
    reader = Reader(source(), store)
    reader.read()
    run.resume_from(150)
    for step in range(150, 400):
        run.log(step, loss=7.0)
    batch = reader.read()
    assert batch.restarted and "changed" in batch.warnings[0]
    loss = store.load_history(reader.key).metrics["loss"]
    assert loss.total_points == 400
    assert loss.raw_values[149] != 7.0 and loss.raw_values[150] == 7.0


def test_run_states_and_ended_runs(server, store):
    run = server.add_run("ent", "proj", "run1", state="running")
    log_steps(run, range(10))
    src = source()
    for state in ("finished", "crashed", "failed", "killed", "preempted", "preempting", "pending"):
        run.set_state(state)
        assert src.read(None).info.status.value == state


def test_summary_keeps_a_few_numbers(server, store):
    run = server.add_run("ent", "proj", "run1")
    run.log(0, loss=1.0, acc=0.5, text_note=None)
    run.summary_overrides.update({"best_acc": 0.9, "model": "bert"})
    info = source().read(None).info
    assert info.summary["loss"] == 1.0 and info.summary["best_acc"] == 0.9
    assert "model" not in info.summary and "_runtime" in info.summary


def test_missing_run_names_it_and_says_how_to_find_the_id(server):
    server.add_run("ent", "proj", "run1")
    with pytest.raises(RunNotFound, match=r"ent/proj/nope.*8-character id"):
        source("ent/proj/nope").read(None)


def test_bad_key_is_refused_quickly_with_the_fix(server, monkeypatch):
    server.add_run("ent", "proj", "run1")
    monkeypatch.setenv("WANDB_API_KEY", "x" * 44)
    started = time.monotonic()
    with pytest.raises(SourceUnavailable, match=r"refused the API key.*WANDB_API_KEY.*wandb login"):
        source().read(None)
    assert time.monotonic() - started < TIMEOUT + SLACK_SECONDS


def test_http_500_is_unavailable_within_the_timeout(server):
    run = server.add_run("ent", "proj", "run1")
    log_steps(run, range(10))
    src = source()
    src.read(None)  # the shared Api exists: the failure is in the reads themselves
    server.fail_with_500 = True
    started = time.monotonic()
    with pytest.raises(SourceUnavailable, match="did not answer"):
        src.read(None)
    assert time.monotonic() - started < TIMEOUT + SLACK_SECONDS


def test_hung_server_is_unavailable_within_the_timeout(server):
    run = server.add_run("ent", "proj", "run1")
    log_steps(run, range(10))
    src = source()
    src.read(None)
    server.hang = True
    started = time.monotonic()
    with pytest.raises(SourceUnavailable, match="did not answer"):
        src.read(None)
    elapsed = time.monotonic() - started
    server.hang = False
    server.release_hung()
    assert elapsed < TIMEOUT + SLACK_SECONDS
    assert src.read(None).series["loss"].steps.tolist() == list(range(10))  # and it recovers


def test_a_closed_port_is_refused_at_once(monkeypatch):
    """Nothing listening is a definite answer: wandb's retries took the whole timeout (10-12 s by default)
    to say so. A hung server still gets its full timeout (test_hung_server_... above)."""
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("WANDB_API_KEY", "k" * 44)
    started = time.monotonic()
    refused = r"refused the connection: nothing listens on 127\.0\.0\.1:.*WANDB_BASE_URL"
    with pytest.raises(SourceUnavailable, match=refused):
        source(timeout=10).read(None)
    assert time.monotonic() - started < REFUSED_SECONDS


def test_bare_id_with_entity_and_project_from_the_environment(server, monkeypatch):
    run = server.add_run("ent", "proj", "abc12345")
    log_steps(run, range(5))
    monkeypatch.setenv("WANDB_ENTITY", "ent")
    monkeypatch.setenv("WANDB_PROJECT", "proj")
    assert source("abc12345").read(None).series["loss"].steps.tolist() == list(range(5))


def test_run_url_names_the_server_without_wandb_base_url(server, monkeypatch):
    run = server.add_run("ent", "proj", "run1")
    log_steps(run, range(5))
    monkeypatch.delenv("WANDB_BASE_URL")
    ref = parse_run(f"{server.url}/ent/proj/runs/run1/overview")
    assert ref.host == server.url
    batch = WandbApiSource(ref, timeout_seconds=TIMEOUT).read(None)
    assert batch.series["loss"].steps.tolist() == list(range(5))


def test_key_from_the_netrc_that_wandb_login_writes(server, monkeypatch, tmp_path):
    run = server.add_run("ent", "proj", "run1")
    log_steps(run, range(5))
    home = tmp_path / "home"
    home.mkdir()
    netrc = home / ".netrc"
    netrc.write_text(f"machine {server.url.split('//')[1]}\n  login user\n  password {server.api_key}\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("WANDB_API_KEY")
    monkeypatch.delenv("NETRC", raising=False)
    assert source().read(None).series["loss"].steps.tolist() == list(range(5))


def test_processes_started_later_do_not_attach_to_our_wandb_core(server, monkeypatch):
    import os

    monkeypatch.delenv("WANDB_SERVICE", raising=False)
    log_steps(server.add_run("ent", "proj", "run1"), range(5))
    source().read(None)
    assert "WANDB_SERVICE" not in os.environ
