"""Stopping what holds the training — a tmux session or window, a screen session, a configured command —
on this machine and through the loopback sshd (tests/sshd.py), with real tmux, screen and Python children,
through the real Monitor (incident, notes) and ``escalate_target``."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_training_check.config import load_config
from mcp_training_check.errors import ConfigError, StopError
from mcp_training_check.models import StopMethod, StopOutcome
from mcp_training_check.service import Monitor
from mcp_training_check.stop.hosts import LocalHost
from mcp_training_check.stop.remote import remote_host
from mcp_training_check.stop.targets import ScreenTarget, TmuxTarget, escalate_target

from .sshd import SshServer

# A training that logs a JSON line every 50 ms; TERM makes it write "term" and exit (unless told to ignore it). The
# handler appends through its own descriptor and leaves with os._exit: a write to `log` there can re-enter the one the
# signal interrupted ("reentrant call inside <_io.BufferedWriter>", exit status 1: a red CI run at stop 40).
TRAINING = """
import json, os, signal, sys, time
log = open(sys.argv[1], "a", buffering=1)
def on_term(signum, frame):
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"term\\n")
    os._exit(0)
signal.signal(signal.SIGTERM, signal.SIG_IGN if "--ignore-term" in sys.argv else on_term)
step = 0
while True:
    log.write(json.dumps({"step": step, "loss": 3.0 / (1 + step / 50)}) + "\\n")
    step += 1
    time.sleep(0.05)
