"""TensorBoard event files and log directories: read as their scalars, incrementally, locally, over SSH and
through the MCP `check` tool.

Event files are written by the real ``tensorboardX.SummaryWriter`` (``add_scalar``; ``add_histogram`` and
``add_text`` for what must be skipped); TF2's form (``tf.summary.scalar``, which Keras writes through: a rank-0
tensor, the "scalars" plugin named with a tag's first value only) by tensorboardX's own protobuf classes and
event file writer, record by record as TF2 writes them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tensorboardX import SummaryWriter
from tensorboardX.event_file_writer import EventFileWriter
from tensorboardX.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2

from mcp_training_check.config import load_config, parse_run
from mcp_training_check.errors import RunNotFound, RunRefError
from mcp_training_check.models import CheckReport, DataSource, Decision, RunKind, StopOutcome
from mcp_training_check.server import build_server
from mcp_training_check.service import Monitor
from mcp_training_check.sources import events_tail, log_tail, tfevents
from mcp_training_check.sources.base import ReadBatch
from mcp_training_check.sources.logs import LogFileSource
from mcp_training_check.sources.tensorboard import TensorBoardDirSource
from mcp_training_check.state import StateStore
from tests.test_cli import cli
from tests.test_first_check import assert_same_history
from tests.test_first_check_logs import LIMITS as LOG_LIMITS
from tests.test_server import call

from .test_ssh_source import ssh_source


def healthy_loss(step: int) -> float:
    return 0.4 + 2.5 * math.exp(-step / 150) + 0.01 * math.sin(step * 1.3)


def write_scalars(logdir: Path, steps: range, *, suffix: str = "", nan_from: int | None = None) -> Path:
    """A run's event file as torch.utils.tensorboard / tensorboardX writes it: loss, lr and an eval every 50
    steps, a histogram and a text (to be skipped). Returns the file."""
    writer = SummaryWriter(str(logdir), filename_suffix=suffix)
    fill(writer, steps, nan_from=nan_from)
    path = Path(writer.file_writer.event_writer._ev_writer._file_name)
    writer.close()
    return path


def fill(writer: SummaryWriter, steps: range, *, nan_from: int | None = None) -> None:
    for step in steps:
        loss = math.nan if nan_from is not None and step >= nan_from else healthy_loss(step)
        writer.add_scalar("train/loss", loss, step)
        writer.add_scalar("train/lr", 3e-4, step)
        if step % 50 == 0:
            writer.add_scalar("eval/loss", healthy_loss(step) + 0.1, step)
            writer.add_histogram("weights", np.linspace(-1, 1, 200), step)
            writer.add_text("samples", f"generated text at step {step}", step)
    writer.flush()


def steps_of(batch: ReadBatch, name: str) -> list[int]:
    return batch.series[name].steps.tolist() if name in batch.series else []


# --------------------------------------------------------------------------- one file


def test_an_event_file_is_read_as_its_scalars_histograms_and_text_skipped(tmp_path: Path) -> None:
    path = write_scalars(tmp_path / "runs", range(1, 201))
    batch = LogFileSource(path).read(None)
    assert set(batch.series) == {"train/loss", "train/lr", "eval/loss"}
    assert steps_of(batch, "train/loss") == list(range(1, 201)) and steps_of(batch, "eval/loss") == [50, 100, 150, 200]
    assert batch.series["train/loss"].values[9] == pytest.approx(healthy_loss(10), rel=1e-6)  # a float32
    assert batch.cursor["events"]["offset"] == path.stat().st_size and not batch.notes and not batch.restarted
    assert LogFileSource(path).read(batch.cursor).new_points == 0


def test_an_event_file_is_recognised_by_its_content_not_its_name(tmp_path: Path) -> None:
    path = write_scalars(tmp_path / "runs", range(1, 31))
    renamed = path.rename(tmp_path / "metrics.log")  # a name that says "text log"
    assert steps_of(LogFileSource(renamed).read(None), "train/loss") == list(range(1, 31))
    assert not tfevents.looks_like_events(b'{"step": 1, "loss": 2.0}\n')


def tf2_scalar(tag: str, step: int, tensor: tensor_pb2.TensorProto, *, plugin: str | None) -> event_pb2.Event:
    """One value as TF2's summary writer records it: a tensor, and the plugin's metadata when ``plugin`` is
    given (TF2 gives it with a tag's first value only)."""
    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    if plugin is not None:
        value.metadata.CopyFrom(
            summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=plugin))
        )
    return event_pb2.Event(wall_time=time.time(), step=step, summary=summary_pb2.Summary(value=[value]))


