"""`training-check watch`: the skill's loop in a terminal. In process on an injected clock, and as a real
subprocess on a growing log with time compressed (--seconds-per-minute), ended by Ctrl-C, SIGTERM or a STOP."""

from __future__ import annotations

import json
import math
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mcp_training_check.cli import build_parser
from mcp_training_check.config import load_config
from mcp_training_check.errors import RunNotFound, StopError
from mcp_training_check.service import Monitor
from mcp_training_check.watch import EXIT_INTERRUPTED, EXIT_TERMINATED, WatchClock, watch_run
from tests import wandb_api_fixtures
from tests.runs import default_sigint
from tests.test_sweep import broken, healthy
from tests.wandb_api_fixtures import wandb_monitor

START = datetime(2026, 3, 4, 9, 47, tzinfo=UTC)
LINE_TIMEOUT_SECONDS = 90  # a cold start on a busy 2-core machine takes seconds; a hang takes forever


def append(log: Path, start: int, points: int, *, nan: bool = False) -> int:
    """Append ``points`` healthy (or NaN) JSONL lines from step ``start``; return the next step."""
    with log.open("a") as handle:
        for step in range(start, start + points):
            loss = math.nan if nan else 0.6 + 3.0 * (1 + step / 200) ** -0.5 * (1 + 0.01 * math.sin(step))
            handle.write(json.dumps({"step": step, "loss": loss, "lr": 3e-4}) + "\n")
    return start + points


def project(tmp_path: Path, pid: int) -> Path:
    (tmp_path / "train.pid").write_text(f"{pid}\n")
    config = tmp_path / "training-check.toml"
    config.write_text(
        '[runs.exp]\nrun = "train.jsonl"\nnotes = "notes.md"\n'
        '[runs.exp.stop]\npid_file = "train.pid"\ngrace_seconds = 5\n'
    )
    return config


pytestmark = pytest.mark.usefixtures("utc_local_zone")


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen]:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield process
    process.kill()
    process.wait()


# --------------------------------------------------------------------------- in process, injected clock


@dataclass
class FakeTime:
    """A clock that moves only when the loop sleeps; each sleep lets the training log ``per_minute`` points,
    NaN from ``nan_after`` sleeps on, and KeyboardInterrupt at sleep ``interrupt_at`` (as Ctrl-C would)."""

    log: Path
    step: int
    now: datetime = START
    slept: list[float] = field(default_factory=list)
    nan_after: int | None = None
    interrupt_at: int | None = None
    per_minute: int = 2

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if len(self.slept) == self.interrupt_at:
            raise KeyboardInterrupt
        self.now += timedelta(seconds=seconds)
        nan = self.nan_after is not None and len(self.slept) > self.nan_after
        self.step = append(self.log, self.step, max(int(seconds / 60 * self.per_minute), 1), nan=nan)

    def clock(self) -> WatchClock:
        return WatchClock(now=lambda: self.now, sleep=self.sleep)


def test_watch_sleeps_the_ladder_and_stops_on_stop_when_allowed(tmp_path: Path, sleeper: subprocess.Popen) -> None:
    config = project(tmp_path, sleeper.pid)
    fake = FakeTime(tmp_path / "train.jsonl", append(tmp_path / "train.jsonl", 0, 200), nan_after=5)
    lines: list[str] = []
    monitor = Monitor(config=load_config(config))
    last = watch_run(monitor, "exp", act_on_stop=True, clock=fake.clock(), emit=lines.append)
    monitor.close()
    assert [round(s / 60) for s in fake.slept] == [10, 20, 30, 60, 60, 60]
    assert last.monitoring is False
    checks = [line for line in lines if not line.startswith("  ")]
    assert len(checks) == 7 and len(lines) == 8
    assert checks[0].startswith("2026-03-04 09:47  CONTINUE: loss improving")
    assert "; next check in 20 min (healthy, interval up from 10) at 10:17 UTC" in checks[1]
    assert "cron" not in " ".join(lines)
    assert checks[-1].startswith("2026-03-04 13:47  STOP: loss is NaN")  # 09:47 + 10 + 20 + 30 + 3 × 60 min
    assert checks[-1].endswith("; stop monitoring: run stopped")
    assert lines[-1].startswith("  stopped: pid ") and lines[-1].endswith("(incident #1)")
    assert sleeper.poll() is not None
    assert "loss is NaN" in (tmp_path / "notes.md").read_text()


