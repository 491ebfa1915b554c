"""One check over every running run of a W&B sweep or project, against the fake W&B server."""

from __future__ import annotations

import json
import math

import anyio
import pytest
from mcp import Client

from mcp_training_check.cli import main
from mcp_training_check.config import parse_run
from mcp_training_check.errors import RunNotFound, RunRefError
from mcp_training_check.models import Decision, GroupReport, RunKind
from mcp_training_check.server import build_server
from mcp_training_check.service import GROUP_LINES, Monitor
from tests import wandb_api_fixtures
from tests.fake_wandb import FakeWandb
from tests.wandb_api_fixtures import TIMEOUT, wandb_monitor

server = wandb_api_fixtures.server  # the fake W&B server fixture

MAX_RESULT_TOKENS = 1500


def healthy(run, steps: int = 300, seed: int = 0) -> None:
    for step in range(steps):
        loss = 3.0 * math.exp(-step / 150) + 0.3 + 0.02 * math.sin(step + seed)
        run.log(step, **{"train/loss": loss, "train/lr": 3e-4})


def broken(run, steps: int = 300) -> None:
    healthy(run, steps)
    for step in range(steps, steps + 30):
        run.log(step, **{"train/loss": math.nan, "train/lr": 3e-4})


def sweep(server: FakeWandb) -> None:
    for run_id in ("aaa", "bbb", "ccc"):
        healthy(server.add_run("ent", "proj", run_id, sweep="sw1"), seed=len(run_id))
    broken(server.add_run("ent", "proj", "zzz", sweep="sw1"))
    healthy(server.add_run("ent", "proj", "done", sweep="sw1", state="finished"))
    healthy(server.add_run("ent", "proj", "other", sweep="sw2"))


def monitor(tmp_path) -> Monitor:
    return wandb_monitor(tmp_path)


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("ent/proj/sweeps/sw1", RunKind.WANDB_SWEEP),
        ("wandb:ent/proj/sweeps/sw1", RunKind.WANDB_SWEEP),
        ("https://wandb.ai/ent/proj/sweeps/sw1", RunKind.WANDB_SWEEP),
        ("https://wandb.ai/ent/proj/sweeps/sw1/overview", RunKind.WANDB_SWEEP),
        ("ent/proj", RunKind.WANDB_PROJECT),
    ],
)
def test_group_forms(raw, kind):
    ref = parse_run(raw)
    assert ref.kind is kind and ref.entity == "ent" and ref.project == "proj"
    assert ref.host is None


def test_sweep_check_puts_the_bad_run_first(server, tmp_path):
    sweep(server)
    report = monitor(tmp_path).check_many("ent/proj/sweeps/sw1")
    assert report.runs[0].run == "wandb:ent/proj/zzz"
    assert report.runs[0].decision is Decision.STOP and report.runs[0].next_action == "stop_run"
    assert {line.run for line in report.runs} == {f"wandb:ent/proj/{r}" for r in ("aaa", "bbb", "ccc", "zzz")}
    assert all(len(line.summary) <= 160 for line in report.runs)
    assert report.counts["stop"] == 1 and sum(report.counts.values()) == 4
    assert report.schedule.monitoring and report.schedule.interval_minutes == 10
    assert report.schedule.cron_create is not None
    assert report.schedule.cron_create.prompt == "/training-check ent/proj/sweeps/sw1"
    assert "stop wandb:ent/proj/zzz first" in report.summary


def test_project_check_through_mcp_and_the_sweep_url(server, tmp_path):
    sweep(server)
    mcp_server = build_server(monitor(tmp_path))

    async def go():
        async with Client(mcp_server) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            project = await client.call_tool("check_many", {"run": "ent/proj"})
            url = await client.call_tool("check_many", {"run": f"{server.url}/ent/proj/sweeps/sw1"})
            single = await client.call_tool("check", {"run": "ent/proj/sweeps/sw1"})
            return tools, project, url, single

    tools, project, url, single = anyio.run(go)
    assert "summary" in tools["check_many"].output_schema["properties"]
    assert not project.is_error, project.content
    report = GroupReport.model_validate(project.structured_content)
    assert len(report.runs) == 5 and report.runs[0].run == "wandb:ent/proj/zzz"  # 'other' is in the project
    assert GroupReport.model_validate(url.structured_content).runs[0].run == "wandb:ent/proj/zzz"
    assert single.is_error and "check_many" in single.content[0].text


def test_twenty_five_runs_stay_compact(server, tmp_path):
    for i in range(25):
        run = server.add_run("ent", "big", f"run{i:03d}", sweep="s")
        (broken if i == 17 else healthy)(run, 200)
    result = build_server(monitor(tmp_path))

    async def go():
        async with Client(result) as client:
            return await client.call_tool("check_many", {"run": "ent/big/sweeps/s"})

    answer = anyio.run(go)
    report = GroupReport.model_validate(answer.structured_content)
    assert len(report.runs) == GROUP_LINES and report.omitted == 5
    assert report.runs[0].run == "wandb:ent/big/run017"
    tokens = len(json.dumps(answer.structured_content)) / 4
    print(f"check_many over 25 runs: {tokens:.0f} tokens")
    assert tokens < MAX_RESULT_TOKENS


def test_an_empty_sweep_ends_monitoring_and_a_missing_project_says_so(server, tmp_path):
    server.add_run("ent", "proj", "done", sweep="sw1", state="finished")
    mon = monitor(tmp_path)
    empty = mon.check_many("ent/proj/sweeps/sw1")
    assert empty.runs == [] and not empty.schedule.monitoring
    assert "no running runs" in empty.summary
    with pytest.raises(RunNotFound, match="no project ent/nope"):
        mon.check_many("ent/nope")


def test_check_many_refuses_a_single_run(server, tmp_path):
    with pytest.raises(RunRefError, match="call check"):
        monitor(tmp_path).check_many("ent/proj/run1")


def test_cli_check_of_a_sweep(server, tmp_path, monkeypatch, capsys):
    sweep(server)
    (tmp_path / "training-check.toml").write_text(f"[defaults]\nwandb_timeout_seconds = {TIMEOUT}\n")
    monkeypatch.chdir(tmp_path)
    assert main(["check", "ent/proj/sweeps/sw1"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("group") and "STOP" in lines[2] and "wandb:ent/proj/zzz" in lines[2]
    assert "stop_run" not in out and "continue_monitoring" not in out, "MCP action names are not commands"
    assert lines[3].split("→ ")[1].startswith("stop the run: training-check stop wandb:ent/proj/zzz --confirm --reason")
    assert main(["check", "ent/proj/sweeps/sw1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["run"] == "wandb:ent/proj/zzz"
