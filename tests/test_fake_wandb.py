"""The fake W&B server is faithful to the real client: every test here drives the real `wandb` 0.31
library (and its Go helper `wandb-core`) against `tests.fake_wandb.FakeWandb` on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import math
import subprocess
import sys
import textwrap
import time

import pytest
import wandb
from wandb.errors import AuthenticationError, CommError

from tests.fake_wandb import FakeWandb
from tests.runs import default_sigint
from tests.wandb_api_fixtures import online_child_env

TIMEOUT = 5

SAMPLED = """
query RunSampledHistory($project: String!, $entity: String!, $name: String!, $specs: [JSONString!]!) {
    project(name: $project, entityName: $entity) {
        run(name: $name) { sampledHistory(specs: $specs) }
    }
}
"""


@pytest.fixture
def server():
    with FakeWandb() as fake:
        yield fake


def make_api(server: FakeWandb, **kw) -> wandb.Api:
    return wandb.Api(overrides={"base_url": server.url}, api_key=server.api_key, timeout=TIMEOUT, **kw)


def sampled(api: wandb.Api, path: str, *specs: dict) -> list[list[dict]]:
    """What a caller wanting per-key ranges must send: `Run.history()` has no minStep/maxStep."""
    entity, project, name = path.split("/")
    variables = {"entity": entity, "project": project, "name": name, "specs": [json.dumps(s) for s in specs]}
    return api._service_api.execute_graphql(SAMPLED, variables)["project"]["run"]["sampledHistory"]


def training_run(server: FakeWandb, steps: int = 300):
    """`loss` every step, `val_loss` every 100 steps, NaN / ±inf at steps 5, 6, 7."""
    run = server.add_run("ent", "proj", "run1", name="bright-sky-1", config={"lr": 0.1, "layers": [64, 64]})
    for step in range(steps):
        loss = {5: math.nan, 6: math.inf, 7: -math.inf}.get(step, 1.0 / (step + 1))
        extra = {"val_loss": 2.0 / (step + 1)} if step % 100 == 0 else {}
        run.log(step, loss=loss, **extra)
    return run


def test_login_sends_basic_auth_with_the_key(server):
    api = make_api(server)
    assert api.viewer.entity == server.default_entity
    graphql = [r for r in server.requests if r.path == "/graphql"]
    assert graphql[0].operation == "Viewer"
    assert all(r.status == 200 for r in graphql)


def test_run_reads_state_config_summary_and_history_keys(server):
    fake = training_run(server)
    fake.sweep = "sw1"
    run = make_api(server).run("ent/proj/run1")
    assert run.state == "running"
    assert run.name == "bright-sky-1"
    assert run.config == {"lr": 0.1, "layers": [64, 64]}
    assert run.summary["loss"] == pytest.approx(1 / 300)
    assert run.summary["val_loss"] == pytest.approx(2 / 201)
    assert run.summary["_step"] == 299
    assert run.sweep_name == "sw1"
    assert run.lastHistoryStep == 299
    assert run.storage_id == fake.storage_id
    assert base64.b64decode(run.storage_id).decode() == "Run:v1:run1:proj:ent"
    keys = run._attrs["historyKeys"]
    assert keys["lastStep"] == 299
    assert {"loss", "val_loss", "_step"} <= set(keys["keys"])
    assert run._attrs["historyLineCount"] == 300
    # The raw config is W&B's JSON string of {"key": {"value": v, "desc": null}}.
    raw = json.loads(fake.config_json())
    assert raw["lr"] == {"value": 0.1, "desc": None}
    fake.set_state("finished")
    assert make_api(server).run("ent/proj/run1").state == "finished"


def test_history_by_key_returns_exactly_the_rows_holding_that_key(server):
    training_run(server)
    run = make_api(server).run("ent/proj/run1")

    loss = run.history(keys=["loss"], pandas=False)
    assert [r["_step"] for r in loss] == list(range(300))
    assert set(loss[0]) == {"_step", "loss"}
    assert loss[299]["loss"] == pytest.approx(1 / 300)

    val = run.history(keys=["val_loss"], pandas=False)
    assert val == [{"_step": s, "val_loss": pytest.approx(2 / (s + 1))} for s in (0, 100, 200)]

    # Both keys at once: only rows holding ALL the keys.
    both = run.history(keys=["loss", "val_loss"], pandas=False)
    assert [r["_step"] for r in both] == [0, 100, 200]
    assert server.operations().count("RunSampledHistory") == 3


def test_nan_and_inf_as_the_client_receives_them(server):
    training_run(server, steps=10)
    run = make_api(server).run("ent/proj/run1")
    # sampledHistory is a JSON value: the backend writes non-finite floats as strings
    # (wandb.util.make_safe_for_json: "W&B backend and UI handle these strings"); a bare NaN
    # literal would not even get through wandb-core's JSON decoder.
    by_step = {r["_step"]: r["loss"] for r in run.history(keys=["loss"], pandas=False)}
    assert (by_step[5], by_step[6], by_step[7]) == ("NaN", "Infinity", "-Infinity")
    # Full history rows are JSON strings the client parses itself: floats come back.
    full = {r["_step"]: r for r in run.history(pandas=False)}
    assert math.isnan(full[5]["loss"]) and full[6]["loss"] == math.inf and full[7]["loss"] == -math.inf
    assert full[4]["loss"] == pytest.approx(0.2)


def test_sampled_history_specs_honour_min_and_max_step(server):
    training_run(server)
    api = make_api(server)
    loss, val = sampled(
        api,
        "ent/proj/run1",
        {"keys": ["_step", "loss"], "samples": 1000, "minStep": 250},
        {"keys": ["_step", "val_loss"], "samples": 1000, "minStep": 50},
    )
    assert [r["_step"] for r in loss] == list(range(250, 300))
    assert [r["_step"] for r in val] == [100, 200]
    # maxStep is inclusive in a spec (wandb-core's own pages ask for minStep..minStep+size-1).
    (window,) = sampled(api, "ent/proj/run1", {"keys": ["_step", "loss"], "minStep": 10, "maxStep": 19})
    assert [r["_step"] for r in window] == list(range(10, 20))
    # samples caps the row count, keeping the first and last row.
    (few,) = sampled(api, "ent/proj/run1", {"keys": ["_step", "loss"], "samples": 10})
    assert len(few) == 10 and few[0]["_step"] == 0 and few[-1]["_step"] == 299


def test_flush_and_reread_fetches_only_new_rows(server):
    fake = training_run(server, steps=100)
    api = make_api(server)
    first = api.run("ent/proj/run1").history(keys=["loss"], pandas=False)
    assert len(first) == 100
    for step in range(100, 120):
        fake.log(step, loss=0.001)
    api.flush()
    run = api.run("ent/proj/run1")
    assert run.lastHistoryStep == 119
    before = server.rows_served["total"]
    (new,) = sampled(api, "ent/proj/run1", {"keys": ["_step", "loss"], "minStep": 100, "samples": 1000})
    assert [r["_step"] for r in new] == list(range(100, 120))
    assert server.rows_served["total"] - before == 20
    assert server.rows_served["RunSampledHistory"] == 120


def test_resumed_run_whose_steps_went_back(server):
    fake = training_run(server, steps=300)
    fake.resume_from(200)
    for step in range(200, 210):
        fake.log(step, loss=5.0)
    run = make_api(server).run("ent/proj/run1")
    loss = run.history(keys=["loss"], pandas=False)
    assert [r["_step"] for r in loss] == list(range(210))
    assert loss[-1]["loss"] == 5.0
    assert run.lastHistoryStep == 209


def test_scan_history_pages_through_what_wandb_core_asks_for(server):
    training_run(server)
    run = make_api(server).run("ent/proj/run1")
    rows = list(run.scan_history(keys=["loss"], min_step=250, page_size=20))
    assert [r["_step"] for r in rows] == list(range(250, 300))
    assert "RunParquetHistory" in server.operations()
    assert server.operations().count("SampledHistoryPage") == 3
    assert [r["_step"] for r in run.scan_history(keys=["val_loss"])] == [0, 100, 200]
    full = list(run.scan_history(min_step=10, max_step=30, page_size=10))
    assert [r["_step"] for r in full] == list(range(10, 30))
    assert server.operations().count("HistoryPage") == 2


def test_runs_filtered_by_state_and_sweep(server):
    server.add_run("ent", "proj", "a", state="running", sweep="sw1")
    server.add_run("ent", "proj", "b", state="finished", sweep="sw1")
    server.add_run("ent", "proj", "c", state="running")
    server.add_run("ent", "other", "d", state="running")
    api = make_api(server)
    assert sorted(r.id for r in api.runs("ent/proj", filters={"state": "running"})) == ["a", "c"]
    assert sorted(r.id for r in api.runs("ent/proj", filters={"sweep": "sw1"})) == ["a", "b"]
    sweep = api.sweep("ent/proj/sw1")
    assert sorted(r.id for r in sweep.runs) == ["a", "b"]
    running = api.runs("ent/proj", filters={"$and": [{"sweep": "sw1"}, {"state": "running"}]})
    assert [r.id for r in running] == ["a"]
    assert running[0].config == {}
    assert {"Runs", "GetSweep"} <= set(server.operations())


def test_stop_flips_the_flag(server):
    fake = server.add_run("ent", "proj", "run1")
    run = make_api(server).run("ent/proj/run1")
    assert not fake.stopped
    run.stop()
    assert fake.stopped
    assert server.stop_requests == ["ent/proj/run1"]
    (stop,) = [r for r in server.requests if r.operation == "StopRun"]
    assert stop.variables == {"id": fake.storage_id}


def test_wrong_key_raises_authentication_error(server):
    started = time.monotonic()
    with pytest.raises(AuthenticationError):
        wandb.Api(overrides={"base_url": server.url}, api_key="x" * 44, timeout=TIMEOUT)
    assert time.monotonic() - started < TIMEOUT + 10
    assert [r.status for r in server.requests if r.path == "/graphql"] == [401]


def test_missing_run_raises_comm_error(server):
    server.add_run("ent", "proj", "run1")
    api = make_api(server)
    with pytest.raises(CommError, match="Could not find run"):
        api.run("ent/proj/nope")
    with pytest.raises(CommError):
        api.run("ent/no-such-project/run1")


def test_http_500_raises_comm_error_in_bounded_time(server):
    server.add_run("ent", "proj", "run1")
    api = make_api(server)
    server.fail_with_500 = True
    started = time.monotonic()
    with pytest.raises(CommError):
        api.run("ent/proj/run1")
    assert time.monotonic() - started < TIMEOUT + 10
    # api.run() first asks GetDefaultEntity; wandb-core retries the 500 until the client's timeout.
    statuses = [r.status for r in server.requests if r.path == "/graphql"]
    assert statuses[0] == 200 and len(statuses) >= 2 and set(statuses[1:]) == {500}


def test_hung_server_client_gives_up_after_its_timeout(server):
    server.add_run("ent", "proj", "run1")
    api = make_api(server)
    server.hang = True
    started = time.monotonic()
    with pytest.raises(CommError):
        api.run("ent/proj/run1")
    elapsed = time.monotonic() - started
    assert TIMEOUT - 1 < elapsed < TIMEOUT + 10
    assert [r.operation for r in server.requests if r.status is None] == ["GetDefaultEntity"]
    server.hang = False
    server.release_hung()
    api.flush()
    assert api.run("ent/proj/run1").state == "running"


def test_telemetry_posts_are_accepted(server):
    import urllib.request

    request = urllib.request.Request(f"{server.url}/sdk/otel/v1/metrics", data=b"\x00", method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200


CHILD = textwrap.dedent(
    """
    import math, sys, time
    import wandb

    run = wandb.init(mode="online", project=sys.argv[1], entity=sys.argv[2], id=sys.argv[3],
                     config={"lr": 0.01})
    for i in range(50):
        metrics = {"loss": {3: math.nan, 4: math.inf}.get(i, 1.0 / (i + 1))}
        if i % 10 == 0:
            metrics["acc"] = i / 50
        run.log(metrics)
    print("logged", flush=True)
    started = time.time()
    try:
        while time.time() - started < 120:
            time.sleep(0.2)
    except KeyboardInterrupt:
        print("stopped after", round(time.time() - started, 1), flush=True)
        raise
    """
)


def test_online_training_process_logs_and_is_stopped(server, tmp_path):
    # Not WANDB_SERVICE: the child must start its own wandb-core, as a real training job does.
    env = online_child_env(server, tmp_path)
    # Output to a file, not a pipe: the child's wandb-core inherits it and may outlive the child.
    log = tmp_path / "child.log"
    with log.open("w") as out:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, "proj", "ent", "child1"],
            env=env,
            preexec_fn=default_sigint,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        api = make_api(server)
        started = time.monotonic()
        rows: list = []
        while time.monotonic() - started < 40:
            if server.get_run("ent", "proj", "child1") is not None:
                api.flush()
                rows = api.run("ent/proj/child1").history(keys=["loss"], pandas=False)
                if len(rows) == 50:
                    break
            time.sleep(1)
        assert [r["_step"] for r in rows] == list(range(50)), log.read_text()
        seen_after = time.monotonic() - started
        run = api.run("ent/proj/child1")
        assert run.state == "running"
        assert run.config["lr"] == 0.01
        assert rows[3]["loss"] == "NaN" and rows[4]["loss"] == "Infinity"
        acc = run.history(keys=["acc"], pandas=False)
        assert [r["_step"] for r in acc] == [0, 10, 20, 30, 40]

        stop_at = time.monotonic()
        run.stop()
        child.wait(timeout=60)
        stop_took = time.monotonic() - stop_at
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    print(f"rows visible after {seen_after:.1f}s; child exited {stop_took:.1f}s after StopRun")
    assert child.returncode != 0
    assert "stopped after" in log.read_text()
    fake = server.run("ent/proj/child1")
    assert fake.stopped
    deadline = time.monotonic() + 10
    while fake.state == "running" and time.monotonic() < deadline:
        time.sleep(0.2)  # the final file_stream post (complete, exitcode) may trail the exit
    assert fake.state == "killed" and fake.exitcode not in (None, 0)
    # wandb-core writes non-finite history values as bare NaN / Infinity in file_stream lines.
    lines = [
        line
        for r in server.requests
        if r.body
        for line in r.body.get("files", {}).get("wandb-history.jsonl", {}).get("content", [])
    ]
    assert any('"loss":NaN' in line for line in lines)
    ops = set(server.operations())
    assert {"UpsertBucket", "CreateRunFiles", "StopRun"} <= ops
