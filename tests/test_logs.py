"""The text-log source: every format line by line, step assignment, incremental reads, file identity,
progress bars, fatal markers, errors, and memory on a big file.

Files are real files in tmp_path; one of them is written by a small numpy training loop while it runs.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pytest

from mcp_training_check.errors import ConfigError, RunNotFound, SourceUnavailable
from mcp_training_check.sources.base import ReadBatch, SeriesChunk
from mcp_training_check.sources.logs import (
    CHUNK_BYTES,
    MAX_LINE_BYTES,
    MAX_WARNINGS,
    LogFileSource,
    LogParser,
    is_log_path,
    parse_lines,
    read_log_bytes,
)
from tests.runs import outcome_as_nobody

INF = math.inf
Points = dict[str, list[tuple[int, float | str]]]


def _value(v: float) -> float | str:
    """NaN != NaN, so tables write it as the string "nan"."""
    return "nan" if math.isnan(v) else float(v)


def points(series: Mapping[str, SeriesChunk]) -> Points:
    return {
        name: [(int(s), _value(v)) for s, v in zip(chunk.steps, chunk.values, strict=True)]
        for name, chunk in series.items()
    }


def merged(batches: Iterable[ReadBatch]) -> Points:
    out: Points = {}
    for batch in batches:
        for name, pts in points(batch.series).items():
            out.setdefault(name, []).extend(pts)
    return out


# --------------------------------------------------------------------------- one line at a time

MEGATRON = (
    " iteration      100/   10000 | consumed samples:         3200 | elapsed time per iteration (ms): 1234.5"
    " | learning rate: 3.000E-04 | global batch size:    32 | lm loss: 2.310E+00 | loss scale: 1.0 |"
    " grad norm: 0.812 | number of skipped iterations:   0 |"
)
DEEPSPEED = (
    "[2024-01-05 12:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=100, skipped=2, lr=[0.0001],"
    " mom=[(0.9, 0.999)]"
)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("step 100 | loss 2.31 | lr 3e-4", {"loss": [(100, 2.31)], "lr": [(100, 3e-4)]}),
        ("Step 100: loss=2.31, lr=3.0e-04", {"loss": [(100, 2.31)], "lr": [(100, 3e-4)]}),
        ("iter 100 loss: 2.31", {"loss": [(100, 2.31)]}),
        ("loss=2.31 grad_norm=0.8", {"loss": [(1, 2.31)], "grad_norm": [(1, 0.8)]}),
        (
            "epoch 3 step 1200 loss 2.31 ppl 10.1",
            {"epoch": [(1200, 3.0)], "loss": [(1200, 2.31)], "ppl": [(1200, 10.1)]},
        ),
        ("[step 200] train_loss: 1.9 val_loss: 2.0", {"train_loss": [(200, 1.9)], "val_loss": [(200, 2.0)]}),
        ("Iter 5/100 loss = 1.5 acc : 0.3", {"loss": [(5, 1.5)], "acc": [(5, 0.3)]}),
        ("INFO:__main__:step=100 loss=2.3", {"loss": [(100, 2.3)]}),
        (
            "2024-01-05 12:30:01,123 INFO Step 300: loss=nan, lr=inf eta 0:12:34 100/1000",
            {"loss": [(300, "nan")], "lr": [(300, INF)]},
        ),
        (
            "step 5 loss NaN val_loss -Infinity lr 1E-5 grad_norm +1.5e+03 acc -inf",
            {
                "loss": [(5, "nan")],
                "val_loss": [(5, -INF)],
                "lr": [(5, 1e-5)],
                "grad_norm": [(5, 1500.0)],
                "acc": [(5, -INF)],
            },
        ),
        (
            "step 7 loss 1.2ms acc 95% time 12:30 date 2024-01-05 valid_acc 0.5 ETA 3:10",
            {"valid_acc": [(7, 0.5)]},
        ),
        (
            MEGATRON,
            {
                "consumed_samples": [(100, 3200.0)],
                "elapsed_time_per_iteration_ms": [(100, 1234.5)],
                "learning_rate": [(100, 3e-4)],
                "global_batch_size": [(100, 32.0)],
                "lm_loss": [(100, 2.31)],
                "loss_scale": [(100, 1.0)],
                "grad_norm": [(100, 0.812)],
                "number_of_skipped_iterations": [(100, 0.0)],
            },
        ),
        (DEEPSPEED, {"skipped": [(100, 2.0)], "lr": [(100, 1e-4)]}),
        (
            "{'loss': 0.53, 'grad_norm': 1.2, 'learning_rate': 4e-05, 'epoch': 0.3}",
            {
                "loss": [(1, 0.53)],
                "grad_norm": [(1, 1.2)],
                "learning_rate": [(1, 4e-05)],
                "epoch": [(1, 0.3)],
            },
        ),
        (
            "{'loss': nan, 'grad_norm': inf, 'learning_rate': -inf, 'epoch': 0.3}",
            {
                "loss": [(1, "nan")],
                "grad_norm": [(1, INF)],
                "learning_rate": [(1, -INF)],
                "epoch": [(1, 0.3)],
            },
        ),
        (
            "\x1b[A 10%|█         | 100/1000 [00:10<01:30,  9.9it/s]{'loss': 0.53, 'epoch': 0.1}",
            {"loss": [(1, 0.53)], "epoch": [(1, 0.1)]},
        ),
        (
            '{"step": 5, "loss": NaN, "train": {"acc": 0.5, "deep": {"x": 1}}, "name": "r", "ok": true,'
            ' "_timestamp": 1.7e9, "hist": [1, 2]}',
            {"loss": [(5, "nan")], "train/acc": [(5, 0.5)], "train/deep/x": [(5, 1.0)]},
        ),
        (
            '{"_step": 9, "global_step": 90, "loss": Infinity}',
            {"global_step": [(9, 90.0)], "loss": [(9, INF)]},
        ),
        ('{"global_step": 90, "eval/loss": 1.5}', {"eval/loss": [(90, 1.5)]}),
        ('{"iteration": 4, "loss": -Infinity}', {"loss": [(4, -INF)]}),
        ('{"iter": 4.0, "loss": 1}', {"loss": [(4, 1.0)]}),
        ('2024-01-05 12:00:00 {"step": 2, "loss": 0.5}', {"loss": [(2, 0.5)]}),
        (" 45%|████▌     | 450/1000 [00:45<00:55, 10.0it/s, loss=2.31]", {"loss": [(450, 2.31)]}),
        (
            "Epoch 0:  45%|████▌     | 450/1000 [00:45<00:55, 10.0it/s, v_num=0, train_loss=2.310]",
            {"train_loss": [(450, 2.31)]},
        ),
        ("\x1b[32mstep\x1b[0m 3 \x1b[1mloss\x1b[0m 0.25", {"loss": [(3, 0.25)]}),
    ],
)
def test_metric_lines(line: str, expected: Points) -> None:
    assert points(parse_lines([line]).series) == expected


@pytest.mark.parametrize(
    "line",
    [
        "Loaded 5 files",
        "Starting training with 8 GPUs",
        " 45%|████▌     | 450/1000 [00:45<00:55, 10.0it/s]",
        "Validation DataLoader 0:  50%|█████     | 40/79 [00:00<00:00, 200.00it/s]",
        "2024-01-05 12:30:01,123 - INFO - Saving checkpoint to /ckpt/step_500",
        "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
        "{'model_name': 'gpt2', 'lr': 0.001}",
        "{'a': 1, 'b': 2}",
        "==========",
        "ETA 0:12:34 elapsed 100/1000",
        "step 100",
        "12:30:01 2024-01-05 100/1000 95%",
        "",
    ],
)
def test_lines_without_metrics_are_ignored(line: str) -> None:
    parsed = parse_lines([line])
    assert parsed.series == {}
    assert parsed.skipped_lines == 0


# --------------------------------------------------------------------------- steps over several lines

HF_LINES = [
    "{'loss': 0.9, 'grad_norm': 1.0, 'learning_rate': 5e-05, 'epoch': 0.1}",
    "{'loss': 0.8, 'grad_norm': 0.9, 'learning_rate': 4e-05, 'epoch': 0.2}",
    "{'eval_loss': 0.85, 'eval_accuracy': 0.7, 'eval_runtime': 3.2, 'eval_samples_per_second': 100.0,"
    " 'eval_steps_per_second': 12.5, 'epoch': 0.2}",
    "{'loss': 0.7, 'grad_norm': 0.8, 'learning_rate': 3e-05, 'epoch': 0.3}",
    "{'train_runtime': 100.0, 'train_samples_per_second': 50.0, 'train_loss': 0.8, 'epoch': 0.3}",
]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        pytest.param(
            HF_LINES,
            {
                "loss": [(1, 0.9), (2, 0.8), (3, 0.7)],
                "grad_norm": [(1, 1.0), (2, 0.9), (3, 0.8)],
                "learning_rate": [(1, 5e-05), (2, 4e-05), (3, 3e-05)],
                "eval_loss": [(2, 0.85)],
                "eval_accuracy": [(2, 0.7)],
                "eval_runtime": [(2, 3.2)],
                "eval_samples_per_second": [(2, 100.0)],
                "eval_steps_per_second": [(2, 12.5)],
                "epoch": [(1, 0.1), (2, 0.2), (2, 0.2), (3, 0.3)],  # the closing dict adds no point
            },
            id="hf-eval-takes-latest-train-step",
        ),
        pytest.param(
            [
                "{'eval_loss': 1.0, 'epoch': 0.0}",
                "{'loss': 0.9, 'epoch': 0.1}",
                "{'eval_loss': 0.8, 'epoch': 0.1}",
            ],
            {"eval_loss": [(1, 1.0), (1, 0.8)], "loss": [(1, 0.9)], "epoch": [(1, 0.0), (1, 0.1), (1, 0.1)]},
            id="hf-eval-before-any-train-line-uses-its-own-counter",
        ),
        pytest.param(
            ["step 100 loss 2.0", "validation: val_loss=2.1 val_acc=0.5", "step 200 loss 1.9"],
            {"loss": [(100, 2.0), (200, 1.9)], "val_loss": [(100, 2.1)], "val_acc": [(100, 0.5)]},
            id="printed-eval-without-step-takes-latest-step",
        ),
        pytest.param(
            ["loss=2.0", "loss=1.9", "val_loss=2.1", "loss=1.8"],
            {"loss": [(1, 2.0), (2, 1.9), (3, 1.8)], "val_loss": [(2, 2.1)]},
            id="printed-counter",
        ),
        pytest.param(
            ['{"loss": 1.0}', '{"loss": 0.9}', '{"val_loss": 1.2}'],
            {"loss": [(1, 1.0), (2, 0.9)], "val_loss": [(2, 1.2)]},
            id="jsonl-counter",
        ),
        pytest.param(
            ["step 10 loss 3.0", "step 5 loss 4.0"],
            {"loss": [(10, 3.0), (5, 4.0)]},
            id="steps-may-go-back-after-a-resume",
        ),
    ],
)
def test_step_assignment(lines: list[str], expected: Points) -> None:
    assert points(parse_lines(lines).series) == expected


@pytest.mark.parametrize(
    ("text", "fmt", "expected"),
    [
        pytest.param(
            "epoch,step,train_loss,val_loss,lr-AdamW\n0,49,2.3,,0.001\n0,99,2.1,,0.001\n0,99,,2.2,\n"
            "1,149,nan,,0.0005\n1,199,inf,-inf,\n",
            None,
            {
                "epoch": [(49, 0.0), (99, 0.0), (99, 0.0), (149, 1.0), (199, 1.0)],
                "train_loss": [(49, 2.3), (99, 2.1), (149, "nan"), (199, INF)],
                "val_loss": [(99, 2.2), (199, -INF)],
                "lr-AdamW": [(49, 0.001), (99, 0.001), (149, 0.0005)],
            },
            id="lightning-csv-empty-cells-nonfinite",
        ),
        pytest.param(
            "epoch\taccuracy\tloss\tval_accuracy\tval_loss\n0\t0.5\t1.2\t0.55\t1.1\n1\t0.6\t1.0\t\t\n",
            None,
            {
                "epoch": [(1, 0.0), (2, 1.0)],
                "accuracy": [(1, 0.5), (2, 0.6)],
                "loss": [(1, 1.2), (2, 1.0)],
                "val_accuracy": [(1, 0.55)],
                "val_loss": [(1, 1.1)],
            },
            id="keras-tsv-no-step-column-trailing-empty-cells",
        ),
        pytest.param(
            '"step","loss"\n1,2.0\n2,"1.5"\n',
            None,
            {"loss": [(1, 2.0), (2, 1.5)]},
            id="quoted-csv",
        ),
        pytest.param(
            "\ufeffstep,loss\n1,2.0\n",
            None,
            {"loss": [(1, 2.0)]},
            id="csv-with-byte-order-mark",
        ),
        pytest.param(
            "step,loss\n1,2.0\nstep,loss,val_loss\n2,1.5,1.7\n3,1.4\n",
            None,
            {"loss": [(1, 2.0), (2, 1.5), (3, 1.4)], "val_loss": [(2, 1.7)]},
            id="csv-header-grows",
        ),
        pytest.param(
            "train loss,global_step\n1.5,10\n1.45,15,a stray,cell\n1.4,20\n",
            "csv",
            {"train loss": [(10, 1.5), (20, 1.4)]},
            id="forced-csv-any-header",
        ),
        pytest.param(
            "step 1 loss 2.0\na,b\n",
            None,
            {"loss": [(1, 2.0)]},
            id="header-only-on-the-first-line",
        ),
        pytest.param(
            "step 1 loss 2.0\n{'loss': 1.0, 'epoch': 1}\n{\"step\": 3, \"loss\": 0.5}\n",
            "jsonl",
            {"loss": [(3, 0.5)]},
            id="forced-jsonl",
        ),
        pytest.param(
            "step 1 loss 2.0\n{'loss': 1.0, 'epoch': 1}\n{\"step\": 3, \"loss\": 0.5}\n",
            "hf",
            {"loss": [(1, 1.0)], "epoch": [(1, 1.0)]},
            id="forced-hf",
        ),
        pytest.param(
            "step 1 loss 2.0\n{'loss': 1.0, 'epoch': 1}\n{\"step\": 3, \"loss\": 0.5}\n",
            "text",
            {"loss": [(1, 2.0)]},
            id="forced-text",
        ),
    ],
)
def test_tables_and_forced_formats(text: str, fmt: str | None, expected: Points) -> None:
    assert points(parse_lines(text.splitlines(), fmt=fmt).series) == expected


def test_corrupt_jsonl_records_are_counted_as_skipped() -> None:
    parsed = parse_lines(['{"step": 1, "loss": 2.0}', '{"step": 2, "loss": 1.', '{"step": 3, "loss": 1.0}'])
    assert points(parsed.series) == {"loss": [(1, 2.0), (3, 1.0)]}
    assert parsed.skipped_lines == 1


def test_parser_state_round_trips_through_json() -> None:
    """Two halves with the state carried through JSON give exactly what one pass gives."""
    text = "epoch,step,loss\n0,10,2.0\n0,20,1.5\n1,30,nan\n"
    whole = parse_lines(text.splitlines())
    first = parse_lines(text.splitlines()[:2])
    second = parse_lines(text.splitlines()[2:], json.loads(json.dumps(first.state)))
    assert merged([ReadBatch(first.series, {}), ReadBatch(second.series, {})]) == points(whole.series)
    assert second.state == whole.state


def test_foreign_parser_state_is_refused() -> None:
    with pytest.raises(ValueError, match="version"):
        LogParser.from_state({"v": 99})
    with pytest.raises(ValueError, match="malformed"):
        LogParser.from_state({"v": 1, "lines_seen": "many"} | {"counter": None})


def test_unknown_format_is_a_config_error_listing_the_formats() -> None:
    with pytest.raises(ConfigError, match="jsonl, csv, tsv, hf, text"):
        LogFileSource("train.log", fmt="yaml")


# --------------------------------------------------------------------------- fatal and error lines

DEEPSPEED_FATAL = "Current loss scale already at minimum - cannot decrease scale anymore. Exiting run."


def test_fatal_and_error_lines_become_prefixed_warnings() -> None:
    lines = [
        "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
        "step 1 loss 2.0",
        DEEPSPEED_FATAL,
        "Traceback (most recent call last):",
        '  File "train.py", line 10, in <module>',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219",
    ]
    parsed = parse_lines(lines)
    assert points(parsed.series) == {"loss": [(1, 2.0)]}
    assert parsed.warnings == [
        "fatal: " + DEEPSPEED_FATAL,
        "error: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",  # its traceback's header
        "error: RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219",
    ]
    assert parsed.fatal_lines == [DEEPSPEED_FATAL]


def test_error_lines_are_capped_keeping_the_latest() -> None:
    lines = [f"RuntimeError: rank {i} failed" for i in range(MAX_WARNINGS + 5)]
    warnings = parse_lines(lines).warnings
    assert len(warnings) == MAX_WARNINGS + 1
    assert warnings[-2] == f"error: RuntimeError: rank {MAX_WARNINGS + 4} failed"
    assert warnings[-1] == "note: earlier error/fatal lines of the log not shown: 5"


CRASHING_SCRIPT = """\
def load(batch):
    return batch["labels"]


