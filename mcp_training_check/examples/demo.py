"""`training-check demo`: a real training run, broken on purpose, watched and stopped live.

1. Writes a `training-check.toml` in a work directory with one run, `demo`, stoppable by its pid file.
2. Starts `examples/demo_train.py` as a child process: a numpy MLP logging through wandb offline.
   Halfway through, its learning rate jumps 300× — a real fault.
3. Checks the run on a compressed clock (one scheduled minute = ``seconds_per_minute`` seconds),
   printing each decision and the next interval, exactly as a cron-driven agent would see them.
4. On a stop verdict, stops the run, and shows the incident and the notes entry it wrote.

No account, no network: wandb runs offline and everything is written under the work directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..config import load_config
from ..models import CheckReport, Decision
from ..service import Monitor
from ..watch import compressed_clock

DEMO_STEPS = 7000
FAULT_STEP = 2500
STEPS_PER_SECOND = 100.0
STARTUP_TIMEOUT_SECONDS = 60.0
MAX_CHECKS = 40

CONFIG_TEMPLATE = """\
# Written by `training-check demo`: one run, stoppable through its pid file.
[defaults]
notes = "TRAINING_NOTES.md"

[runs.demo]
run = "wandb/latest-run"

[runs.demo.stop]
pid_file = "train.pid"
signal = "TERM"
grace_seconds = 10
kill_after_grace = true
"""


def run_demo(*, seconds_per_minute: float = 0.4, workdir: str | None = None) -> int:
    root = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="training-check-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    (root / "training-check.toml").write_text(CONFIG_TEMPLATE)
    os.environ["TRAINING_CHECK_HOME"] = str(root / "state")  # its own state: no demo incident in the user's
    _say(f"work directory {root}")
    child = _start_training(root)
    try:
        _wait_for_run_file(root, child)
        # the schedule's "at HH:MM" on the demo's clock: on the wall clock every check said "at" the same time
        clock = compressed_clock(seconds_per_minute)
        monitor = Monitor(config=load_config(root / "training-check.toml"), clock=clock.now)
        try:
            return _watch(monitor, child, seconds_per_minute)
        finally:
            monitor.close()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _start_training(root: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "mcp_training_check.examples.demo_train",
        "--dir", str(root), "--steps", str(DEMO_STEPS), "--fault-step", str(FAULT_STEP),
        "--steps-per-second", str(STEPS_PER_SECOND),
    ]  # fmt: skip
    # its own wandb-core: an inherited WANDB_SERVICE would tie the child's run file to ours
    env = {key: value for key, value in os.environ.items() if key != "WANDB_SERVICE"}
    env.update(WANDB_MODE="offline", WANDB_SILENT="true")
    _say(
        f"training: numpy MLP, {DEMO_STEPS} steps at {STEPS_PER_SECOND:.0f} steps/s, wandb offline; "
        f"the learning rate jumps 300x at step {FAULT_STEP}"
    )
    log = open(root / "train.out", "wb")  # noqa: SIM115 - the child owns it for its lifetime
    return subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)


def _wait_for_run_file(root: Path, child: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if list(root.glob("wandb/*run-*/run-*.wandb")) and (root / "train.pid").exists():
            return
        if child.poll() is not None:
            raise RuntimeError(f"the demo training exited early; see {root / 'train.out'}")
        time.sleep(0.2)
    raise RuntimeError(f"the demo training wrote no wandb run file in {STARTUP_TIMEOUT_SECONDS:.0f} s")


def _watch(monitor: Monitor, child: subprocess.Popen[bytes], seconds_per_minute: float) -> int:
    clock_minutes = 0
    for _ in range(MAX_CHECKS):
        report = monitor.check("demo")
        _print_check(clock_minutes, report)
        if report.verdict is not None and report.verdict.decision is Decision.STOP:
            return _stop(monitor, report)
        if not report.schedule.monitoring:
            _say("the run ended by itself; monitoring ends")
            return 0
        interval = report.schedule.interval_minutes or 10
        time.sleep(interval * seconds_per_minute)
        clock_minutes += interval
    _say("the demo ran out of checks without a stop verdict")
    return 1


def _print_check(clock_minutes: int, report: CheckReport) -> None:
    """The check's line with its main reason in full; under a verdict other than continue, the next signals."""
    step = report.snapshot.last_step
    verdict = report.verdict
    line = f"{verdict.spelled_out().rstrip('.')}; {report.schedule.summary}" if verdict else report.summary
    print(f"[t+{clock_minutes:>3} min] step {step if step is not None else '-':>5}  {line}")
    if verdict and verdict.decision is not Decision.CONTINUE:
        told = verdict.stated_signal()
        for signal in [s for s in verdict.signals if s is not told][:3]:
            print(f"              - [{signal.severity.value}] {signal.message}")


def _stop(monitor: Monitor, report: CheckReport) -> int:
    assert report.verdict is not None
    result = monitor.stop_run("demo", confirm=True, reason=report.verdict.summary)
    _say(f"stop_run: {result.outcome.value}, verified={result.verified}, signals sent {result.signals_sent}")
    _say(f"incident #{result.incident_id} recorded in {monitor.store.path}")
    if result.notes_path:
        _say(f"notes entry appended to {result.notes_path}:")
        print(Path(result.notes_path).read_text().rstrip())
    return 0 if result.verified else 1


def _say(text: str) -> None:
    print(f"demo: {text}", flush=True)
