"""Logs on a host whose sshd has no ``Subsystem sftp`` (tests/sshd.py `sshd_without_sftp`, a real OpenSSH
server): read through exec channels (stat, tail -c, head -c) exactly as the SFTP and local readers read."""

from __future__ import annotations

import errno
import os
import pwd
import time
from pathlib import Path

import numpy as np
import pytest

from mcp_training_check.config import parse_run
from mcp_training_check.errors import RunNotFound
from mcp_training_check.models import DataSource, RunKind, RunRef
from mcp_training_check.service import Monitor
from mcp_training_check.sources import SshLogSource, log_tail
from mcp_training_check.sources import ssh as ssh_module

from .sshd import Sshd, SshServer, running_sshd
from .test_first_check_logs import LIMITS, STEPS, assert_fill_in_matches_a_full_read, jsonl, write
from .test_ssh_source import assert_reads_like_local, jsonl_rows

EXEC_NOTE = "read through an exec channel"


def exec_source(path: Path | str) -> SshLogSource:
    return SshLogSource(parse_run(f"ssh://nosftp{path}"), timeout_seconds=5.0)


def sftp_refusals(sshd: Sshd) -> int:
    return sshd.log_text().count("subsystem request for sftp by user")


def test_growing_log_is_read_incrementally_through_exec(exec_home: SshServer, sshd_without_sftp: Sshd, tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_text(jsonl_rows(0, 300))
    refusals = sftp_refusals(sshd_without_sftp)
    monitor = Monitor()
    run = exec_home.url(log, alias="nosftp")
    first = monitor.check(run)
    assert first.snapshot.data_source is DataSource.SSH
    assert first.snapshot.new_points == 600 and first.snapshot.last_step == 299
    assert any(EXEC_NOTE in w and "nosftp has no SFTP subsystem" in w for w in first.snapshot.warnings)
    with log.open("a") as handle:
        handle.write(jsonl_rows(300, 350))
    second = monitor.check(run)
    assert second.snapshot.new_points == 100 and second.snapshot.last_step == 349 and not second.snapshot.restarted
    assert monitor.check(run).snapshot.new_points == 0
    cursor = monitor.store.get_cursor(monitor.context(run).key)
    assert cursor is not None and cursor["ssh"]["offset"] == log.stat().st_size
    assert cursor["ssh"]["identity"]["inode"] == log.stat().st_ino, "the inode comes from the remote stat"
    steps = monitor.store.load_history(monitor.context(run).key).metrics["loss"].steps
    assert len(steps) == 350 and len(set(steps.tolist())) == 350, "no row is read twice"
    assert sftp_refusals(sshd_without_sftp) == refusals + 3, "SFTP was asked for once per connection"


def test_a_host_with_sftp_says_nothing_about_the_transport(ssh_home: SshServer, tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_text(jsonl_rows(0, 10))
    batch = SshLogSource(parse_run(ssh_home.url(log)), timeout_seconds=5.0).read(None)
    assert len(batch.series["loss"]) == 10 and not batch.notes


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "hf", "printed"])
def test_exec_reads_exactly_what_the_local_reader_reads(exec_home, tmp_path, fmt):
    """Same bytes, same cut mid-line: the same points, offsets and parser state, first and second read."""
    assert_reads_like_local(tmp_path, fmt, exec_source)


