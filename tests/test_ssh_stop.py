"""Stopping a training process over SSH (method = "ssh"), against real processes and a real sshd on
127.0.0.1 (tests/sshd.py), through the real Monitor and the in-process MCP client; and on a host whose sshd
has no ``Subsystem sftp`` (`sshd_without_sftp`), where the pid file is stat'ed and read through an exec
channel with the SFTP path's guarantees (regular files only, a bounded read, its content never shown)."""

from __future__ import annotations

import errno
import os
import pwd
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_training_check.config import load_config
from mcp_training_check.errors import StopError
from mcp_training_check.models import CheckReport, StopMethod, StopOutcome, StopResult
from mcp_training_check.server import build_server
from mcp_training_check.service import Monitor
from mcp_training_check.stop.ssh import stop_remote_process

from .runs import default_sigint
from .sshd import Sshd, SshServer
from .test_server import call
from .test_ssh_exec import PAYLOADS, sftp_refusals

# A "training" that writes its pid file, logs, and on SIGTERM saves a checkpoint and exits.
TRAINING = """
import json, os, signal, sys, time
workdir = sys.argv[1]
def on_term(signum, frame):
    open(os.path.join(workdir, "checkpoint.saved"), "w").write("ok")
    sys.exit(0)
signal.signal(signal.SIGTERM, signal.SIG_IGN if "--ignore-term" in sys.argv else on_term)
with open(os.path.join(workdir, "train.log"), "w") as log:
    for step in range(300):
        log.write(json.dumps({"step": step, "loss": 3.0 / (1 + step / 50)}) + "\\n")
open(os.path.join(workdir, "train.pid"), "w").write(str(os.getpid()))
print("ready", flush=True)
time.sleep(600)
"""
GRACE_SECONDS = 1.0
POLL_SECONDS = 0.05


def reset_term() -> None:
    """Default SIGINT and SIGTERM, whatever the launcher of the test run left ignored."""
    default_sigint()
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.fixture
def training(tmp_path: Path) -> Iterator:
    """Start a training child in ``tmp_path``; every child is killed at teardown."""
    started: list[subprocess.Popen[str]] = []

    def start(*flags: str) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, "-c", TRAINING, str(tmp_path), *flags],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=reset_term,
        )
        started.append(child)
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        return child

    yield start
    for child in started:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=10)


def monitor_for(tmp_path: Path, server: SshServer, stop: str) -> Monitor:
    (tmp_path / "training-check.toml").write_text(
        f'[runs.remote]\nrun = "{server.url(tmp_path / "train.log")}"\nnotes = "notes.md"\n'
        f'[runs.remote.stop]\nmethod = "ssh"\n{stop}\n'
    )
    return Monitor(config=load_config(tmp_path / "training-check.toml"))


def test_term_stops_the_remote_training_and_records_the_incident(ssh_home, tmp_path, training):
    child = training()
    monitor = monitor_for(tmp_path, ssh_home, f'pid_file = "{tmp_path / "train.pid"}"\ngrace_seconds = 10')
    monitor.check("remote")
    result = monitor.stop_run("remote", confirm=True, reason="loss diverged at step 299")
    assert result.outcome is StopOutcome.STOPPED and result.verified
    assert result.method is StopMethod.SSH and result.signals_sent == ["TERM"]
    assert child.wait(timeout=5) == 0 and (tmp_path / "checkpoint.saved").exists(), "TERM let it save and exit"
    incident = monitor.store.find_incident(monitor.context("remote").key)
    assert incident is not None and incident["method"] == "ssh" and incident["verified"]
    assert incident["pid"] == child.pid and incident["run_url"] == ssh_home.url(tmp_path / "train.log")
    notes = (tmp_path / "notes.md").read_text()
    assert "loss diverged at step 299" in notes and f"ssh, pid {child.pid}" in notes
    again = monitor.stop_run("remote", confirm=True, reason="again")
    assert again.outcome is StopOutcome.ALREADY_STOPPED and (tmp_path / "notes.md").read_text() == notes


