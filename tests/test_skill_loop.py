"""The skill's loop, scripted, through the real MCP client: a growing training log, Claude Code's
scheduler on a simulated clock (tests/claude_cron.py), and every cron fire handled as SKILL.md says.

Shown: 10 → 20 → 30 → 60 while healthy; the 60-minute job kept for days, then re-created before
Claude Code would delete it; back to 10 at an injected spike; a STOP on NaN that kills the configured
local process; the cron job deleted and the loop over.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
from mcp import Client

from mcp_training_check.config import load_config
from mcp_training_check.models import CheckReport, Decision, ReviewResult, Schedule, StopResult
from mcp_training_check.server import build_server
from mcp_training_check.service import Monitor

from .claude_cron import MAX_AGE, ClaudeCron

START = datetime(2026, 3, 2, 8, 3, tzinfo=UTC)
RUN = "exp"
POINTS_PER_MINUTE = 2
MAX_FIRES = 400  # the scenario needs ~190; more means the loop never ends
SPIKE_AFTER = MAX_AGE + timedelta(hours=12)


class GrowingLog:
    """A JSONL training log the test appends to between fires, as a live training would."""

    def __init__(self, path: Path) -> None:
        self.path, self.step, self.rng = path, 0, random.Random(7)
        path.write_text("")

    def grow(self, points: int, *, factor: float = 1.0, nan: bool = False) -> None:
        lines = []
        for _ in range(points):
            loss = 0.6 + 3.0 * (1 + self.step / 200) ** -0.5 * math.exp(self.rng.gauss(0, 0.02)) * factor
            lines.append(json.dumps({"step": self.step, "loss": math.nan if nan else loss, "lr": 3e-4}))
            self.step += 1
        with self.path.open("a") as handle:
            handle.write("".join(f"{line}\n" for line in lines))


@dataclass
class Fire:
    """What one cron fire saw and what the scripted skill did about it."""

    at: datetime
    report: CheckReport
    schedule: Schedule
    job: str  # "created", "kept", "re-created" or "deleted"
    stop: StopResult | None = None
    review: ReviewResult | None = None
    durable_read_back: list[bool] = field(default_factory=list)


async def tool(client: Client, name: str, arguments: dict) -> dict:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def skill_fire(client: Client, cron: ClaudeCron) -> Fire:
    """One /training-check fire, step by step as skill/training-check/SKILL.md says."""
    report = CheckReport.model_validate(await tool(client, "check", {"run": RUN}))
    schedule, stop, review = report.schedule, None, None
    if report.next_action == "escalate_review":
        review = ReviewResult.model_validate(await tool(client, "escalate_review", {"run": RUN}))
    if report.next_action == "stop_run" or (review is not None and review.decision == "STOP"):
        reason = review.reason if review is not None else (report.verdict.summary if report.verdict else "")
        answer = await tool(client, "stop_run", {"run": RUN, "confirm": True, "reason": reason})
        stop = StopResult.model_validate(answer)
    if stop is not None or review is not None:
        schedule = Schedule.model_validate(await tool(client, "schedule_next", {"run": RUN}))
    fire = Fire(at=cron.now, report=report, schedule=schedule, job="", stop=stop, review=review)
    fire.job = keep_or_replace_job(cron, schedule, fire)
    return fire


def keep_or_replace_job(cron: ClaudeCron, schedule: Schedule, fire: Fire) -> str:
    """SKILL.md step 3: same cron and cron_action keep → keep; otherwise CronDelete + CronCreate."""
    prompt = f"/training-check {RUN}"
    mine = [job for job in cron.cron_list()["jobs"] if job["prompt"] == prompt]
    if not schedule.monitoring:
        for job in mine:
            cron.cron_delete(job["id"])
        return "deleted"
    assert schedule.cron_create is not None
    args = schedule.cron_create.model_dump()
    if schedule.cron_action == "keep" and [job["cron"] for job in mine] == [args["cron"]]:
        return "kept"
    for job in mine:
        cron.cron_delete(job["id"])
    answer = cron.cron_create(args)
    fire.durable_read_back.append(bool(answer["durable"]))
    return "re-created" if schedule.cron_action == "recreate" else "created"


@dataclass
class Scenario:
    """What the training does before each fire: healthy growth for SPIKE_AFTER (longer than a job may live),
    then one spike, then NaN three fires later."""

    log: GrowingLog
    spike_at: int | None = None
    nan_at: int | None = None

    def before_fire(self, index: int, minutes: float, now: datetime) -> None:
        self.log.grow(max(int(minutes * POINTS_PER_MINUTE), 1))
        if self.spike_at is None and now - START > SPIKE_AFTER:
            self.spike_at, self.nan_at = index, index + 3
        if index == self.spike_at:
            self.log.grow(3, factor=6.0)  # the latest points: not back yet when the check reads them
        if index == self.nan_at:
            self.log.grow(20, nan=True)


def run_loop(tmp_path: Path, sleeper: subprocess.Popen) -> tuple[list[Fire], ClaudeCron, Scenario]:
    (tmp_path / "train.pid").write_text(f"{sleeper.pid}\n")
    (tmp_path / "training-check.toml").write_text(
        f'[runs.{RUN}]\nrun = "train.jsonl"\nnotes = "notes.md"\n'
        f'[runs.{RUN}.stop]\npid_file = "train.pid"\ngrace_seconds = 5\n'
    )
    scenario = Scenario(GrowingLog(tmp_path / "train.jsonl"))
    scenario.log.grow(200)
    cron = ClaudeCron(now=START)
    monitor = Monitor(config=load_config(tmp_path / "training-check.toml"), clock=lambda: cron.now)

    async def loop() -> list[Fire]:
        async with Client(build_server(monitor)) as client:
            fires = [await skill_fire(client, cron)]  # the user typed /training-check exp
            while len(fires) < MAX_FIRES and (fire := cron.next_fire()) is not None:
                scenario.before_fire(len(fires), (fire[0] - fires[-1].at).total_seconds() / 60, fire[0])
                fires.append(await skill_fire(client, cron))
                assert len(cron.jobs) <= 1, f"more than one job for one run: {cron.jobs}"
            return fires

    try:
        return anyio.run(loop), cron, scenario
    finally:
        monitor.close()


def test_scripted_skill_loop_backs_off_renews_its_job_and_ends_after_a_stop(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        fires, cron, scenario = run_loop(tmp_path, sleeper)
    finally:
        sleeper.kill()
        sleeper.wait()
    intervals = [f.schedule.interval_minutes for f in fires]
    decisions = [f.report.verdict.decision if f.report.verdict else None for f in fires]
    assert len(fires) < MAX_FIRES, "monitoring never ended"

    # healthy: the ladder, then one hourly job kept for days
    assert intervals[:4] == [10, 20, 30, 60]
    assert [f.job for f in fires[:5]] == ["created", "created", "created", "created", "kept"]
    spike = scenario.spike_at
    assert spike is not None and fires[spike].at - fires[3].at > MAX_AGE, "healthy for longer than a job lives"
    assert set(intervals[3:spike]) == {60} and set(decisions[:spike]) == {Decision.CONTINUE}
    renewed = [i for i, f in enumerate(fires[:spike]) if f.job == "re-created"]
    assert len(renewed) == 1 and set(f.job for f in fires[4:spike]) == {"kept", "re-created"}
    assert MAX_AGE - timedelta(days=1) <= fires[renewed[0]].at - fires[3].at < MAX_AGE
    assert fires[renewed[0]].schedule.cron_create == fires[3].schedule.cron_create  # same cron, a new job
    assert not cron.expired, "a job reached Claude Code's maximum age: monitoring would have lapsed"

    # a spike: straight back to 10 minutes, watched, not stopped; then the ladder again
    assert fires[spike].report.summary.startswith("CONTINUE (watching)"), fires[spike].report.summary
    assert intervals[spike - 1 : spike + 3] == [60, 10, 20, 30]
    assert [f.job for f in fires[spike : spike + 3]] == ["created"] * 3

    # NaN: STOP, the configured local process is killed, the job deleted, the loop over
    last = fires[-1]
    assert len(fires) == spike + 4 and decisions[-1] is Decision.STOP
    assert last.stop is not None and last.stop.verified and last.stop.outcome.value == "stopped"
    assert sleeper.poll() is not None
    assert last.schedule.monitoring is False and last.job == "deleted" and not cron.jobs
    assert "loss is NaN" in (tmp_path / "notes.md").read_text()

    # every job asked to survive a restart, and the skill read that back
    read_back = [d for f in fires for d in f.durable_read_back]
    assert len(read_back) == len(cron.created) and all(read_back)
