"""Real training runs for the end-to-end tests, written by the real `wandb` library (offline).

They come from the same numpy training the demo uses (`examples/demo_train.py`), run as a child
process at full speed, so the files are exactly what wandb 0.31 writes for a real run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path


def default_sigint() -> None:
    """``preexec_fn`` for a child whose reaction to SIGINT is under test. A launcher in the
    background (``nohup cmd &``, some CI runners) ignores SIGINT, children inherit that, and Python
    then installs no KeyboardInterrupt handler: reset it, as a job started from a terminal has it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child training process. Without WANDB_SERVICE: wandb sets it in the
    test process once any wandb client starts there, and a child that inherits it shares that
    wandb-core instead of starting its own, so its run file is never finished when it crashes."""
    env = {key: value for key, value in os.environ.items() if key != "WANDB_SERVICE"}
    return {**env, **extra}


def train(workdir: Path, *, steps: int, fault_step: int = -1, seed: int = 0) -> Path:
    """Run the example training to completion; return the wandb/latest-run directory."""
    workdir.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "mcp_training_check.examples.demo_train",
        "--dir", str(workdir), "--steps", str(steps), "--fault-step", str(fault_step),
        "--steps-per-second", "0", "--seed", str(seed),
    ]  # fmt: skip
    env = child_env(WANDB_MODE="offline", WANDB_SILENT="true")
    subprocess.run(command, cwd=workdir, env=env, check=True, capture_output=True, timeout=180)
    return workdir / "wandb" / "latest-run"


def live_copy(run_dir: Path, dest: Path, fraction: float) -> Path:
    """The run as a live writer leaves it: the `.wandb` file cut at ``fraction`` of its bytes
    (mid-chunk, no exit record yet). Returns the new run directory."""
    source = next(run_dir.resolve().glob("run-*.wandb"))
    target_dir = dest / "wandb" / run_dir.resolve().name
    target_dir.mkdir(parents=True, exist_ok=True)
    data = source.read_bytes()
    (target_dir / source.name).write_bytes(data[: int(len(data) * fraction)])
    return target_dir


def grow(live_dir: Path, run_dir: Path, fraction: float) -> None:
    """Append to a live copy up to ``fraction`` of the original file, as the writer would."""
    source = next(run_dir.resolve().glob("run-*.wandb"))
    target = live_dir / source.name
    data = source.read_bytes()
    with target.open("ab") as handle:
        handle.write(data[target.stat().st_size : int(len(data) * fraction)])


NOBODY_ID = 65534


def outcome_as_nobody(call: Callable[[], object]) -> str:
    """``call()`` in a forked child that dropped from root to 'nobody': "no error", or "ExcType: message".

    Root reads and signals everything, so a permission error can only be met by another user."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        outcome = "no error"
        try:
            os.setgid(NOBODY_ID)
            os.setuid(NOBODY_ID)
            call()
        except BaseException as exc:  # report whatever happened to the parent
            outcome = f"{type(exc).__name__}: {exc}"
        os.write(write_end, outcome.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        outcome = pipe.read().decode()
    os.waitpid(child, 0)
    return outcome
