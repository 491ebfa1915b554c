"""The MCP server through the SDK's real client: in-process, and one stdio subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_training_check.config import load_config
from mcp_training_check.models import CheckReport, Decision, StopResult
from mcp_training_check.server import build_server
from mcp_training_check.service import Monitor

from .runs import grow, live_copy, train

TOOLS = {
    *("read_metrics", "judge", "schedule_next", "check", "check_many"),
    *("escalate_review", "record_review", "plot", "stop_run"),
}
MAX_DESCRIPTION_CHARS = 1500
MAX_RESULT_TOKENS = 1500


@pytest.fixture(scope="session")
def healthy_run(tmp_path_factory) -> Path:
    return train(tmp_path_factory.mktemp("healthy"), steps=2000)


@pytest.fixture(scope="session")
def broken_run(tmp_path_factory) -> Path:
    return train(tmp_path_factory.mktemp("broken"), steps=2000, fault_step=1000)


def call(server, tool: str, arguments: dict):
    async def go():
        async with Client(server) as client:
            return await client.call_tool(tool, arguments)

    return anyio.run(go)


def test_tool_list_is_complete_and_described():
    async def go():
        async with Client(build_server(Monitor())) as client:
            return await client.list_tools()

    tools = {tool.name: tool for tool in anyio.run(go).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) < MAX_DESCRIPTION_CHARS
        assert tool.output_schema is not None, f"{tool.name} has no output schema"
        assert "summary" in tool.output_schema["properties"], f"{tool.name} result has no summary line"
        assert "description" in tool.input_schema["properties"]["run"]
    assert tools["stop_run"].annotations.destructive_hint is True
    assert tools["stop_run"].annotations.read_only_hint is False
    for name in TOOLS - {"stop_run"}:
        assert tools[name].annotations.read_only_hint is True
        assert tools[name].annotations.destructive_hint is False
    assert tools["escalate_review"].annotations.open_world_hint is True
    assert tools["escalate_review"].annotations.idempotent_hint is False  # each call asks the LLM anew
    assert "WAIT" in tools["escalate_review"].description and "stop_run" in tools["escalate_review"].description


def test_live_healthy_run_continues_and_backs_off(tmp_path, healthy_run):
    live = live_copy(healthy_run, tmp_path, 0.4)
    server = build_server(Monitor())
    reports = []
    for fraction in (0.55, 0.7, 0.85):
        result = call(server, "check", {"run": str(live)})
        assert not result.is_error, result.content
        reports.append(CheckReport.model_validate(result.structured_content))
        grow(live, healthy_run, fraction)
    first = reports[0]
    assert first.snapshot.data_source.value == "wandb_file"
    assert {"train/loss", "eval/acc", "train/lr", "train/grad_norm"} <= {m.name for m in first.snapshot.metrics}
    assert [r.verdict.decision for r in reports if r.verdict] == [Decision.CONTINUE] * 3
    assert [r.schedule.interval_minutes for r in reports] == [10, 20, 30]
    steps = [r.snapshot.last_step for r in reports]
    assert steps == sorted(steps) and len(set(steps)) == 3
    assert all(r.snapshot.new_points > 0 for r in reports)


def test_finished_run_ends_monitoring(healthy_run):
    report = CheckReport.model_validate(
        call(build_server(Monitor()), "check", {"run": str(healthy_run)}).structured_content
    )
    assert report.snapshot.last_step == 1999
    assert report.snapshot.run_info.status.value == "finished"
    assert report.schedule.monitoring is False and report.next_action == "end_monitoring"


def test_live_broken_run_says_stop(tmp_path, broken_run):
    live = live_copy(broken_run, tmp_path, 0.75)
    result = call(build_server(Monitor()), "check", {"run": str(live)})
    report = CheckReport.model_validate(result.structured_content)
    assert report.verdict is not None
    assert report.verdict.decision is Decision.STOP, report.verdict.summary
    assert report.next_action == "stop_run"
    assert any(s.severity.value == "critical" for s in report.verdict.signals)
    assert report.schedule.interval_minutes == 10


def test_check_result_is_compact(tmp_path, broken_run):
    live = live_copy(broken_run, tmp_path, 0.75)
    result = call(build_server(Monitor()), "check", {"run": str(live)})
    size_tokens = len(json.dumps(result.structured_content)) / 4
    assert size_tokens < MAX_RESULT_TOKENS, f"check result is {size_tokens:.0f} tokens"


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("check", {"run": "/no/such/run.log"}, "/no/such/run.log"),
        ("read_metrics", {"run": "ssh://"}, "host and a path"),
        ("judge", {"run": "/no/such/run.log"}, "/no/such/run.log"),
        ("schedule_next", {"run": "https://example.com/x"}, "W&B run URL"),
        ("stop_run", {"run": "/tmp", "confirm": False, "reason": "x"}, "confirm=true"),
    ],
)
def test_tool_errors_say_what_to_fix(tool, arguments, expected):
    result = call(build_server(Monitor()), tool, arguments)
    assert result.is_error
    text = " ".join(getattr(block, "text", "") for block in result.content)
    assert expected in text


def test_schedule_next_before_any_check_says_to_call_check_first(healthy_run):
    """It handed out a cron for a run never looked at: a "next" check 10 minutes after none."""
    server = build_server(Monitor())
    refused = call(server, "schedule_next", {"run": str(healthy_run)})
    assert refused.is_error and "has no check yet" in refused.content[0].text
    assert "call `check` first" in refused.content[0].text
    call(server, "check", {"run": str(healthy_run)})
    scheduled = call(server, "schedule_next", {"run": str(healthy_run)})
    assert not scheduled.is_error and "monitoring" in scheduled.structured_content


def test_stop_run_without_stop_config_names_the_file(healthy_run):
    result = call(build_server(Monitor()), "stop_run", {"run": str(healthy_run), "confirm": True, "reason": "test"})
    assert result.is_error
    assert "training-check.toml" in result.content[0].text


def test_stop_run_kills_a_live_process_and_keeps_evidence(tmp_path, healthy_run):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    (tmp_path / "train.pid").write_text(f"{sleeper.pid}\n")
    (tmp_path / "training-check.toml").write_text(
        f'[runs.exp]\nrun = "{healthy_run}"\nnotes = "notes.md"\n'
        '[runs.exp.stop]\npid_file = "train.pid"\ngrace_seconds = 5\n'
    )
    server = build_server(Monitor(config=load_config(tmp_path / "training-check.toml")))
    call(server, "check", {"run": "exp"})
    first = StopResult.model_validate(
        call(server, "stop_run", {"run": "exp", "confirm": True, "reason": "loss diverged"}).structured_content
    )
    assert first.outcome.value == "stopped" and first.verified
    assert sleeper.poll() is not None
    notes = (tmp_path / "notes.md").read_text()
    assert "loss diverged" in notes and "train/loss" in notes
    second = StopResult.model_validate(
        call(server, "stop_run", {"run": "exp", "confirm": True, "reason": "again"}).structured_content
    )
    assert second.outcome.value == "already_stopped"
    assert (tmp_path / "notes.md").read_text() == notes


def stdio_server(tmp_path) -> StdioServerParameters:
    """`python -m mcp_training_check serve` in ``tmp_path``, its state under ``tmp_path/home``."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_training_check", "serve"],
        env={"TRAINING_CHECK_HOME": str(tmp_path / "home"), "PATH": os.environ["PATH"]},
        cwd=str(tmp_path),
    )