def rank0(dtype: int, **values: object) -> tensor_pb2.TensorProto:
    return tensor_pb2.TensorProto(dtype=dtype, tensor_shape=tensor_shape_pb2.TensorShapeProto(), **values)


DT_FLOAT, DT_DOUBLE, DT_STRING, DT_INT64, DT_HALF = 1, 2, 7, 9, 19


def write_tf2(logdir: Path, epochs: int, *, tag: str = "epoch_loss") -> Path:
    """A Keras TensorBoard callback's split directory: ``tf.summary.scalar`` per epoch (float_val), the first
    with the "scalars" plugin; beside it tensors of other forms and tags that must or must not be read."""
    writer = EventFileWriter(str(logdir))
    for epoch in range(epochs):
        first = epoch == 0
        writer.add_event(tf2_scalar(tag, epoch, rank0(DT_FLOAT, float_val=[2.0 / (1 + epoch)]),
                                    plugin="scalars" if first else None))  # fmt: skip
        writer.add_event(tf2_scalar("epoch_lr", epoch, rank0(DT_DOUBLE, double_val=[1e-3]), plugin=None))
        writer.add_event(tf2_scalar("epoch_steps", epoch, rank0(DT_INT64, int64_val=[100 * (epoch + 1)]),
                                    plugin="scalars" if first else None))  # fmt: skip
        half = np.float16(0.5 + epoch / 100).tobytes()
        writer.add_event(tf2_scalar("epoch_half", epoch, rank0(DT_HALF, tensor_content=half), plugin=None))
        # a text summary (a string) and a custom plugin's rank-0 float: its later values carry no metadata
        text = rank0(DT_STRING, string_val=[b"ok"])
        writer.add_event(tf2_scalar("notes", epoch, text, plugin="text" if first else None))
        writer.add_event(tf2_scalar("hparams_score", epoch, rank0(DT_FLOAT, float_val=[0.3]),
                                    plugin="hparams" if first else None))  # fmt: skip
        histogram = tensor_pb2.TensorProto(
            dtype=DT_DOUBLE, double_val=[0.0] * 90,
            tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=30),
                                                                tensor_shape_pb2.TensorShapeProto.Dim(size=3)]),
        )  # fmt: skip
        writer.add_event(tf2_scalar("dense/kernel_0", epoch, histogram, plugin="histograms" if first else None))
    writer.close()
    (path,) = logdir.glob("events.out.tfevents.*")
    return path


def test_the_tf2_tensor_form_keras_writes_is_read_and_other_plugins_are_not(tmp_path: Path) -> None:
    path = write_tf2(tmp_path / "train", 12)
    batch = LogFileSource(path).read(None)
    assert set(batch.series) == {"epoch_loss", "epoch_lr", "epoch_steps", "epoch_half"}
    assert steps_of(batch, "epoch_loss") == list(range(12))
    assert batch.series["epoch_loss"].values[3] == pytest.approx(0.5)
    assert batch.series["epoch_steps"].values.tolist()[:2] == [100.0, 200.0]
    assert batch.series["epoch_half"].values[0] == pytest.approx(0.5, abs=1e-3)
    assert batch.series["epoch_lr"].values[0] == pytest.approx(1e-3)
    assert set(batch.cursor["events"]["other_plugin_tags"]) == {"notes", "hparams_score", "dense/kernel_0"}


def test_a_tag_another_plugin_claimed_stays_skipped_in_later_reads(tmp_path: Path) -> None:
    """TF2 names the plugin with a tag's first value only: a later check that reads only the later values
    still knows the tag is not a scalar, from the cursor."""
    logdir = tmp_path / "train"
    writer = EventFileWriter(str(logdir))
    writer.add_event(tf2_scalar("hparams_score", 0, rank0(DT_FLOAT, float_val=[0.3]), plugin="hparams"))
    writer.flush()
    (path,) = logdir.glob("events.out.tfevents.*")
    source = LogFileSource(path)
    first = source.read(None)
    writer.add_event(tf2_scalar("hparams_score", 1, rank0(DT_FLOAT, float_val=[0.4]), plugin=None))
    writer.add_event(tf2_scalar("epoch_loss", 1, rank0(DT_FLOAT, float_val=[1.5]), plugin=None))
    writer.close()
    later = source.read(first.cursor)
    assert set(later.series) == {"epoch_loss"}