"""
START_SECONDS = 10.0
GRACE_SECONDS = 1.0
POLL_SECONDS = 0.05


def unique(prefix: str) -> str:
    """Session names unique per test: tmux and screen servers are per user, shared with anything else running."""
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def needs(program: str) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"`{program}` is not installed (python3 dev.py test installs it as root with apt-get)")


def wait_for_steps(log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().count('"step"') >= 3:
            return
        time.sleep(0.05)
    pytest.fail(f"the training in the session never logged to {log}")


def training_argv(log: Path, *flags: str) -> list[str]:
    script = log.with_name("train.py")
    script.write_text(TRAINING)
    return [sys.executable, str(script), str(log), *flags]


@pytest.fixture
def tmux_session(tmp_path: Path) -> Iterator:
    """Start ``training_argv`` as the command of a new detached tmux session; killed at teardown."""
    needs("tmux")
    started: list[str] = []

    def start(*flags: str, window: str = "train") -> str:
        name = unique("tc")
        log = tmp_path / "train.log"
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-n", window, *training_argv(log, *flags)], check=True)
        started.append(name)
        wait_for_steps(log)
        return name

    yield start
    for name in started:
        subprocess.run(["tmux", "kill-session", "-t", f"={name}"], capture_output=True)


@pytest.fixture
def screen_session(tmp_path: Path) -> Iterator:
    needs("screen")
    started: list[str] = []

    def start(*flags: str) -> str:
        name = unique("tc.")
        log = tmp_path / "train.log"
        subprocess.run(["screen", "-dmS", name, *training_argv(log, *flags)], check=True)
        started.append(name)
        wait_for_steps(log)
        return name

    yield start
    for name in started:
        subprocess.run(["screen", "-S", name, "-X", "quit"], capture_output=True)


def monitor_for(tmp_path: Path, stop: str, run: str | None = None) -> Monitor:
    run = run or str(tmp_path / "train.log")
    (tmp_path / "training-check.toml").write_text(
        f'[runs.job]\nrun = "{run}"\nnotes = "notes.md"\n[runs.job.stop]\n{stop}\n'
    )
    return Monitor(config=load_config(tmp_path / "training-check.toml"))


def tmux_has(name: str) -> bool:
    return subprocess.run(["tmux", "has-session", "-t", f"={name}"], capture_output=True).returncode == 0


def screen_has(name: str) -> bool:
    listed = subprocess.run(["screen", "-ls"], capture_output=True, text=True).stdout
    return f".{name}\t" in listed


def stop_and_check(monitor: Monitor, method: StopMethod, signals: list[str], target_text: str) -> None:
    """stop_run through the Monitor: verified, the incident and the notes name the target."""
    result = monitor.stop_run("job", confirm=True, reason="loss diverged")
    assert result.outcome is StopOutcome.STOPPED and result.verified, result.summary
    assert result.method is method and result.signals_sent == signals
    incident = monitor.store.find_incident(monitor.context("job").key)
    assert incident is not None and incident["method"] == method.value and incident["verified"]
    assert target_text in incident["target"]
    notes = Path(result.notes_path or "").read_text()
    assert "loss diverged" in notes and target_text in notes
    again = monitor.stop_run("job", confirm=True, reason="again")
    assert again.outcome is StopOutcome.ALREADY_STOPPED


# --------------------------------------------------------------------------- tmux


def test_tmux_session_stopped_by_term_locally(tmp_path, tmux_session):
    name = tmux_session()
    monitor = monitor_for(tmp_path, f'method = "tmux"\nsession = "{name}"\ngrace_seconds = 10')
    stop_and_check(monitor, StopMethod.TMUX, ["TERM"], f"tmux session '{name}'")
    assert not tmux_has(name)
    assert (tmp_path / "train.log").read_text().endswith("term\n"), "TERM reached the training, which exited"


def test_tmux_term_ignored_escalates_to_kill(tmp_path, tmux_session):
    name = tmux_session("--ignore-term")
    attempt = escalate_target(
        TmuxTarget(LocalHost(), name, None), "TERM", grace_seconds=GRACE_SECONDS, kill_after_grace=True,
        poll_seconds=POLL_SECONDS,
    )  # fmt: skip
    assert attempt.outcome is StopOutcome.STOPPED and attempt.verified and attempt.signals_sent == ["TERM", "KILL"]
    assert not tmux_has(name) and "term" not in (tmp_path / "train.log").read_text()


def test_tmux_term_ignored_without_kill_is_requested_not_confirmed(tmp_path, tmux_session):
    name = tmux_session("--ignore-term")
    monitor = monitor_for(
        tmp_path, f'method = "tmux"\nsession = "{name}"\ngrace_seconds = {GRACE_SECONDS}\nkill_after_grace = false'
    )
    result = monitor.stop_run("job", confirm=True, reason="asked politely")
    assert result.outcome is StopOutcome.REQUESTED and not result.verified and result.signals_sent == ["TERM"]
    assert "kill_after_grace is false" in result.summary
    assert tmux_has(name), "no KILL was sent"


def test_tmux_window_stops_only_that_window(tmp_path, tmux_session):
    name = tmux_session(window="train")
    other_log = tmp_path / "other.log"
    subprocess.run(["tmux", "new-window", "-d", "-t", f"={name}", "-n", "eval", *training_argv(other_log)], check=True)
    wait_for_steps(other_log)
    attempt = escalate_target(
        TmuxTarget(LocalHost(), name, "train"), "TERM", grace_seconds=10, kill_after_grace=True,
        poll_seconds=POLL_SECONDS,
    )  # fmt: skip
    assert attempt.outcome is StopOutcome.STOPPED and attempt.signals_sent == ["TERM"]
    assert tmux_has(name), "the session and its other window go on"
    windows = subprocess.run(["tmux", "list-windows", "-t", f"={name}", "-F", "#{window_name}"], capture_output=True)
    assert windows.stdout.split() == [b"eval"]


def test_tmux_training_typed_into_an_interactive_shell(tmp_path):
    """The usual tmux: a shell in the pane, the training typed into it. TERM ends the training (it saves and
    exits); the shell ignores TERM, so the session closes on the KILL after the grace period."""
    needs("tmux")
    name = unique("tcsh")
    log = tmp_path / "train.log"
    argv = training_argv(log)
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "bash", "--norc", "-i"], check=True)
    try:
        subprocess.run(["tmux", "send-keys", "-t", f"={name}:", " ".join(argv), "Enter"], check=True)
        wait_for_steps(log)
        attempt = escalate_target(
            TmuxTarget(LocalHost(), name, None), "TERM", grace_seconds=GRACE_SECONDS, kill_after_grace=True,
            poll_seconds=POLL_SECONDS,
        )  # fmt: skip
        assert attempt.outcome is StopOutcome.STOPPED and attempt.signals_sent == ["TERM", "KILL"]
        assert log.read_text().endswith("term\n") and not tmux_has(name)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", f"={name}"], capture_output=True)


def test_remote_target_without_an_ssh_run_says_what_to_configure(tmp_path):
    (tmp_path / "train.log").write_text('{"step": 1, "loss": 2.0}\n')
    monitor = monitor_for(tmp_path, 'method = "tmux"\nsession = "exp1"\nremote = true')
    with pytest.raises(StopError, match=r"remote = true needs a machine"):
        monitor.stop_run("job", confirm=True, reason="x")


def test_tmux_session_absent_is_already_stopped():
    needs("tmux")
    attempt = escalate_target(
        TmuxTarget(LocalHost(), unique("absent"), None), "TERM", grace_seconds=1, kill_after_grace=True,
        poll_seconds=POLL_SECONDS,
    )  # fmt: skip
    assert attempt.outcome is StopOutcome.ALREADY_STOPPED and attempt.verified and attempt.signals_sent == []


def test_tmux_session_stopped_over_ssh(ssh_home: SshServer, tmp_path, tmux_session):
    name = tmux_session()
    monitor = monitor_for(
        tmp_path, f'method = "tmux"\nsession = "{name}"\nremote = true\ngrace_seconds = 10',
        run=ssh_home.url(tmp_path / "train.log"),
    )  # fmt: skip
    stop_and_check(monitor, StopMethod.TMUX, ["TERM"], f"tmux session '{name}' on {ssh_home.user}@127.0.0.1")
    assert not tmux_has(name)
    assert (tmp_path / "train.log").read_text().endswith("term\n")


def test_tmux_session_stopped_on_a_host_without_sftp(exec_home: SshServer, tmp_path, tmux_session):
    """The tmux/screen/Slurm/command targets run argv lists over exec (stop.remote) and never ask for SFTP."""
    name = tmux_session()
    monitor = monitor_for(
        tmp_path, f'method = "tmux"\nsession = "{name}"\nremote = true\ngrace_seconds = 10',
        run=exec_home.url(tmp_path / "train.log", alias="nosftp"),
    )  # fmt: skip
    stop_and_check(monitor, StopMethod.TMUX, ["TERM"], f"tmux session '{name}' on {exec_home.user}@127.0.0.1")


def test_tmux_term_ignored_over_ssh_escalates_to_kill(ssh_home: SshServer, tmp_path, tmux_session):
    name = tmux_session("--ignore-term")
    monitor = monitor_for(
        tmp_path, f'method = "tmux"\nsession = "{name}"\nremote = true\ngrace_seconds = {GRACE_SECONDS}',
        run=ssh_home.url(tmp_path / "train.log"),
    )  # fmt: skip
    stop_and_check(monitor, StopMethod.TMUX, ["TERM", "KILL"], f"tmux session '{name}'")
    assert not tmux_has(name)


# --------------------------------------------------------------------------- screen


def test_screen_session_stopped_by_term_locally(tmp_path, screen_session):
    name = screen_session()
    monitor = monitor_for(tmp_path, f'method = "screen"\nsession = "{name}"\ngrace_seconds = 10')
    stop_and_check(monitor, StopMethod.SCREEN, ["TERM"], f"screen session '{name}'")
    assert not screen_has(name)
    assert (tmp_path / "train.log").read_text().endswith("term\n")


def test_screen_term_ignored_escalates_to_kill(tmp_path, screen_session):
    name = screen_session("--ignore-term")
    attempt = escalate_target(
        ScreenTarget(LocalHost(), name), "TERM", grace_seconds=GRACE_SECONDS, kill_after_grace=True,
        poll_seconds=POLL_SECONDS,
    )  # fmt: skip
    assert attempt.outcome is StopOutcome.STOPPED and attempt.verified and attempt.signals_sent == ["TERM", "KILL"]
    assert not screen_has(name)


def test_screen_name_is_matched_exactly(tmp_path, screen_session):
    name = screen_session()
    prefix = name[:-2]  # a prefix of a running session's name is another session
    attempt = escalate_target(
        ScreenTarget(LocalHost(), prefix), "TERM", grace_seconds=1, kill_after_grace=True, poll_seconds=POLL_SECONDS
    )
    assert attempt.outcome is StopOutcome.ALREADY_STOPPED and screen_has(name)


def test_screen_session_stopped_over_ssh(ssh_home: SshServer, tmp_path, screen_session):
    name = screen_session()
    monitor = monitor_for(
        tmp_path, f'method = "screen"\nsession = "{name}"\nremote = true\ngrace_seconds = 10',
        run=ssh_home.url(tmp_path / "train.log"),
    )  # fmt: skip
    stop_and_check(monitor, StopMethod.SCREEN, ["TERM"], f"screen session '{name}' on {ssh_home.user}@127.0.0.1")
    assert not screen_has(name)
    assert (tmp_path / "train.log").read_text().endswith("term\n")


# --------------------------------------------------------------------------- command

# A launcher training-check does not know: `ctl.py stop SIGNAL WORKDIR ARG...` signals the training whose
# pid is in WORKDIR/train.pid and records the argv it got; `ctl.py alive WORKDIR` exits 0 while it runs.
CTL = """
import json, os, signal, sys
action, workdir = sys.argv[1], sys.argv[-1] if sys.argv[1] == "alive" else sys.argv[3]
pid = int(open(os.path.join(workdir, "train.pid")).read())
if action == "alive":
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        sys.exit(1)
    sys.exit(0 if state not in "ZX" else 1)