def test_term_ignored_escalates_to_kill(ssh_home, tmp_path, training):
    child = training("--ignore-term")
    attempt = stop_remote_process(
        "trainbox", pid=None, pid_file=str(tmp_path / "train.pid"), grace_seconds=GRACE_SECONDS,
        poll_seconds=POLL_SECONDS,
    )  # fmt: skip
    assert attempt.outcome is StopOutcome.STOPPED and attempt.verified
    assert attempt.signals_sent == ["TERM", "KILL"]
    assert child.wait(timeout=5) == -9


def test_term_ignored_without_kill_is_requested_not_confirmed(ssh_home, tmp_path, training):
    child = training("--ignore-term")
    monitor = monitor_for(
        tmp_path, ssh_home, f"pid = {child.pid}\ngrace_seconds = {GRACE_SECONDS}\nkill_after_grace = false"
    )
    result = monitor.stop_run("remote", confirm=True, reason="unsure, asked politely")
    assert result.outcome is StopOutcome.REQUESTED and not result.verified
    assert result.signals_sent == ["TERM"] and "kill_after_grace" in result.summary
    assert child.poll() is None, "no KILL was sent"
    incident = monitor.store.find_incident(monitor.context("remote").key)
    assert incident is not None and incident["outcome"] == "requested_not_confirmed"


def test_kill_as_the_configured_signal(ssh_home, tmp_path, training):
    child = training("--ignore-term")
    attempt = stop_remote_process("trainbox", pid=child.pid, pid_file=None, signal_name="KILL", poll_seconds=0.05)
    assert attempt.outcome is StopOutcome.STOPPED and attempt.signals_sent == ["KILL"]
    assert child.wait(timeout=5) == -9


def test_exited_process_is_already_stopped(ssh_home, tmp_path, training):
    child = training()
    child.kill()
    child.wait(timeout=5)
    attempt = stop_remote_process("trainbox", pid=child.pid, pid_file=None)
    assert attempt.outcome is StopOutcome.ALREADY_STOPPED and not attempt.verified and attempt.signals_sent == []


def test_pid_file_older_than_the_process_is_refused_as_reused(ssh_home, tmp_path, training):
    child = training()
    pid_file = tmp_path / "train.pid"
    an_hour_ago = time.time() - 3600
    os.utime(pid_file, (an_hour_ago, an_hour_ago))
    with pytest.raises(StopError, match="pid was reused"):
        stop_remote_process("trainbox", pid=None, pid_file=str(pid_file))
    assert child.poll() is None, "nothing was sent"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "does not exist on root@127.0.0.1"),
        ("hello", "holds 5 bytes that are not a decimal number, not a process id"),
    ],
)
def test_bad_pid_files_name_the_host_and_the_fix(ssh_home, tmp_path, content, expected):
    pid_file = tmp_path / "train.pid"
    if content is not None:
        pid_file.write_text(content)
    with pytest.raises(StopError) as caught:
        stop_remote_process("trainbox", pid=None, pid_file=str(pid_file))
    assert expected.replace("root", ssh_home.user) in str(caught.value) and str(pid_file) in str(caught.value)


@pytest.mark.parametrize("pid", [1, 0, -5])
def test_init_and_process_groups_are_refused(ssh_home, pid):
    with pytest.raises(StopError, match="pid 1 is init"):
        stop_remote_process("trainbox", pid=pid, pid_file=None)


def test_unknown_host_key_refuses_to_stop(ssh_home, tmp_path, training):
    child = training()
    with pytest.raises(StopError, match="not in known_hosts"):
        stop_remote_process("stranger", pid=child.pid, pid_file=None)
    assert child.poll() is None


def test_ssh_stop_without_a_remote_host_says_what_to_configure(tmp_path):
    (tmp_path / "train.log").write_text('{"step": 1, "loss": 2.0}\n')
    (tmp_path / "training-check.toml").write_text(
        '[runs.local]\nrun = "train.log"\n[runs.local.stop]\nmethod = "ssh"\npid = 4242\n'
    )
    monitor = Monitor(config=load_config(tmp_path / "training-check.toml"))
    with pytest.raises(StopError, match=r'method = "ssh" needs a machine'):
        monitor.stop_run("local", confirm=True, reason="x")