def train_step():
    raise RuntimeError("loader worker exited")


try:
    train_step()
except RuntimeError:
    load({})
"""


def real_traceback(tmp_path: Path) -> list[str]:
    """What a crashing Python training prints: a chained traceback from a real interpreter, its source lines
    included (one of them names RuntimeError)."""
    script = tmp_path / "train.py"
    script.write_text(CRASHING_SCRIPT)
    crashed = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=False)
    assert crashed.returncode == 1
    return crashed.stderr.splitlines()


def test_a_traceback_is_quoted_by_its_exception_not_its_header(tmp_path) -> None:
    """Before, only "Traceback (most recent call last):" was kept of a traceback whose exception line names no
    marker (a KeyError), and a source line `raise RuntimeError(...)` counted as an error line of its own: the
    check quoted the header and a line of code, never why the training died."""
    lines = ["step 1 loss 2.0", *real_traceback(tmp_path)]
    warnings = parse_lines(lines).warnings
    assert warnings == ["error: RuntimeError: loader worker exited", "error: KeyError: 'labels'"]


def test_a_traceback_behind_torchrun_rank_prefixes_is_quoted_by_its_exception(tmp_path) -> None:
    lines = [f"[rank1]: {line}" for line in real_traceback(tmp_path)]
    expected = ["error: [rank1]: RuntimeError: loader worker exited", "error: [rank1]: KeyError: 'labels'"]
    assert parse_lines(lines).warnings == expected


# --------------------------------------------------------------------------- bytes and line ends


MIXED_LOG = (
    "2024-01-05 12:00:00 INFO starting\r\n"
    "step 1 | loss 2.5 | lr 1e-4\r\n"
    "\r  0%|          | 0/3 [00:00<?, ?it/s]\r 33%|███▎      | 1/3 [00:01<00:02,  1.0it/s]"
    "\r{'loss': 1.25, 'epoch': 0.5}\n"
    "step 2 | loss nan | lr 1e-4\n"
    '{"step": 3, "loss": 0.75, "val": {"loss": 0.8}}\n'
    "RuntimeError: boom\n"
)


def test_crlf_and_carriage_return_progress_bars() -> None:
    batch = read_log_bytes(MIXED_LOG.encode())
    assert points(batch.series) == {
        "loss": [(1, 2.5), (1, 1.25), (2, "nan"), (3, 0.75)],
        "lr": [(1, 1e-4), (2, 1e-4)],
        "epoch": [(1, 0.5)],
        "val/loss": [(3, 0.8)],
    }
    assert batch.warnings == ["error: RuntimeError: boom"]
    assert batch.cursor["offset"] == len(MIXED_LOG.encode())


def test_every_split_point_gives_the_same_points_as_one_read() -> None:
    """What an SSH source does: feed the appended bytes from the cursor's offset, at any boundary."""
    data = MIXED_LOG.encode()
    whole = points(read_log_bytes(data).series)
    for cut in range(len(data) + 1):
        first = read_log_bytes(data[:cut], {"host_identity": "kept"})
        assert first.cursor["host_identity"] == "kept"
        offset = first.cursor["offset"]
        assert offset <= cut
        second = read_log_bytes(data[offset:], json.loads(json.dumps(first.cursor)))
        assert merged([first, second]) == whole, cut
        assert second.cursor["offset"] == len(data)