def test_lightnings_hp_metric_placeholder_is_skipped_but_a_real_hp_metric_is_kept(tmp_path: Path) -> None:
    writer = SummaryWriter(str(tmp_path / "version_0"))
    writer.add_scalar("hp_metric", -1, 0)  # TensorBoardLogger.log_hyperparams
    fill(writer, range(1, 21))
    writer.add_scalar("hp_metric", 0.82, 20)  # the training logs it for real
    writer.close()
    batch = TensorBoardDirSource(tmp_path / "version_0").read(None)
    assert steps_of(batch, "hp_metric") == [20] and steps_of(batch, "train/loss") == list(range(1, 21))


def test_a_partial_trailing_record_waits_for_the_writer(tmp_path: Path) -> None:
    path = write_scalars(tmp_path / "runs", range(1, 100))  # its last record: train/lr at step 99
    whole = path.read_bytes()
    path.write_bytes(whole[:-7])  # the writer is mid-record
    source = LogFileSource(path)
    first = source.read(None)
    assert steps_of(first, "train/loss") == list(range(1, 100)) and steps_of(first, "train/lr") == list(range(1, 99))
    assert first.cursor["events"]["offset"] < len(whole) - 7 and not first.notes
    with path.open("ab") as fh:
        fh.write(whole[-7:])
    second = source.read(first.cursor)
    assert {name: steps_of(second, name) for name in second.series} == {"train/lr": [99]}
    assert second.cursor["events"]["offset"] == len(whole) and not second.restarted


def record_offsets(data: bytes) -> list[int]:
    offsets, at = [], 0
    while at + 12 <= len(data):
        offsets.append(at)
        at += 16 + int.from_bytes(data[at : at + 8], "little")
    return offsets


def test_a_corrupt_length_checksum_ends_the_read_there_and_the_cursor_never_passes_it(tmp_path: Path) -> None:
    path = write_scalars(tmp_path / "runs", range(1, 101))
    data = bytearray(path.read_bytes())
    bad = record_offsets(bytes(data))[120]
    data[bad + 8] ^= 0xFF  # the length's crc
    path.write_bytes(bytes(data))
    source = LogFileSource(path)
    first = source.read(None)
    assert first.cursor["events"]["offset"] == bad
    assert 0 < first.new_points < 200
    assert any("bad length checksum" in n and f"{bad:,}" in n for n in first.notes), first.notes
    again = source.read(first.cursor)
    assert again.new_points == 0 and again.cursor["events"]["offset"] == bad and again.notes == first.notes


def test_a_replaced_file_is_read_again_from_its_start(tmp_path: Path) -> None:
    path = write_scalars(tmp_path / "runs", range(1, 101))
    source = LogFileSource(path)
    first = source.read(None)
    path.unlink()
    writer = SummaryWriter(str(tmp_path / "other"))
    fill(writer, range(1, 41))
    writer.close()
    (fresh,) = (tmp_path / "other").glob("events.*")
    fresh.rename(path)  # a relaunch wrote a new file under the same name
    again = source.read(first.cursor)
    assert again.restarted and steps_of(again, "train/loss") == list(range(1, 41))