def test_stdio_server_checks_a_log(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(f"step {i} | loss {3.0 / (1 + i / 50):.4f} | lr 3e-4\n" for i in range(300)))
    params = stdio_server(tmp_path)

    async def go():
        async with Client(params) as client:
            tools = await client.list_tools()
            result = await client.call_tool("check", {"run": str(log)})
            return tools, result

    started = time.monotonic()
    tools, result = anyio.run(go)
    assert {tool.name for tool in tools.tools} == TOOLS
    assert not result.is_error, result.content
    report = CheckReport.model_validate(result.structured_content)
    assert report.snapshot.data_source.value == "log"
    assert report.verdict is not None and report.verdict.decision is Decision.CONTINUE
    assert time.monotonic() - started < 120


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "hf", "printed"])
def test_in_process_check_on_every_log_format(tmp_path, fmt):
    from .test_cli import write_formats

    path = write_formats(tmp_path)[fmt]
    server = build_server(Monitor())
    report = CheckReport.model_validate(call(server, "check", {"run": str(path)}).structured_content)
    assert report.snapshot.data_source.value == "log"
    assert report.verdict is not None and report.verdict.decision is Decision.CONTINUE, report.verdict
    verdict = call(server, "judge", {"run": str(path)}).structured_content
    assert verdict["decision"] == "continue"
    snapshot = call(server, "read_metrics", {"run": str(path)}).structured_content
    assert snapshot["new_points"] == 0 and snapshot["metrics"][0]["role"] == "train_loss"
    stalled = call(server, "judge", {"run": str(path)}).structured_content
    assert stalled["decision"] == "continue", "no new data is the launcher's business (issue 9, class 7)"
    assert any(s["kind"] == "no_new_data" for s in stalled["signals"])
    schedule = call(server, "schedule_next", {"run": str(path), "review": "WAIT"}).structured_content
    assert schedule["interval_minutes"] == report.schedule.interval_minutes
