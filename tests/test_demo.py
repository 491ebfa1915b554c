"""The README's demo command, end to end: a real training is broken, caught live and stopped."""

from __future__ import annotations

import re
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
    assert_next_checks_follow_the_demo_clock(out)
    stop_line = next(line for line in out.splitlines() if " STOP: " in line)
    checks = out.split("demo: stop_run")[0]  # then the notes entry quotes the signals again, as it should
    assert checks.count(stop_line.split(" STOP: ")[1].split(" (+")[0]) == 1, "the STOP's signal repeated under it"


CHECK_LINE = re.compile(r"^\[t\+\s*(\d+) min\].*next check in (\d+) min.* at (\d\d):(\d\d) UTC", re.MULTILINE)


def assert_next_checks_follow_the_demo_clock(out: str) -> None:
    """Each check's "at HH:MM" lies its interval after the check on the demo's compressed clock; they were
    wall-clock times, so the STOP at t+120 min said "next check in 10 min at" the first check's time."""
    checks = [tuple(int(group) for group in found.groups()) for found in CHECK_LINE.finditer(out)]
    assert len(checks) >= 3, out
    first_minute, first_interval, hour, minute = checks[0]
    first_at = hour * 60 + minute
    for elapsed, interval, hour, minute in checks[1:]:
        since_first = (hour * 60 + minute - first_at) % (24 * 60)
        expected = elapsed + interval - first_minute - first_interval
        assert expected - 15 <= since_first <= expected + 25, (elapsed, interval, f"{hour}:{minute:02d}", out)
