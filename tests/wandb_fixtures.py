"""Real ``.wandb`` files written by wandb 0.31 itself, made once per test session.

Each run is a child process (wandb keeps global state and a Go helper per process); the runs start
together so the session pays ~3 s once. What the child logs comes from `log_calls`, which the tests
use again to know what must be read back.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcp_training_check.models import RunStatus
from mcp_training_check.sources.wandb_file import WandbFileSource

from .runs import child_env

REPO = Path(__file__).resolve().parent.parent
TRAIN_STEPS = 300
EVAL_EVERY = 25  # an eval call after every 25th train call, in its own wandb.log
NON_FINITE = {40: math.nan, 41: math.inf, 42: -math.inf}  # train call index -> train/loss value
WIDE_AT = 3  # train call index after which one call logs a record over 64 KiB (MIDDLE chunks)
WIDE_KEYS = 20
WIDE_BLOB_CHARS = 70_000  # a big string (skipped by the reader) makes the record span three blocks
CONFIG = {"lr": 0.001, "model": {"layers": 4, "width": 128}, "tag": "baseline"}
LATE_CONFIG = {"late_key": 7}
RUN_NAME = "fixture-run"
SHORT_CALLS = 3  # the failed / interrupted runs log only a few steps

CHILD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {repo!r})
    import wandb
    from tests.wandb_fixtures import CONFIG, LATE_CONFIG, RUN_NAME, log_calls
    out_dir, ending, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
    run = wandb.init(mode="offline", dir=out_dir, project="training-check-tests", name=RUN_NAME, config=CONFIG)
    for payload in log_calls()[:calls]:
        wandb.log(payload)
    wandb.config.update(LATE_CONFIG)
    if ending == "fail":
        raise ValueError("fixture run fails on purpose")
    if ending == "interrupt":
        raise KeyboardInterrupt
    run.finish()
    """
)


def train_loss(index: int) -> float:
    return NON_FINITE.get(index, 2.0 / (1 + index) + 0.01 * (index % 7))


def log_calls() -> list[dict[str, Any]]:
    """Every ``wandb.log`` payload of the main fixture run, in order (call i gets ``_step`` i)."""
    calls: list[dict[str, Any]] = []
    for index in range(TRAIN_STEPS):
        payload: dict[str, Any] = {"train/loss": train_loss(index), "lr": 1e-3 * (1 - index / TRAIN_STEPS)}
        if index % 50 == 0:  # values the reader must skip, or flatten
            payload.update({"note": f"step {index}", "flag": True, "opt": {"momentum": 0.9}})
        calls.append(payload)
        if index == WIDE_AT:
            wide: dict[str, Any] = {f"wide/k{key:02d}": key * 0.25 for key in range(WIDE_KEYS)}
            calls.append({**wide, "blob": "x" * WIDE_BLOB_CHARS})
        if (index + 1) % EVAL_EVERY == 0:
            calls.append({"eval/loss": 1.0 / (1 + index), "eval/acc": index / TRAIN_STEPS})
    return calls


def expected_series(calls: list[dict[str, Any]]) -> dict[str, tuple[list[int], list[float]]]:
    """What the reader must return: numeric values by flattened key, at step = call index."""
    series: dict[str, tuple[list[int], list[float]]] = {}
    for step, payload in enumerate(calls):
        for key, value in _flatten(payload):
            if isinstance(value, int | float) and not isinstance(value, bool):
                steps, values = series.setdefault(key, ([], []))
                steps.append(step)
                values.append(float(value))
    return series


def _flatten(payload: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for key, value in payload.items():
        if isinstance(value, dict):
            items.extend(_flatten(value, f"{prefix}{key}/"))
        else:
            items.append((f"{prefix}{key}", value))
    return items


@dataclass(frozen=True)
class RealRun:
    project_dir: Path  # holds wandb/
    run_dir: Path  # wandb/offline-run-<date>-<id>
    file: Path  # run-<id>.wandb
    pid: int  # the child that wrote it
    calls: int  # how many log_calls() it logged

    @property
    def data(self) -> bytes:
        return self.file.read_bytes()


def run_child(out_dir: Path, ending: str, calls: int) -> subprocess.Popen[bytes]:
    """Start a child that logs ``log_calls()[:calls]`` with wandb offline and ends by ``ending``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    script = out_dir / "child.py"
    script.write_text(CHILD.format(repo=str(REPO)))
    env = child_env(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DISABLE_GIT="true")
    return subprocess.Popen(
        [sys.executable, str(script), str(out_dir), ending, str(calls)],
        cwd=out_dir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _collect(out_dir: Path, child: subprocess.Popen[bytes], ending: str, calls: int) -> RealRun:
    _, stderr = child.communicate(timeout=120)
    if ending == "finish" and child.returncode != 0:
        raise RuntimeError(f"wandb fixture run failed: {stderr.decode(errors='replace')[-2000:]}")
    (run_dir,) = (out_dir / "wandb").glob("offline-run-*")
    (file,) = run_dir.glob("run-*.wandb")
    _wait_for_exit_record(file)
    return RealRun(out_dir, run_dir, file, child.pid, calls)


EXIT_RECORD_TIMEOUT_SECONDS = 60.0


def _wait_for_exit_record(file: Path) -> None:
    """wandb-core, a separate process, finishes the file after the training process has exited
    (on a crash or Ctrl-C especially): under load the exit record lands seconds later."""
    deadline = time.monotonic() + EXIT_RECORD_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if WandbFileSource(file).read(None).info.status is not RunStatus.RUNNING:
            return
        time.sleep(0.2)
    raise RuntimeError(f"wandb never wrote the exit record of {file} within {EXIT_RECORD_TIMEOUT_SECONDS:.0f} s")


ENDINGS = {"finish": len(log_calls()), "fail": SHORT_CALLS, "interrupt": SHORT_CALLS}  # ending -> calls


@pytest.fixture(scope="session")
def wandb_children(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, subprocess.Popen[bytes]]]:
    """Start every fixture run at once; each fixture below waits only for the one it needs."""
    base = tmp_path_factory.mktemp("wandb-runs")
    return {ending: (base / ending, run_child(base / ending, ending, calls)) for ending, calls in ENDINGS.items()}


@pytest.fixture(scope="session")
def real_run(wandb_children: dict[str, tuple[Path, subprocess.Popen[bytes]]]) -> RealRun:
    """A finished run: TRAIN_STEPS train calls, eval calls, a >64 KiB record, NaN/Inf, config updates."""
    out_dir, child = wandb_children["finish"]
    return _collect(out_dir, child, "finish", ENDINGS["finish"])


@pytest.fixture(scope="session")
def ended_runs(wandb_children: dict[str, tuple[Path, subprocess.Popen[bytes]]]) -> dict[str, RealRun]:
    """Short runs that end by an exception ("fail") and by KeyboardInterrupt ("interrupt")."""
    return {
        ending: _collect(out_dir, child, ending, ENDINGS[ending])
        for ending, (out_dir, child) in wandb_children.items()
        if ending != "finish"
    }