def test_a_partial_last_line_waits_for_its_end() -> None:
    first = read_log_bytes(b"step 1 loss 2.0\nstep 2 loss 1.")
    assert points(first.series) == {"loss": [(1, 2.0)]}
    assert first.cursor["offset"] == len(b"step 1 loss 2.0\n")
    second = read_log_bytes(b"step 2 loss 1.5\n", first.cursor)
    assert points(second.series) == {"loss": [(2, 1.5)]}


def test_a_line_longer_than_the_limit_without_an_end_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"x" * (3 * MAX_LINE_BYTES) + b"\nstep 1 loss 2.0\n")
    batch = LogFileSource(path).read(None)
    assert points(batch.series) == {"loss": [(1, 2.0)]}
    assert batch.skipped_chunks >= 1
    assert batch.cursor["offset"] == path.stat().st_size


# --------------------------------------------------------------------------- files, incrementally


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8", newline="") as fh:
        fh.write(text)


def test_appends_between_reads_equal_one_read(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("")
    source = LogFileSource(path)
    cursor = None
    batches = []
    pieces = [
        "step 1 | loss 2.0\nstep 2 | lo",
        "ss 1.8\n",
        "",
        "{'eval_loss': 1.9, 'epoch': 1.0}\r\nstep 3 | loss inf\n",
        "step 4 | loss 1.5\n",
    ]
    for piece in pieces:
        _append(path, piece)
        batch = source.read(json.loads(json.dumps(cursor)) if cursor else None)
        assert not batch.restarted
        batches.append(batch)
        cursor = batch.cursor
    assert merged(batches) == points(LogFileSource(path).read(None).series)
    assert merged(batches) == {
        "loss": [(1, 2.0), (2, 1.8), (3, INF), (4, 1.5)],
        "eval_loss": [(2, 1.9)],
        "epoch": [(2, 1.0)],
    }
    assert [b.new_points for b in batches] == [1, 1, 0, 3, 1]


def test_csv_header_is_remembered_across_reads(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss\n")
    source = LogFileSource(path)
    first = source.read(None)
    assert first.series == {}
    _append(path, "1,2.0\n2,1.5\n")
    assert points(source.read(first.cursor).series) == {"loss": [(1, 2.0), (2, 1.5)]}


def test_a_file_with_no_new_bytes_reads_nothing(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("step 1 loss 2.0\n")
    source = LogFileSource(path)
    first = source.read(None)
    again = source.read(first.cursor)
    assert again.series == {} and not again.restarted
    assert again.cursor["offset"] == first.cursor["offset"]


def _read_twice_with_change(tmp_path: Path, change) -> tuple[ReadBatch, ReadBatch]:
    path = tmp_path / "train.log"
    path.write_text("step 1 loss 2.0\nstep 2 loss 1.9\nstep 3 loss 1.8\n")
    source = LogFileSource(path)
    first = source.read(None)
    change(path)
    return first, source.read(first.cursor)


def _truncate_and_restart(path: Path) -> None:
    path.write_text("step 1 loss 5.0\n")  # same inode, shorter


def _replace_by_rename(path: Path) -> None:
    fresh = path.with_name("train.log.tmp")
    fresh.write_text("step 1 loss 5.0\nstep 2 loss 4.0\nstep 3 loss 3.0\nstep 4 loss 2.0\n")
    os.replace(fresh, path)


def _rewrite_in_place_longer(path: Path) -> None:
    with path.open("r+") as fh:  # same inode, longer, different first bytes (a rewritten CSV does this)
        fh.write("step 1 loss 5.0\nstep 2 loss 4.0\nstep 3 loss 3.0\nstep 4 loss 2.0\n")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_truncate_and_restart, {"loss": [(1, 5.0)]}),
        (_replace_by_rename, {"loss": [(1, 5.0), (2, 4.0), (3, 3.0), (4, 2.0)]}),
        (_rewrite_in_place_longer, {"loss": [(1, 5.0), (2, 4.0), (3, 3.0), (4, 2.0)]}),
    ],
)
def test_shrunk_or_replaced_file_is_read_again_from_the_start(tmp_path: Path, change, expected) -> None:
    _, second = _read_twice_with_change(tmp_path, change)
    assert second.restarted
    assert points(second.series) == expected