def test_watch_never_stops_without_the_flag(tmp_path: Path, sleeper: subprocess.Popen) -> None:
    config = project(tmp_path, sleeper.pid)
    fake = FakeTime(tmp_path / "train.jsonl", append(tmp_path / "train.jsonl", 0, 200), nan_after=1, interrupt_at=5)
    lines: list[str] = []
    monitor = Monitor(config=load_config(config))
    with pytest.raises(KeyboardInterrupt):
        watch_run(monitor, "exp", act_on_stop=False, clock=fake.clock(), emit=lines.append)
    monitor.close()
    stops = [line for line in lines if "STOP: loss is NaN" in line]
    assert len(stops) == 3 and "next check in 10 min" in stops[0]
    assert all("(every 10 min: verdict STOP, interval stays 10)" in line for line in stops[1:])  # the job kept
    refused = [line for line in lines if line.startswith("  STOP not acted on")]
    assert len(refused) == 3 and refused[0].startswith("  STOP not acted on: watch stops a run only with --stop")
    assert all(line.startswith("  STOP not acted on (no --stop) (or: training-check stop ") for line in refused[1:])
    # the explanation once: it was repeated at every check of a run left to go on
    # before, the command it suggested lacked --reason, which `stop` requires: pasted, it was refused
    suggested = shlex.split(refused[0].split("(or: ", 1)[1].removesuffix(")"))
    assert suggested[:2] == ["training-check", "stop"]
    parsed = build_parser().parse_args(suggested[1:])
    assert (parsed.source, parsed.confirm) == ("exp", True) and "NaN" in parsed.reason
    assert sleeper.poll() is None, "watch stopped the run without --stop"


def test_stop_flag_without_a_stop_config_is_refused_before_any_check(tmp_path: Path) -> None:
    log = tmp_path / "train.jsonl"
    append(log, 0, 50)
    monitor = Monitor()
    with pytest.raises(StopError, match=r"watch --stop: no way to stop run .*\[runs.<name>.stop\].*method = \"tmux\""):
        watch_run(monitor, str(log), act_on_stop=True, clock=FakeTime(log, 50).clock(), emit=print)
    assert monitor.store.recent_checks(f"file:{log}") == []
    monitor.close()


