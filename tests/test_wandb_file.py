"""WandbFileSource against files written by wandb 0.31 itself: values, damage, growth, replacement."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import random
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcp_training_check.errors import RunNotFound, SourceError
from mcp_training_check.models import RunStatus
from mcp_training_check.sources.base import Cursor, ReadBatch
from mcp_training_check.sources.wandb_file import (
    BLOCK_SIZE,
    FILE_HEADER,
    WandbFileSource,
    is_wandb_path,
    pb,
    resolve_wandb_path,
)

from .runs import child_env
from .wandb_fixtures import (
    CONFIG,
    LATE_CONFIG,
    REPO,
    RUN_NAME,
    RealRun,
    ended_runs,
    expected_series,
    log_calls,
    real_run,
    wandb_children,
)
from .wandb_writer import (
    FIRST,
    FULL,
    LAST,
    MIDDLE,
    RecordSpan,
    RunFileWriter,
    go_json_number,
    history_record,
    run_record,
    split_chunks,
    write_run_file,
)

__all__ = ["ended_runs", "real_run", "wandb_children"]  # session fixtures, imported to be visible here

Series = dict[str, tuple[list[int], list[float]]]


# --------------------------------------------------------------------------- helpers


def read(path: Path, cursor: Cursor | None = None) -> ReadBatch:
    return WandbFileSource(path).read(cursor)


def as_lists(batch_series: Any) -> Series:
    return {name: (chunk.steps.tolist(), chunk.values.tolist()) for name, chunk in batch_series.items()}


def merge(batches: list[ReadBatch]) -> Series:
    return concat(*(as_lists(batch.series) for batch in batches))


def concat(*parts: Series) -> Series:
    merged: Series = {}
    for part in parts:
        for name, (steps, values) in part.items():
            have = merged.setdefault(name, ([], []))
            have[0].extend(steps)
            have[1].extend(values)
    return merged


def assert_same(got: Series, want: Series) -> None:
    """Equal series, NaN equal to NaN."""
    assert sorted(got) == sorted(want)
    for name, (steps, values) in want.items():
        assert got[name][0] == steps, name
        np.testing.assert_array_equal(np.array(got[name][1]), np.array(values), err_msg=name)


def reference_series(records: list[RecordSpan]) -> Series:
    """A plain decoder (json.loads, no shortcuts) of the history records among ``records``."""
    series: Series = {}
    for span in records:
        record = pb.Record()
        record.ParseFromString(span.payload)
        if record.WhichOneof("record_type") != "history":
            continue
        items = {"/".join(item.nested_key) or item.key: json.loads(item.value_json) for item in record.history.item}
        for key, value in items.items():
            if not key.startswith("_") and isinstance(value, int | float) and not isinstance(value, bool):
                steps, values = series.setdefault(key, ([], []))
                steps.append(items["_step"])
                values.append(float(value))
    return series


def history_spans(data: bytes) -> list[RecordSpan]:
    return [span for span in split_chunks(data)[1] if b"_step" in span.payload and _kind(span) == "history"]


def _kind(span: RecordSpan) -> str | None:
    record = pb.Record()
    record.ParseFromString(span.payload)
    return record.WhichOneof("record_type")


# --------------------------------------------------------------------------- format facts and writer


def test_real_file_has_the_documented_header_and_framing(real_run: RealRun) -> None:
    """Re-framing the real payloads with our writer gives wandb's file back, byte for byte."""
    data = real_run.data
    assert data.startswith(FILE_HEADER)
    chunks, records = split_chunks(data)
    assert {FULL, FIRST, MIDDLE, LAST} <= {chunk.kind for chunk in chunks}
    assert len(data) > 3 * BLOCK_SIZE
    copy = real_run.project_dir / "reframed.wandb"
    write_run_file(copy, [span.payload for span in records])
    assert copy.read_bytes() == data


def test_writer_rebuilds_real_history_records_byte_for_byte(real_run: RealRun) -> None:
    """The benchmark generator's records and number formatting are the ones wandb writes."""
    spans = history_spans(real_run.data)
    assert len(spans) == len(log_calls())
    for span in spans:
        record = pb.Record()
        record.ParseFromString(span.payload)
        items = [(tuple(item.nested_key), item.value_json) for item in record.history.item]
        for _, text in items:
            value = json.loads(text)
            if isinstance(value, int | float) and not isinstance(value, bool):
                assert go_json_number(value) == text
        assert history_record(record.num, items, record.history.step.num) == span.payload


