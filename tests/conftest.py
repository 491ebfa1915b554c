"""Every test gets its own state directory, no project config and no LLM credentials from the machine it
runs on (a real ANTHROPIC_API_KEY must never be spent by a test: review tests point at a fake server)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from .slurm import slurm, slurm_cluster  # noqa: F401  (fixtures of the Slurm stop tests)
from .sshd import (  # noqa: F401  (fixtures of the SSH tests)
    exec_home,
    jump_pair,
    loopback_jump_pair,
    netns_jump_pair,
    netns_proxy_home,
    proxy_home,
    silent_port,
    ssh_home,
    sshd_server,
    sshd_without_sftp,
)


@pytest.fixture(scope="session")
def real() -> dict:
    """corpus_real/'s runs by id, read once for the judge test modules that replay them (none alters a run: each
    builds new series from a run's arrays)."""
    from benchmarks.corpus_runs import CORPUS_REAL, load_corpus

    return {run.id: run for run in load_corpus(CORPUS_REAL)}


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    home = tmp_path / "training-check-home"
    monkeypatch.setenv("TRAINING_CHECK_HOME", str(home))
    monkeypatch.delenv("TRAINING_CHECK_CONFIG", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_MODE", "offline")
    for name in (
        *("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_PROFILE"),
        *("LLM_API_KEY", "LLM_BASE_URL", "LLM_MODEL", "LLM_FALLBACK_MODEL"),
        *("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"),
    ):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def utc_local_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Crons and watch lines are written in the process's local time: pin it to UTC (a POSIX TZ string
    needs no tz database; subprocesses inherit it)."""
    monkeypatch.setenv("TZ", "UTC0")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
