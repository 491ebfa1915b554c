"""A run stopped by `stop_run`, then relaunched under the same `[runs.NAME]` entry (same log, same pid file):
the verified stop applies to the run as it was, not to the new process. Real training children write their
own pid file and JSONL log; the real Monitor and the real CLI (a subprocess) watch and stop them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcp_training_check.config import load_config
from mcp_training_check.models import Decision, StopOutcome
from mcp_training_check.service import Monitor
from mcp_training_check.state import stop_in_force
from tests.runs import grow, live_copy
from tests.wandb_fixtures import RealRun, real_run, wandb_children

__all__ = ["real_run", "wandb_children"]  # session fixtures, imported to be visible here

TRAINER = """
import json, os, signal, sys, time
log, pid_file, mode, start, healthy = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
if sys.argv[6:] == ["--remove-log-on-term"]:
    signal.signal(signal.SIGTERM, lambda *_: (os.remove(log), os._exit(143)))
with open(pid_file, "w") as handle:
    handle.write(f"{os.getpid()}\\n")
out = open(log, mode)
step = start
def write(loss):
    global step
    out.write(json.dumps({"step": step, "loss": loss, "lr": 3e-4}) + "\\n")
    step += 1
for _ in range(healthy):
    write(0.6 + 3.0 * (1 + step / 200) ** -0.5)
out.flush()
print("ready", flush=True)
for line in sys.stdin:
    for _ in range(int(line)):
        write(float("nan"))
    out.flush()
    print("wrote", flush=True)