# --------------------------------------------------------------------------- values and run info


def test_every_logged_value_is_read_back(real_run: RealRun) -> None:
    batch = read(real_run.file)
    assert_same(as_lists(batch.series), expected_series(log_calls()))
    loss = batch.series["train/loss"]
    assert math.isnan(loss.values[40]) and loss.values[41] == math.inf and loss.values[42] == -math.inf
    assert "note" not in batch.series and "flag" not in batch.series  # strings and bools skipped
    assert "opt/momentum" in batch.series  # a logged dict arrives flattened to numeric leaves
    assert not any(name.startswith("_") for name in batch.series)
    assert batch.skipped_chunks == 0 and not batch.restarted and not batch.warnings
    assert batch.cursor["offset"] == batch.cursor["size"] == len(real_run.data)


def test_run_info_comes_from_the_file(real_run: RealRun) -> None:
    info = read(real_run.file).info
    assert info.status is RunStatus.FINISHED
    assert info.name == RUN_NAME
    assert info.run_id and real_run.file.name == f"run-{info.run_id}.wandb"
    assert info.config == {**CONFIG, **LATE_CONFIG}
    assert info.pid == real_run.pid  # from the run's logs/debug.log: no 0.31 record carries it
    assert info.url is None  # offline


@pytest.mark.parametrize(("ending", "status"), [("fail", RunStatus.FAILED), ("interrupt", RunStatus.KILLED)])
def test_exit_code_sets_status(ended_runs: dict[str, RealRun], ending: str, status: RunStatus) -> None:
    run = ended_runs[ending]
    batch = read(run.file)
    assert batch.info.status is status
    assert_same(as_lists(batch.series), expected_series(log_calls()[: run.calls]))


def test_incremental_read_keeps_run_info(real_run: RealRun) -> None:
    first = read(real_run.file)
    again = read(real_run.file, first.cursor)
    assert again.new_points == 0 and not again.restarted
    assert again.info == first.info
    assert json.loads(json.dumps(again.cursor)) == again.cursor  # storable as JSON


# --------------------------------------------------------------------------- cut files


def _cut_offsets(span: RecordSpan, chunks: list[Any], every_byte: bool) -> list[int]:
    """Every byte of the record, or (for a record over 64 KiB) every byte near a chunk edge + a stride."""
    if every_byte:
        return list(range(span.start, span.end + 1))
    near = {c.offset + d for c in chunks if span.start <= c.offset < span.end for d in range(-9, 17)}
    stride = set(range(span.start, span.end + 1, 127)) | {span.end - 1, span.end}
    return sorted(offset for offset in near | stride if span.start <= offset <= span.end)


def _check_cuts(data: bytes, span: RecordSpan, offsets: list[int], path: Path) -> None:
    """At each cut: only whole records before it, no damage counted; resuming on the full file ends it."""
    records = split_chunks(data)[1]
    before = [r for r in records if r.end <= span.start]
    want_before, want_with = reference_series(before), reference_series([*before, span])
    cursors: dict[str, Cursor] = {}
    with open(path, "wb") as handle:
        handle.write(data[: offsets[0]])
        for cut in offsets:
            handle.write(data[handle.tell() : cut])
            handle.flush()
            batch = read(path)
            assert batch.skipped_chunks == 0, cut
            whole = cut >= span.end
            assert batch.cursor["offset"] == (span.end if whole else span.start), cut
            assert_same(as_lists(batch.series), want_with if whole else want_before)
            cursors[json.dumps({k: v for k, v in batch.cursor.items() if k != "size"}, sort_keys=True)] = batch.cursor
        handle.write(data[handle.tell() :])
    full = reference_series(records)
    for cursor in cursors.values():
        rest = read(path, cursor)
        assert not rest.restarted and rest.skipped_chunks == 0
        before_cut = want_before if cursor["offset"] == span.start else want_with
        assert_same(concat(before_cut, as_lists(rest.series)), full)


