"""No check reads without bound: a log or ``.wandb`` file that grew by more than one check reads since the last
one is read tail-first again (the newest history exact, the older an overview), said in the snapshot's
warnings, and the fill-in then makes the stored history what a full read stores. Sizes are scaled down."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mcp_training_check.sources import LogFileSource, log_tail
from mcp_training_check.sources.wandb_file import WandbFileSource
from mcp_training_check.state import StateStore
from tests.test_first_check import LIMITS as WANDB_LIMITS
from tests.test_first_check import append_steps, assert_same_history
from tests.test_first_check import read_into as read_wandb_into
from tests.test_first_check_logs import LIMITS as LOG_LIMITS
from tests.test_first_check_logs import jsonl, read_into, write

KiB = 1024
LOG_CATCH_UP = dataclasses.replace(LOG_LIMITS, catch_up_bytes=96 * KiB)
WANDB_CATCH_UP = dataclasses.replace(WANDB_LIMITS, catch_up_bytes=6 * 32 * KiB)


def test_a_log_grown_past_the_catch_up_bound_is_read_tail_first_then_filled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_tail, "DEFAULT_LIMITS", LOG_CATCH_UP)
    path = tmp_path / "train.jsonl"
    path.write_text("")
    write(path, jsonl, range(500))
    store = StateStore(tmp_path / "state")
    source = LogFileSource(path)
    assert read_into(store, source).fill is None  # small: read whole
    write(path, jsonl, range(500, 20_000))  # far more than one check catches up on
    batch = read_into(store, source)
    assert batch.restarted and batch.fill is not None and batch.fill.first
    assert any("were appended since the last check, more than one check reads" in note for note in batch.notes)
    history = store.load_history("log")
    assert history.last_step == 19_999 and history.metrics["loss"].total_points < 20_000
    step, checks = 20_000, 0
    while history.exact_from is not None:
        write(path, jsonl, range(step, step + 100))
        step += 100
        later = read_into(store, source)
        assert not later.restarted and not later.notes
        history = store.load_history("log")
        checks += 1
        assert checks < 40, "the fill-in never arrived"
    full = StateStore(tmp_path / "full")
    monkeypatch.setattr(log_tail, "DEFAULT_LIMITS", dataclasses.replace(log_tail.DEFAULT_LIMITS, small_bytes=1 << 40))
    read_into(full, LogFileSource(path))
    assert_same_history(full.load_history("log"), history)


def test_a_log_grown_less_is_read_incrementally(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_tail, "DEFAULT_LIMITS", LOG_CATCH_UP)
    path = tmp_path / "train.jsonl"
    path.write_text("")
    write(path, jsonl, range(500))
    store = StateStore(tmp_path / "state")
    source = LogFileSource(path)
    read_into(store, source)
    write(path, jsonl, range(500, 1_500))
    batch = read_into(store, source)
    assert not batch.restarted and batch.fill is None and not batch.notes
    assert store.load_history("log").metrics["loss"].total_points == 1_500


def test_a_run_file_grown_past_the_catch_up_bound_is_read_tail_first_then_filled(tmp_path: Path) -> None:
    path = tmp_path / "run-tailrun1.wandb"
    append_steps(path, range(200))
    store = StateStore(tmp_path / "state")
    source = WandbFileSource(path, limits=WANDB_CATCH_UP)
    assert read_wandb_into(store, source).fill is None
    append_steps(path, range(200, 12_000))
    batch = read_wandb_into(store, source)
    assert batch.restarted and batch.fill is not None and batch.fill.first
    assert any("were appended since the last check, more than one check reads" in note for note in batch.notes)
    history = store.load_history("run")
    assert history.last_step == 11_999 and history.info.run_id == "tailrun1"
    step, checks = 12_000, 0
    while history.exact_from is not None:
        append_steps(path, range(step, step + 50))
        step += 50
        read_wandb_into(store, source)
        history = store.load_history("run")
        checks += 1
        assert checks < 60, "the fill-in never arrived"
    full = StateStore(tmp_path / "full")
    read_wandb_into(full, WandbFileSource(path, limits=dataclasses.replace(WANDB_LIMITS, small_bytes=1 << 40)))
    assert_same_history(full.load_history("run"), history)


def test_the_catch_up_note_reaches_the_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_training_check.service import Monitor

    monkeypatch.setattr(log_tail, "DEFAULT_LIMITS", LOG_CATCH_UP)
    path = tmp_path / "train.jsonl"
    path.write_text("")
    write(path, jsonl, range(500))
    monitor = Monitor()
    monitor.check(str(path))
    write(path, jsonl, range(500, 20_000))
    report = monitor.check(str(path))
    assert report.snapshot.restarted and report.snapshot.last_step == 19_999
    assert any("more than one check reads" in w for w in report.snapshot.warnings)
