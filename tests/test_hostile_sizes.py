"""No check reads without bound: a log or ``.wandb`` file that grew by more than one check reads since the last
one is read tail-first again (the newest history exact, the older an overview), said in the snapshot's
warnings, and the fill-in then makes the stored history what a full read stores. Sizes are scaled down."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_training_check.sources import LogFileSource, log_tail
from mcp_training_check.sources.base import Source, TailLimits
from mcp_training_check.sources.wandb_file import WandbFileSource
from mcp_training_check.state import StateStore
from tests.test_first_check import LIMITS as WANDB_LIMITS
from tests.test_first_check import append_steps, assert_same_history
from tests.test_first_check_logs import LIMITS as LOG_LIMITS
from tests.test_first_check_logs import jsonl, read_into, write

KiB = 1024
LOG_CATCH_UP = dataclasses.replace(LOG_LIMITS, catch_up_bytes=96 * KiB)
WANDB_CATCH_UP = dataclasses.replace(WANDB_LIMITS, catch_up_bytes=6 * 32 * KiB)


def _log_source(path: Path, limits: TailLimits, monkeypatch: pytest.MonkeyPatch) -> Source:
    monkeypatch.setattr(log_tail, "DEFAULT_LIMITS", limits)  # a log source reads with the module's limits
    return LogFileSource(path)


def _wandb_source(path: Path, limits: TailLimits, monkeypatch: pytest.MonkeyPatch) -> Source:
    return WandbFileSource(path, limits=limits)


@dataclasses.dataclass(frozen=True)
class Growing:
    """A file a training appends to, of one kind, and the sizes its test grows it by."""

    file_name: str
    key: str  # the run's key in the store
    metric: str
    info: dict[str, str]  # what the stored run info must still say after the restart
    limits: TailLimits  # scaled down, catch-up bound included
    append: Callable[[Path, range], None]
    open_source: Callable[[Path, TailLimits, pytest.MonkeyPatch], Source]
    first_steps: int  # small enough to be read whole
    grown_to: int  # far more than one check catches up on
    steps_per_check: int
    max_checks: int  # the fill-in must have arrived by then


GROWING = [
    Growing(
        file_name="train.jsonl", key="log", metric="loss", info={"name": "train.jsonl"}, limits=LOG_CATCH_UP,
        append=lambda path, steps: write(path, jsonl, steps), open_source=_log_source,
        first_steps=500, grown_to=20_000, steps_per_check=100, max_checks=40,
    ),
    Growing(
        file_name="run-tailrun1.wandb", key="run", metric="train/loss", info={"run_id": "tailrun1", "name": "tail"},
        limits=WANDB_CATCH_UP, append=append_steps, open_source=_wandb_source,
        first_steps=200, grown_to=12_000, steps_per_check=50, max_checks=60,
    ),
]


@pytest.mark.parametrize("case", GROWING, ids=["log", "wandb_file"])
def test_a_file_grown_past_the_catch_up_bound_is_read_tail_first_then_filled(
    case: Growing, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / case.file_name
    case.append(path, range(case.first_steps))
    store = StateStore(tmp_path / "state")
    source = case.open_source(path, case.limits, monkeypatch)
    assert read_into(store, source, case.key).fill is None  # small: read whole
    case.append(path, range(case.first_steps, case.grown_to))
    batch = read_into(store, source, case.key)
    assert batch.restarted and batch.fill is not None and batch.fill.first
    assert any("were appended since the last check, more than one check reads" in note for note in batch.notes)
    history = store.load_history(case.key)
    assert history.last_step == case.grown_to - 1 and history.metrics[case.metric].total_points < case.grown_to
    assert {field: getattr(history.info, field) for field in case.info} == case.info
    step, checks = case.grown_to, 0
    while history.exact_from is not None:
        case.append(path, range(step, step + case.steps_per_check))
        step += case.steps_per_check
        later = read_into(store, source, case.key)
        assert not later.restarted and not later.notes
        history = store.load_history(case.key)
        checks += 1
        assert checks < case.max_checks, "the fill-in never arrived"
    full = StateStore(tmp_path / "full")
    whole = dataclasses.replace(case.limits, small_bytes=1 << 40)
    read_into(full, case.open_source(path, whole, monkeypatch), case.key)
    assert_same_history(full.load_history(case.key), history)


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
