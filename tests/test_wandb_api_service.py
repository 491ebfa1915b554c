"""W&B server runs through the real MCP client and end to end: check, fallback, unreachable, remote stop.

Everything talks to the fake W&B server on 127.0.0.1 through the real `wandb` client; the stop tests
run a real training child process with `wandb.init(mode="online")`.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
from mcp import Client

from mcp_training_check.models import CheckReport, DataSource, Decision, StopResult
from mcp_training_check.server import build_server
from mcp_training_check.service import Monitor
from tests import wandb_api_fixtures
from tests.fake_wandb import FakeWandb
from tests.runs import default_sigint
from tests.wandb_api_fixtures import SLACK_SECONDS, TIMEOUT, closed_port, online_child_env, wandb_monitor

server = wandb_api_fixtures.server  # the fake W&B server fixture


def call(server, tool: str, arguments: dict):
    async def go():
        async with Client(server) as client:
            return await client.call_tool(tool, arguments)

    return anyio.run(go)


def healthy(run, steps, start: int = 0) -> None:
    for step in range(start, steps):
        loss = 3.0 * math.exp(-step / 150) + 0.3 + 0.02 * math.sin(step)
        extra = {"eval/loss": loss + 0.1} if step % 50 == 0 else {}
        run.log(step, **{"train/loss": loss, "train/lr": 3e-4}, **extra)


def monitor(tmp_path: Path, body: str = "") -> Monitor:
    return wandb_monitor(tmp_path, defaults="notes = 'notes.md'\n", body=body)


def check(mcp_server, run: str) -> CheckReport:
    result = call(mcp_server, "check", {"run": run})
    assert not result.is_error, result.content
    return CheckReport.model_validate(result.structured_content)


def test_check_of_a_w_and_b_run_through_mcp(server, tmp_path):
    run = server.add_run("ent", "proj", "run1", name="bright-sky-1", config={"lr": 3e-4, "total_steps": 5000})
    healthy(run, 400)
    mcp_server = build_server(monitor(tmp_path))
    first = check(mcp_server, "ent/proj/run1")
    assert first.snapshot.data_source is DataSource.WANDB
    assert first.snapshot.run_info.status.value == "running"
    assert first.snapshot.run_info.url == f"{server.url}/ent/proj/runs/run1"
    assert first.snapshot.last_step == 399
    assert first.verdict is not None and first.next_action in ("continue_monitoring", "escalate_review")
    healthy(run, 600, start=400)
    second = check(mcp_server, f"{server.url}/ent/proj/runs/run1")  # the URL form is the same run
    assert second.snapshot.new_points == 200 + 4 + 200  # train/loss, eval/loss, train/lr
    run.set_state("finished")
    third = check(mcp_server, "wandb:ent/proj/run1")
    assert third.next_action == "end_monitoring" and not third.schedule.monitoring
    assert "finished" in third.schedule.summary


def test_bad_w_and_b_run_says_stop(server, tmp_path):
    run = server.add_run("ent", "proj", "run1")
    healthy(run, 300)
    for step in range(300, 330):
        run.log(step, **{"train/loss": math.nan, "train/lr": 3e-4})
    report = check(build_server(monitor(tmp_path)), "ent/proj/run1")
    assert report.verdict is not None and report.verdict.decision is Decision.STOP
    loss = next(m for m in report.snapshot.metrics if m.name == "train/loss")
    assert loss.non_finite == 30


def test_unreachable_server_falls_back_to_the_configured_log(server, tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(f"step {i} | loss {3.0 / (1 + i / 50):.4f} | lr 3e-4\n" for i in range(300)))
    mon = monitor(tmp_path, '[runs.job]\nrun = "ent/proj/run1"\nlog_fallback = "train.log"\n')
    server.add_run("ent", "proj", "run1")
    server.fail_with_500 = True
    started = time.monotonic()
    report = check(build_server(mon), "job")
    assert time.monotonic() - started < TIMEOUT + SLACK_SECONDS
    assert report.snapshot.data_source is DataSource.LOG_FALLBACK
    assert report.snapshot.last_step == 299
    assert "log fallback" in report.snapshot.warnings[0] and "did not answer" in report.snapshot.warnings[0]
    assert report.verdict is not None


def test_a_closed_port_falls_back_to_the_log_at_once(tmp_path, monkeypatch):
    (tmp_path / "train.log").write_text("".join(f"step {i} | loss {2.0 / (1 + i):.4f}\n" for i in range(50)))
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("WANDB_API_KEY", "k" * 44)
    mon = monitor(tmp_path, '[runs.job]\nrun = "ent/proj/run1"\nlog_fallback = "train.log"\n')
    started = time.monotonic()
    report = check(build_server(mon), "job")
    assert time.monotonic() - started < 2.0, "a refused connection waited for the W&B timeout"
    assert report.snapshot.data_source is DataSource.LOG_FALLBACK and report.snapshot.last_step == 49
    assert "refused the connection" in report.snapshot.warnings[0]


def test_hung_server_without_fallback_decides_nothing_and_keeps_the_interval(server, tmp_path):
    run = server.add_run("ent", "proj", "run1")
    healthy(run, 300)
    mcp_server = build_server(monitor(tmp_path))
    first = check(mcp_server, "ent/proj/run1")
    server.hang = True
    started = time.monotonic()
    try:
        second = check(mcp_server, "ent/proj/run1")
    finally:
        server.hang = False
        server.release_hung()
    elapsed = time.monotonic() - started
    assert elapsed < TIMEOUT + SLACK_SECONDS, elapsed
    assert second.snapshot.data_source is DataSource.UNREACHABLE
    assert second.verdict is None and second.next_action == "fix_source"
    assert second.schedule.interval_minutes == first.schedule.interval_minutes
    assert "did not answer" in second.snapshot.warnings[0]
    print(f"hung server: check returned after {elapsed:.1f} s (timeout {TIMEOUT} s)")


def test_hung_server_with_fallback_reads_the_log(server, tmp_path):
    (tmp_path / "train.log").write_text("".join(f"step {i} | loss {2.0 / (1 + i):.4f}\n" for i in range(50)))
    mon = monitor(tmp_path, '[runs.job]\nrun = "ent/proj/run1"\nlog_fallback = "train.log"\n')
    server.add_run("ent", "proj", "run1")
    server.hang = True
    started = time.monotonic()
    try:
        report = check(build_server(mon), "job")
    finally:
        server.hang = False
        server.release_hung()
    assert time.monotonic() - started < TIMEOUT + SLACK_SECONDS
    assert report.snapshot.data_source is DataSource.LOG_FALLBACK


def test_a_replaced_fallback_log_keeps_the_metrics_only_w_and_b_had(server, tmp_path):
    """W&B read first (train/loss, eval/loss, train/lr); then W&B fails and the log fallback is read; then
    the log is replaced (restarted): only the log's own metric is re-read, W&B's series stay stored."""
    log = tmp_path / "train.log"
    mon = monitor(tmp_path, '[runs.job]\nrun = "ent/proj/run1"\nlog_fallback = "train.log"\n')
    run = server.add_run("ent", "proj", "run1")
    healthy(run, 300)
    mcp_server = build_server(mon)
    assert check(mcp_server, "job").snapshot.data_source is DataSource.WANDB
    server.fail_with_500 = True
    log.write_text("".join(f"step {i} | loss {2.0 / (1 + i / 50):.4f}\n" for i in range(300, 400)))
    assert check(mcp_server, "job").snapshot.data_source is DataSource.LOG_FALLBACK
    log.write_text("".join(f"step {i} | loss {1.0 / (1 + i / 50):.4f}\n" for i in range(10)))  # replaced
    report = check(mcp_server, "job")
    assert report.snapshot.data_source is DataSource.LOG_FALLBACK and report.snapshot.restarted
    history = mon.store.load_history(mon.context("job").key)
    assert {"train/loss", "eval/loss", "train/lr", "loss"} <= set(history.metrics)
    assert history.metrics["train/loss"].values.size == 300  # W&B's points, kept
    assert history.metrics["loss"].last_step == 9 and history.metrics["loss"].values.size == 10  # re-read


def test_refused_key_is_reported_with_the_fix(server, tmp_path, monkeypatch):
    server.add_run("ent", "proj", "run1")
    monkeypatch.setenv("WANDB_API_KEY", "y" * 44)
    report = check(build_server(monitor(tmp_path)), "ent/proj/run1")
    assert report.snapshot.data_source is DataSource.UNREACHABLE and report.verdict is None
    assert "refused the API key" in report.snapshot.warnings[0]


def test_missing_run_is_a_tool_error_naming_the_run(server, tmp_path):
    server.add_run("ent", "proj", "run1")
    result = call(build_server(monitor(tmp_path)), "check", {"run": "ent/proj/nope1234"})
    assert result.is_error
    assert "ent/proj/nope1234" in result.content[0].text and "8-character id" in result.content[0].text


def test_stop_of_a_w_and_b_run_needs_the_config_table(server, tmp_path):
    server.add_run("ent", "proj", "run1")
    result = call(build_server(monitor(tmp_path)), "stop_run", {"run": "ent/proj/run1", "confirm": True, "reason": "x"})
    assert result.is_error
    assert 'method = "wandb"' in result.content[0].text
    assert server.stop_requests == []


# ------------------------------------------------------------------------------------ end to end

CHILD = textwrap.dedent(
    """
    import math, signal, sys, time
    import wandb

    if sys.argv[4] == "ignore-sigint":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    run = wandb.init(mode="online", project=sys.argv[1], entity=sys.argv[2], id=sys.argv[3])
    started = time.time()
    step = 0
    try:
        while time.time() - started < 150:
            loss = 2.0 / (1 + step / 20) if step < 60 else float("nan")
            run.log({"train/loss": loss, "train/lr": 3e-4})
            step += 1
            time.sleep(0.05)
    except KeyboardInterrupt:
        print("interrupted at step", step, flush=True)
        raise
    """
)


def start_child(server: FakeWandb, tmp_path: Path, run_id: str, mode: str) -> tuple[subprocess.Popen, Path]:
    env = online_child_env(server, tmp_path)
    log = tmp_path / f"{run_id}.log"
    with log.open("w") as out:  # a file, not a pipe: the child's wandb-core may outlive it
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, "proj", "ent", run_id, mode],
            env=env,
            preexec_fn=default_sigint,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return child, log


def wait_for_rows(server: FakeWandb, run_id: str, rows: int, log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        fake = server.get_run("ent", "proj", run_id)
        if fake is not None and len(fake.rows) >= rows:
            return
        time.sleep(0.5)
    raise AssertionError(f"the child logged no {rows} rows in {seconds} s: {log.read_text()}")


def stop_config(run_id: str, verify_seconds: float) -> str:
    stop = f'[runs.job.stop]\nmethod = "wandb"\nverify_seconds = {verify_seconds}\n'
    return f'[runs.job]\nrun = "ent/proj/{run_id}"\n{stop}'


def test_stop_through_w_and_b_ends_an_online_training_process(server, tmp_path):
    child, log = start_child(server, tmp_path, "child1", "normal")
    try:
        wait_for_rows(server, "child1", 80, log)
        mcp_server = build_server(monitor(tmp_path, stop_config("child1", 60)))
        report = check(mcp_server, "job")
        assert report.verdict is not None and report.verdict.decision is Decision.STOP, report.summary
        started = time.monotonic()
        result = call(mcp_server, "stop_run", {"run": "job", "confirm": True, "reason": report.verdict.summary})
        took = time.monotonic() - started
        assert not result.is_error, result.content
        stop = StopResult.model_validate(result.structured_content)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    print(f"W&B stop verified after {took:.1f} s: {stop.summary}")
    assert server.run("ent/proj/child1").stopped and server.stop_requests == ["ent/proj/child1"]
    assert stop.method.value == "wandb" and stop.outcome.value == "stopped" and stop.verified
    assert "interrupted at step" in log.read_text()
    assert child.returncode != 0
    assert stop.run_url == f"{server.url}/ent/proj/runs/child1"
    notes = (tmp_path / "notes.md").read_text()
    assert "train/loss" in notes and "wandb" in notes
    after = check(mcp_server, "job")
    assert after.next_action == "end_monitoring"


def test_stop_of_a_process_that_ignores_sigint_is_requested_not_confirmed(server, tmp_path):
    child, log = start_child(server, tmp_path, "child2", "ignore-sigint")
    try:
        wait_for_rows(server, "child2", 20, log)
        mcp_server = build_server(monitor(tmp_path, stop_config("child2", 25)))
        started = time.monotonic()
        result = call(mcp_server, "stop_run", {"run": "job", "confirm": True, "reason": "test: NaN loss"})
        took = time.monotonic() - started
        assert not result.is_error, result.content
        stop = StopResult.model_validate(result.structured_content)
        still_running = child.poll() is None
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    print(f"W&B stop not confirmed after {took:.1f} s: {stop.summary}")
    assert server.run("ent/proj/child2").stopped
    assert still_running
    assert stop.outcome.value == "requested_not_confirmed" and not stop.verified
    assert "requested, not confirmed" in stop.summary and "SIGINT" in stop.summary
    assert 25 <= took < 25 + SLACK_SECONDS + TIMEOUT
