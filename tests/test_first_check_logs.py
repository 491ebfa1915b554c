"""A long training log's first check reads its head, its tail exactly and an overview of the middle; later
checks fill the rest in until the stored series are what a full read stores (local files; the SSH source
shares this code through `logs.read_open_log`)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from mcp_training_check.sources import LogFileSource, log_tail
from mcp_training_check.state import StateStore
from tests.test_first_check import assert_same_history

KiB = 1024
STEPS = 20_000
LIMITS = dataclasses.replace(
    log_tail.DEFAULT_LIMITS,
    small_bytes=64 * KiB,
    head_bytes=8 * KiB,
    tail_first_bytes=16 * KiB,
    tail_max_bytes=160 * KiB,
    overview_reads=4,
    overview_read_bytes=2 * KiB,
    fill_bytes_per_check=256 * KiB,
)


def jsonl(step: int) -> str:
    loss = math.nan if step == 700 else 2.0 / (1.0 + step * 1e-3)
    line = {"step": step, "loss": loss, "grad_norm": 1.0 + (step % 5) * 0.1}
    text = json.dumps(line)
    if step % 50 == 0:
        text += "\n" + json.dumps({"step": step, "eval_loss": 2.2 / (1.0 + step * 1e-3)})
    return text


def csv(step: int) -> str:
    return f"{step},{2.0 / (1.0 + step * 1e-3):.6f},{1.0 + (step % 5) * 0.1:.3f}"


def printed(step: int) -> str:  # no step numbers: steps are line counters
    return f"loss={2.0 / (1.0 + step * 1e-3):.6f} grad_norm={1.0 + (step % 5) * 0.1:.3f}"


def bar(step: int) -> str:  # PyTorch Lightning's console: steps are a tqdm bar's counts, restarted every epoch
    epoch, n = divmod(step, 1000)
    return (f"Epoch {epoch}: {n // 10:3d}%|{'█' * (n // 100):<10}| {n}/1000 [00:10<00:10, 99.00it/s, v_num=0, "
            f"loss={2.0 / (1.0 + step * 1e-3):.6f}, grad_norm={1.0 + (step % 5) * 0.1:.3f}]")  # fmt: skip


def epoch_batches(step: int) -> str:  # torchvision's MetricLogger: a batch count within the epoch, and its length
    epoch, n = divmod(step, 1000)
    loss = 2.0 / (1.0 + step * 1e-3)
    return f"Epoch: [{epoch}]  [{n:>3}/1000]  eta: 0:01:40  lr: 0.1  loss: {loss:.6f} ({loss:.4f})  time: 0.1000"


def epoch_iters(step: int) -> str:  # MMDetection's log.json: "iter" counts within the epoch, whose length is unsaid
    epoch, n = divmod(step, 1000)
    return json.dumps({"mode": "train", "epoch": epoch + 1, "iter": n + 1, "lr": 0.02, "loss": 2.0 / (1 + step * 1e-3)})


FORMATS = {"jsonl": (jsonl, "train.jsonl", ""), "csv": (csv, "metrics.csv", "step,loss,grad_norm\n"),
           "printed": (printed, "train.log", ""), "bar": (bar, "console.log", ""),
           "epoch_batches": (epoch_batches, "log.txt", ""),
           "epoch_iters": (epoch_iters, "run.log.json", "")}  # fmt: skip
LAST_STEP = {"epoch_iters": STEPS}  # its iters count from 1


def write(path: Path, line, steps: range, header: str = "") -> None:
    with path.open("a") as fh:
        if header and path.stat().st_size == 0:
            fh.write(header)
        fh.writelines(line(step) + "\n" for step in steps)


def read_into(store: StateStore, source: LogFileSource, key: str = "log"):
    batch = source.read(store.get_cursor(key))
    store.apply_batch(key, batch)
    return batch


@pytest.fixture
def scaled(monkeypatch):
    monkeypatch.setattr(log_tail, "DEFAULT_LIMITS", LIMITS)


@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_tail_first_then_fill_in_stores_what_a_full_read_stores(tmp_path, scaled, kind, monkeypatch):
    line, name, header = FORMATS[kind]
    path = tmp_path / name
    path.write_text("")
    write(path, line, range(STEPS), header)
    assert path.stat().st_size > 2 * LIMITS.tail_max_bytes
    store = StateStore(tmp_path / "tail")
    source = LogFileSource(path)

    first = read_into(store, source)
    assert first.fill is not None and first.fill.first
    history = store.load_history("log")
    assert history.exact_from is not None and history.metrics["loss"].total_points < STEPS
    if kind in ("printed", "bar", "epoch_iters"):
        assert history.exact_from > history.last_step  # counted steps: nothing is exact yet
        assert any("no step numbers" in w for w in first.warnings)
    else:
        assert history.metrics["loss"].raw_steps[-1] == LAST_STEP.get(kind, STEPS - 1)
        assert history.metrics["loss"].raw_steps.size == 2048

    step, checks = STEPS, 0
    while history.exact_from is not None:  # the log grows between checks
        write(path, line, range(step, step + 200))
        step += 200
        read_into(store, source)
        history = store.load_history("log")
        checks += 1
        assert checks < 40, "the fill-in never arrived"
    assert checks > 1

    monkeypatch.setattr(log_tail, "DEFAULT_LIMITS", dataclasses.replace(log_tail.DEFAULT_LIMITS, small_bytes=1 << 40))
    full = StateStore(tmp_path / "full")
    read_into(full, LogFileSource(path))  # a plain full read, as every first check did
    assert_same_history(full.load_history("log"), history)
    write(path, line, range(step, step + 5))  # after the swap the live parser continues correctly
    read_into(store, source)
    read_into(full, LogFileSource(path))
    assert_same_history(full.load_history("log"), store.load_history("log"))


def test_short_log_is_read_whole(tmp_path, scaled):
    path = tmp_path / "train.jsonl"
    path.write_text("")
    write(path, jsonl, range(200))
    batch = LogFileSource(path).read(None)
    assert batch.fill is None and len(batch.series["loss"]) == 200


def test_over_ssh_tail_first_and_fill_in_store_what_a_full_read_stores(tmp_path, scaled, ssh_home, monkeypatch):
    """The same code over SFTP (tests/sshd.py: a real OpenSSH server on 127.0.0.1): small sampled windows,
    seeks into the middle of the file, the fill-in in pieces."""
    from mcp_training_check.config import parse_run
    from mcp_training_check.sources import SshLogSource

    path = tmp_path / "train.jsonl"
    path.write_text("")
    write(path, jsonl, range(STEPS))
    assert_fill_in_matches_a_full_read(
        tmp_path, path, SshLogSource(parse_run(ssh_home.url(path)), timeout_seconds=5.0), monkeypatch
    )


def assert_fill_in_matches_a_full_read(tmp_path, path, source, monkeypatch) -> None:
    """Read ``source`` tail-first, then fill in until exact: the stored history is what a full local read of
    ``path`` stores."""
    store = StateStore(tmp_path / "remote")
    first = read_into(store, source)
    assert first.fill is not None and first.fill.first
    history, checks = store.load_history("log"), 0
    while history.exact_from is not None:
        read_into(store, source)
        history = store.load_history("log")
        checks += 1
        assert checks < 40, "the fill-in never arrived"
    monkeypatch.setattr(log_tail, "DEFAULT_LIMITS", dataclasses.replace(log_tail.DEFAULT_LIMITS, small_bytes=1 << 40))
    full = StateStore(tmp_path / "full")
    read_into(full, LogFileSource(path))
    assert_same_history(full.load_history("log"), history)
