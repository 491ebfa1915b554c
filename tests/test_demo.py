"""The README's demo command, end to end: a real training is broken, caught live and stopped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .runs import child_env


def test_demo_catches_and_stops_the_broken_run(tmp_path):
    env = child_env(TRAINING_CHECK_HOME=str(tmp_path / "home"))
    done = subprocess.run(
        [sys.executable, "-m", "mcp_training_check", "demo", "--workdir", str(tmp_path / "demo")],
        env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "STOP:" in out, out
    assert "stop_run: stopped, verified=True" in out, out
    notes = (tmp_path / "demo" / "TRAINING_NOTES.md").read_text()
    assert "stopped, verified" in notes and "train/loss" in notes
    pid = int((tmp_path / "demo" / "train.pid").read_text())
    stat = Path(f"/proc/{pid}/stat")
    assert not stat.exists() or stat.read_text().split()[2] in "ZX", "the training process is still alive"
    assert (tmp_path / "demo" / "state").is_dir() and not (tmp_path / "home").exists(), "the user's state was used"
    healthy_lines = [line for line in out.splitlines() if "CONTINUE:" in line]
    assert healthy_lines, "the demo never showed a healthy check before the fault"
