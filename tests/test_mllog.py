"""MLPerf result logs (``:::MLLOG {json}`` lines) read as a training log: the events of real MLPerf Training
submissions (the lines `corpus_real/raw/mlperf/` keeps, train split), with the ``submission_benchmark``
event every MLPerf log starts with put back in front. Before, such a log was read as JSON: ``value``,
``time_ms`` and ``metadata/lineno`` were its metrics, and every check answered "no train-loss or eval
metric"."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

from mcp_training_check.roles import assign_roles
from mcp_training_check.sources.logparse import LogParser, parse_lines
from tests.test_cli import cli

RAW = Path(__file__).resolve().parent.parent / "corpus_real" / "raw" / "mlperf"


def mlperf_lines(run_id: str, benchmark: str | None) -> list[str]:
    with gzip.open(RAW / f"{run_id}.txt.gz", "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    if benchmark is None:
        return lines
    head = {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "submission_benchmark",
            "value": benchmark, "metadata": {"file": "mlperf_log_utils.py", "lineno": 1}}  # fmt: skip
    return [":::MLLOG " + json.dumps(head), *lines]


def check(tmp_path: Path, lines: list[str]) -> dict:
    log = tmp_path / "result_0.txt"
    tmp_path.mkdir(exist_ok=True)
    log.write_text("\n".join(lines) + "\n")
    done = cli("check", str(log), "--json", home=tmp_path / "home", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_resnet_result_log_is_judged_on_its_top1_per_epoch(tmp_path) -> None:
    report = check(tmp_path, mlperf_lines("mlperf-v0.7-resnet-google-tpu-v3-32-tf2-0-r0", "resnet"))
    metrics = {m["name"]: m for m in report["snapshot"]["metrics"]}
    assert set(metrics) == {"eval_accuracy"}, "hyperparameters and timings are no metrics"
    assert metrics["eval_accuracy"]["role"] == "eval" and metrics["eval_accuracy"]["direction"] == "higher"
    assert report["snapshot"]["last_step"] == 38, "epochs place the evals"
    assert report["verdict"]["decision"] == "continue", report["summary"]
    assert report["next_action"] == "end_monitoring", "run_stop says the run finished"


def test_rnnt_eval_accuracy_is_a_word_error_rate_so_lower_is_better(tmp_path) -> None:
    """RNN-T's `eval_accuracy` is its WER: read as an accuracy, a WER back at 1.0 would look like success."""
    healthy = check(tmp_path / "a", mlperf_lines("mlperf-v1.0-rnnt-gigabyte-g492-zd2-a100-2021-r0", "rnnt"))
    assert {m["name"] for m in healthy["snapshot"]["metrics"]} == {"eval_wer"}
    assert healthy["verdict"]["decision"] == "continue", healthy["summary"]
    broken = check(tmp_path / "b", mlperf_lines("mlperf-v3.1-rnnt-xfusion-g5500v7x8l40-r2", "rnnt"))
    assert broken["verdict"]["decision"] == "stop", broken["summary"]
    assert "eval_wer" in broken["summary"] and "collapsed" in broken["summary"]


def test_mask_rcnn_dict_evals_and_tracked_losses_share_the_step_axis() -> None:
    parsed = parse_lines(mlperf_lines("mlperf-v1.0-maskrcnn-nvidia-dgxa100-ngc21-05-p-r4", "maskrcnn"))
    series = parsed.series
    roles = assign_roles(series)
    assert roles["eval_accuracy/BBOX"].role.value == "eval" and roles["eval_accuracy/SEGM"].role.value == "eval"
    assert roles["tracked_stats/loss"].role.value == "train_loss"
    train_steps, bbox_steps = series["tracked_stats/loss"].steps, series["eval_accuracy/BBOX"].steps
    assert train_steps[-1] > 10_000, "the loss is placed by its global step"
    assert bbox_steps[-1] == train_steps[-1], "the final eval sits at the last train step before it"
    assert all(b > a for a, b in itertools.pairwise(bbox_steps))


def test_an_epoch_that_does_not_move_places_evals_in_log_order() -> None:
    """BERT v1.0 logs `epoch_num: 1` at every eval; DLRM logs fractions of an epoch."""
    for run_id, bench in [("mlperf-v1.0-bert-supermicro-as-2124gq-nart-r4", "bert"),
                          ("mlperf-v0.7-dlrm-nvidia-dgx2h-ngc20-06-mer-r4", "dlrm")]:  # fmt: skip
        steps = parse_lines(mlperf_lines(run_id, bench)).series["eval_accuracy"].steps.tolist()
        assert len(steps) > 5 and steps == sorted(set(steps)), (run_id, steps[:8])


def test_the_benchmark_is_remembered_across_reads() -> None:
    """The cron's second read starts after `submission_benchmark`: the parser state carries it."""
    lines = mlperf_lines("mlperf-v1.0-rnnt-gigabyte-g492-zd2-a100-2021-r0", "rnnt")
    first = parse_lines(lines[:40])
    state = json.loads(json.dumps(first.state))  # as the cursor stores it
    second = parse_lines(lines[40:], state)
    assert set(second.series) == {"eval_wer"}
    assert LogParser.from_state(second.state).mllog_benchmark == "rnnt"


def test_without_the_benchmark_line_eval_accuracy_keeps_its_name() -> None:
    series = parse_lines(mlperf_lines("mlperf-v1.0-rnnt-gigabyte-g492-zd2-a100-2021-r0", None)).series
    assert set(series) == {"eval_accuracy"}, "the name says what the log says; `--role` corrects it"


def test_hyperparameter_and_interval_events_are_no_metrics() -> None:
    lines = [
        ':::MLLOG {"namespace": "", "time_ms": 5, "event_type": "POINT_IN_TIME", "key": "global_batch_size", '
        '"value": 256, "metadata": {"file": "train.py", "lineno": 10}}',
        ':::MLLOG {"namespace": "", "time_ms": 6, "event_type": "INTERVAL_START", "key": "epoch_start", '
        '"value": null, "metadata": {"file": "train.py", "lineno": 11, "epoch_num": 1}}',
        ':::MLLOG {"namespace": "", "time_ms": 7, "event_type": "POINT_IN_TIME", "key": "train_loss", '
        '"value": NaN, "metadata": {"file": "train.py", "lineno": 12, "samples_count": 2048, "lr": 0.001}}',
    ]
    series = parse_lines(lines).series
    assert set(series) == {"train_loss", "lr"}
    assert series["train_loss"].steps.tolist() == [2048] and series["lr"].values.tolist() == [0.001]
