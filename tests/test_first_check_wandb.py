"""A long run on a W&B server: the first read is an overview plus the recent rows exactly, in one request;
later reads fill the history in until the stored series are an exact read's. Real wandb client, fake server."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcp_training_check.config import parse_run
from mcp_training_check.sources import WandbApiSource, wandb_api
from mcp_training_check.sources.wandb_api import list_running_runs
from mcp_training_check.state import StateStore
from tests import wandb_api_fixtures
from tests.fake_wandb import FakeWandb
from tests.fake_wandb_columns import add_columnar_run
from tests.test_first_check import assert_same_history
from tests.wandb_api_fixtures import TIMEOUT

server = wandb_api_fixtures.server  # the fake W&B server fixture

PAGE_STEPS = 500  # scaled down from 10,000, so that 6,000 steps need several fill-in checks
STEPS = 6_000


def log_steps(run, steps):
    """`loss` every step (NaN at 1,000), `val_loss` every 100 steps."""
    for step in steps:
        extra = {"val_loss": 2.0 / (step + 1)} if step % 100 == 0 else {}
        run.log(step, loss=math.nan if step == 1000 else 1.0 / (step + 1), **extra)


def read_into(store: StateStore, src: WandbApiSource, key: str = "wandb:ent/proj/run1"):
    batch = src.read(store.get_cursor(key))
    store.apply_batch(key, batch)
    return batch


def history_requests(fake: FakeWandb, since: int) -> int:
    return sum(1 for op in fake.operations()[since:] if "History" in op)


def test_overview_first_then_fill_in_equals_an_exact_read(server, tmp_path, monkeypatch):
    monkeypatch.setattr(wandb_api, "PAGE_STEPS", PAGE_STEPS)
    run = server.add_run("ent", "proj", "run1")
    log_steps(run, range(STEPS))
    src = WandbApiSource(parse_run("ent/proj/run1"), timeout_seconds=TIMEOUT)
    store = StateStore(tmp_path / "state")

    seen, rows = len(server.operations()), server.rows_served["total"]
    first = read_into(store, src)
    assert history_requests(server, seen) == 1  # an exact read would take 12 pages
    assert server.rows_served["total"] - rows < 0.7 * (STEPS + STEPS // 100)
    history = store.load_history("wandb:ent/proj/run1")
    assert first.fill is not None and first.fill.first and history.exact_from == first.fill.exact_from
    loss = history.metrics["loss"]
    assert np.array_equal(loss.raw_steps, np.arange(STEPS - 2048, STEPS)) and loss.total_points < STEPS

    step, checks = STEPS, 0
    while history.exact_from is not None:  # the run goes on between checks
        log_steps(run, range(step, step + 100))
        step += 100
        seen = len(server.operations())
        read_into(store, src)
        assert history_requests(server, seen) <= 3  # the new rows, and at most two pages of fill-in
        history = store.load_history("wandb:ent/proj/run1")
        checks += 1
        assert checks < 30, "the fill-in never arrived"
    assert checks > 2

    monkeypatch.setattr(wandb_api, "FIRST_READ_EXACT_REQUESTS", 10**6)  # the reference: one exact read
    exact = StateStore(tmp_path / "exact")
    read_into(exact, src)
    assert_same_history(exact.load_history("wandb:ent/proj/run1"), history)
    assert history.metrics["loss"].non_finite == 1


def test_check_many_lists_more_than_a_hundred_running_runs(server):
    for index in range(150):
        server.add_run("ent", "big", f"r{index:03d}")
    server.add_run("ent", "big", "done", state="finished")
    refs = list_running_runs(parse_run("ent/big"), timeout_seconds=TIMEOUT)
    assert len(refs) == 150 and len({ref.run_id for ref in refs}) == 150
    assert len(refs) <= wandb_api.MAX_GROUP_RUNS


SPECS = [
    {"keys": ["_step", "loss"], "samples": 50, "minStep": 0, "maxStep": 2999},
    {"keys": ["_step", "loss"], "samples": 5000, "minStep": 1234, "maxStep": 2000},
    {"keys": ["_step", "val_loss"], "samples": 7},
    {"keys": ["_step", "loss", "val_loss"], "samples": 1000, "minStep": 100, "maxStep": 900},
    {"keys": ["_step", "missing"], "samples": 10},
]


@pytest.mark.parametrize("spec", SPECS)
def test_columnar_run_answers_like_a_row_run(spec):
    fake = FakeWandb()  # not started: only its runs are used
    rows = fake.add_run("ent", "proj", "rows")
    log_steps(rows, range(3000))
    steps = np.arange(3000)
    loss = 1.0 / (steps + 1.0)
    loss[1000] = math.nan
    columns = add_columnar_run(
        fake, "ent", "proj", "cols", {"loss": (steps, loss), "val_loss": (steps[::100], 2.0 / (steps[::100] + 1.0))}
    )
    got, want = columns.sampled(spec), rows.sampled(spec)
    assert [r["_step"] for r in got] == [r["_step"] for r in want]
    for a, b in zip(got, want, strict=True):
        assert a.keys() == b.keys()
        assert all(a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a)
    assert columns.history_keys()["lastStep"] == rows.history_keys()["lastStep"] == 2999


@pytest.mark.parametrize(
    ("counts", "last_step", "windows", "exact_from"),
    [
        ({"loss": 1_000_000}, 999_999, {"loss": 2560}, 997_440),  # dense: 2,048 values and a margin
        ({"loss": 1_000_000, "eval": 1_000}, 999_999, {"loss": 2560, "eval": 100_000}, 997_440),  # sparse: widest
        ({"eval": 10_000}, 999_999, {"eval": 100_000}, 900_000),  # one value every 100 steps: 2,560 of them
        ({"loss": 0}, 999_999, {"loss": 2560}, 997_440),  # not counted: taken for one a step
        ({"loss": 1_000}, 999, {"loss": 1000}, 0),  # the whole run fits: no overview spec
    ],
)
def test_overview_specs_size_each_window_by_the_metric_rate(counts, last_step, windows, exact_from):
    from mcp_training_check.sources.wandb_api_overview import OVERVIEW_SAMPLES, overview_specs

    specs, got_exact_from = overview_specs(counts, last_step)
    recent = {key: spec for key, spec in specs if spec["maxStep"] == last_step}
    assert {key: spec["maxStep"] - spec["minStep"] + 1 for key, spec in recent.items()} == windows
    assert all(spec["samples"] >= spec["maxStep"] - spec["minStep"] + 1 for spec in recent.values())  # exact
    overview = [spec for _, spec in specs if spec["maxStep"] != last_step]
    assert all(spec["minStep"] == 0 and spec["samples"] == OVERVIEW_SAMPLES for spec in overview)
    assert got_exact_from == exact_from


def test_check_many_reports_progress_from_its_worker_threads(server, tmp_path):
    import anyio
    from mcp import Client

    from mcp_training_check.server import build_server
    from tests.wandb_api_fixtures import wandb_monitor

    for index in range(6):
        log_steps(server.add_run("ent", "sweepy", f"m{index}"), range(50))
    notes: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notes.append(message)

    async def go():
        async with Client(build_server(wandb_monitor(tmp_path), progress_after_seconds=0)) as client:
            return await client.call_tool("check_many", {"run": "ent/sweepy"}, progress_callback=on_progress)

    result = anyio.run(go)
    assert not result.is_error, result.content
    assert result.structured_content["counts"] and sum(result.structured_content["counts"].values()) == 6
    assert notes and all(note and note.startswith("checking runs: ") and note.endswith(" of 6") for note in notes)