def test_a_big_file_and_a_record_larger_than_a_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks shrunk to 4 KiB: 60,000 scalars cross thousands of chunk ends, and a TF1 merged summary (a
    histogram beside a scalar in one event) of ~40 KiB is read on its own, its scalar kept."""
    monkeypatch.setattr(tfevents, "EVENTS_CHUNK_BYTES", 4096)
    logdir = tmp_path / "runs"
    writer = SummaryWriter(str(logdir), max_queue=1000)
    for step in range(20_000):
        writer.add_scalar("train/loss", healthy_loss(step), step)
        writer.add_scalar("train/lr", 3e-4, step)
        writer.add_scalar("train/grad_norm", 1.0, step)
    histogram = summary_pb2.HistogramProto(bucket_limit=[float(i) for i in range(2500)], bucket=[1.0] * 2500)
    merged = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="weights", histo=histogram),
                                        summary_pb2.Summary.Value(tag="eval/loss", simple_value=0.7)])  # fmt: skip
    writer.file_writer.add_event(event_pb2.Event(wall_time=time.time(), step=20_000, summary=merged))
    writer.add_scalar("train/loss", 0.5, 20_001)
    writer.close()
    (path,) = logdir.glob("events.*")
    started = time.perf_counter()
    batch = LogFileSource(path).read(None)
    elapsed = time.perf_counter() - started
    assert steps_of(batch, "train/loss") == [*range(20_000), 20_001]
    assert steps_of(batch, "eval/loss") == [20_000] and batch.series["eval/loss"].values[0] == pytest.approx(0.7)
    assert len(batch.series["train/grad_norm"]) == 20_000 and batch.cursor["events"]["offset"] == path.stat().st_size
    assert elapsed < 20, f"{elapsed:.1f} s for 60,000 scalars in 4 KiB chunks"


# --------------------------------------------------------------------------- checks


def test_a_growing_event_file_is_read_incrementally_across_checks(tmp_path: Path) -> None:
    writer = SummaryWriter(str(tmp_path / "runs"))
    fill(writer, range(1, 301))
    (path,) = (tmp_path / "runs").glob("events.*")
    monitor = Monitor()
    first = monitor.check(str(path))
    assert first.snapshot.data_source is DataSource.TENSORBOARD
    assert first.snapshot.last_step == 300 and first.snapshot.new_points == 606
    assert first.verdict is not None and first.verdict.decision is Decision.CONTINUE
    fill(writer, range(301, 351))
    second = monitor.check(str(path))
    assert second.snapshot.new_points == 101 and second.snapshot.last_step == 350 and not second.snapshot.restarted
    writer.close()
    steps = monitor.store.load_history(monitor.context(str(path)).key).metrics["train/loss"].steps
    assert steps.tolist() == list(range(1, 351)), "no point is read twice"


def test_nan_at_the_end_of_an_event_file_says_stop(tmp_path: Path) -> None:
    """`training-check check events.out.tfevents...` said "no metrics read yet" of this file before."""
    path = write_scalars(tmp_path / "runs", range(1, 401), nan_from=380)
    report = json.loads(cli("check", str(path), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    assert report["verdict"]["decision"] == "stop" and "NaN" in report["verdict"]["summary"]
    assert report["snapshot"]["data_source"] == "tensorboard"


# --------------------------------------------------------------------------- directories


def test_a_directory_with_one_event_file_is_a_run(tmp_path: Path) -> None:
    write_scalars(tmp_path / "runs" / "exp1", range(1, 101))
    ref = parse_run("runs/exp1", base_dir=tmp_path)
    assert ref.kind is RunKind.TENSORBOARD_DIR
    report = json.loads(cli("check", "runs/exp1", "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    assert report["snapshot"]["data_source"] == "tensorboard" and report["snapshot"]["last_step"] == 100
    assert report["verdict"]["decision"] == "continue"


def test_a_tensorboard_directory_is_a_w_and_b_run_s_log_fallback(tmp_path: Path, monkeypatch) -> None:
    """A Lightning run logging to W&B and TensorBoard: with the W&B server out of reach (a closed port), the check
    reads the TensorBoard directory named as ``log_fallback``, and a later check only what was appended."""
    from tests.wandb_api_fixtures import closed_port, wandb_monitor

    logdir = tmp_path / "lightning_logs" / "version_0"
    write_scalars(logdir, range(1, 101))
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("WANDB_API_KEY", "k" * 44)
    body = '[runs.job]\nrun = "ent/proj/run1"\nlog_fallback = "lightning_logs"\n'
    monitor = wandb_monitor(tmp_path, body=body)
    report = monitor.check("job")
    assert report.snapshot.data_source is DataSource.LOG_FALLBACK and report.snapshot.last_step == 100
    assert report.verdict is not None and report.verdict.decision is Decision.CONTINUE
    write_scalars(logdir, range(101, 151), suffix=".resumed")
    again = monitor.check("job")
    assert again.snapshot.last_step == 150 and again.snapshot.new_points == 50 * 2 + 1  # loss, lr; one eval
    monitor.close()


def test_a_resumed_run_s_second_file_is_read_after_the_first_and_a_file_that_appears_later_too(tmp_path: Path) -> None:
    logdir = tmp_path / "version_0"
    write_scalars(logdir, range(1, 101), suffix=".1")
    source = TensorBoardDirSource(logdir)
    first = source.read(None)
    write_scalars(logdir, range(80, 151), suffix=".2")  # resumed from the step-80 checkpoint
    second = source.read(first.cursor)
    assert steps_of(first, "train/loss") == list(range(1, 101))
    assert steps_of(second, "train/loss") == list(range(80, 151)) and not second.restarted
    assert len(second.cursor["files"]) == 2
    both = TensorBoardDirSource(logdir).read(None)
    assert steps_of(both, "train/loss") == [*range(1, 101), *range(80, 151)], "files in name order"


def test_keras_train_and_validation_subdirectories_are_one_run_with_prefixed_tags(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    write_tf2(logs / "train", 20)
    write_tf2(logs / "validation", 20)
    assert parse_run(str(logs)).kind is RunKind.TENSORBOARD_DIR
    batch = TensorBoardDirSource(logs).read(None)
    assert {"train/epoch_loss", "validation/epoch_loss"} <= set(batch.series)
    assert steps_of(batch, "validation/epoch_loss") == list(range(20))
    report = Monitor().check(str(logs))
    roles = {m.name: m.role.value for m in report.snapshot.metrics}
    assert roles["train/epoch_loss"] == "train_loss" and roles["validation/epoch_loss"] == "eval"


def test_one_run_subdirectory_is_read_and_several_are_an_error_that_lists_them(tmp_path: Path) -> None:
    lightning = tmp_path / "lightning_logs"
    write_scalars(lightning / "version_0", range(1, 51))
    assert steps_of(TensorBoardDirSource(lightning).read(None), "train/loss") == list(range(1, 51))
    write_scalars(lightning / "version_1", range(1, 31))
    os.utime(next((lightning / "version_0").glob("events.*")), (1, 1))  # version_1 is the newest
    with pytest.raises(RunRefError) as caught:
        Monitor().check(str(lightning))
    message = str(caught.value)
    assert "2 TensorBoard runs" in message and "point `run` at one" in message
    assert message.index("version_1") < message.index("version_0")


def test_a_directory_keeps_wandb_priority_and_an_empty_one_names_tensorboard(tmp_path: Path) -> None:
    both = tmp_path / "project"
    write_scalars(both / "runs", range(1, 11))
    (both / "wandb").mkdir()
    assert parse_run(str(both)).kind is RunKind.WANDB_DIR
    empty = tmp_path / "empty"
    empty.mkdir()
    assert parse_run(str(empty)).kind is RunKind.WANDB_DIR
    with pytest.raises(RunNotFound, match=r"TensorBoard log directory .*events\.out\.tfevents"):
        Monitor().check(str(empty))


def test_a_replaced_file_in_a_directory_reads_every_file_again(tmp_path: Path) -> None:
    logdir = tmp_path / "run"
    write_scalars(logdir, range(1, 61), suffix=".1")
    second = write_scalars(logdir, range(61, 91), suffix=".2")
    source = TensorBoardDirSource(logdir)
    first = source.read(None)
    second.write_bytes(b"")  # truncated by a relaunch
    again = source.read(first.cursor)
    assert again.restarted and steps_of(again, "train/loss") == list(range(1, 61))


# --------------------------------------------------------------------------- stop, ssh, mcp


@pytest.fixture
def sleeper(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    (tmp_path / "train.pid").write_text(f"{proc.pid}\n")
    yield proc
    proc.kill()
    proc.wait()


def test_a_tensorboard_run_is_stopped_by_its_config_like_a_log_run(tmp_path: Path, sleeper) -> None:
    writer = SummaryWriter(str(tmp_path / "lightning_logs" / "version_0"))
    fill(writer, range(1, 301), nan_from=280)
    writer.close()
    (tmp_path / "training-check.toml").write_text(
        '[runs.tb]\nrun = "lightning_logs"\n[runs.tb.stop]\npid_file = "train.pid"\ngrace_seconds = 5\n'
    )
    monitor = Monitor(config=load_config(tmp_path / "training-check.toml"))
    report = monitor.check("tb")
    assert report.verdict is not None and report.verdict.decision is Decision.STOP
    assert monitor.stop_run("tb", confirm=True, reason="train/loss NaN").outcome is StopOutcome.STOPPED
    assert sleeper.wait(timeout=10) is not None


def test_an_event_file_over_ssh_is_read_incrementally(ssh_home, tmp_path: Path) -> None:
    writer = SummaryWriter(str(tmp_path / "runs"))
    fill(writer, range(1, 201))
    (path,) = (tmp_path / "runs").glob("events.*")
    monitor = Monitor()
    first = monitor.check(ssh_home.url(path))
    assert first.snapshot.data_source is DataSource.SSH and first.snapshot.last_step == 200
    fill(writer, range(201, 251))
    writer.close()
    second = monitor.check(ssh_home.url(path))
    assert second.snapshot.new_points == 101 and second.snapshot.last_step == 250
    local = LogFileSource(path).read(None)
    remote = ssh_source(ssh_home, path).read(None)
    assert {n: c.steps.tolist() for n, c in remote.series.items()} == {n: steps_of(local, n) for n in local.series}
    assert remote.cursor["events"]["offset"] == local.cursor["events"]["offset"] == path.stat().st_size


def test_the_mcp_check_tool_reads_a_tensorboard_directory(tmp_path: Path) -> None:
    write_scalars(tmp_path / "logs" / "version_0", range(1, 401), nan_from=390)
    result = call(build_server(Monitor()), "check", {"run": str(tmp_path / "logs")})
    assert not result.is_error, result.content
    report = CheckReport.model_validate(result.structured_content)
    assert report.snapshot.data_source is DataSource.TENSORBOARD and report.snapshot.last_step == 400
    assert report.verdict is not None and report.verdict.decision is Decision.STOP


def test_damaged_event_files_never_raise_and_the_cursor_stays_within_the_file(tmp_path: Path) -> None:
    """Bit flips and cuts anywhere (a disk error, a copy cut short): each read returns, its offset at a record
    boundary within the file, and a length checksum that does not hold is said in the notes."""
    whole = write_scalars(tmp_path / "runs", range(1, 121)).read_bytes()
    boundaries = {*record_offsets(whole), len(whole)}
    rng = np.random.default_rng(7)
    damaged = tmp_path / "damaged.tfevents"
    read_as_events, said = 0, 0
    for trial in range(150):
        data = bytearray(whole)
        for at in rng.integers(0, len(data), size=1 + trial % 4):
            data[at] ^= 1 << int(rng.integers(0, 8))
        if trial % 5 == 0:
            data = data[: int(rng.integers(1, len(data)))]
        damaged.write_bytes(bytes(data))
        batch = LogFileSource(damaged).read(None)
        offset = batch.cursor.get("events", {}).get("offset")
        if offset is not None:  # still an event file by its first record
            assert offset <= len(data) and offset in boundaries, (trial, offset)
            read_as_events += 1
            said += any("bad length checksum" in note for note in batch.notes)
    assert read_as_events > 120 and said > 0, (read_as_events, said)


# --------------------------------------------------------------------------- long files: tail-first, then filled in

KiB = 1024
LONG_LIMITS = dataclasses.replace(
    LOG_LIMITS, tail_points=256, overview_read_bytes=32 * KiB, catch_up_bytes=512 * KiB
)  # the long-log tests' limits with windows wide enough for whole event records: a 6,000-step file (~1.7 MB) is
# "long": head, tail, four windows, filled in over ~7 checks


@pytest.fixture
def long_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_tail, "DEFAULT_LIMITS", LONG_LIMITS)


def read_into(store: StateStore, source, key: str = "run") -> ReadBatch:
    batch = source.read(store.get_cursor(key))
    store.apply_batch(key, batch)
    return batch


def full_history(tmp_path: Path, source, monkeypatch: pytest.MonkeyPatch):
    """What a first read of the whole of ``source`` stores, as every first check did before."""
    monkeypatch.setattr(log_tail, "DEFAULT_LIMITS", dataclasses.replace(LONG_LIMITS, small_bytes=1 << 40))
    store = StateStore(tmp_path / "full")
    read_into(store, source)
    monkeypatch.setattr(log_tail, "DEFAULT_LIMITS", LONG_LIMITS)
    return store.load_history("run")


def fill_in_until_exact(store: StateStore, source, grow=None) -> int:
    """Checks until the stored history is exact (``grow()`` between them); returns how many it took."""
    checks = 0
    while store.load_history("run").exact_from is not None:
        if grow is not None:
            grow()
        read_into(store, source)
        checks += 1
        assert checks < 40, "the fill-in never arrived"
    return checks


class Growing:
    """An event file written whole by tensorboardX (whose writer flushes from a thread of its own), handed out
    as a writer appends it: up to the record that starts ``steps`` in, then more records per `grow`."""

    def __init__(self, tmp_path: Path, steps: int, more_steps: int) -> None:
        self.data = write_scalars(tmp_path / "written", range(steps + more_steps)).read_bytes()
        self.starts = record_offsets(self.data)
        self.path = tmp_path / "runs" / "events.out.tfevents.1700000000.trainbox"
        self.path.parent.mkdir()
        self.records = 1 + 2 * steps + 3 * -(-steps // 50)  # file_version, 2 scalars a step, 3 more every 50
        self.path.write_bytes(self.data[: self.starts[self.records]])

    def grow(self, records: int = 200) -> None:
        old, self.records = self.starts[self.records], min(self.records + records, len(self.starts) - 1)
        with self.path.open("ab") as fh:
            fh.write(self.data[old : self.starts[self.records]])


def test_a_long_event_file_is_read_tail_first_and_filled_in_to_what_a_full_read_stores(
    tmp_path: Path, long_limits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Growing(tmp_path, 6000, 2000)
    store, source = StateStore(tmp_path / "tail"), LogFileSource(run.path)
    first = read_into(store, source)
    assert first.fill is not None and first.fill.first and first.cursor["fill"]["offset"] == 0
    history = store.load_history("run")
    loss = history.metrics["train/loss"]
    assert history.exact_from == first.fill.exact_from and 4000 < history.exact_from < 5900
    assert loss.raw_steps[-1] == 5999 and np.array_equal(loss.raw_steps[-256:], np.arange(5744, 6000))
    assert loss.total_points < 3000, "the older history is a sample"
    read = steps_of(first, "train/loss")
    middle = [s for s in read if 100 < s < history.exact_from - 1]
    assert read[:10] == list(range(10)) and 100 < len(middle) < 2000, "the first steps, and an overview"
    assert fill_in_until_exact(store, source, run.grow) > 3  # the run goes on between checks
    assert "fill" not in store.get_cursor("run")
    exact = full_history(tmp_path, LogFileSource(run.path), monkeypatch)
    assert_same_history(exact, store.load_history("run"))


def test_a_cut_inside_any_record_finds_the_next_record_start(tmp_path: Path) -> None:
    """Cuts at every byte of a stretch of scalars and every 23rd byte across step 50's histogram and text records:
    the record start found is the first at or after the cut, from the file and from bytes alone."""
    path = write_scalars(tmp_path / "runs", range(1, 120))
    data = path.read_bytes()
    starts = record_offsets(data)
    cuts = [*range(starts[20], starts[40]), *range(starts[100], starts[112], 23)]  # 104-108: step 50's 5 records
    with path.open("rb") as fh:
        for cut in cuts:
            want = next(s for s in starts if s >= cut)
            assert events_tail.record_start(fh, cut, len(data)) == want, cut
            assert events_tail.find_record_start(data, cut) == want, cut
        assert events_tail.record_start(fh, starts[-1] + 1, len(data)) == len(data)  # inside the last record
    noise = np.random.default_rng(3).integers(0, 256, size=1 << 20, dtype=np.uint8).tobytes()
    assert events_tail.find_record_start(noise) is None


def test_nan_in_the_tail_of_a_long_event_file_says_stop_at_the_first_check(tmp_path: Path, long_limits: None) -> None:
    path = write_scalars(tmp_path / "runs", range(6000), nan_from=5990)
    report = Monitor(home=tmp_path / "home").check(str(path))
    assert report.snapshot.overview_before_step is not None, "read tail-first"
    assert report.verdict is not None and report.verdict.decision is Decision.STOP
    assert "NaN" in report.verdict.summary


def test_an_event_file_that_grew_past_the_catch_up_cap_is_read_tail_first_again(
    tmp_path: Path, long_limits: None
) -> None:
    run = Growing(tmp_path, 6000, 3000)
    store, source = StateStore(tmp_path / "tail"), LogFileSource(run.path)
    read_into(store, source)
    read_into(store, source)  # the fill-in under way
    assert store.get_cursor("run")["fill"]["offset"] > 0
    run.grow(10_000)  # ~0.8 MB appended: more than one check catches up on
    again = read_into(store, source)
    assert again.restarted and again.fill is not None and again.fill.first
    assert any("were appended since the last check" in note for note in again.notes), again.notes
    history = store.load_history("run")
    assert history.metrics["train/loss"].raw_steps[-1] == 8999 and history.exact_from > 6000
    assert store.get_cursor("run")["fill"]["offset"] == 0


def resumed(logdir: Path) -> None:  # a resumed run: a second file from an earlier checkpoint's step on
    write_scalars(logdir, range(0, 5000), suffix=".1")
    write_scalars(logdir, range(4000, 9000), suffix=".2")


def keras(logdir: Path) -> None:  # Keras: a long train/ file, a short validation/ one (read whole)
    write_scalars(logdir / "train", range(6000))
    write_scalars(logdir / "validation", range(0, 6000, 40))


@pytest.mark.parametrize("layout", [resumed, keras])
def test_a_long_tensorboard_directory_is_read_tail_first_and_filled_in_to_what_a_full_read_stores(
    tmp_path: Path, long_limits: None, monkeypatch: pytest.MonkeyPatch, layout
) -> None:
    logdir = tmp_path / "version_0"
    layout(logdir)
    store, source = StateStore(tmp_path / "tail"), TensorBoardDirSource(logdir)
    first = read_into(store, source)
    assert first.fill is not None and first.fill.first and first.cursor["fill"]["done"] == []
    history = store.load_history("run")
    assert history.exact_from is not None and history.metrics[next(iter(history.metrics))].total_points < 5000
    assert fill_in_until_exact(store, source) > 3
    assert "fill" not in store.get_cursor("run")
    assert_same_history(full_history(tmp_path, TensorBoardDirSource(logdir), monkeypatch), store.load_history("run"))
    writer = SummaryWriter(str(logdir), filename_suffix=".3")  # after the fill-in the live reading goes on
    fill(writer, range(9000, 9010))
    writer.close()
    assert steps_of(read_into(store, source), "train/loss") == list(range(9000, 9010))


def test_a_long_event_file_over_ssh_is_read_tail_first_and_filled_in(
    ssh_home, tmp_path: Path, long_limits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_scalars(tmp_path / "runs", range(6000))
    store, source = StateStore(tmp_path / "remote"), ssh_source(ssh_home, path)
    first = read_into(store, source)
    assert first.fill is not None and first.fill.first and store.load_history("run").exact_from is not None
    local = LogFileSource(path).read(None)
    assert {n: c.steps.tolist() for n, c in first.series.items()} == {n: steps_of(local, n) for n in local.series}
    assert fill_in_until_exact(store, source) > 3
    assert_same_history(full_history(tmp_path, LogFileSource(path), monkeypatch), store.load_history("run"))


def test_a_file_that_appears_before_the_one_being_filled_in_restarts_the_fill_in(
    tmp_path: Path, long_limits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tag's exact history is every file's points in reading order: a new train/ file, read before the
    validation/ file the fill-in is in, starts the fill-in again from the first file."""
    logdir = tmp_path / "logs"
    write_scalars(logdir / "train", range(100), suffix=".1")
    write_scalars(logdir / "validation", range(6000))
    store, source = StateStore(tmp_path / "tail"), TensorBoardDirSource(logdir)
    read_into(store, source)
    read_into(store, source)
    assert store.get_cursor("run")["fill"]["file"].startswith("validation")
    write_scalars(logdir / "train", range(100, 200), suffix=".2")
    again = read_into(store, source)
    assert again.fill is not None and again.fill.first and store.get_cursor("run")["fill"]["done"] == []
    assert steps_of(again, "train/train/loss") == list(range(100, 200))
    assert fill_in_until_exact(store, source) > 3
    assert_same_history(full_history(tmp_path, TensorBoardDirSource(logdir), monkeypatch), store.load_history("run"))


def test_damaged_long_event_files_are_read_tail_first_and_filled_in_without_raising(
    tmp_path: Path, long_limits: None
) -> None:
    """Bit flips past the head (record starts found after cuts may land next to them): every read returns, the
    live cursor stays on a record boundary, and the fill-in resyncs past damage and arrives."""
    whole = write_scalars(tmp_path / "runs", range(3000)).read_bytes()
    boundaries = {*record_offsets(whole), len(whole)}
    rng = np.random.default_rng(1)
    damaged = tmp_path / "damaged.tfevents"
    for trial in range(20):
        data = bytearray(whole)
        for at in rng.integers(4096, len(data), size=1 + trial):
            data[at] ^= 1 << int(rng.integers(0, 8))
        damaged.write_bytes(bytes(data))
        source, cursor = LogFileSource(damaged), None
        for _ in range(12):
            batch = source.read(cursor)
            cursor = batch.cursor
            assert cursor["events"]["offset"] in boundaries, trial
            if batch.fill is not None and batch.fill.done:
                break
        else:
            pytest.fail(f"trial {trial}: the fill-in never arrived")