def test_mcp_check_and_stop_over_ssh(ssh_home, tmp_path, training):
    """The whole path an agent takes: check an ssh:// run through the MCP client, then stop it."""
    child = training()
    monitor = monitor_for(tmp_path, ssh_home, f'pid_file = "{tmp_path / "train.pid"}"\ngrace_seconds = 10')
    server = build_server(monitor)
    checked = call(server, "check", {"run": "remote"})
    assert not checked.is_error, checked.content
    report = CheckReport.model_validate(checked.structured_content)
    assert report.snapshot.data_source.value == "ssh" and report.snapshot.last_step == 299
    assert report.verdict is not None and report.verdict.decision.value == "continue"
    direct = call(server, "read_metrics", {"run": ssh_home.url(tmp_path / "train.log")})
    assert not direct.is_error and direct.structured_content["data_source"] == "ssh"
    stopped = call(server, "stop_run", {"run": "remote", "confirm": True, "reason": "test stop"})
    result = StopResult.model_validate(stopped.structured_content)
    assert result.outcome is StopOutcome.STOPPED and result.method is StopMethod.SSH
    assert child.wait(timeout=5) == 0


def test_mcp_check_of_a_missing_remote_log_is_an_error_naming_it(ssh_home, tmp_path):
    missing = tmp_path / "missing.log"
    result = call(build_server(Monitor()), "check", {"run": ssh_home.url(missing)})
    assert result.is_error
    text = " ".join(getattr(block, "text", "") for block in result.content)
    assert str(missing) in text and f"127.0.0.1:{ssh_home.port}" in text


def test_unconfigured_ssh_run_says_how_to_configure_an_ssh_stop(ssh_home, tmp_path):
    log = tmp_path / "train.log"
    log.write_text('{"step": 1, "loss": 2.0}\n')
    with pytest.raises(StopError) as caught:
        Monitor().stop_run(ssh_home.url(log), confirm=True, reason="x")
    assert 'method = "ssh"' in str(caught.value) and f'run = "ssh://trainbox{log}"' in str(caught.value)


# --------------------------------------------------------------------------- a host without SFTP

TIMEOUT_SECONDS = 20.0
"""Long enough that a read blocked on a FIFO would show as a slow refusal (it must come at once)."""
AT_ONCE_SECONDS = 5.0


def stop_nosftp(pid_file: Path, **options) -> object:
    return stop_remote_process(
        "nosftp", pid=None, pid_file=str(pid_file), timeout_seconds=TIMEOUT_SECONDS, poll_seconds=POLL_SECONDS,
        **options,
    )  # fmt: skip


def test_pid_file_stop_without_sftp_is_verified_and_recorded(exec_home: SshServer, tmp_path, training):
    child = training()
    run = exec_home.url(tmp_path / "train.log", alias="nosftp")
    (tmp_path / "training-check.toml").write_text(
        f'[runs.remote]\nrun = "{run}"\nnotes = "notes.md"\n[runs.remote.stop]\nmethod = "ssh"\n'
        f'pid_file = "{tmp_path / "train.pid"}"\ngrace_seconds = 10\n'
    )
    monitor = Monitor(config=load_config(tmp_path / "training-check.toml"))
    result = monitor.stop_run("remote", confirm=True, reason="loss diverged at step 299")
    assert result.outcome is StopOutcome.STOPPED and result.verified, result.summary
    assert result.method is StopMethod.SSH and result.signals_sent == ["TERM"]
    assert child.wait(timeout=5) == 0 and (tmp_path / "checkpoint.saved").exists(), "TERM let it save and exit"
    incident = monitor.store.find_incident(monitor.context("remote").key)
    assert incident is not None and incident["method"] == "ssh" and incident["verified"]
    assert incident["pid"] == child.pid and incident["run_url"] == run
    assert "loss diverged at step 299" in (tmp_path / "notes.md").read_text()