time.sleep(600)
"""
"""A training process as a launcher starts it: writes its pid file, opens its log (``w`` truncates it as a
relaunch does, ``a`` appends as a resumed run does), logs ``healthy`` points, then one NaN per number read
on stdin (the run going bad). ``--remove-log-on-term``: its log goes with it (a cleanup handler)."""

STOP_CONFIG = (
    '[runs.exp]\nrun = "train.jsonl"\nnotes = "notes.md"\n[runs.exp.stop]\npid_file = "train.pid"\ngrace_seconds = 5\n'
)


@dataclass
class Trainer:
    process: subprocess.Popen[str]

    @property
    def pid(self) -> int:
        return self.process.pid

    def go_bad(self, points: int = 20) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{points}\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "wrote"

    def ended(self, seconds: float = 10) -> bool:
        try:
            self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Callable[..., Trainer]]:
    """Start a trainer in ``tmp_path`` (its log train.jsonl, its pid file train.pid); killed at teardown."""
    started: list[subprocess.Popen[str]] = []

    def start(*, mode: str = "w", start_step: int = 0, healthy: int = 200, extra: tuple[str, ...] = ()) -> Trainer:
        args = [str(tmp_path / "train.jsonl"), str(tmp_path / "train.pid"), mode, str(start_step), str(healthy)]
        args += extra
        process = subprocess.Popen(
            [sys.executable, "-c", TRAINER, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        started.append(process)
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        return Trainer(process)

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


@pytest.fixture
def monitor(tmp_path: Path) -> Iterator[Monitor]:
    (tmp_path / "training-check.toml").write_text(STOP_CONFIG)
    watcher = Monitor(config=load_config(tmp_path / "training-check.toml"))
    yield watcher
    watcher.close()


def _stop_bad_run(monitor: Monitor, trainer: Trainer, reason: str) -> int:
    """Check the bad run, stop it as the skill would; return the incident id."""
    report = monitor.check("exp")
    assert report.verdict is not None and report.verdict.decision is Decision.STOP
    assert report.next_action == "stop_run"
    stopped = monitor.stop_run("exp", confirm=True, reason=reason)
    assert stopped.outcome is StopOutcome.STOPPED and stopped.verified, stopped.summary
    assert trainer.ended(), f"pid {trainer.pid} was not signalled"
    assert stopped.incident_id is not None
    return stopped.incident_id


def test_a_relaunched_run_is_monitored_again_and_stopped_anew(tmp_path, launch, monitor) -> None:
    first = launch()
    assert monitor.check("exp").schedule.monitoring is True
    first.go_bad()
    first_incident = _stop_bad_run(monitor, first, "NaN loss in the first launch")

    after_stop = monitor.check("exp")
    assert after_stop.schedule.monitoring is False and after_stop.next_action == "end_monitoring"
    assert after_stop.snapshot.run_info.status.value == "stopped"
    told = [signal.message for signal in after_stop.verdict.signals] if after_stop.verdict else []
    assert not [message for message in told if "status unknown" in message], told
    assert [message for message in told if "status stopped" in message], told

    second = launch()  # same entry: new pid in train.pid, train.jsonl rewritten from step 0
    assert second.pid != first.pid
    relaunched = monitor.check("exp")
    assert relaunched.snapshot.restarted is True
    assert relaunched.verdict is not None and relaunched.verdict.decision is Decision.CONTINUE
    assert relaunched.schedule.monitoring is True, relaunched.schedule.summary
    assert relaunched.next_action == "continue_monitoring"
    assert relaunched.schedule.cron_create is not None and relaunched.schedule.cron_action == "replace"
    assert relaunched.schedule.interval_minutes == 10, "the ladder starts over for the new process"
    assert relaunched.snapshot.run_info.status.value != "stopped"
    scheduled = monitor.schedule_next("exp")
    assert scheduled.monitoring is True and scheduled.cron_create is not None

    second.go_bad()
    second_incident = _stop_bad_run(monitor, second, "NaN loss in the relaunch")
    assert second_incident != first_incident
    incidents = monitor.store.list_incidents(monitor.context("exp").key)
    assert [i["incident_id"] for i in incidents] == [second_incident, first_incident]
    assert [i["pid"] for i in incidents] == [second.pid, first.pid]
    notes = (tmp_path / "notes.md").read_text()
    assert "NaN loss in the first launch" in notes and "NaN loss in the relaunch" in notes

    assert monitor.check("exp").schedule.monitoring is False
    again = monitor.stop_run("exp", confirm=True, reason="once more")
    assert again.outcome is StopOutcome.ALREADY_STOPPED and again.incident_id == second_incident


def test_a_resumed_run_appending_to_the_same_log_is_live_again(tmp_path, launch, monitor) -> None:
    first = launch()
    monitor.check("exp")
    first.go_bad()
    _stop_bad_run(monitor, first, "NaN loss")
    resumed = launch(mode="a", start_step=150, healthy=100)  # from a checkpoint, appending to the old log
    report = monitor.check("exp")
    assert report.snapshot.restarted is False and report.snapshot.new_points == 200  # loss and lr
    assert report.schedule.monitoring is True, report.schedule.summary
    resumed.go_bad()
    report = monitor.check("exp")
    assert report.next_action == "stop_run"
    assert monitor.stop_run("exp", confirm=True, reason="NaN again").outcome is StopOutcome.STOPPED
    assert resumed.ended()


def test_a_relaunch_that_has_not_logged_yet_is_live_again(launch, monitor) -> None:
    first = launch()
    monitor.check("exp")
    first.go_bad()
    _stop_bad_run(monitor, first, "NaN loss")
    second = launch(healthy=0)  # truncated the log, not a line yet
    report = monitor.check("exp")
    assert report.snapshot.restarted is True and report.schedule.monitoring is True
    assert monitor.stop_run("exp", confirm=True, reason="stopped by hand").outcome is StopOutcome.STOPPED
    assert second.ended()


def test_points_the_stopped_process_left_unread_do_not_revive_it(launch, monitor) -> None:
    """The NaN points the stop was about were logged after the last check: reading them later is no relaunch."""
    trainer = launch()
    monitor.check("exp")
    trainer.go_bad()
    stopped = monitor.stop_run("exp", confirm=True, reason="NaN seen in the log by hand")
    assert stopped.outcome is StopOutcome.STOPPED and trainer.ended()
    report = monitor.check("exp")
    assert report.schedule.monitoring is False, report.schedule.summary
    again = monitor.stop_run("exp", confirm=True, reason="again")
    assert again.outcome is StopOutcome.ALREADY_STOPPED and "nothing sent" in again.summary


def test_a_stop_that_cannot_read_what_the_run_left_says_so_and_still_counts(launch, monitor) -> None:
    trainer = launch(extra=("--remove-log-on-term",))
    monitor.check("exp")
    trainer.go_bad()
    stopped = monitor.stop_run("exp", confirm=True, reason="NaN loss")
    assert stopped.outcome is StopOutcome.STOPPED and stopped.verified and trainer.ended()
    assert "WARNING: could not read what the stopped run logged last" in stopped.summary
    assert "train.jsonl" in stopped.summary and "takes them for a relaunch" in stopped.summary


def test_a_run_whose_log_was_deleted_is_still_stopped(tmp_path, launch) -> None:
    """The log rotated or deleted while the training goes on: the stop needs the pid file, not the log.
    Before, `stop` failed at parsing the run ("no such file or directory") and the process kept running."""
    (tmp_path / "training-check.toml").write_text(STOP_CONFIG)
    trainer = launch()
    assert cli("check", "exp", cwd=tmp_path).returncode == 0
    (tmp_path / "train.jsonl").unlink()
    stopped = cli("stop", "exp", "--confirm", "--reason", "log gone, loss NaN before", "--json", cwd=tmp_path)
    assert stopped.returncode == 0, stopped.stderr
    result = json.loads(stopped.stdout)
    assert result["outcome"] == "stopped" and result["verified"] is True and trainer.ended()
    assert "could not read what the stopped run logged last" in result["summary"]
    assert "log gone, loss NaN before" in (tmp_path / "notes.md").read_text()
    again = cli("check", "exp", cwd=tmp_path)
    assert again.returncode == 2 and "no such file or directory" in again.stderr, "a check still needs the log"


def _sleeper() -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], text=True)


def test_a_wandb_file_flushed_late_is_no_relaunch_but_a_new_run_file_is(tmp_path, real_run: RealRun) -> None:
    """wandb-core writes the killed process's last blocks after the stop; a relaunch writes another file."""
    live_dir = live_copy(real_run.run_dir, tmp_path / "project", 0.4)
    run_file = live_dir / real_run.file.name
    (tmp_path / "training-check.toml").write_text(
        f'[runs.w]\nrun = "{run_file}"\nnotes = "notes.md"\n[runs.w.stop]\npid_file = "w.pid"\ngrace_seconds = 5\n'
    )
    first, second = _sleeper(), None
    try:
        (tmp_path / "w.pid").write_text(f"{first.pid}\n")
        monitor = Monitor(config=load_config(tmp_path / "training-check.toml"))
        assert monitor.check("w").schedule.monitoring is True
        assert monitor.stop_run("w", confirm=True, reason="bad").outcome is StopOutcome.STOPPED
        grow(live_dir, real_run.run_dir, 0.6)  # the stopped run's late flush
        late = monitor.check("w")
        assert late.snapshot.new_points > 0 and late.snapshot.restarted is False
        assert late.schedule.monitoring is False, late.schedule.summary

        second = _sleeper()
        (tmp_path / "w.pid").write_text(f"{second.pid}\n")
        replacement = tmp_path / "replacement.wandb"
        replacement.write_bytes(real_run.data[: len(real_run.data) // 3])
        os.replace(replacement, run_file)  # a new run file at the watched path
        relaunched = monitor.check("w")
        assert relaunched.snapshot.restarted is True and relaunched.schedule.monitoring is True
        assert monitor.stop_run("w", confirm=True, reason="bad again").outcome is StopOutcome.STOPPED
        assert second.wait(timeout=10) is not None
        monitor.close()
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
            if process is not None:
                process.wait(timeout=10)


@pytest.mark.parametrize(
    ("incident", "live_after", "holds"),
    [
        (None, None, False),
        ({"incident_id": 3, "outcome": "stopped", "verified": True}, None, True),  # never read since
        ({"incident_id": 3, "outcome": "stopped", "verified": True}, 2, True),  # read before the stop
        ({"incident_id": 3, "outcome": "stopped", "verified": True}, 3, False),  # read after it: relaunched
        ({"incident_id": 3, "outcome": "requested_not_confirmed", "verified": False}, None, False),
        ({"incident_id": 3, "outcome": "already_stopped", "verified": True, "method": "local_pid"}, None, False),
        ({"incident_id": 3, "outcome": "already_stopped", "verified": True, "method": "wandb"}, 2, True),
        ({"outcome": "stopped", "verified": True}, 9, True),  # not from the store: no id to compare
    ],
)
def test_stop_in_force_table(incident, live_after, holds) -> None:
    assert stop_in_force(incident, live_after) is holds


# --------------------------------------------------------------------------- training-check forget


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_training_check", *args],
        cwd=cwd, env=dict(os.environ), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_forget_needs_yes_then_starts_the_run_fresh_and_keeps_incidents(tmp_path, launch) -> None:
    (tmp_path / "training-check.toml").write_text(STOP_CONFIG)
    trainer = launch()
    assert cli("check", "exp", cwd=tmp_path).returncode == 0
    trainer.go_bad()
    assert json.loads(cli("check", "exp", "--json", cwd=tmp_path).stdout)["next_action"] == "stop_run"
    stopped = cli("stop", "exp", "--confirm", "--reason", "NaN loss", "--json", cwd=tmp_path)
    assert json.loads(stopped.stdout)["outcome"] == "stopped" and trainer.ended()

    asked = cli("forget", "exp", cwd=tmp_path)
    assert asked.returncode == 2
    assert "--yes" in asked.stderr and "nothing was deleted" in asked.stderr
    assert "checks" in asked.stdout and "1 incident" in asked.stdout and "kept" in asked.stdout
    still = cli("check", "exp", "--json", cwd=tmp_path)
    assert json.loads(still.stdout)["schedule"]["monitoring"] is False, "forget without --yes deleted something"

    forgot = cli("forget", "exp", "--yes", cwd=tmp_path)
    assert forgot.returncode == 0, forgot.stderr
    assert "forgot" in forgot.stdout and "1 incident kept" in forgot.stdout
    monitor = Monitor(config=load_config(tmp_path / "training-check.toml"))
    key = monitor.context("exp").key
    assert monitor.store.find_incident(key) is not None and monitor.store.find_stop_in_force(key) is None
    monitor.close()  # a fresh start: the kept incident no longer stops the run, before any read

    fresh = json.loads(cli("check", "exp", "--json", cwd=tmp_path).stdout)
    assert fresh["snapshot"]["new_points"] == 440, "the next check did not read the log from its start"
    assert fresh["schedule"]["monitoring"] is True and "first check" in fresh["schedule"]["summary"]
    monitor = Monitor(config=load_config(tmp_path / "training-check.toml"))
    incidents = monitor.store.list_incidents(monitor.context("exp").key)
    monitor.close()
    assert [i["reason"] for i in incidents] == ["NaN loss"], "forget deleted the evidence"
    assert cli("forget", "exp", "--yes", cwd=tmp_path).returncode == 0


def test_forget_of_a_run_with_no_state_names_it_and_the_known_runs(tmp_path) -> None:
    (tmp_path / "training-check.toml").write_text(STOP_CONFIG)
    (tmp_path / "train.jsonl").write_text(json.dumps({"step": 1, "loss": 2.0}) + "\n")
    assert cli("check", "exp", cwd=tmp_path).returncode == 0
    unknown = cli("forget", "nope", "--yes", cwd=tmp_path)
    assert unknown.returncode == 2
    assert "'nope'" in unknown.stderr and "nothing is stored" in unknown.stderr
    assert "exp" in unknown.stderr and "train.jsonl" in unknown.stderr


def test_forget_takes_the_state_key_of_a_log_deleted_since(tmp_path) -> None:
    (tmp_path / "old.jsonl").write_text(json.dumps({"step": 1, "loss": 2.0}) + "\n")
    assert cli("check", "old.jsonl", cwd=tmp_path).returncode == 0
    (tmp_path / "old.jsonl").unlink()
    by_path = cli("forget", "old.jsonl", "--yes", cwd=tmp_path)
    key = f"file:{tmp_path / 'old.jsonl'}"
    assert by_path.returncode == 2 and key in by_path.stderr and "state key" in by_path.stderr
    by_key = cli("forget", key, "--yes", cwd=tmp_path)
    assert by_key.returncode == 0 and by_key.stdout.startswith(f"forgot {key}"), by_key.stderr
    gone = cli("forget", key, "--yes", cwd=tmp_path)
    assert gone.returncode == 2 and "no run has state" in gone.stderr