@pytest.mark.parametrize("which", ["last", "crossing_block", "multi_block"])
def test_file_cut_anywhere_reads_whole_records_then_resumes(real_run: RealRun, tmp_path: Path, which: str) -> None:
    data = real_run.data
    chunks, records = split_chunks(data)
    if which == "last":
        span = records[-1]
    elif which == "crossing_block":
        span = next(r for r in records if r.start // BLOCK_SIZE != r.end // BLOCK_SIZE and r.end - r.start < 1024)
    else:
        span = max(history_spans(data), key=lambda r: r.end - r.start)
        assert span.end - span.start > 2 * BLOCK_SIZE
    _check_cuts(data, span, _cut_offsets(span, chunks, every_byte=which != "multi_block"), tmp_path / "cut.wandb")


# --------------------------------------------------------------------------- damage


def _damage(data: bytearray, offset: int, how: str) -> None:
    """Break the chunk whose header is at ``offset``: its payload, its type, or its length."""
    if how == "payload":
        data[offset + 7 + 5] ^= 0xFF
    elif how == "type":
        data[offset + 6] = 9
    else:
        data[offset + 4 : offset + 6] = (0xFFFF).to_bytes(2, "little")


@pytest.mark.parametrize("how", ["payload", "type", "length"])
def test_corrupt_chunk_is_skipped_to_the_next_block(real_run: RealRun, tmp_path: Path, how: str) -> None:
    data = real_run.data
    chunks, records = split_chunks(data)
    bad = next(
        c for c in chunks if c.kind == FULL and c.offset > 3 * BLOCK_SIZE and b"_step" in records[c.record].payload
    )
    resync = (bad.offset // BLOCK_SIZE + 1) * BLOCK_SIZE
    kept = [r for r in records if r.end <= bad.offset or r.start >= resync]
    orphans = [
        c for c in chunks if c.offset >= resync and c.kind in (MIDDLE, LAST) and records[c.record].start < resync
    ]
    broken = bytearray(data)
    _damage(broken, bad.offset, how)
    path = tmp_path / "damaged.wandb"
    path.write_bytes(bytes(broken))
    batch = read(path)
    assert batch.skipped_chunks == 1 + len(orphans)
    assert_same(as_lists(batch.series), reference_series(kept))
    assert batch.info.status is RunStatus.FINISHED  # the exit record after the damage still counts
    lost = expected_series(log_calls())["train/loss"][0]
    assert 0 < len(batch.series["train/loss"]) < len(lost)


def test_zero_filled_tail_is_unwritten_space_not_damage(real_run: RealRun, tmp_path: Path) -> None:
    data = real_run.data
    records = split_chunks(data)[1]
    cut = records[len(records) // 2].end
    path = tmp_path / "prealloc.wandb"
    path.write_bytes(data[:cut] + b"\0" * 100)
    first = read(path)
    assert first.skipped_chunks == 0 and first.cursor["offset"] == cut
    with open(path, "r+b") as handle:
        handle.seek(cut)
        handle.write(data[cut:])
    rest = read(path, first.cursor)
    assert not rest.restarted and rest.skipped_chunks == 0
    assert_same(merge([first, rest]), reference_series(records))


# --------------------------------------------------------------------------- growth and replacement


def test_copy_growing_in_random_slices(real_run: RealRun, tmp_path: Path) -> None:
    data = real_run.data
    path = tmp_path / "growing.wandb"
    rng = random.Random(20261130)
    batches: list[ReadBatch] = []
    cursor: Cursor | None = None
    written = 0
    with open(path, "wb") as handle:
        while written < len(data):
            step = rng.choice([1, 3, 7, 100, 999, 4096, 20_000])
            handle.write(data[written : written + step])
            handle.flush()
            written = min(len(data), written + step)
            batch = read(path, cursor)
            assert batch.skipped_chunks == 0 and not batch.restarted
            batches.append(batch)
            cursor = batch.cursor
    assert_same(merge(batches), expected_series(log_calls()))
    assert batches[-1].info.status is RunStatus.FINISHED


LIVE_CHILD = textwrap.dedent(
    """
    import sys, time
    import wandb
    run = wandb.init(mode="offline", dir=sys.argv[1], project="live")
    for step in range(int(sys.argv[2])):
        wandb.log({"train/loss": 1.0 / (step + 1), "pad": "x" * 300})
        time.sleep(0.002)
    run.finish()
    """
)
LIVE_STEPS = 800
LIVE_POLL_SECONDS = 0.02


def test_file_appended_by_a_live_wandb_process(tmp_path: Path) -> None:
    """wandb's Go core flushes whole blocks while the run goes on: records arrive split mid-chunk."""
    script = tmp_path / "live.py"
    script.write_text(LIVE_CHILD)
    env = child_env(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DISABLE_GIT="true")
    child = subprocess.Popen([sys.executable, str(script), str(tmp_path), str(LIVE_STEPS)], cwd=tmp_path, env=env)
    batches: list[ReadBatch] = []
    cursor: Cursor | None = None
    try:
        while child.poll() is None or cursor is None or batches[-1].info.status is RunStatus.RUNNING:
            time.sleep(LIVE_POLL_SECONDS)
            files = list(tmp_path.glob("wandb/offline-run-*/run-*.wandb"))
            if not files:
                continue
            batch = read(files[0], cursor)
            assert batch.skipped_chunks == 0 and not batch.restarted
            batches.append(batch)
            cursor = batch.cursor
    finally:
        child.wait(timeout=60)
    growing = [b for b in batches if b.new_points and b.info.status is RunStatus.RUNNING]
    assert len(growing) >= 3, "the file must have been read while wandb was still writing it"
    union = merge(batches)
    assert union["train/loss"][0] == list(range(LIVE_STEPS))  # every step once, in order
    assert_same(union, as_lists(read(files[0]).series))


def test_shrunk_file_is_read_again_from_the_start(real_run: RealRun, tmp_path: Path) -> None:
    path = tmp_path / "run.wandb"
    shutil.copyfile(real_run.file, path)
    first = read(path)
    os.truncate(path, len(real_run.data) // 2)
    again = read(path, first.cursor)
    assert again.restarted
    assert_same(as_lists(again.series), as_lists(read(path).series))
    assert 0 < again.new_points < first.new_points


@pytest.mark.parametrize("in_place", [False, True])
def test_replaced_file_is_read_again_from_the_start(
    real_run: RealRun, ended_runs: dict[str, RealRun], tmp_path: Path, in_place: bool
) -> None:
    """A new file at the same path (new inode), or new bytes in the same inode, is another run."""
    path = tmp_path / "run.wandb"
    shutil.copyfile(ended_runs["fail"].file, path)
    first = read(path)
    if in_place:
        with open(path, "r+b") as handle:
            handle.write(real_run.data)
    else:
        shutil.copyfile(real_run.file, tmp_path / "new.wandb")
        os.replace(tmp_path / "new.wandb", path)
    again = read(path, first.cursor)
    assert again.restarted
    assert_same(as_lists(again.series), expected_series(log_calls()))
    assert again.info.run_id != first.info.run_id


# --------------------------------------------------------------------------- synthetic files (writer)


def _items(step: int | None, **values: float) -> list[tuple[str, str]]:
    items = [(key, go_json_number(value)) for key, value in values.items()]
    return items if step is None else [*items, ("_step", str(step))]


def test_history_without_step_uses_a_running_counter(tmp_path: Path) -> None:
    path = tmp_path / "run-nostep.wandb"
    write_run_file(path, [history_record(1, _items(None, a=1.0), None), history_record(2, _items(None, a=2.0), None)])
    first = read(path)
    assert as_lists(first.series) == {"a": ([0, 1], [1.0, 2.0])}
    with open(path, "ab") as handle:
        writer = RunFileWriter(handle, path.stat().st_size)
        writer.write(history_record(3, _items(10, a=3.0), 10))
        writer.write(history_record(4, _items(None, a=4.0), None))
    assert as_lists(read(path, first.cursor).series) == {"a": ([10, 11], [3.0, 4.0])}


def test_block_padding_is_skipped_at_every_cut(tmp_path: Path) -> None:
    """A record ending 3 bytes before a block end leaves padding; cutting inside it is harmless."""
    head = len(FILE_HEADER) + 7
    target = BLOCK_SIZE - 3 - head

    def padded(filler: int) -> bytes:
        return history_record(1, [*_items(0, a=1.0), ("note", json.dumps("x" * filler))], 0)

    payload = next(p for n in range(target - 64, target) if len(p := padded(n)) == target)
    data_path = tmp_path / "padded-full.wandb"
    write_run_file(data_path, [payload, history_record(2, _items(1, a=2.0), 1)])
    data = data_path.read_bytes()
    assert data[BLOCK_SIZE - 3 : BLOCK_SIZE] == b"\0\0\0"
    spans = split_chunks(data)[1]
    _check_cuts(data, spans[1], list(range(spans[0].end, len(data) + 1)), tmp_path / "cut.wandb")


def test_online_run_gets_a_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run-abc123.wandb"
    write_run_file(path, [run_record(1, "abc123", name="n", entity="me", project="proj")])
    monkeypatch.delenv("WANDB_BASE_URL", raising=False)
    assert read(path).info.url == "https://wandb.ai/me/proj/runs/abc123"
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:8080/")
    assert read(path).info.url == "http://127.0.0.1:8080/me/proj/runs/abc123"


def test_large_config_is_cut_to_top_level_scalars(tmp_path: Path) -> None:
    path = tmp_path / "run-cfg.wandb"
    config = {"lr": 0.1, "name": "x", "big": {"k": list(range(5000))}, "wrapped": {"value": 3, "desc": None}}
    write_run_file(path, [run_record(1, "cfg", config=config)])
    batch = read(path)
    assert batch.info.config == {"lr": 0.1, "name": "x", "wrapped": 3}
    assert any("8192 bytes" in warning for warning in batch.warnings)
    assert len(json.dumps(batch.cursor)) < 8192


@pytest.mark.parametrize("size", [0, 3, 7])
def test_file_shorter_than_a_record_reads_nothing_yet(real_run: RealRun, tmp_path: Path, size: int) -> None:
    path = tmp_path / "run-new.wandb"
    path.write_bytes(real_run.data[:size])
    first = read(path)
    assert first.new_points == 0 and first.skipped_chunks == 0 and first.info.status is RunStatus.RUNNING
    path.write_bytes(real_run.data)
    rest = read(path, first.cursor)
    assert not rest.restarted
    assert_same(as_lists(rest.series), expected_series(log_calls()))


def test_not_a_wandb_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "run-x.wandb"
    path.write_bytes(b"step,loss\n1,2.0\n")
    with pytest.raises(RunNotFound, match=r"run-x\.wandb is not a W&B run file .* pass the run-<id>\.wandb"):
        read(path)
    path.write_bytes(FILE_HEADER[:-1] + b"\x01")
    with pytest.raises(SourceError, match="unsupported format version 1"):
        read(path)


def test_repo_root_is_where_fixtures_think() -> None:
    assert (REPO / "mcp_training_check" / "sources" / "wandb_file.py").is_file()


# --------------------------------------------------------------------------- path resolution


@pytest.mark.parametrize("form", ["file", "run_dir", "latest_run", "wandb_dir", "project_dir"])
def test_every_path_form_resolves_to_the_run_file(real_run: RealRun, form: str) -> None:
    wandb_dir = real_run.project_dir / "wandb"
    path = {
        "file": real_run.file,
        "run_dir": real_run.run_dir,
        "latest_run": wandb_dir / "latest-run",
        "wandb_dir": wandb_dir,
        "project_dir": real_run.project_dir,
    }[form]
    assert resolve_wandb_path(str(path)) == real_run.file.resolve()
    assert is_wandb_path(path)
    assert read(path).info.run_id == read(real_run.file).info.run_id


def _fake_run(wandb_dir: Path, name: str) -> Path:
    run_dir = wandb_dir / name
    run_dir.mkdir(parents=True)
    run_file = run_dir / f"run-{name.rsplit('-', 1)[1]}.wandb"
    run_file.write_bytes(FILE_HEADER)
    return run_file


def test_wandb_dir_without_latest_run_takes_the_newest_run(tmp_path: Path) -> None:
    wandb_dir = tmp_path / "wandb"
    _fake_run(wandb_dir, "offline-run-20260102_000000-older")
    newest = _fake_run(wandb_dir, "run-20260103_000000-newer")
    _fake_run(wandb_dir, "offline-run-20260101_120000-oldest")
    assert resolve_wandb_path(tmp_path) == newest.resolve()
    (wandb_dir / "latest-run").symlink_to(wandb_dir / "offline-run-20260102_000000-older")
    assert resolve_wandb_path(wandb_dir).name == "run-older.wandb"  # latest-run wins when present


def test_latest_run_is_followed_at_every_read(tmp_path: Path, real_run: RealRun) -> None:
    wandb_dir = tmp_path / "wandb"
    first_run = _fake_run(wandb_dir, "offline-run-20260101_000000-first")
    (wandb_dir / "latest-run").symlink_to(first_run.parent)
    source = WandbFileSource(wandb_dir / "latest-run")
    cursor = source.read(None).cursor
    second_run = _fake_run(wandb_dir, "offline-run-20260102_000000-second")
    second_run.write_bytes(real_run.data)
    (wandb_dir / "latest-run").unlink()
    (wandb_dir / "latest-run").symlink_to(second_run.parent)
    batch = source.read(cursor)
    assert batch.restarted and batch.cursor["path"] == str(second_run.resolve())
    assert_same(as_lists(batch.series), expected_series(log_calls()))


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", r"missing does not exist: pass a run-<id>\.wandb file, a run directory"),
        ("text_file", r"train\.log is a file but not a W&B run file \(run-<id>\.wandb\)"),
        ("empty_dir", r"empty is a directory without W&B runs .* wandb\.init\(dir=\.\.\.\)"),
        ("run_dir_no_file", r"run directory .*offline-run-20260101_000000-abc holds no run-<id>\.wandb file yet"),
        ("wandb_dir_no_runs", r"wandb holds no run directory .* start the training run first"),
        ("dangling_latest", r"latest-run does not exist \(a symlink to a deleted run\)"),
    ],
)
def test_wrong_paths_say_what_was_expected(tmp_path: Path, setup: str, message: str) -> None:
    if setup == "text_file":
        target = tmp_path / "train.log"
        target.write_text("loss=1\n")
    elif setup == "empty_dir":
        target = tmp_path / "empty"
        target.mkdir()
    elif setup == "run_dir_no_file":
        target = tmp_path / "wandb" / "offline-run-20260101_000000-abc"
        target.mkdir(parents=True)
    elif setup == "wandb_dir_no_runs":
        target = tmp_path / "wandb"
        (target / "debug.log").parent.mkdir()
        (target / "latest-run").symlink_to(target / "gone")
        (target / "other").mkdir()
    elif setup == "dangling_latest":
        target = tmp_path / "latest-run"
        target.symlink_to(tmp_path / "gone")
    else:
        target = tmp_path / "missing"
    with pytest.raises(RunNotFound, match=message) as raised:
        WandbFileSource(target).read(None)
    assert str(tmp_path) in str(raised.value)


@pytest.mark.parametrize(
    ("name", "make", "expected"),
    [
        ("run-abc.wandb", None, True),  # not written yet: still routed here
        ("train.log", "file", False),
        ("plain", "dir", False),
        ("nothing-here", None, False),
    ],
)
def test_is_wandb_path_is_a_cheap_router(tmp_path: Path, name: str, make: str | None, expected: bool) -> None:
    path = tmp_path / name
    if make == "file":
        path.write_text("x")
    elif make == "dir":
        path.mkdir()
    assert is_wandb_path(path) is expected


def test_benchmark_generator_writes_a_readable_run(tmp_path: Path) -> None:
    """benchmarks/bench_wandb_read.py's file holds exactly what it claims (steps × metrics, no damage)."""
    spec = importlib.util.spec_from_file_location("bench_wandb_read", REPO / "benchmarks" / "bench_wandb_read.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # its dataclass looks its module up there
    spec.loader.exec_module(bench)
    path = tmp_path / "run-bench.wandb"
    bench.make_run_file(path, 200, 3)
    batch = read(path)
    assert batch.skipped_chunks == 0 and batch.info.run_id == "bench0001"
    assert sorted(batch.series) == [f"train/metric_{i}" for i in range(3)]
    chunk = batch.series["train/metric_2"]
    assert chunk.steps.tolist() == list(range(200))
    assert chunk.values[150] == 1.0 / (1.0 + 150 * 3 * 1e-4)
    assert bench.bare_decode(path, len(FILE_HEADER), history_only=True) == 200 * (3 + 3)  # + _runtime etc.