def test_plain_append_is_not_a_restart(tmp_path: Path) -> None:
    _, second = _read_twice_with_change(tmp_path, lambda p: _append(p, "step 4 loss 1.7\n"))
    assert not second.restarted
    assert points(second.series) == {"loss": [(4, 1.7)]}


@pytest.mark.parametrize(
    "damage",
    [
        lambda c: c.pop("identity"),
        lambda c: c.update(parser={"v": 0}),
        lambda c: c.update(identity={"inode": "?"}),
    ],
    ids=["no-identity", "old-parser-state", "garbled-identity"],
)
def test_an_unusable_cursor_restarts_from_the_start(tmp_path: Path, damage) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss\n1,2.0\n")
    source = LogFileSource(path)
    cursor = source.read(None).cursor
    damage(cursor)
    _append(path, "2,1.0\n")
    again = source.read(cursor)
    assert again.restarted
    assert points(again.series) == {"loss": [(1, 2.0), (2, 1.0)]}


# --------------------------------------------------------------------------- a real training loop


def _train(log_hf: Path, log_printed: Path, *, steps: int = 60, diverge_at: int = 50) -> dict[str, Points]:
    """Linear regression by minibatch SGD in numpy, logging like HF Trainer (with a tqdm bar on the same
    stream) and like a hand-written loop. At ``diverge_at`` the learning rate jumps and the loss really
    overflows to inf and then NaN. Returns what each log should contain."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(512, 8))
    w_true = rng.normal(size=8)
    y = x @ w_true + 0.1 * rng.normal(size=512)
    x_val, y_val = x[:64], y[:64]
    w = np.zeros(8)
    expected: dict[str, Points] = {"hf": {}, "printed": {}}
    hf_step = 0
    with log_hf.open("w") as hf, log_printed.open("w") as printed, np.errstate(all="ignore"):
        for step in range(1, steps + 1):
            lr = 0.05 if step < diverge_at else 1e30
            idx = rng.integers(0, 512, size=32)
            err = x[idx] @ w - y[idx]
            grad = 2 * x[idx].T @ err / len(idx)
            w = w - lr * grad
            loss = float(np.mean(err**2))
            grad_norm = float(np.linalg.norm(grad))
            hf.write(
                f"\r{100 * step // steps:3d}%|{'█' * (step * 10 // steps):<10}| {step}/{steps} [00:01<00:01]"
            )
            if step % 5 == 0:
                logs = {
                    "loss": round(loss, 4),
                    "grad_norm": grad_norm,
                    "learning_rate": lr,
                    "epoch": step / 20,
                }
                hf.write("\n" + str(logs) + "\n")
                hf_step += 1
                for key, value in logs.items():
                    expected["hf"].setdefault(key, []).append((hf_step, _value(float(value))))
                printed.write(
                    f"2024-01-05 12:00:{step % 60:02d} | step {step} | loss {loss:.6f} | lr {lr:.3e}\n"
                )
                expected["printed"].setdefault("loss", []).append((step, _value(float(f"{loss:.6f}"))))
                expected["printed"].setdefault("lr", []).append((step, float(f"{lr:.3e}")))
            if step % 20 == 0:
                val_loss = float(np.mean((x_val @ w - y_val) ** 2))
                hf.write(str({"eval_loss": val_loss, "eval_runtime": 0.01, "epoch": step / 20}) + "\n")
                expected["hf"].setdefault("eval_loss", []).append((hf_step, _value(val_loss)))
                expected["hf"].setdefault("eval_runtime", []).append((hf_step, 0.01))
                expected["hf"]["epoch"].append((hf_step, step / 20))
                printed.write(f"Validation at step {step}: val_loss={val_loss:.6f}\n")
                expected["printed"].setdefault("val_loss", []).append(
                    (step, _value(float(f"{val_loss:.6f}")))
                )
    return expected


def test_logs_written_by_a_real_training_loop(tmp_path: Path) -> None:
    hf, printed = tmp_path / "hf.log", tmp_path / "printed.log"
    expected = _train(hf, printed)
    hf_points = points(LogFileSource(hf).read(None).series)
    assert hf_points == expected["hf"]
    assert points(LogFileSource(printed).read(None).series) == expected["printed"]
    final_losses = [v for _, v in hf_points["loss"][-2:]]
    assert any(v == "nan" or v == INF for v in final_losses), "the loop was meant to diverge"


# --------------------------------------------------------------------------- a big file


def _write_big_log(path: Path, megabytes: int) -> int:
    """A log shaped like real big ones: mostly tqdm refreshes and chatter, a metric line now and then."""
    bar = "\r 45%|████▌     | 450/1000 [00:45<00:55, 10.0it/s, loss=2.31]" * 8
    chatter = "2024-01-05 12:30:01,123 - INFO - dataloader worker prefetched a shard in time\n"
    step = 0
    target = megabytes << 20
    with path.open("w") as fh:
        while fh.tell() < target:
            block = []
            for _ in range(500):
                step += 1
                block.append(bar + "\n" + chatter * 2 + f"step {step} | loss {1 / step:.6f} | lr 3.0e-04\n")
            fh.write("".join(block))
    return step


def _peak_read_bytes(path: Path) -> tuple[int, ReadBatch]:
    tracemalloc.start()
    try:
        batch = LogFileSource(path).read(None)
        return tracemalloc.get_traced_memory()[1], batch
    finally:
        tracemalloc.stop()


def test_big_file_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """Peak memory follows the chunk size and the points kept, not the file size: a file 6× larger
    peaks at about the same place, far below its own size. (Sizes are small because tracemalloc slows
    parsing several times; the bound does not depend on them.)"""
    small, big = tmp_path / "small.log", tmp_path / "big.log"
    _write_big_log(small, 1)
    steps = _write_big_log(big, 6)
    peak_small, _ = _peak_read_bytes(small)
    peak_big, batch = _peak_read_bytes(big)
    points_bytes = batch.new_points * 16  # int64 step + float64 value
    assert batch.series["loss"].steps.tolist() == list(range(1, steps + 1))
    assert peak_big < big.stat().st_size / 3
    assert peak_big - peak_small < 2 * CHUNK_BYTES + 3 * points_bytes


# --------------------------------------------------------------------------- errors and paths


def test_missing_file_is_run_not_found_with_path_and_hint(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "train.log"
    with pytest.raises(RunNotFound) as info:
        LogFileSource(missing).read(None)
    assert str(missing) in str(info.value)
    assert "check the path" in str(info.value)


def test_directory_is_run_not_found(tmp_path: Path) -> None:
    with pytest.raises(RunNotFound, match="is a directory, not a log file"):
        LogFileSource(tmp_path).read(None)


def test_unreadable_file_is_source_unavailable() -> None:
    folder = Path(tempfile.mkdtemp(prefix="tc-logs-"))
    try:
        folder.chmod(0o755)
        path = folder / "train.log"
        path.write_text("step 1 loss 2.0\n")
        path.chmod(0o000)
        if os.geteuid() == 0:
            outcome = outcome_as_nobody(lambda: LogFileSource(path).read(None))
        else:
            try:
                LogFileSource(path).read(None)
                outcome = "no error"
            except SourceUnavailable as exc:
                outcome = f"SourceUnavailable: {exc}"
        assert outcome.startswith("SourceUnavailable: ")
        assert "permission denied" in outcome and str(path) in outcome
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("train.log", None, True),
        ("metrics.csv", None, True),
        ("history.jsonl", None, True),
        ("slurm-123.out", None, True),
        ("train.log.1", None, True),
        ("run-abc.wandb", None, False),
        ("model.pt", None, False),
        ("stdout", b"step 1 loss 2.0\n", True),
        ("weights", b"\x00\x01\x02", False),
        ("missing_without_suffix", None, False),
    ],
)
def test_is_log_path(tmp_path: Path, name: str, content: bytes | None, expected: bool) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    assert is_log_path(path) is expected


def test_a_directory_is_not_a_log_path(tmp_path: Path) -> None:
    assert is_log_path(tmp_path) is False
