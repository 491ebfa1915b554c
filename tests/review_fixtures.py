"""Shared set-up of the reviewer tests: a fake Anthropic API (tests/fake_anthropic.py) and real unsure runs.

A test module takes the `api` fixture with ``api = review_fixtures.api`` (an assignment, not an import, so
that test parameters named ``api`` do not read as redefinitions): a running `FakeAnthropic` that
ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL point at; `openai_api` likewise a `FakeOpenAI` behind LLM_API_KEY,
LLM_BASE_URL and LLM_MODEL.

`unsure_project` writes a JSONL training log whose loss stays flat (it does not learn) — the judge's real
UNSURE ("loss is not learning") — plus a training-check.toml naming it `flat`, and checks it once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mcp_training_check.config import load_config
from mcp_training_check.service import Monitor
from tests.fake_anthropic import FakeAnthropic
from tests.fake_openai import FakeOpenAI
from tests.test_cli import write_formats
from tests.test_judge_helpers import ar1

RUN = "flat"
TIMEOUT = 3
"""`[defaults.review] timeout_seconds` of the failure tests: short, so a hung API fails fast."""
FAILING = f"timeout_seconds = {TIMEOUT}"
ANSWER_TIMEOUT = 20
"""`timeout_seconds` of the tests that expect an answer: the deadline covers drawing the chart, which takes
~2 s on a loaded 2-core machine in a cold process (matplotlib's import ~1 s)."""

SLACK_SECONDS = 2.0
"""Allowed past the deadline: thread hand-over and process scheduling, nothing else."""

FLAT_POINTS = 600
MAX_POINTS = 1000
EARLY_DROP_POINTS = 60
STEPS_PER_POINT = 10
EVAL_EVERY_POINTS = 50
BASELINE = 0.55  # eval/acc hovers around 0.6, above it: the only warning is the flat loss


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", fake.api_key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        yield fake


OPENAI_MODEL = "qwen-test-72b"


@pytest.fixture
def openai_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """A running `FakeOpenAI` that llm-chat's variables point at (no Anthropic key: openai is chosen)."""
    with FakeOpenAI() as fake:
        monkeypatch.setenv("LLM_API_KEY", fake.api_key)
        monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
        monkeypatch.setenv("LLM_MODEL", OPENAI_MODEL)
        yield fake


def write_flat_log(path: Path, points: int = FLAT_POINTS) -> None:
    """A loss that drops 10 % in its first 60 points and then wanders around 2.7 learning nothing (not
    learning, a warning, but not stuck at its start, which is stopped, and no steady fall, which is a slow
    learner), a constant LR and an eval every 500 steps. The same first lines whatever ``points`` is, so
    writing more points is the run appending to its log."""
    early = np.arange(MAX_POINTS) < EARLY_DROP_POINTS
    drift = np.where(early, 1.0 - 0.1 * np.arange(MAX_POINTS) / EARLY_DROP_POINTS, 0.9)
    loss = 3.0 * drift * np.exp(ar1(MAX_POINTS, 0.03, 0.5, np.random.default_rng(2)))
    evals = 0.6 + 0.01 * np.random.default_rng(3).standard_normal(MAX_POINTS)
    lines = []
    for i in range(points):
        row = {"step": i * STEPS_PER_POINT, "loss": float(loss[i]), "lr": 3e-4}
        if i % EVAL_EVERY_POINTS == 0:
            row["eval/acc"] = float(evals[i])
        lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n")


def unsure_project(tmp_path: Path, review: str = f"timeout_seconds = {ANSWER_TIMEOUT}", entry: str = "") -> Monitor:
    """A project whose run `flat` was checked once and judged unsure. ``review`` are the
    [defaults.review] lines, ``entry`` more lines of [runs.flat]."""
    write_flat_log(tmp_path / "flat.jsonl")
    config = tmp_path / "training-check.toml"
    config.write_text(
        f'[defaults.review]\n{review}\n\n[runs.{RUN}]\nrun = "flat.jsonl"\nnotes = "notes.md"\n'
        f'baselines = {{ "eval/acc" = {BASELINE} }}\ntotal_steps = 20000\n{entry}'
    )
    monitor = Monitor(config=load_config(config))
    report = monitor.check(RUN)
    assert report.next_action == "escalate_review", report.summary
    return monitor


def healthy_project(tmp_path: Path) -> tuple[Monitor, str]:
    """A run checked once and judged continue."""
    log = write_formats(tmp_path)["jsonl"]
    monitor = Monitor(config=load_config(cwd=tmp_path))
    assert monitor.check(str(log)).next_action == "continue_monitoring"
    return monitor, str(log)