with open(os.path.join(workdir, "argv.jsonl"), "a") as out:
    out.write(json.dumps(sys.argv[1:]) + "\\n")
os.kill(pid, getattr(signal, "SIG" + sys.argv[2]))
"""
PAYLOADS = ["x; touch {pwned}", "$(touch {pwned})", "`touch {pwned}`", "a\ntouch {pwned}", "' \" | touch {pwned}"]


@pytest.fixture
def launched(tmp_path: Path) -> Iterator:
    """A training started in the background with its pid in train.pid, and ctl.py next to it."""
    (tmp_path / "ctl.py").write_text(CTL)
    children: list[subprocess.Popen[bytes]] = []

    def start(*flags: str) -> subprocess.Popen[bytes]:
        child = subprocess.Popen(training_argv(tmp_path / "train.log", *flags))
        children.append(child)
        (tmp_path / "train.pid").write_text(str(child.pid))
        wait_for_steps(tmp_path / "train.log")
        return child

    yield start
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=10)


def command_stop(tmp_path: Path, *extra: str) -> str:
    ctl = [sys.executable, str(tmp_path / "ctl.py")]
    command = [*ctl, "stop", "{signal}", str(tmp_path), *extra]
    check = [*ctl, "alive", str(tmp_path)]
    return f'method = "command"\ncommand = {json.dumps(command)}\ncheck = {json.dumps(check)}\n'


def test_command_stops_the_training_locally(tmp_path, launched):
    child = launched()
    monitor = monitor_for(tmp_path, command_stop(tmp_path) + "grace_seconds = 10")
    stop_and_check(monitor, StopMethod.COMMAND, ["TERM"], "ctl.py alive")
    assert child.wait(timeout=5) == 0 and (tmp_path / "train.log").read_text().endswith("term\n")


def test_command_term_ignored_escalates_with_kill_in_the_placeholder(tmp_path, launched):
    child = launched("--ignore-term")
    monitor = monitor_for(tmp_path, command_stop(tmp_path) + f"grace_seconds = {GRACE_SECONDS}")
    stop_and_check(monitor, StopMethod.COMMAND, ["TERM", "KILL"], "ctl.py alive")
    assert child.wait(timeout=5) == -9
    sent = [json.loads(line)[1] for line in (tmp_path / "argv.jsonl").read_text().splitlines()]
    assert sent == ["TERM", "KILL"]


def test_command_over_ssh(ssh_home: SshServer, tmp_path, launched):
    child = launched()
    monitor = monitor_for(
        tmp_path, command_stop(tmp_path) + "remote = true\ngrace_seconds = 10",
        run=ssh_home.url(tmp_path / "train.log"),
    )  # fmt: skip
    stop_and_check(monitor, StopMethod.COMMAND, ["TERM"], f"on {ssh_home.user}@127.0.0.1")
    assert child.wait(timeout=5) == 0


@pytest.mark.parametrize("remote", [False, True], ids=["local", "ssh"])
def test_command_arguments_are_inert(ssh_home: SshServer, tmp_path, launched, remote):
    """Shell syntax in a command's arguments arrives as the same bytes and runs nothing, here and over SSH."""
    child = launched()
    pwned = tmp_path / "pwned"
    payloads = [payload.format(pwned=pwned) for payload in PAYLOADS]
    stop = command_stop(tmp_path, *payloads) + f"grace_seconds = 10\nremote = {str(remote).lower()}"
    monitor = monitor_for(tmp_path, stop, run=ssh_home.url(tmp_path / "train.log") if remote else None)
    result = monitor.stop_run("job", confirm=True, reason="x")
    assert result.verified and child.wait(timeout=5) == 0
    received = json.loads((tmp_path / "argv.jsonl").read_text())
    assert received == ["stop", "TERM", str(tmp_path), *payloads]
    assert not pwned.exists()