def test_truncated_log_is_read_again_from_the_start(exec_home, tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_text(jsonl_rows(0, 200))
    monitor = Monitor()
    monitor.check(exec_home.url(log, alias="nosftp"))
    log.write_text(jsonl_rows(0, 20))  # same inode, shorter: the run restarted and truncated its log
    report = monitor.check(exec_home.url(log, alias="nosftp"))
    assert report.snapshot.restarted and report.snapshot.last_step == 19


def test_rotated_log_with_the_same_head_is_caught_by_its_inode(exec_home, tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_text(jsonl_rows(0, 100))
    source = exec_source(log)
    first = source.read(None)
    log.rename(tmp_path / "metrics.jsonl.1")
    log.write_text(jsonl_rows(0, 150))
    second = source.read(first.cursor)
    assert second.restarted and second.series["loss"].steps.tolist() == list(range(150))


def test_partial_last_line_completed_later_is_read_exactly_once(exec_home, tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_text(jsonl_rows(0, 100) + '{"step": 100, "lo')
    source = exec_source(log)
    first = source.read(None)
    assert first.series["loss"].steps[-1] == 99
    with log.open("a") as handle:
        handle.write('ss": 0.5, "lr": 3e-4}\n' + jsonl_rows(101, 103))
    second = source.read(first.cursor)
    assert second.series["loss"].steps.tolist() == [100, 101, 102] and second.series["loss"].values[0] == 0.5


def test_long_log_tail_first_and_fill_in_through_exec(exec_home, tmp_path, monkeypatch):
    """A long log's first check through exec: head, sampled windows (one command each), the tail; the fill-in
    then makes the stored history what a full local read stores."""
    monkeypatch.setattr(log_tail, "DEFAULT_LIMITS", LIMITS)
    path = tmp_path / "train.jsonl"
    path.write_text("")
    write(path, jsonl, range(STEPS))
    assert_fill_in_matches_a_full_read(tmp_path, path, exec_source(path), monkeypatch)


def test_window_boundaries_do_not_lose_bytes(exec_home, tmp_path, monkeypatch):
    monkeypatch.setattr(ssh_module, "WINDOW_BYTES", ssh_module.CHUNK_BYTES)
    log = tmp_path / "big.jsonl"
    log.write_text(jsonl_rows(0, 20000))
    assert log.stat().st_size > 3 * ssh_module.CHUNK_BYTES
    batch = exec_source(log).read(None)
    assert np.array_equal(batch.series["loss"].steps, np.arange(20000))


# --------------------------------------------------------------------------- failures and injection


def test_missing_file_and_directory_through_exec(exec_home, tmp_path):
    with pytest.raises(RunNotFound, match=r"no log file .*nope/train.log on .*Host nosftp"):
        exec_source(tmp_path / "nope" / "train.log").read(None)
    with pytest.raises(RunNotFound, match="is a directory"):
        exec_source(tmp_path).read(None)



def test_fifo_log_is_refused_at_once_and_never_opened(exec_home, tmp_path):
    """``head`` on a FIFO would block on the host until a writer came (and this read until its timeout)."""
    fifo = tmp_path / "train.log"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(RunNotFound, match="is a FIFO"):
        SshLogSource(parse_run(f"ssh://nosftp{fifo}"), timeout_seconds=20.0).read(None)
    assert time.monotonic() - started < 5.0
    with pytest.raises(OSError) as caught:  # ENXIO: no process has it open to read, no `head` left waiting
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert caught.value.errno == errno.ENXIO

PAYLOADS = [
    "semi; touch {canary}; x.log",
    "subst $(touch {canary}).log",
    "tick `touch {canary}`.log",
    "quote ' touch {canary} '.log",
    'dquote " $(touch {canary}) ".log',
    "new\nline; touch {canary}\n.log",
    "-n dash.log",
    "glob *.log",
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_shell_characters_in_the_remote_path_stay_inert(exec_home, tmp_path, payload):
    """The path is one quoted argument: the file with that exact name is read, no command runs. An injected
    ``touch NAME`` would run in the login directory of the remote user, where the canary is looked for."""
    canary = Path(pwd.getpwuid(os.getuid()).pw_dir) / f"training-check-pwned-{tmp_path.name}"
    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / payload.format(canary=canary.name)
    log.write_text(jsonl_rows(0, 7))
    (tmp_path / "logs" / "other.log").write_text(jsonl_rows(0, 3))  # what a glob or split path would reach
    try:
        ref = RunRef(raw=f"ssh://nosftp{log}", kind=RunKind.SSH, host="nosftp", path=str(log))
        batch = SshLogSource(ref, timeout_seconds=5.0).read(None)
        assert batch.series["loss"].steps.tolist() == list(range(7))
        assert any(EXEC_NOTE in w for w in batch.notes)
        missing = RunRef(raw="x", kind=RunKind.SSH, host="nosftp", path=f"{log}.missing")
        with pytest.raises(RunNotFound):
            SshLogSource(missing, timeout_seconds=5.0).read(None)
        assert not canary.exists()
    finally:
        canary.unlink(missing_ok=True)


def test_an_sftp_server_that_is_configured_but_missing_falls_back_too(sshd_server: SshServer, tmp_path, monkeypatch):
    """``Subsystem sftp /nonexistent``: sshd accepts the request, the program cannot start, and paramiko meets
    the end of the channel during SFTP negotiation ("EOF during negotiation") instead of a refusal."""
    user_key = (sshd_server.base / "user_ed25519.pub").read_text().strip()
    broken = "Subsystem sftp /nonexistent/sftp-server\nLogLevel VERBOSE\n"
    with running_sshd(tmp_path / "sshd", authorized_key=user_key, sftp=False, extra=broken) as sshd:
        home = tmp_path / "home"
        (home / ".ssh").mkdir(parents=True)
        (home / ".ssh" / "known_hosts").write_text(f"{sshd.known_hosts_name} {sshd.host_key}\n")
        (home / ".ssh" / "config").write_text(
            f"Host nosftp\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd_server.user}\n"
            f"  IdentityFile {sshd_server.base / 'user_ed25519'}\n"
        )
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
        log = tmp_path / "metrics.jsonl"
        log.write_text(jsonl_rows(0, 40))
        batch = exec_source(log).read(None)
    assert batch.series["loss"].steps.tolist() == list(range(40))
    assert any(EXEC_NOTE in w for w in batch.notes)
