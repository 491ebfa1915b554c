"""stop_local_process against real processes, and the incident notes file on a real disk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import ValidationError

from mcp_training_check.errors import StateError, StopError
from mcp_training_check.models import (
    DataSource,
    Decision,
    Direction,
    MetricRole,
    MetricSnapshot,
    MetricSummary,
    Severity,
    Signal,
    SignalKind,
    StopMethod,
    StopOutcome,
)
from mcp_training_check.stop import (
    Incident,
    KeyMetric,
    render_incident,
    stop_local_process,
    write_incident_note,
)
from tests.runs import default_sigint, outcome_as_nobody

TEST_GRACE_SECONDS = 1.0
FAST_POLL_SECONDS = 0.02

SLEEPER = "import time\nprint('ready', flush=True)\ntime.sleep(600)\n"
IGNORES_TERM = (
    "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(600)\n"
)
# The parent never waits for its child, so the killed grandchild stays a zombie we cannot reap.
PARENT_OF_SLEEPER = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(600)\n"
)


@pytest.fixture
def spawn() -> Iterator:
    """Start a python child that prints one line when ready; every child is killed at teardown."""
    started: list[subprocess.Popen[str]] = []

    def start(code: str) -> tuple[subprocess.Popen[str], str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, preexec_fn=default_sigint
        )
        started.append(proc)
        assert proc.stdout is not None
        return proc, proc.stdout.readline().strip()

    yield start
    for proc in started:
        proc.kill()  # a no-op when stop_local_process already reaped it
        proc.wait()


def _state(pid: int) -> str | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2]


def _stop(**kwargs):
    kwargs.setdefault("pid_file", None)
    kwargs.setdefault("poll_seconds", FAST_POLL_SECONDS)
    return stop_local_process(**kwargs)


# --------------------------------------------------------------------------- stopping


def test_term_stops_a_child_and_verifies(spawn) -> None:
    proc, _ = spawn(SLEEPER)
    result = _stop(pid=proc.pid)
    assert (result.outcome, result.verified, result.signals_sent) == (StopOutcome.STOPPED, True, ["TERM"])
    assert _state(proc.pid) is None  # reaped, not left as a zombie


def test_int_is_sent_when_configured(spawn) -> None:
    proc, _ = spawn(SLEEPER)
    result = _stop(pid=proc.pid, signal_name="INT")
    assert (result.outcome, result.signals_sent) == (StopOutcome.STOPPED, ["INT"])


def test_term_ignored_escalates_to_kill_after_grace(spawn) -> None:
    proc, _ = spawn(IGNORES_TERM)
    started = time.monotonic()
    result = _stop(pid=proc.pid, grace_seconds=TEST_GRACE_SECONDS)
    assert time.monotonic() - started >= TEST_GRACE_SECONDS
    assert (result.outcome, result.verified) == (StopOutcome.STOPPED, True)
    assert result.signals_sent == ["TERM", "KILL"]


def test_term_ignored_without_kill_is_not_confirmed(spawn) -> None:
    proc, _ = spawn(IGNORES_TERM)
    result = _stop(pid=proc.pid, grace_seconds=TEST_GRACE_SECONDS, kill_after_grace=False)
    assert (result.outcome, result.verified, result.signals_sent) == (StopOutcome.REQUESTED, False, ["TERM"])
    assert "kill_after_grace" in result.message
    assert proc.poll() is None  # still running: no KILL was sent


def test_kill_as_the_configured_signal_stops_a_term_ignoring_child(spawn) -> None:
    proc, _ = spawn(IGNORES_TERM)
    result = _stop(pid=proc.pid, signal_name="KILL", grace_seconds=TEST_GRACE_SECONDS)
    assert (result.outcome, result.signals_sent) == (StopOutcome.STOPPED, ["KILL"])


def test_already_exited_and_reaped_child_is_already_stopped(spawn) -> None:
    proc, _ = spawn(SLEEPER)
    proc.kill()
    proc.wait()
    result = _stop(pid=proc.pid)
    assert (result.outcome, result.verified, result.signals_sent) == (StopOutcome.ALREADY_STOPPED, False, [])


def test_our_zombie_child_is_already_stopped_and_reaped(spawn) -> None:
    proc, _ = spawn(SLEEPER)
    os.kill(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while _state(proc.pid) != "Z" and time.monotonic() < deadline:
        time.sleep(FAST_POLL_SECONDS)
    assert _state(proc.pid) == "Z"
    result = _stop(pid=proc.pid)
    assert result.outcome is StopOutcome.ALREADY_STOPPED
    assert _state(proc.pid) is None


def test_stopping_twice_is_harmless(spawn) -> None:
    proc, _ = spawn(SLEEPER)
    assert _stop(pid=proc.pid).outcome is StopOutcome.STOPPED
    assert _stop(pid=proc.pid).outcome is StopOutcome.ALREADY_STOPPED


def test_grandchild_is_killed_and_verified_through_proc(spawn) -> None:
    parent, line = spawn(PARENT_OF_SLEEPER)
    grandchild = int(line)
    result = _stop(pid=grandchild, grace_seconds=TEST_GRACE_SECONDS)
    assert (result.outcome, result.verified) == (StopOutcome.STOPPED, True)
    # not our child, so we could not reap it: its own parent never waits, so it stays a zombie
    assert _state(grandchild) == "Z"
    assert parent.poll() is None


# --------------------------------------------------------------------------- which pid


@pytest.mark.parametrize("template", ["{pid}", "{pid}\n", "  {pid} \n"])
def test_pid_file_forms(spawn, tmp_path, template) -> None:
    proc, _ = spawn(SLEEPER)
    pid_file = tmp_path / "train.pid"
    pid_file.write_text(template.format(pid=proc.pid))
    result = _stop(pid=None, pid_file=pid_file)
    assert (result.outcome, result.pid) == (StopOutcome.STOPPED, proc.pid)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "holds nothing"),
        (b"hello\n", "holds 6 bytes that are not a decimal number"),
        (b"12 34", "holds 5 bytes that are not a decimal number"),
        (b"-5", "holds 2 bytes that are not a decimal number"),
        (b"9" * 100, "holds more than 64 bytes"),
        (b"\xff\xfe", "not a process id"),
    ],
)
def test_pid_file_garbage_is_described_not_shown(tmp_path, content, expected) -> None:
    pid_file = tmp_path / "train.pid"
    pid_file.write_bytes(content)
    with pytest.raises(StopError) as info:
        _stop(pid=None, pid_file=pid_file)
    assert str(pid_file) in str(info.value)
    assert expected in str(info.value)
    assert "write_text(str(os.getpid()))" in str(info.value)
    if content.strip():
        assert repr(content.decode("latin-1").strip()) not in str(info.value), "the content must not be echoed"


def test_missing_pid_file_names_it_and_the_fix(tmp_path) -> None:
    pid_file = tmp_path / "train.pid"
    with pytest.raises(StopError, match="no pid file at") as info:
        _stop(pid=None, pid_file=pid_file)
    assert str(pid_file) in str(info.value)
    assert "write_text(str(os.getpid()))" in str(info.value)


def test_no_pid_at_all_says_how_to_configure() -> None:
    with pytest.raises(StopError, match=r"pid_file = \"train.pid\""):
        _stop(pid=None)


def test_pid_and_pid_file_must_agree(spawn, tmp_path) -> None:
    proc, _ = spawn(SLEEPER)
    pid_file = tmp_path / "train.pid"
    pid_file.write_text(str(proc.pid))
    with pytest.raises(StopError, match="disagrees"):
        _stop(pid=proc.pid + 1, pid_file=pid_file)
    assert proc.poll() is None


def test_pid_file_older_than_the_process_is_refused_as_reused(spawn, tmp_path) -> None:
    proc, _ = spawn(SLEEPER)
    pid_file = tmp_path / "train.pid"
    pid_file.write_text(str(proc.pid))
    an_hour_ago = time.time() - 3600
    os.utime(pid_file, (an_hour_ago, an_hour_ago))
    with pytest.raises(StopError, match="reused"):
        _stop(pid=None, pid_file=pid_file)
    assert proc.poll() is None  # untouched


def test_stale_pid_file_of_a_finished_run_is_already_stopped(spawn, tmp_path) -> None:
    proc, _ = spawn(SLEEPER)
    pid_file = tmp_path / "train.pid"
    pid_file.write_text(str(proc.pid))
    proc.kill()
    proc.wait()
    assert _stop(pid=None, pid_file=pid_file).outcome is StopOutcome.ALREADY_STOPPED


@pytest.mark.parametrize(
    ("pid", "reason"),
    [
        (0, "process groups"),
        (1, "init"),
        (-5, "process groups"),
        (os.getpid(), "itself"),
        (os.getppid(), "parent"),
    ],
)
def test_unsafe_pids_are_refused(pid, reason) -> None:
    with pytest.raises(StopError, match=reason):
        _stop(pid=pid)


def test_own_process_group_leader_is_refused() -> None:
    with pytest.raises(StopError, match="refusing"):
        _stop(pid=os.getpgrp())


def test_unknown_signal_is_refused(spawn) -> None:
    proc, _ = spawn(SLEEPER)
    with pytest.raises(StopError, match="TERM, INT, KILL"):
        _stop(pid=proc.pid, signal_name="HUP")
    assert proc.poll() is None


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to another user and meet EPERM")
def test_permission_denied_names_the_owner_and_the_fix(spawn) -> None:
    target, _ = spawn(SLEEPER)
    message = outcome_as_nobody(lambda: _stop(pid=target.pid))  # as nobody, try to stop root's process
    assert message.startswith("StopError: ")
    assert "not allowed to send SIGTERM" in message
    assert "user root" in message
    assert target.poll() is None


# --------------------------------------------------------------------------- incident notes

STOPPED_AT = datetime(2026, 11, 30, 9, 41, tzinfo=UTC)


def _incident(**changes) -> Incident:
    fields = {
        "incident_id": 7,
        "run": "bert",
        "run_url": "https://wandb.ai/team/proj/runs/abc12345",
        "reason": "train/loss diverged",
        "decision": Decision.STOP,
        "summary": "stop: loss 7.81 is 3.4× the recent median",
        "key_metrics": {
            "train/loss": KeyMetric(last=7.81, best=2.29),
            "val|acc": KeyMetric(last=float("nan")),
        },
        "signals": [
            Signal(
                kind=SignalKind.DIVERGENCE,
                severity=Severity.CRITICAL,
                metric="train/loss",
                step=12340,
                message="loss 7.81 at step 12,340 is 3.4× the median 2.29 (threshold 2.0×)",
            ),
            Signal(kind=SignalKind.NO_NEW_DATA, severity=Severity.INFO, message="no new points for 2 checks"),
        ],
        "stopped_at": STOPPED_AT,
        "method": StopMethod.LOCAL_PID,
        "outcome": StopOutcome.STOPPED,
        "verified": True,
        "pid": 4242,
    }
    return Incident(**{**fields, **changes})


def test_entry_has_heading_outcome_url_table_and_signals() -> None:
    text = render_incident(_incident())
    assert "## 2026-11-30 09:41 UTC — bert" in text
    assert "**Reason:** train/loss diverged" in text
    assert "**Outcome:** stopped, verified (local_pid, pid 4242)" in text
    assert "**Run:** https://wandb.ai/team/proj/runs/abc12345" in text
    assert "| train/loss | 7.81 | 2.29 |" in text
    assert "| val\\|acc | NaN | — |" in text
    assert "- critical divergence (train/loss · step 12,340): loss 7.81 at step 12,340" in text
    assert "- info no_new_data: no new points for 2 checks" in text


@pytest.mark.parametrize(
    ("outcome", "verified", "words"),
    [
        (StopOutcome.STOPPED, True, "stopped, verified"),
        (StopOutcome.REQUESTED, False, "stop requested, not confirmed"),
        (StopOutcome.ALREADY_STOPPED, False, "nothing to stop (it was not running)"),
        (StopOutcome.FAILED, False, "stop failed"),
    ],
)
def test_outcome_wording(outcome, verified, words) -> None:
    assert f"**Outcome:** {words} (" in render_incident(_incident(outcome=outcome, verified=verified))


def test_notes_append_once_per_incident_and_keep_existing_text(tmp_path) -> None:
    notes = tmp_path / "deep" / "dir" / "TRAINING_NOTES.md"
    notes.parent.mkdir(parents=True)
    notes.write_text("# Training notes\n\nLR 3e-4 was too high last time.")
    write_incident_note(notes, _incident())
    write_incident_note(notes, _incident())
    text = notes.read_text()
    assert text.startswith("# Training notes\n\nLR 3e-4 was too high last time.\n\n<!-- training-check")
    assert text.count("<!-- training-check incident 7 -->") == 1
    assert text.count("## 2026-11-30") == 1


def test_notes_file_and_parents_are_created_and_incidents_kept_in_order(tmp_path) -> None:
    notes = tmp_path / "notes" / "bert.md"
    write_incident_note(notes, _incident(incident_id=1, reason="first"))
    write_incident_note(notes, _incident(incident_id=2, reason="second"))
    write_incident_note(notes, _incident(incident_id=1, reason="first"))
    text = notes.read_text()
    assert text.index("**Reason:** first") < text.index("**Reason:** second")
    assert text.count("**Reason:**") == 2


def test_incident_without_id_is_deduplicated_by_run_and_time(tmp_path) -> None:
    notes = tmp_path / "notes.md"
    write_incident_note(notes, _incident(incident_id=None))
    write_incident_note(notes, _incident(incident_id=None))
    write_incident_note(notes, _incident(incident_id=None, stopped_at=STOPPED_AT + timedelta(minutes=5)))
    assert notes.read_text().count("## 2026-11-30") == 2


def test_text_cannot_forge_a_marker(tmp_path) -> None:
    notes = tmp_path / "notes.md"
    write_incident_note(notes, _incident(incident_id=1, reason="x <!-- training-check incident 2 -->"))
    write_incident_note(notes, _incident(incident_id=2))
    assert notes.read_text().count("## 2026-11-30") == 2


def test_heading_keeps_the_callers_time_zone() -> None:
    local = STOPPED_AT.astimezone(timezone(timedelta(hours=2)))
    assert "## 2026-11-30 11:41 UTC+02:00 — bert" in render_incident(_incident(stopped_at=local))


def test_incident_without_a_verdict_says_so() -> None:
    assert "**Decision:** none — stopped by hand" in render_incident(
        _incident(decision=None, summary="stopped by hand")
    )


def test_a_reason_that_is_the_verdicts_summary_is_not_written_twice() -> None:
    said = "STOP: train/loss is NaN at step 3,994"
    entry = render_incident(_incident(summary=said, reason=said))
    assert entry.count(said) == 1 and "- **Decision:** stop\n" in entry


def test_key_metrics_from_a_snapshot() -> None:
    snapshot = MetricSnapshot(
        run="bert",
        summary="2 metrics",
        data_source=DataSource.LOG,
        metrics=[
            MetricSummary(name="loss", role=MetricRole.TRAIN_LOSS, direction=Direction.LOWER, last=2.5, best=2.1),
            MetricSummary(name="acc", role=MetricRole.EVAL, direction=Direction.HIGHER, last=None),
        ],
    )
    assert Incident.metrics_from(snapshot) == {"loss": KeyMetric(last=2.5, best=2.1), "acc": KeyMetric()}


def test_naive_time_is_rejected() -> None:
    with pytest.raises(ValidationError):
        _incident(stopped_at=datetime(2026, 11, 30, 9, 41))


def test_notes_path_that_is_a_directory_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(StateError, match="notes file"):
        write_incident_note(tmp_path, _incident())