def test_sftp_is_asked_once_per_stop(exec_home: SshServer, sshd_without_sftp: Sshd, tmp_path, training):
    """One connection reads the pid file, compares its mtime with the process start, signals TERM then KILL:
    the host is asked for SFTP once, and every file access after the refusal goes through exec."""
    child = training("--ignore-term")
    refusals = sftp_refusals(sshd_without_sftp)
    attempt = stop_nosftp(tmp_path / "train.pid", grace_seconds=GRACE_SECONDS)
    assert attempt.outcome is StopOutcome.STOPPED and attempt.verified
    assert attempt.signals_sent == ["TERM", "KILL"] and attempt.pid == child.pid
    assert child.wait(timeout=5) == -9
    assert sftp_refusals(sshd_without_sftp) == refusals + 1


def test_stale_pid_file_has_nothing_to_stop(exec_home, tmp_path, training):
    child = training()
    child.kill()
    child.wait(timeout=5)
    attempt = stop_nosftp(tmp_path / "train.pid")
    assert attempt.outcome is StopOutcome.ALREADY_STOPPED and not attempt.verified and attempt.signals_sent == []
    assert attempt.pid == child.pid


def test_reused_pid_is_refused_through_exec(exec_home, tmp_path, training):
    """The pid file's mtime comes from the exec'd stat."""
    child = training()
    an_hour_ago = time.time() - 3600
    os.utime(tmp_path / "train.pid", (an_hour_ago, an_hour_ago))
    with pytest.raises(StopError, match="pid was reused"):
        stop_nosftp(tmp_path / "train.pid")
    assert child.poll() is None, "nothing was sent"


def assert_nobody_reads(fifo: Path) -> None:
    """Opening a FIFO to write without blocking fails with ENXIO exactly when no process has it open to read:
    no ``head`` (or anything else) was left waiting on it on the host."""
    with pytest.raises(OSError) as caught:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert caught.value.errno == errno.ENXIO


def test_fifo_pid_file_is_refused_at_once(exec_home, tmp_path):
    fifo = tmp_path / "train.pid"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(StopError) as caught:
        stop_nosftp(fifo)
    assert time.monotonic() - started < AT_ONCE_SECONDS
    message = str(caught.value)
    assert f"pid file {fifo} on " in message and "is a FIFO (named pipe), not a regular file" in message
    assert_nobody_reads(fifo)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "does not exist on "),
        ("dir", "is a directory, not a regular file"),
        ("hunter2-secret-token", "holds 20 bytes that are not a decimal number, not a process id"),
        ("7" * 100, "holds more than 64 bytes"),
        ("  \n", "holds only white space"),
    ],
)
def test_bad_pid_files_name_the_problem_never_the_content(exec_home, tmp_path, content, expected):
    pid_file = tmp_path / "train.pid"
    if content == "dir":
        pid_file.mkdir()
    elif content is not None:
        pid_file.write_text(content)
    with pytest.raises(StopError) as caught:
        stop_nosftp(pid_file)
    message = str(caught.value)
    assert expected in message and str(pid_file) in message and "Host nosftp" in message
    assert "hunter2" not in message and "7" * 10 not in message


@pytest.mark.parametrize("payload", PAYLOADS)
def test_shell_characters_in_the_pid_file_path_stay_inert(exec_home, tmp_path, training, payload):
    """The path is one quoted argument of ``sh -c``: the file of that exact name is read and its process
    stopped, and an injected ``touch NAME`` (it would run in the remote user's login directory) never runs."""
    canary = Path(pwd.getpwuid(os.getuid()).pw_dir) / f"training-check-pwned-{tmp_path.name}"
    child = training()
    (tmp_path / "pids").mkdir()
    pid_file = tmp_path / "pids" / payload.format(canary=canary.name)
    pid_file.write_text((tmp_path / "train.pid").read_text())
    (tmp_path / "pids" / "other.pid").write_text("1")  # what a glob or a split path would reach
    try:
        with pytest.raises(StopError, match="does not exist"):
            stop_nosftp(Path(f"{pid_file}.missing"))
        attempt = stop_nosftp(pid_file, grace_seconds=10)
        assert attempt.outcome is StopOutcome.STOPPED and attempt.pid == child.pid
        assert child.wait(timeout=5) == 0
        assert not canary.exists()
    finally:
        canary.unlink(missing_ok=True)
