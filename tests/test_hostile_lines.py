"""One log line never breaks monitoring: a line over `MAX_LINE_BYTES`, a CSV cell past the csv module's limit,
a step beyond int64, a 400-digit number, JSON nested thousands deep. Each such line is skipped and counted
(``skipped_chunks``, and a note in the read's warnings), the cursor moves past it, and the lines around it are
read as usual, locally and over SSH (a real sshd)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_training_check.service import Monitor
from mcp_training_check.sources import LogFileSource
from mcp_training_check.sources.base import ReadBatch
from mcp_training_check.sources.logs import MAX_LINE_BYTES, parse_lines

from .sshd import SshServer
from .test_ssh_source import ssh_source


def good(step: int) -> str:
    return json.dumps({"step": step, "loss": 2.0 - step / 100}) + "\n"


HOSTILE_JSONL = {
    "long line": '{"step": 5, "loss": 1.0, "pad": "' + "x" * (2 * MAX_LINE_BYTES) + '"}\n',
    "step beyond uint64": '{"step": 18446744073709551615, "loss": 1.0}\n',
    "step beyond int64 as a float": '{"step": 1e300, "loss": 1.0}\n',
    "400-digit value": '{"step": 5, "loss": ' + "1" * 400 + "}\n",
    "400-digit float": '{"step": 5, "loss": ' + "1" * 400 + ".5}\n",
    "value past float range": '{"step": 5, "loss": 1e999}\n',
    "nested 100,000 deep": '{"step": 5, "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
    "nested 10,000 deep, under the length cap": '{"step": 5, "x": ' + '{"a": ' * 10_000 + "1" + "}" * 10_000 + "}\n",
}


def points(batch: ReadBatch) -> dict[str, list[tuple[int, float]]]:
    return {name: list(zip(c.steps.tolist(), c.values.tolist(), strict=True)) for name, c in batch.series.items()}


def expected(steps: list[int]) -> dict[str, list[tuple[int, float]]]:
    return {"loss": [(s, 2.0 - s / 100) for s in steps]}


@pytest.mark.parametrize("case", list(HOSTILE_JSONL))
def test_hostile_jsonl_line_is_skipped_counted_and_passed(tmp_path: Path, case: str) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(good(1) + good(2) + HOSTILE_JSONL[case] + good(3))
    source = LogFileSource(path)
    first = source.read(None)
    assert points(first) == expected([1, 2, 3])
    assert first.skipped_chunks == 1
    assert any("1 log line(s) skipped" in w for w in first.warnings)
    assert first.cursor["offset"] == path.stat().st_size, "the cursor moved past the hostile line"
    with path.open("a") as handle:
        handle.write(good(4))
    second = source.read(first.cursor)
    assert points(second) == expected([4]) and second.skipped_chunks == 0


def test_monitor_keeps_checking_after_a_hostile_line(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(good(s) for s in range(1, 40)) + "".join(HOSTILE_JSONL.values()))
    monitor = Monitor()
    first = monitor.check(str(path))
    assert first.snapshot.skipped_chunks == len(HOSTILE_JSONL)
    assert first.snapshot.last_step == 39
    with path.open("a") as handle:
        handle.write("".join(good(s) for s in range(40, 60)))
    second = monitor.check(str(path))
    assert second.snapshot.last_step == 59 and second.snapshot.new_points == 20


def test_long_line_cut_across_reads_is_dropped_to_its_end(tmp_path: Path) -> None:
    """A line longer than the cap and still being written: its start is dropped at one read and its rest,
    arriving later, is dropped too (it ends in what would otherwise read as a metric)."""
    path = tmp_path / "train.log"
    path.write_text("step 1 loss 1.9\n" + "x" * (3 * MAX_LINE_BYTES))
    source = LogFileSource(path)
    first = source.read(None)
    assert points(first) == {"loss": [(1, 1.9)]} and first.skipped_chunks == 1
    with path.open("a") as handle:
        handle.write("y" * 100 + " step 99 loss 42.0\nstep 2 loss 1.8\n")
    second = source.read(first.cursor)
    assert points(second) == {"loss": [(2, 1.8)]}, "the tail of the long line is not a metric line"
    assert second.skipped_chunks == 0, "one long line is counted once"


@pytest.mark.parametrize(
    "line",
    [
        "2," + "9" * 400 + "\n",  # a 400-digit cell: not a float
        "2,1e999\n",
        '2,"' + "z" * 200_000 + '"\n',  # a cell past the csv module's 131,072-character limit
        "18446744073709551615,1.0\n",
    ],
    ids=["400 digits", "1e999", "200 KB cell", "step beyond uint64"],
)
def test_hostile_csv_row_is_skipped(tmp_path: Path, line: str) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss\n1,1.99\n" + line + "3,1.97\n")
    batch = LogFileSource(path).read(None)
    assert points(batch) == {"loss": [(1, 1.99), (3, 1.97)]}
    assert batch.skipped_chunks == 1


@pytest.mark.parametrize(
    "line",
    ["step 2 loss " + "7" * 400, "step 18446744073709551615 loss 1.0", "iter 2 | lm loss: 1e999"],
    ids=["400 digits", "step beyond uint64", "1e999"],
)
def test_hostile_printed_line_is_skipped_not_read_as_inf(line: str) -> None:
    parsed = parse_lines(["step 1 loss 2.0", line, "step 3 loss 1.5"])
    assert {name: chunk.values.tolist() for name, chunk in parsed.series.items()} == {"loss": [2.0, 1.5]}
    assert parsed.skipped_lines == 1


def test_written_infinity_is_still_a_value() -> None:
    parsed = parse_lines(['{"step": 1, "loss": Infinity}', "step 2 loss inf", "step 3 loss nan"])
    assert parsed.skipped_lines == 0
    assert len(parsed.series["loss"]) == 3


def test_every_hostile_line_over_ssh_reads_as_locally(ssh_home: SshServer, tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(good(1) + "".join(HOSTILE_JSONL.values()) + good(2))
    remote = ssh_source(ssh_home, path).read(None)
    local = LogFileSource(path).read(None)
    assert points(remote) == points(local) == expected([1, 2])
    assert remote.skipped_chunks == local.skipped_chunks == len(HOSTILE_JSONL)
    assert remote.cursor["offset"] == path.stat().st_size
    report = Monitor().check(ssh_home.url(path))
    assert report.snapshot.skipped_chunks == len(HOSTILE_JSONL) and report.snapshot.last_step == 2


def test_wandb_record_with_a_step_beyond_int64_is_read(tmp_path: Path) -> None:
    """A crafted ``.wandb`` history record whose ``_step`` overflows int64 falls back to the record's own step."""
    from mcp_training_check.sources import WandbFileSource

    from .wandb_writer import history_record, run_record, write_run_file

    records = [run_record(1, "abcd1234")]
    for step in range(20):
        written = "18446744073709551615" if step == 7 else str(step)
        records.append(history_record(2 + step, [("loss", str(2.0 - step / 100)), ("_step", written)], step))
    write_run_file(tmp_path / "run-abcd1234.wandb", records)
    batch = WandbFileSource(tmp_path / "run-abcd1234.wandb").read(None)
    assert batch.series["loss"].steps.tolist() == list(range(20))