def test_command_check_that_is_not_installed_is_an_error_naming_it(tmp_path, launched):
    launched()
    stop = 'method = "command"\ncommand = ["true"]\ncheck = ["no-such-program-tc"]\n'
    with pytest.raises(StopError, match="`no-such-program-tc` is not installed"):
        monitor_for(tmp_path, stop).stop_run("job", confirm=True, reason="x")


# --------------------------------------------------------------------------- what the config accepts

INJECTIONS = ["x; touch /tmp/pwned", "$(id)", "`id`", "a\nb", "-t", "a b", "../x", "", "x" * 65]


@pytest.mark.parametrize("payload", INJECTIONS)
@pytest.mark.parametrize(
    ("method", "key"),
    [("tmux", "session"), ("screen", "session"), ("slurm", "job_name"), ("slurm", "job_id")],
)
def test_names_with_shell_syntax_are_refused_by_the_config(tmp_path, method, key, payload):
    extra = f"window = {json.dumps(payload)}\nsession = 'ok'" if key == "window" else f"{key} = {json.dumps(payload)}"
    (tmp_path / "training-check.toml").write_text(
        f'[runs.job]\nrun = "train.log"\n[runs.job.stop]\nmethod = "{method}"\n{extra}\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "training-check.toml")
    assert f"stop.{key}: {payload!r} is refused" in str(caught.value)


@pytest.mark.parametrize("payload", ["x; touch /tmp/pwned", "$(id)", "a.b", "a:b", "a\nb", "-x"])
def test_tmux_windows_and_dotted_names_are_refused(tmp_path, payload):
    for extra in (f"session = 'ok'\nwindow = {json.dumps(payload)}", f"session = {json.dumps(payload)}"):
        (tmp_path / "training-check.toml").write_text(
            f'[runs.job]\nrun = "train.log"\n[runs.job.stop]\nmethod = "tmux"\n{extra}\n'
        )
        with pytest.raises(ConfigError):
            load_config(tmp_path / "training-check.toml")


@pytest.mark.parametrize(
    ("stop", "expected"),
    [
        ('method = "command"\ncommand = "kill -TERM 5"\ncheck = ["true"]', "list of arguments"),
        ('method = "command"\ncommand = ["kill", "{pid}"]\ncheck = ["true"]', "the only placeholder is {signal}"),
        ('method = "command"\ncommand = ["kill", ""]\ncheck = ["true"]', "non-empty string"),
        ('method = "command"\ncommand = ["true"]', "check = [argv"),
        ('method = "tmux"', 'session = "NAME"'),
        ('method = "slurm"\njob_id = "1"\njob_name = "x"', "exactly one of job_id"),
        ('method = "tmux"\nsession = "x"\npid = 5', "pid belongs to method"),
        ('session = "x"\npid = 5', "session belongs to method"),
    ],
)
def test_incomplete_or_mixed_stop_tables_say_what_to_write(tmp_path, stop, expected):
    (tmp_path / "training-check.toml").write_text(f'[runs.job]\nrun = "train.log"\n[runs.job.stop]\n{stop}\n')
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "training-check.toml")
    assert expected in str(caught.value)


@pytest.mark.parametrize("remote", [False, True], ids=["local", "ssh"])
def test_names_are_inert_even_past_the_config(ssh_home: SshServer, tmp_path, remote):
    """Defence in depth: a name that skipped the config's patterns still reaches tmux and screen as one
    argument (argv here, shlex.quote over SSH), so its shell syntax runs nothing."""
    needs("tmux")
    needs("screen")
    pwned = tmp_path / "pwned"
    names = [payload.format(pwned=pwned) for payload in PAYLOADS]
    with contextlib.ExitStack() as stack:
        host = stack.enter_context(remote_host("trainbox", timeout_seconds=10)) if remote else LocalHost()
        for name in names:
            for target in (TmuxTarget(host, name, None), TmuxTarget(host, "ok", name), ScreenTarget(host, name)):
                attempt = escalate_target(target, "TERM", grace_seconds=0, kill_after_grace=False, poll_seconds=0.05)
                assert attempt.outcome is StopOutcome.ALREADY_STOPPED
    assert not pwned.exists()
