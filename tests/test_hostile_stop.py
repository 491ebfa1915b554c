"""Hostile inputs to `stop` (issue 10): a stale pid must never mark a run stopped for good, a pid file is
never echoed, and a pid file that is not a regular file or holds an impossible pid is a clear error.
Real processes, the real CLI in a subprocess, the real Monitor, and a real sshd on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_training_check.config import load_config
from mcp_training_check.errors import StopError
from mcp_training_check.models import StopOutcome
from mcp_training_check.service import Monitor
from mcp_training_check.stop import stop_local_process

from .runs import default_sigint
from .sshd import SshServer

FREE_PID = 4194305
"""Above Linux's largest pid_max (2^22), so no process can have it."""


@pytest.fixture
def sleeper() -> Iterator:
    """Start `sleep`-like python children; every one is killed at teardown."""
    started: list[subprocess.Popen[str]] = []

    def start() -> subprocess.Popen[str]:
        code = "import time\nprint('ready', flush=True)\ntime.sleep(600)\n"
        proc = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, preexec_fn=default_sigint
        )
        started.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def cli(*args: str, cwd: Path, first_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess; ``first_env`` goes first in its environment block."""
    env = {**(first_env or {}), **os.environ}
    return subprocess.run(
        [sys.executable, "-m", "mcp_training_check", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def write_project(tmp_path: Path, stop: str) -> None:
    (tmp_path / "a.log").write_text("".join(json.dumps({"step": s, "loss": 3.0 / (1 + s)}) + "\n" for s in range(50)))
    (tmp_path / "training-check.toml").write_text(
        f'[runs.r]\nrun = "a.log"\nnotes = "notes.md"\n[runs.r.stop]\n{stop}\ngrace_seconds = 5\n'
    )


def _wait_dead(proc: subprocess.Popen[str], seconds: float = 10) -> bool:
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


# --------------------------------------------------------------------------- item 1: stale pid, locally


def test_stale_pid_records_nothing_to_stop_and_a_later_live_pid_is_stopped(tmp_path, sleeper):
    write_project(tmp_path, 'pid_file = "p.pid"')
    (tmp_path / "p.pid").write_text(f"{FREE_PID}\n")
    stale = cli("stop", "r", "--confirm", "--reason", "stale", "--json", cwd=tmp_path)
    assert stale.returncode == 0, stale.stderr
    first = json.loads(stale.stdout)
    assert first["outcome"] == "already_stopped" and first["verified"] is False
    assert "nothing to stop" in first["summary"]
    assert "nothing to stop" in (tmp_path / "notes.md").read_text()

    checked = cli("check", "r", "--json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["schedule"]["monitoring"] is True, "a stale pid must not end monitoring"

    live = sleeper()
    (tmp_path / "p.pid").write_text(str(live.pid))
    real = cli("stop", "r", "--confirm", "--reason", "real", "--json", cwd=tmp_path)
    assert real.returncode == 0, real.stderr
    second = json.loads(real.stdout)
    assert second["outcome"] == "stopped" and second["verified"] is True and second["signals_sent"] == ["TERM"]
    assert _wait_dead(live), "the live training process was not signalled"


def test_a_real_stop_is_still_not_sent_twice(tmp_path, sleeper):
    live = sleeper()
    write_project(tmp_path, f"pid = {live.pid}")
    monitor = Monitor(config=load_config(tmp_path / "training-check.toml"))
    assert monitor.stop_run("r", confirm=True, reason="bad").outcome is StopOutcome.STOPPED
    again = monitor.stop_run("r", confirm=True, reason="again")
    assert again.outcome is StopOutcome.ALREADY_STOPPED and "nothing sent" in again.summary
    assert monitor.check("r").schedule.monitoring is False


def test_an_old_verified_nothing_to_stop_incident_no_longer_blocks_a_stop(tmp_path, sleeper):
    """A state database written before the fix holds `already_stopped, verified=True` for a stale pid."""
    live = sleeper()
    write_project(tmp_path, f"pid = {live.pid}")
    monitor = Monitor(config=load_config(tmp_path / "training-check.toml"))
    key = monitor.context("r").key
    monitor.store.record_incident(
        key,
        {"run": "r", "reason": "stale", "summary": "-", "stopped_at": "2026-01-01T00:00:00+00:00",
         "method": "local_pid", "outcome": "already_stopped", "verified": True, "pid": FREE_PID},
    )  # fmt: skip
    assert monitor.check("r").schedule.monitoring is True
    assert monitor.stop_run("r", confirm=True, reason="real").outcome is StopOutcome.STOPPED
    assert _wait_dead(live)


# --------------------------------------------------------------------------- item 1: stale pid, over SSH


def test_stale_remote_pid_does_not_block_a_later_remote_stop(ssh_home: SshServer, tmp_path, sleeper):
    pid_file = tmp_path / "remote.pid"
    pid_file.write_text(str(FREE_PID))
    (tmp_path / "train.log").write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.9}\n')
    (tmp_path / "training-check.toml").write_text(
        f'[runs.remote]\nrun = "{ssh_home.url(tmp_path / "train.log")}"\nnotes = "notes.md"\n'
        f'[runs.remote.stop]\nmethod = "ssh"\npid_file = "{pid_file}"\ngrace_seconds = 5\n'
    )
    monitor = Monitor(config=load_config(tmp_path / "training-check.toml"))
    stale = monitor.stop_run("remote", confirm=True, reason="stale")
    assert stale.outcome is StopOutcome.ALREADY_STOPPED and not stale.verified
    assert "nothing to stop" in stale.summary
    live = sleeper()
    pid_file.write_text(str(live.pid))
    real = monitor.stop_run("remote", confirm=True, reason="real")
    assert real.outcome is StopOutcome.STOPPED and real.verified and real.signals_sent == ["TERM"]
    assert _wait_dead(live)


# --------------------------------------------------------------------------- item 5: the pid file itself


def test_a_pid_file_linked_to_the_environment_is_never_echoed(tmp_path):
    """The issue's exploit: a symlink to /proc/self/environ printed WANDB_API_KEY in the error."""
    pid_file = tmp_path / "p.pid"
    pid_file.symlink_to("/proc/self/environ")
    write_project(tmp_path, 'pid_file = "p.pid"')
    done = cli("stop", "r", "--confirm", "--reason", "x", cwd=tmp_path, first_env={"WANDB_API_KEY": "k" * 40})
    assert done.returncode == 2
    assert "not a process id" in done.stderr and str(pid_file) in done.stderr
    assert "WANDB" not in done.stderr + done.stdout and "kkkk" not in done.stderr + done.stdout


def test_a_fifo_pid_file_is_refused_at_once_naming_the_fix(tmp_path):
    pid_file = tmp_path / "p.pid"
    os.mkfifo(pid_file)
    started = time.monotonic()
    with pytest.raises(StopError) as caught:
        stop_local_process(pid=None, pid_file=pid_file)
    assert time.monotonic() - started < 2, "a FIFO pid file must not block"
    message = str(caught.value)
    assert "is a FIFO (named pipe), not a regular file" in message and "point pid_file at a plain file" in message


def test_a_fifo_pid_file_over_ssh_is_refused_at_once(ssh_home: SshServer, tmp_path):
    from mcp_training_check.stop.ssh import stop_remote_process

    pid_file = tmp_path / "p.pid"
    os.mkfifo(pid_file)
    started = time.monotonic()
    with pytest.raises(StopError, match=r"is a FIFO \(named pipe\), not a regular file"):
        stop_remote_process("trainbox", pid=None, pid_file=str(pid_file), timeout_seconds=5)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("pid", [2**31, 2**63, 18446744073709551615, 1, 0])
def test_impossible_pids_in_a_pid_file_are_a_clear_error(tmp_path, pid):
    pid_file = tmp_path / "p.pid"
    pid_file.write_text(str(pid))
    with pytest.raises(StopError) as caught:
        stop_local_process(pid=None, pid_file=pid_file)
    assert f"names pid {pid}, which no training process can have" in str(caught.value)
    assert "2147483647" in str(caught.value)


def test_an_impossible_configured_pid_names_the_key_and_line(tmp_path):
    write_project(tmp_path, f"pid = {2**31}")
    done = cli("stop", "r", "--confirm", "--reason", "x", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "training-check.toml:5" in done.stderr and "pid" in done.stderr, done.stderr


# --------------------------------------------------------------------------- item 8: notes, confirm


def test_unusable_notes_still_reports_the_kill_first(tmp_path, sleeper):
    live = sleeper()
    (tmp_path / "a.log").write_text('{"step": 1, "loss": 2.0}\n')
    (tmp_path / "training-check.toml").write_text(
        f'[runs.r]\nrun = "a.log"\nnotes = "/tmp"\n[runs.r.stop]\npid = {live.pid}\ngrace_seconds = 5\n'
    )
    done = cli("stop", "r", "--confirm", "--reason", "x", cwd=tmp_path)
    assert _wait_dead(live), "the process was not killed"
    assert done.returncode == 0, f"the stop happened: {done.stderr}"
    first_line = done.stdout.splitlines()[0]
    assert first_line.startswith("STOPPED: pid") and "verified gone; " in first_line, "no 'gone.;'"
    assert first_line.index("verified gone") < first_line.index("WARNING")
    assert "notes file /tmp cannot be opened" in first_line and "fix `notes`" in first_line
    again = cli("stop", "r", "--confirm", "--reason", "y", "--json", cwd=tmp_path)
    assert json.loads(again.stdout)["outcome"] == "already_stopped", "the incident was kept in the state database"
    checked = cli("check", "r", "--json", cwd=tmp_path)
    assert json.loads(checked.stdout)["schedule"]["monitoring"] is False


@pytest.mark.parametrize("confirm", ["yes", "true", 1, "false"])
def test_stop_run_over_mcp_takes_only_a_json_boolean(tmp_path, sleeper, confirm):
    from mcp_training_check.server import build_server

    from .test_server import call

    live = sleeper()
    write_project(tmp_path, f"pid = {live.pid}")
    server = build_server(Monitor(config=load_config(tmp_path / "training-check.toml")))
    result = call(server, "stop_run", {"run": "r", "confirm": confirm, "reason": "x"})
    text = " ".join(getattr(block, "text", "") for block in result.content)
    assert result.is_error and "`confirm` should be a valid boolean" in text, text
    assert live.poll() is None, "nothing may be sent without a real boolean"


def test_monitor_stop_run_refuses_a_truthy_non_boolean(tmp_path, sleeper):
    live = sleeper()
    write_project(tmp_path, f"pid = {live.pid}")
    monitor = Monitor(config=load_config(tmp_path / "training-check.toml"))
    with pytest.raises(StopError, match="must be the JSON boolean true"):
        monitor.stop_run("r", confirm="yes", reason="x")  # type: ignore[arg-type]
    assert live.poll() is None


def test_a_process_that_exits_after_an_unconfirmed_term_counts_as_stopped(tmp_path):
    """The one case where "not running" is the run's stop: an earlier stop of this run signalled that pid
    (TERM, no KILL allowed) and could not see it end; it has exited since."""
    code = (
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\ntime.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        (tmp_path / "a.log").write_text('{"step": 1, "loss": 2.0}\n')
        (tmp_path / "training-check.toml").write_text(
            f'[runs.r]\nrun = "a.log"\nnotes = "notes.md"\n[runs.r.stop]\npid = {proc.pid}\n'
            "grace_seconds = 0.5\nkill_after_grace = false\n"
        )
        monitor = Monitor(config=load_config(tmp_path / "training-check.toml"))
        first = monitor.stop_run("r", confirm=True, reason="diverged")
        assert first.outcome is StopOutcome.REQUESTED and not first.verified
        proc.kill()  # it finished saving its checkpoint and exited
        proc.wait(timeout=10)
        second = monitor.stop_run("r", confirm=True, reason="again")
        assert second.outcome is StopOutcome.STOPPED and second.verified, second.summary
        assert "signalled by the earlier stop" in second.summary
        assert monitor.check("r").schedule.monitoring is False
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