@pytest.mark.parametrize("args", [["no-such.log"], ["train.jsonl", "--stop"]])
def test_a_run_that_cannot_be_watched_is_refused_before_watching_is_announced(tmp_path: Path, args) -> None:
    """`watch no-such.log` printed "watching no-such.log: one line per check …" and then the error."""
    append(tmp_path / "train.jsonl", 0, 50)
    env = {**os.environ, "TRAINING_CHECK_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-m", "mcp_training_check", "watch", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert "no such file" in done.stderr or "no way to stop run" in done.stderr, done.stderr


def test_a_later_error_is_printed_and_retried_but_a_first_one_ends_the_watch(tmp_path: Path) -> None:
    log, away = tmp_path / "train.jsonl", tmp_path / "rotated.jsonl"
    with pytest.raises(RunNotFound):
        watch_run(Monitor(), str(log), act_on_stop=False, clock=FakeTime(log, 0).clock(), emit=print)
    fake = FakeTime(log, append(log, 0, 200), interrupt_at=4)

    def sleep(seconds: float) -> None:
        fake.sleep(seconds)
        if len(fake.slept) == 1:
            log.rename(away)  # gone for the second check
        if len(fake.slept) == 2:
            away.rename(log)

    lines: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        watch_run(Monitor(), str(log), act_on_stop=False, clock=WatchClock(lambda: fake.now, sleep), emit=lines.append)
    assert len(lines) == 4 and lines[0][18:].startswith("CONTINUE")
    assert lines[1].startswith("2026-03-04 09:57  ERROR: ") and str(log) in lines[1]
    assert lines[1].endswith("; trying again in 10 min")
    assert lines[2].startswith("2026-03-04 10:07  ") and "next check in 20 min (healthy, interval up" in lines[2]
    assert [round(s / 60) for s in fake.slept] == [10, 10, 20, 30]


def test_an_unsure_check_in_a_terminal_says_how_to_get_a_reviewer(tmp_path: Path) -> None:
    """The default reviewer is the calling agent; a terminal has none, so the line says how to set one."""
    log = tmp_path / "train.jsonl"
    with log.open("w") as handle:  # a short log whose loss has blown up: unsure at the first check
        for step, loss in enumerate([2.1, 1.9, 1.8, 1.75, 1.7, 1.72, 2.9, 5.1, 9.6, 14.2, 15.0, 15.8, 16.1]):
            handle.write(json.dumps({"step": 10 * (step + 1), "loss": loss}) + "\n")
    lines: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        watch_run(Monitor(), str(log), act_on_stop=False, clock=FakeTime(log, 140, interrupt_at=1).clock(),
                  emit=lines.append)  # fmt: skip
    assert lines[0][18:].startswith("UNSURE: loss blew up"), lines
    assert lines[1].startswith("  review WAIT (no reviewer in a terminal") and "ANTHROPIC_API_KEY" in lines[1]
    assert "[defaults.review] backend" in lines[1], "the table is [defaults.review]: [review] is refused"


def test_the_missing_reviewer_is_explained_at_the_first_review_only(tmp_path: Path) -> None:
    """A log stuck unsure printed the whole four-line explanation again at every check of a day's watch."""
    log = tmp_path / "train.jsonl"
    log.write_text("".join(json.dumps({"step": s, "loss": 2.3 + 0.01 * math.sin(s)}) + "\n" for s in range(300)))
    moments = [START]

    def sleep(seconds: float) -> None:
        if len(moments) == 3:
            raise KeyboardInterrupt
        moments.append(moments[-1] + timedelta(seconds=seconds))

    lines: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        watch_run(Monitor(), str(log), act_on_stop=False, clock=WatchClock(now=lambda: moments[-1], sleep=sleep),
                  emit=lines.append)  # fmt: skip
    reviews = [line for line in lines if line.startswith("  review ")]
    assert len(reviews) == 3 and "ANTHROPIC_API_KEY" in reviews[0], lines
    assert reviews[1:] == ["  review WAIT (no reviewer in a terminal, as above)"] * 2


# --------------------------------------------------------------------------- a real subprocess


class Watcher:
    """`training-check watch` as a child process, its stdout read line by line in a thread."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        env = {**os.environ, "TRAINING_CHECK_HOME": str(tmp_path / "home"), "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_training_check", "watch", *args],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=default_sigint,  # as a terminal starts it
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def next_check_line(self) -> str:
        while True:
            line = self.lines.get(timeout=LINE_TIMEOUT_SECONDS)
            self.seen.append(line)
            if line[:4].isdigit():
                return line

    def finish(self) -> tuple[int, str]:
        returncode = self.process.wait(timeout=LINE_TIMEOUT_SECONDS)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        assert self.process.stderr is not None
        return returncode, self.process.stderr.read()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.mark.parametrize(("signum", "code", "said"), [
    (signal.SIGINT, EXIT_INTERRUPTED, "watch: interrupted (Ctrl-C)"),
    (signal.SIGTERM, EXIT_TERMINATED, "watch: terminated (SIGTERM)"),
])  # fmt: skip
def test_watch_subprocess_prints_a_line_per_check_and_exits_cleanly_on_a_signal(
    tmp_path: Path, signum: int, code: int, said: str
) -> None:
    log = tmp_path / "train.jsonl"
    step = append(log, 0, 200)
    watcher = Watcher(tmp_path, str(log), "--seconds-per-minute", "0.1")  # a 10-minute interval lasts 1 s
    try:
        lines = []
        for _ in range(3):
            lines.append(watcher.next_check_line())
            step = append(log, step, 20)
        watcher.process.send_signal(signum)
        returncode, stderr = watcher.finish()
    finally:
        watcher.kill()
    assert watcher.seen[0] == (
        f"watching {log}: one line per check, never stops it (no --stop), 0.1 s per minute; Ctrl-C to quit"
    )
    assert "; next check in 10 min (first check) at " in lines[0]
    assert all(line.split("  ", 1)[1].startswith(("CONTINUE", "UNSURE")) for line in lines)
    assert returncode == code, stderr
    assert said in stderr and "Traceback" not in stderr


def test_watch_subprocess_with_stop_kills_the_configured_process(tmp_path: Path, sleeper: subprocess.Popen) -> None:
    project(tmp_path, sleeper.pid)
    log = tmp_path / "train.jsonl"
    step = append(log, 0, 200)
    watcher = Watcher(tmp_path, "exp", "--stop", "--seconds-per-minute", "0.1")
    try:
        first = watcher.next_check_line()
        append(log, step, 20, nan=True)
        last = watcher.next_check_line()
        returncode, stderr = watcher.finish()
    finally:
        watcher.kill()
    assert watcher.seen[0].startswith("watching exp: one line per check, stops it on STOP as training-check.toml says")
    assert first.split("  ", 1)[1].startswith("CONTINUE")
    assert "STOP: loss is NaN" in last and last.endswith("stop monitoring: run stopped")
    assert watcher.seen[-1].startswith("  stopped: pid ")
    assert returncode == 0, stderr
    assert sleeper.poll() is not None


# --------------------------------------------------------------------------- a sweep


server = wandb_api_fixtures.server  # the fake W&B server fixture


def test_watch_of_a_sweep_prints_the_group_and_its_bad_runs_and_refuses_stop(server, tmp_path: Path) -> None:
    for run_id in ("aaa", "bbb"):
        healthy(server.add_run("ent", "proj", run_id, sweep="sw1"))
    broken(server.add_run("ent", "proj", "zzz", sweep="sw1"))
    monitor = wandb_monitor(tmp_path)
    with pytest.raises(StopError, match="--stop stops one run, and 'ent/proj/sweeps/sw1' is a sweep or project"):
        watch_run(monitor, "ent/proj/sweeps/sw1", act_on_stop=True, clock=FakeTime(tmp_path / "x", 0).clock(),
                  emit=print)  # fmt: skip
    fake = FakeTime(tmp_path / "unused.jsonl", 0, interrupt_at=2)
    lines: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        watch_run(monitor, "ent/proj/sweeps/sw1", act_on_stop=False, clock=fake.clock(), emit=lines.append)
    monitor.close()
    assert lines[0].startswith("2026-03-04 09:47  3 running run(s) in sweep ent/proj/sweeps/sw1: ")
    assert "stop wandb:ent/proj/zzz first; next check in 10 min (the shortest over 3 run(s)) at 09:57 UTC" in lines[0]
    assert lines[1].startswith("  STOP wandb:ent/proj/zzz: ")
    groups = [line for line in lines if not line.startswith("  ")]
    assert len(groups) == 2 and groups[1].startswith("2026-03-04 09:57  ") and "cron" not in " ".join(lines)
    assert lines.index(groups[1]) == 2  # a sweep's runs are never stopped: one STOP line, nothing done
    assert [round(s / 60) for s in fake.slept] == [10, 10]
