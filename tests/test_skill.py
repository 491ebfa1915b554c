"""The skill file: strict YAML front matter (as PyYAML reads it), tools it names that exist under both the
names Claude Code gives them (server added by hand, or from the plugin), and a run given as a bare W&B id."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import yaml
from mcp import Client

from mcp_training_check.server import build_server
from mcp_training_check.service import Monitor

ROOT = Path(__file__).resolve().parents[1]
SKILL = ROOT / "skill" / "training-check" / "SKILL.md"
SERVER_PREFIX = "mcp__training-check__"
PLUGIN_PREFIX = "mcp__plugin_training-check_training-check__"  # mcp__plugin_<plugin>_<server>__<tool>
MAX_TOOL_NAME = 64
MAX_DESCRIPTION_CHARS = 1024


def front_matter_and_body() -> tuple[dict, str]:
    text = SKILL.read_text()
    assert text.startswith("---\n"), "SKILL.md must open with YAML front matter"
    front, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(front), body


def live_tool_names() -> set[str]:
    async def go():
        async with Client(build_server(Monitor())) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    return anyio.run(go)


def test_front_matter_is_strict_yaml_with_the_expected_keys():
    front, _ = front_matter_and_body()
    assert front["name"] == SKILL.parent.name
    assert isinstance(front["description"], str) and len(front["description"]) <= MAX_DESCRIPTION_CHARS
    assert isinstance(front["argument-hint"], str) and front["argument-hint"].startswith("<run")
    assert isinstance(front["allowed-tools"], list)
    assert "disable-model-invocation" not in front, "a cron fire must be able to run the skill"


def test_every_tool_the_skill_calls_exists_and_is_allowed_under_both_names():
    front, body = front_matter_and_body()
    called = set(re.findall(rf"{SERVER_PREFIX}(\w+)", body))
    assert {"check", "stop_run", "escalate_review", "schedule_next"} <= called
    assert called <= live_tool_names(), called - live_tool_names()
    allowed = set(front["allowed-tools"])
    for tool in called:
        assert f"{SERVER_PREFIX}{tool}" in allowed and f"{PLUGIN_PREFIX}{tool}" in allowed, tool
        assert len(f"{PLUGIN_PREFIX}{tool}") <= MAX_TOOL_NAME
    assert {"CronCreate", "CronDelete", "CronList", "Read"} <= allowed


def test_a_bare_run_id_is_completed_from_claude_md():
    _, body = front_matter_and_body()
    section = body.split("## The run", 1)[1].split("\n## ", 1)[0]
    assert "CLAUDE.md" in section and "W&B entity:" in section
    assert "acme/llm/ab12cd34" in section and "WANDB_ENTITY" in section
