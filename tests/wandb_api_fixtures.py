"""Shared set-up of the tests that talk to the fake W&B server (tests/fake_wandb.py) on 127.0.0.1.

A test module takes the `server` fixture with ``server = wandb_api_fixtures.server`` (an assignment, not
an import, so that test parameters named ``server`` do not read as redefinitions): a running `FakeWandb`
that the environment points every W&B client in this process at.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_training_check.config import load_config
from mcp_training_check.service import Monitor
from tests.fake_wandb import FakeWandb
from tests.runs import child_env

TIMEOUT = 3
"""`wandb_timeout_seconds` of the checker under test: short, so that a hung server fails fast."""

SLACK_SECONDS = 8
"""wandb-core start-up, retries' last round, process scheduling."""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeWandb]:
    with FakeWandb() as fake:
        monkeypatch.setenv("WANDB_BASE_URL", fake.url)
        monkeypatch.setenv("WANDB_API_KEY", fake.api_key)
        yield fake


def wandb_monitor(tmp_path: Path, defaults: str = "", body: str = "") -> Monitor:
    """A Monitor whose config bounds W&B requests by TIMEOUT; ``defaults`` are more [defaults] lines,
    ``body`` more tables."""
    config = tmp_path / "training-check.toml"
    config.write_text(f"[defaults]\nwandb_timeout_seconds = {TIMEOUT}\n{defaults}{body}")
    return Monitor(config=load_config(config))


def online_child_env(server: FakeWandb, tmp_path: Path) -> dict[str, str]:
    """The environment of a training child that logs online to ``server`` (its own wandb-core)."""
    return child_env(
        WANDB_MODE="online",
        WANDB_BASE_URL=server.url,
        WANDB_API_KEY=server.api_key,
        WANDB_DIR=str(tmp_path),
        WANDB_SILENT="true",
    )


def closed_port() -> int:
    """A loopback port nothing listens on: bound by us, then closed (so the kernel refuses a connect)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
