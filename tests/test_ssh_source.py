"""Logs read over SSH from a real OpenSSH server on 127.0.0.1 (tests/sshd.py): incremental reads through
the real Monitor, the same results as the local reader, restarts, and every failure's message."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcp_training_check.config import load_config, parse_run
from mcp_training_check.errors import RunNotFound, SourceUnavailable
from mcp_training_check.models import DataSource, Decision
from mcp_training_check.service import Monitor
from mcp_training_check.sources import LogFileSource, SshLogSource
from mcp_training_check.sources.base import ReadBatch

from .sshd import SshServer, free_port
from .test_cli import write_formats

TIMEOUT_SECONDS = 1.0
TIMEOUT_SLACK_SECONDS = 4.0  # connect + banner each bounded by the timeout, plus a loaded machine


def jsonl_rows(start: int, stop: int) -> str:
    return "".join(json.dumps({"step": s, "loss": 3.0 / (1 + s / 50), "lr": 3e-4}) + "\n" for s in range(start, stop))


def ssh_source(server: SshServer, path: Path, alias: str = "trainbox", timeout: float = 5.0) -> SshLogSource:
    return SshLogSource(parse_run(server.url(path, alias)), timeout_seconds=timeout)


def points(batch: ReadBatch) -> dict[str, list[tuple[int, float]]]:
    return {name: list(zip(c.steps.tolist(), c.values.tolist(), strict=True)) for name, c in batch.series.items()}


def with_config(tmp_path: Path, text: str) -> Monitor:
    (tmp_path / "training-check.toml").write_text(text)
    return Monitor(config=load_config(tmp_path / "training-check.toml"))


# --------------------------------------------------------------------------- reading


def test_growing_jsonl_log_is_read_incrementally_across_checks(ssh_home, tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_text(jsonl_rows(0, 300))
    monitor = Monitor()
    run = ssh_home.url(log)
    first = monitor.check(run)
    assert first.snapshot.data_source is DataSource.SSH
    assert first.snapshot.new_points == 600 and first.snapshot.last_step == 299
    assert first.verdict is not None and first.verdict.decision is Decision.CONTINUE
    with log.open("a") as handle:
        handle.write(jsonl_rows(300, 350))
    second = monitor.check(run)
    assert second.snapshot.new_points == 100, "only the 50 appended rows (2 metrics each) are read"
    assert second.snapshot.last_step == 349 and not second.snapshot.restarted
    assert monitor.check(run).snapshot.new_points == 0
    cursor = monitor.store.get_cursor(monitor.context(run).key)
    assert cursor is not None and cursor["ssh"]["offset"] == log.stat().st_size
    assert cursor["ssh"]["identity"]["inode"] == log.stat().st_ino, "the inode comes from the remote stat"
    history = monitor.store.load_history(monitor.context(run).key)
    steps = history.metrics["loss"].steps
    assert len(steps) == 350 and len(set(steps.tolist())) == 350, "no row is read twice"


def test_a_history_document_rewritten_each_epoch_is_read_incrementally(ssh_home, tmp_path):
    """A Keras History dict a callback rewrites whole each epoch (`sources.logdoc`): over SSH as locally, each
    check takes the epochs it has not read."""
    history = tmp_path / "history.json"

    def write(epochs: int) -> None:
        history.write_text(json.dumps({"loss": [2.0 / (1 + e) for e in range(epochs)],
                                       "val_loss": [2.2 / (1 + e) for e in range(epochs)]}))  # fmt: skip

    write(20)
    monitor = Monitor()
    run = ssh_home.url(history)
    first = monitor.check(run)
    assert first.snapshot.data_source is DataSource.SSH and first.snapshot.new_points == 40
    write(26)
    second = monitor.check(run)
    assert second.snapshot.new_points == 12 and second.snapshot.last_step == 26 and not second.snapshot.restarted
    assert any("(6 of its 26)" in w for w in second.snapshot.warnings), second.snapshot.warnings


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "hf", "printed"])
def test_ssh_reads_exactly_what_the_local_reader_reads(ssh_home, tmp_path, fmt):
    """Same bytes, same cut mid-line: the same points, offsets and parser state, first and second read."""
    assert_reads_like_local(tmp_path, fmt, lambda remote: ssh_source(ssh_home, remote))


def assert_reads_like_local(tmp_path: Path, fmt: str, remote_source: Callable[[Path], Any]) -> None:
    """A log of ``fmt`` cut mid-line, then completed, read by `LogFileSource` and by ``remote_source`` (an SSH
    reader of the same bytes): the same points, offsets and parser state at both reads."""
    (tmp_path / "all").mkdir()
    full = write_formats(tmp_path / "all", steps=300)[fmt].read_bytes()
    cut = full.index(b"\n", len(full) // 2) + 5  # a partial line at the end of the first read
    local, remote = tmp_path / "local" / f"log{fmt}.{_suffix(fmt)}", tmp_path / "remote" / f"log{fmt}.{_suffix(fmt)}"
    for path in (local, remote):
        path.parent.mkdir()
        path.write_bytes(full[:cut])
    source_local, source_remote = LogFileSource(local), remote_source(remote)
    first_local, first_remote = source_local.read(None), source_remote.read(None)
    for path in (local, remote):
        with path.open("ab") as handle:
            handle.write(full[cut:])
    second_local = source_local.read(first_local.cursor)
    second_remote = source_remote.read(first_remote.cursor)
    for mine, theirs in ((first_remote, first_local), (second_remote, second_local)):
        assert points(mine) == points(theirs) and points(mine)
        assert mine.cursor["offset"] == theirs.cursor["offset"]
        assert mine.cursor["parser"] == theirs.cursor["parser"]
        assert not mine.restarted
    assert first_remote.cursor["offset"] < cut, "the partial last line waits for its end"
    assert second_remote.cursor["offset"] == len(full)


def _suffix(fmt: str) -> str:
    return {"jsonl": "jsonl", "csv": "csv", "hf": "log", "printed": "log"}[fmt]


def test_hf_trainer_log_with_evals_through_the_monitor(ssh_home, tmp_path):
    log = tmp_path / "trainer.log"
    lines = []
    for step in range(1, 401):
        lines.append(str({"loss": round(3.0 / (1 + step / 40), 4), "grad_norm": 1.1, "learning_rate": 5e-5}))
        if step % 100 == 0:
            lines.append(str({"eval_loss": round(2.5 / (1 + step / 80), 4), "eval_runtime": 1.2, "epoch": step / 100}))
    log.write_text("\n".join(lines) + "\n")
    report = Monitor().check(ssh_home.url(log))
    assert report.snapshot.data_source is DataSource.SSH
    names = {m.name: m for m in report.snapshot.metrics}
    assert names["loss"].role.value == "train_loss" and names["eval_loss"].role.value.startswith("eval")
    assert report.snapshot.last_step == 400
    assert report.verdict is not None and report.verdict.decision is Decision.CONTINUE


def test_partial_last_line_completed_later_is_read_exactly_once(ssh_home, tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_text(jsonl_rows(0, 100) + '{"step": 100, "lo')
    source = ssh_source(ssh_home, log)
    first = source.read(None)
    assert first.series["loss"].steps[-1] == 99 and first.skipped_chunks == 0
    with log.open("a") as handle:
        handle.write('ss": 0.5, "lr": 3e-4}\n' + jsonl_rows(101, 103))
    second = source.read(first.cursor)
    assert second.series["loss"].steps.tolist() == [100, 101, 102]
    assert second.series["loss"].values[0] == 0.5 and second.skipped_chunks == 0


def test_truncated_log_is_read_again_from_the_start(ssh_home, tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_text(jsonl_rows(0, 200))
    monitor = Monitor()
    monitor.check(ssh_home.url(log))
    log.write_text(jsonl_rows(0, 20))  # same inode, shorter: the run restarted and truncated its log
    report = monitor.check(ssh_home.url(log))
    assert report.snapshot.restarted and report.snapshot.last_step == 19


def test_rotated_log_with_the_same_head_is_caught_by_its_inode(ssh_home, tmp_path):
    """A rerun with the same seed writes the same first lines and may grow past the old offset before the
    next check: only the inode tells the new file from the old one."""
    log = tmp_path / "metrics.jsonl"
    log.write_text(jsonl_rows(0, 100))
    source = ssh_source(ssh_home, log)
    first = source.read(None)
    log.rename(tmp_path / "metrics.jsonl.1")
    log.write_text(jsonl_rows(0, 150))
    second = source.read(first.cursor)
    assert second.restarted
    assert second.series["loss"].steps.tolist() == list(range(150))


# --------------------------------------------------------------------------- failures


def test_unknown_host_key_is_refused_nothing_stored_and_the_fix_named(ssh_home, tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_text(jsonl_rows(0, 50))
    before = ssh_home.stranger_known_hosts.read_bytes()
    monitor = Monitor()
    run = ssh_home.url(log, alias="stranger")
    report = monitor.check(run)
    assert report.snapshot.data_source is DataSource.UNREACHABLE and report.verdict is None
    assert report.next_action == "fix_source"
    message = " ".join(report.snapshot.warnings)
    assert "not in known_hosts" in message and "SHA256:" in message
    assert f"ssh-keyscan -p {ssh_home.port} 127.0.0.1 >> {ssh_home.stranger_known_hosts}" in message
    assert monitor.store.get_cursor(monitor.context(run).key) is None
    assert not monitor.store.load_history(monitor.context(run).key).metrics
    assert ssh_home.stranger_known_hosts.read_bytes() == before, "no host key is ever accepted on the fly"


def test_wrong_key_is_an_authentication_error_with_the_fix(ssh_home, tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_text(jsonl_rows(0, 50))
    with pytest.raises(SourceUnavailable) as caught:
        ssh_source(ssh_home, log, alias="wrongkey").read(None)
    message = str(caught.value)
    assert f"refused to log in {ssh_home.user}" in message and "wrong_ed25519" in message
    assert "authorized_keys" in message and f"ssh-copy-id -p {ssh_home.port}" in message


def test_missing_file_names_the_host_and_the_path(ssh_home, tmp_path):
    missing = tmp_path / "nope" / "train.log"
    with pytest.raises(RunNotFound) as caught:
        Monitor().read_metrics(ssh_home.url(missing))
    assert str(missing) in str(caught.value) and f"127.0.0.1:{ssh_home.port}" in str(caught.value)
    assert "Host trainbox" in str(caught.value)


def test_directory_is_not_a_log(ssh_home, tmp_path):
    with pytest.raises(RunNotFound, match="is a directory") as caught:
        ssh_source(ssh_home, tmp_path).read(None)
    assert "events.out.tfevents" in str(caught.value)  # a TensorBoard user learns which file to name


def test_closed_port_is_reported_at_once(ssh_home, tmp_path):
    port = free_port()
    started = time.monotonic()
    with pytest.raises(SourceUnavailable) as caught:
        SshLogSource(parse_run(f"ssh://127.0.0.1:{port}{tmp_path}/x.log"), timeout_seconds=TIMEOUT_SECONDS).read(None)
    assert time.monotonic() - started < TIMEOUT_SLACK_SECONDS
    assert f"127.0.0.1:{port}" in str(caught.value) and "sshd runs there" in str(caught.value)


def test_silent_host_gives_an_error_within_the_configured_timeout(ssh_home, tmp_path, silent_port):
    monitor = with_config(tmp_path, f"[defaults]\nssh_timeout_seconds = {TIMEOUT_SECONDS}\n")
    started = time.monotonic()
    report = monitor.check(f"ssh://127.0.0.1:{silent_port}{tmp_path}/train.log")
    assert time.monotonic() - started < TIMEOUT_SECONDS + TIMEOUT_SLACK_SECONDS
    assert report.snapshot.data_source is DataSource.UNREACHABLE and report.verdict is None
    assert f"did not answer within {TIMEOUT_SECONDS:g} s" in " ".join(report.snapshot.warnings)


# --------------------------------------------------------------------------- fallback and config


def test_ssh_log_fallback_is_read_when_the_primary_fails(ssh_home, tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(f"step {s} | loss {3.0 / (1 + s / 50):.4f}\n" for s in range(200)))
    dead = f"ssh://127.0.0.1:{free_port()}/nowhere/train.log"
    monitor = with_config(
        tmp_path, f'[runs.remote]\nrun = "{dead}"\nlog_fallback = "{ssh_home.url(log)}"\n'
    )
    report = monitor.check("remote")
    assert report.snapshot.data_source is DataSource.LOG_FALLBACK
    assert report.snapshot.last_step == 199 and report.verdict is not None
    assert any("nothing accepts SSH connections" in w for w in report.snapshot.warnings)


def test_config_keeps_ssh_urls_and_remote_pid_files_as_written(tmp_path):
    (tmp_path / "training-check.toml").write_text(
        '[defaults]\nssh_timeout_seconds = 3\n'
        '[runs.a]\nrun = "acme/llm/ab12cd34"\nlog_fallback = "ssh://gpu-box/home/me/train.log"\n'
        '[runs.a.stop]\nmethod = "ssh"\npid_file = "run/train.pid"\n'
    )
    resolved = load_config(tmp_path / "training-check.toml").for_run("a")
    assert resolved.log_fallback == "ssh://gpu-box/home/me/train.log"
    assert resolved.stop is not None and str(resolved.stop.pid_file) == "run/train.pid"
    assert resolved.ssh_timeout_seconds == 3


def test_config_rejects_an_ssh_fallback_without_a_path(tmp_path):
    from mcp_training_check.errors import ConfigError

    (tmp_path / "training-check.toml").write_text('[runs.a]\nrun = "x.log"\nlog_fallback = "ssh://gpu-box"\n')
    with pytest.raises(ConfigError, match=r"training-check.toml:3: .*needs a host and a path"):
        load_config(tmp_path / "training-check.toml")


def test_window_boundaries_do_not_lose_bytes(ssh_home, tmp_path, monkeypatch):
    """Windows smaller than the file: every piece arrives in order across window edges."""
    from mcp_training_check.sources import ssh as ssh_module

    monkeypatch.setattr(ssh_module, "WINDOW_BYTES", ssh_module.CHUNK_BYTES)
    log = tmp_path / "big.jsonl"
    log.write_text(jsonl_rows(0, 20000))
    batch = ssh_source(ssh_home, log).read(None)
    assert log.stat().st_size > 3 * ssh_module.CHUNK_BYTES
    assert np.array_equal(batch.series["loss"].steps, np.arange(20000))
