"""Logs of large trainings as their frameworks print them, each written to a file by the test and read by the
log source: a metrics dict after a prefix (absl, ``step N: {...}``), llm.c's ``main.log``, MMDetection's
``log.json``, fairseq's JSON log, ESPnet, timm, torchvision, mmengine, Lightning's RichProgressBar. Each test
asserts names, roles, steps and point counts; each failed on the reader before these formats were added."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mcp_training_check.roles import assign_roles, primary_train_loss
from mcp_training_check.sources.loglines import csv_header
from mcp_training_check.sources.logparse import COUNTED_STEPS_NOTE
from mcp_training_check.sources.logs import LogFileSource, parse_lines
from tests.test_cli import cli

Points = dict[str, list[tuple[int, float]]]


def read(path: Path, text: str) -> tuple[Points, dict[str, str]]:
    """The points and roles the log source reads from `text` written to `path`."""
    path.write_text(text)
    series = LogFileSource(path).read(None).series
    points = {name: list(zip(c.steps.tolist(), c.values.tolist(), strict=True)) for name, c in series.items()}
    return points, {name: info.role.value for name, info in assign_roles(series).items()}


def steps(points: Points, name: str) -> list[int]:
    return [step for step, _ in points[name]]


# --------------------------------------------------------------------------- a dict after a prefix


def algoperf_log(evals: int) -> str:
    """absl logging of the AlgoPerf submission runner: the step and the eval metrics dict on one line."""
    return "".join(
        f"I0101 00:{k:02d}:02.000 139 submission_runner.py:420] Time since start: {100.0 * k:.1f}s, \tStep: {100 * k},"
        f" \t{{'train/accuracy': {0.01 * k:.3f}, 'train/loss': {7 - 0.5 * k:.2f}, 'validation/accuracy': "
        f"{0.009 * k:.3f}, 'validation/loss': {7.1 - 0.4 * k:.2f}, 'total_duration': {101.5 * k:.1f}}}\n"
        for k in range(1, evals + 1)
    )


def test_an_absl_line_with_a_metrics_dict_is_read_at_its_printed_step(tmp_path) -> None:
    """Before, a dict after a prefix was not read: "none of the lines ... holds a metric"."""
    points, roles = read(tmp_path / "log.txt", algoperf_log(5))
    assert steps(points, "train/loss") == [100, 200, 300, 400, 500]
    assert roles["train/loss"] == "train_loss" and roles["validation/loss"] == "eval"
    assert roles["validation/accuracy"] == "eval" and roles["train/accuracy"] == "other"
    assert points["validation/loss"][-1] == (500, pytest.approx(5.1))
    assert len(points) == 5


def test_a_prefixed_dict_takes_its_step_or_epoch_from_the_prefix(tmp_path) -> None:
    """`logger.info(f"step {step}: {metrics}")` and `print(f"Epoch {e} {metrics}")`: a dict's own step wins."""
    lines = [
        *(
            f"2024-01-01 10:00:0{k} INFO step {100 * k}: {{'loss': {3 - 0.1 * k:.2f}, 'lr': 0.001}}"
            for k in range(1, 4)
        ),
        "Epoch 3 {'val_loss': 2.1, 'val_acc': 0.55}",
        "Step: 400, {'step': 350, 'eval_loss': 2.4}",
        'step 500 {"train_loss": 2.2, "test/loss": 2.3}',
    ]
    points, roles = read(tmp_path / "train.log", "\n".join(lines) + "\n")
    assert steps(points, "loss") == [100, 200, 300]
    assert points["val_loss"] == [(300, 2.1)] and points["epoch"] == [(300, 3.0)], "an eval lands at the latest step"
    assert points["eval_loss"] == [(350, 2.4)], "the dict's own step wins over the prefix's"
    assert points["train_loss"] == [(500, 2.2)] and roles["test/loss"] == "eval"
    assert roles["val_acc"] == "eval" and roles["lr"] == "learning_rate"


# --------------------------------------------------------------------------- llm.c


def llmc_main_log(last: int, val_every: int = 250) -> str:
    """llm.c's logger: `s:%d tel:%.4f` (val loss), `s:%d eval:%.4f` (HellaSwag accuracy) at each eval, and
    `s:%d trl:%.4f lr:%.6f norm:%.2f` at every step."""
    out = []
    for s in range(last + 1):
        train = 3.3 + 7.7 * math.exp(-s / 300)
        if s % val_every == 0:
            out += [f"s:{s} tel:{train + 0.05:.4f}", f"s:{s} eval:{0.25 + s / 40000:.4f}"]
        out.append(f"s:{s} trl:{train:.4f} lr:{6e-4 * min(1, (s + 1) / 100):.6f} norm:{1 + 14 * math.exp(-s / 50):.2f}")
    return "\n".join(out) + "\n"


def test_llmc_main_log_has_its_train_loss_val_loss_and_grad_norm(tmp_path) -> None:
    """Before, `trl`, `tel` and `norm` were "other" (no train loss, no eval) and `s` a metric, not the step."""
    points, roles = read(tmp_path / "main.log", llmc_main_log(1000))
    assert roles["trl"] == "train_loss" and roles["tel"] == "eval" and roles["norm"] == "grad_norm"
    assert roles["lr"] == "learning_rate" and "s" not in points
    assert steps(points, "trl") == list(range(1001)) and steps(points, "tel") == [0, 250, 500, 750, 1000]
    assert primary_train_loss(assign_roles(points)) == "trl"


# --------------------------------------------------------------------------- MMDetection / mmengine


def mmdet_log_json(epochs: int, batches: int = 1000, interval: int = 50) -> str:
    """MMDetection 2.x's `*.log.json` (mmcv's TextLoggerHook): the run's meta first, then a record every
    `interval` batches whose "iter" counts within the epoch, and an eval record whose "iter" is the eval
    loader's length."""
    lines = [
        json.dumps(
            {
                "env_info": "sys.platform: linux\nPython: 3.8",
                "config": "model = dict()",
                "seed": 0,
                "exp_name": "faster_rcnn_r50_fpn_1x_coco.py",
            }
        )
    ]
    for epoch in range(1, epochs + 1):
        for it in range(interval, batches + 1, interval):
            loss = 0.5 + 1.5 * math.exp(-((epoch - 1) * batches + it) / 2000)
            lines.append(
                json.dumps(
                    {
                        "mode": "train",
                        "epoch": epoch,
                        "iter": it,
                        "lr": 0.02,
                        "memory": 3565,
                        "data_time": 0.01,
                        "loss_cls": loss / 2,
                        "acc": 90.0,
                        "loss": loss,
                        "time": 0.4,
                    }
                )
            )
        lines.append(
            json.dumps(
                {
                    "mode": "val",
                    "epoch": epoch,
                    "iter": 625,
                    "lr": 0.02,
                    "bbox_mAP": 0.1 * epoch,
                    "bbox_mAP_50": 0.2 * epoch,
                    "bbox_mAP_copypaste": "0.1 0.2 0.1 0.0 0.1 0.2",
                }
            )
        )
    return "\n".join(lines) + "\n"


def test_mmdetection_log_json_steps_run_on_across_epochs_and_val_records_are_evals(tmp_path) -> None:
    """Before, the meta line made `seed` a metric, "iter" went back to 50 every epoch, and an eval landed at
    step 625 (its loader's length)."""
    points, roles = read(tmp_path / "20230101_000000.log.json", mmdet_log_json(3))
    assert "seed" not in points and "val/lr" not in points
    loss_steps = steps(points, "loss")
    assert len(loss_steps) == 60 and loss_steps == sorted(loss_steps) and len(set(loss_steps)) == 60
    assert loss_steps[:2] == [50, 100] and loss_steps[20] == 1050, "an epoch's length is its last logged count"
    assert points["val/bbox_mAP"] == [(1000, 0.1), (2000, 0.2), (3000, pytest.approx(0.3))]
    assert roles["val/bbox_mAP"] == "eval" and roles["loss"] == "train_loss" and roles["lr"] == "learning_rate"


def test_a_json_records_mode_names_its_split_so_a_val_loss_is_no_train_loss() -> None:
    parsed = parse_lines(['{"mode": "train", "step": 10, "loss": 2.0}', '{"mode": "val", "step": 10, "loss": 2.5}'])
    assert {k: c.values.tolist() for k, c in parsed.series.items()} == {"loss": [2.0], "val/loss": [2.5]}


def mmengine_log(epochs: int, batches: int = 300, interval: int = 50) -> str:
    """mmengine's LoggerHook: `Epoch(train)  [e][ n/total]  lr: ...  loss: ...` and after each epoch
    `Epoch(val) [e][k/k]    coco/bbox_mAP: ...`."""
    lines = []
    for epoch in range(1, epochs + 1):
        for n in range(interval, batches + 1, interval):
            loss = 0.5 + 1.5 * math.exp(-((epoch - 1) * batches + n) / 500)
            lines.append(
                f"2023/01/01 10:00:00 - mmengine - INFO - Epoch(train)  [{epoch}][{n:>4}/{batches}]  "
                f"lr: 2.0000e-02  eta: 1 day, 0:00:00  time: 0.4000  data_time: 0.0100  memory: 3500  "
                f"grad_norm: 3.2000  loss: {loss:.4f}  loss_cls: {loss / 2:.4f}  acc: 90.0000"
            )
        lines.append(
            f"2023/01/01 11:00:00 - mmengine - INFO - Epoch(val) [{epoch}][625/625]    coco/bbox_mAP: "
            f"{0.1 * epoch:.4f}  coco/bbox_mAP_50: {0.2 * epoch:.4f}  data_time: 0.0030  time: 0.0600"
        )
    return "\n".join(lines) + "\n"


def test_mmengine_steps_are_batches_across_epochs_and_epoch_val_lines_are_evals(tmp_path) -> None:
    points, roles = read(tmp_path / "20230101_000000.log", mmengine_log(3))
    assert steps(points, "loss") == [300 * e + n for e in range(3) for n in range(50, 301, 50)]
    assert points["val/coco/bbox_mAP"] == [(300, 0.1), (600, 0.2), (900, pytest.approx(0.3))]
    assert roles["val/coco/bbox_mAP"] == "eval" and roles["grad_norm"] == "grad_norm"
    assert "val/time" in points and steps(points, "time") == steps(points, "loss"), "val timings are not train's"


# --------------------------------------------------------------------------- fairseq JSON, ESPnet


def test_fairseq_json_log_reads_its_string_values_at_num_updates(tmp_path) -> None:
    """fairseq's `--log-format json` writes every value as a string; its per-epoch records prefix every key
    with the subset ("valid_num_updates"). Before, nothing but `epoch` was read."""
    lines = []
    for epoch in (1, 2):
        for k in range(1, 4):
            updates = (epoch - 1) * 300 + 100 * k
            lines.append(
                json.dumps(
                    {
                        "epoch": epoch,
                        "update": round(updates / 300, 3),
                        "loss": f"{10 - updates / 100:.3f}",
                        "nll_loss": "9.1",
                        "ppl": "548.2",
                        "wps": "1234",
                        "num_updates": str(updates),
                        "lr": "0.0005",
                        "gnorm": "1.2",
                        "train_wall": "50",
                        "wall": "100",
                    }
                )
            )
        updates = epoch * 300
        lines.append(
            json.dumps(
                {
                    "epoch": epoch,
                    "valid_loss": f"{8 - epoch:.3f}",
                    "valid_nll_loss": "7.5",
                    "valid_ppl": "181",
                    "valid_wps": "5000",
                    "valid_num_updates": str(updates),
                }
            )
        )
        lines.append(
            json.dumps(
                {
                    "epoch": epoch,
                    "train_loss": f"{9 - epoch:.3f}",
                    "train_nll_loss": "8.8",
                    "train_num_updates": str(updates),
                    "train_lr": "0.0005",
                }
            )
        )
    points, roles = read(tmp_path / "train.log", "\n".join(lines) + "\n")
    assert steps(points, "loss") == [100, 200, 300, 400, 500, 600] and points["loss"][0] == (100, 9.0)
    assert points["valid_loss"] == [(300, 7.0), (600, 6.0)] and roles["valid_loss"] == "eval"
    assert points["train_loss"] == [(300, 8.0), (600, 7.0)] and roles["gnorm"] == "grad_norm"
    assert primary_train_loss(assign_roles(points)) == "loss"


def espnet_log(epochs: int, batches: int = 300, interval: int = 100) -> str:
    """ESPnet2's trainer: `Nepoch:train:A-Bbatch: key=value, ...` every `interval` batches, and after each
    epoch `Nepoch results: [train] ..., [valid] loss=..., cer=..., ...`."""
    lines = []
    for epoch in range(1, epochs + 1):
        lines.append(
            f"[host] 2021-03-01 10:00:00,000 (trainer:192) INFO: {epoch}/{epochs}epoch started. "
            "Estimated time to finish: 7 minutes and 58.63 seconds"
        )
        for end in range(interval, batches + 1, interval):
            loss = 20 + 100 * math.exp(-((epoch - 1) * batches + end) / 300)
            lines.append(
                f"[host] 2021-03-01 10:00:00,000 (trainer:672) INFO: {epoch}epoch:train:{end - interval + 1}-"
                f"{end}batch: iter_time=1.2e-04, forward_time=0.2, loss_ctc={loss * 1.2:.3f}, "
                f"loss_att={loss * 0.9:.3f}, acc=0.4, loss={loss:.3f}, backward_time=0.3, "
                "optim_step_time=0.01, optim0_lr0=2.0e-05, train_time=0.6"
            )
        lines.append(
            f"[host] 2021-03-01 10:05:00,000 (trainer:328) INFO: {epoch}epoch results: [train] "
            f"iter_time=1.1e-04, loss={50 - epoch:.3f}, acc=0.15, optim0_lr0=3.0e-05, time=5 minutes and 3 "
            f"seconds, total_count={epoch * batches}, [valid] loss={40 - epoch:.3f}, acc=0.3, cer=0.5, "
            "wer=0.9, time=20.1 seconds, total_count=300, [att_plot] time=3.2 seconds, total_count=0"
        )
    return "\n".join(lines) + "\n"


def test_espnet_steps_are_batches_and_the_valid_results_are_evals(tmp_path) -> None:
    """Before, the `[valid] loss=` of an epoch's results went into the train loss, and `(trainer:672)` was a
    metric named `trainer`."""
    points, roles = read(tmp_path / "train.log", espnet_log(3))
    assert steps(points, "loss") == [100, 200, 300, 400, 500, 600, 700, 800, 900]
    assert points["valid/loss"] == [(300, 39.0), (600, 38.0), (900, 37.0)]
    assert roles["valid/loss"] == "eval" and roles["valid/cer"] == "eval" and roles["loss_ctc"] == "train_loss"
    assert points["train/loss"] == [(300, 49.0), (600, 48.0), (900, 47.0)], "an epoch average is its own metric"
    assert "trainer" not in points and primary_train_loss(assign_roles(points)) == "loss"


# --------------------------------------------------------------------------- timm, torchvision, Rich


def timm_log(epochs: int, batches: int = 1251, interval: int = 250) -> str:
    """timm's train.py: `Train: e [ n/N ( p%)]  Loss: cur (avg)  Time: ...  LR: ...  Data: ...` and after each
    epoch its validate(): `Test: [ n/N]  Time: ...  Loss: cur (avg)  Acc@1: cur (avg)  Acc@5: cur (avg)`."""
    lines = []
    for epoch in range(epochs):
        for n in range(0, batches, interval):
            loss = 2 + 5 * math.exp(-(epoch * batches + n) / 1500)
            lines.append(
                f"Train: {epoch} [{n:>4}/{batches} ({100 * n / (batches - 1):>3.0f}%)]  Loss: {loss:.3f} "
                f"({loss + 0.1:.2f})  Time: 0.312s, 3282.05/s  (0.400s, 2560.00/s)  LR: 1.000e-04  "
                "Data: 0.010 (0.030)"
            )
        for n in (0, 48):
            lines.append(
                f"Test: [{n:>4}/48]  Time: 0.100 (0.200)  Loss:  {1.5 - epoch / 10:.4f} (1.6000)  Acc@1: "
                f"{60 + epoch:.4f} ({59 + epoch:.4f})  Acc@5: 85.0000 (84.0000)"
            )
    return "\n".join(lines) + "\n"


def test_timm_train_steps_are_batches_across_epochs_and_the_current_loss_is_read(tmp_path) -> None:
    points, roles = read(tmp_path / "train.log", timm_log(2))
    assert steps(points, "Loss") == [0, 250, 500, 750, 1000, 1250, 1251, 1501, 1751, 2001, 2251, 2501]
    assert "Train" not in points and points["epoch"][-1] == (2501, 1.0)
    assert points["Loss"][1] == (250, pytest.approx(2 + 5 * math.exp(-250 / 1500), abs=1e-3)), "not the average"
    assert points["Test/Acc@1"] == [(1250, 60.0), (1250, 60.0), (2501, 61.0), (2501, 61.0)]
    assert roles["Test/Acc@1"] == "eval" and roles["LR"] == "learning_rate"


def torchvision_log(epochs: int, batches: int = 5005, interval: int = 1000) -> str:
    """torchvision's classification reference (MetricLogger): `Epoch: [e]  [ n/N]  eta: ...  lr: ...
    img/s: ...  loss: cur (median)  acc1: ...  acc5: ...  time: ...  data: ...  max mem: ...`, the epoch's
    total time, the test loop's lines and the summary ` * Acc@1 ... Acc@5 ...` (PyTorch's ImageNet example)."""
    lines = []
    for epoch in range(epochs):
        width = len(str(batches))
        for n in range(0, batches, interval):
            loss = 1 + 6 * math.exp(-(epoch * batches + n) / 4000)
            lines.append(
                f"Epoch: [{epoch}]  [{n:>{width}}/{batches}]  eta: 1 day, 2:03:04  lr: 0.1  img/s: 500.1  "
                f"loss: {loss:.4f} ({loss + 0.05:.4f})  acc1: 5.0000 (4.0000)  acc5: 20.0000 (19.0000)  "
                "time: 1.7000  data: 1.2000  max mem: 10000"
            )
        lines.append(f"Epoch: [{epoch}] Total time: 1:00:00")
        lines.append(
            "Test:   [  0/196]  eta: 0:10:00  loss: 5.1 (5.1)  acc1: 10.0 (10.0)  acc5: 30.0 (30.0)  "
            "time: 3.0  data: 2.9  max mem: 10000"
        )
        lines.append(f" * Acc@1 {20.0 + epoch:.3f} Acc@5 {40.0 + epoch:.3f}")
    return "\n".join(lines) + "\n"


def test_torchvision_steps_are_batches_and_its_acc_summary_is_an_eval(tmp_path) -> None:
    points, roles = read(tmp_path / "log.txt", torchvision_log(2))
    assert steps(points, "loss") == [0, 1000, 2000, 3000, 4000, 5000, 5005, 6005, 7005, 8005, 9005, 10005]
    assert points["eval/Acc@1"] == [(5000, 20.0), (10005, 21.0)] and roles["eval/Acc@1"] == "eval"
    assert roles["Test/loss"] == "eval" and "Epoch" not in points and "img/s" in points


def test_a_rich_progress_bar_line_is_placed_by_its_epoch_and_count(tmp_path) -> None:
    """Lightning's RichProgressBar as it reaches a redirected file: one line per epoch's last render."""
    lines = [
        f"Epoch {e}/9  {'━' * 40} 120/120 0:00:10 • 0:00:00 12.30it/s v_num: 0 train_loss: {0.5 - e / 100:.3f} "
        f"val_loss: {0.6 - e / 200:.3f}"
        for e in range(10)
    ]
    points, roles = read(tmp_path / "console.log", "\n".join(lines) + "\n")
    assert steps(points, "train_loss") == [120 * (e + 1) for e in range(10)]
    assert roles["val_loss"] == "eval" and "Epoch" not in points and "v_num" not in points


# --------------------------------------------------------------------------- reads in pieces


@pytest.mark.parametrize("make", [mmdet_log_json, mmengine_log, espnet_log, timm_log])
def test_epoch_batch_steps_come_out_the_same_when_the_log_is_read_in_pieces(tmp_path, make) -> None:
    """The epoch offset travels in the parser state: a log read at every check gets the steps of one read."""
    text = make(3)
    path = tmp_path / "train.log"
    whole, _ = read(path, text)
    lines = text.splitlines(keepends=True)
    path.write_text("")
    source, cursor, pieces = LogFileSource(path), None, {}
    for start in range(0, len(lines), 7):
        with path.open("a") as out:
            out.write("".join(lines[start : start + 7]))
        batch = source.read(cursor)
        cursor = batch.cursor
        for name, chunk in batch.series.items():
            pieces.setdefault(name, []).extend(chunk.steps.tolist())
    assert pieces == {name: steps(whole, name) for name in whole}


# --------------------------------------------------------------------------- logs that print no step


def test_a_log_without_step_numbers_says_its_steps_are_counted_lines(tmp_path) -> None:
    """A Trainer console prints its dicts without the step (Keras its epochs): a step is then the count of
    metric lines, which the snapshot says; a log that prints its steps says nothing of the kind."""
    hf = "".join(
        f"{{'loss': {2.0 - k / 100:.4f}, 'grad_norm': 1.1, 'learning_rate': 5e-05, 'epoch': {k / 100:.2f}}}\n"
        f" {k}%|{'█' * (k // 10):<10}| {10 * k}/1000 [00:{k:02d}<01:00,  5.00it/s]\n"
        for k in range(1, 31)
    )
    log = tmp_path / "console.log"
    log.write_text(hf)
    report = json.loads(cli("check", str(log), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    assert report["snapshot"]["last_step"] == 30
    assert [w for w in report["snapshot"]["warnings"] if w == COUNTED_STEPS_NOTE] == [COUNTED_STEPS_NOTE]
    stepped = tmp_path / "train.log"
    stepped.write_text("".join(f"step {s} loss {2.0 / s:.4f}\n" for s in range(1, 31)))
    report = json.loads(cli("check", str(stepped), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    assert COUNTED_STEPS_NOTE not in report["snapshot"]["warnings"]


def test_an_epoch_or_iter_that_is_no_count_places_nothing_by_it() -> None:
    """A NaN or fractional epoch beside "iter" is not an epoch count (before the guard, NaN raised ValueError)."""
    lines = ['{"epoch": NaN, "iter": 3, "loss": 1.0}', '{"epoch": 0.5, "iter": 4, "loss": 0.9}']
    parsed = parse_lines([*lines, '{"epoch": 1, "iter": 5, "loss": 0.8}'])
    assert parsed.skipped_lines == 0 and parsed.series["loss"].steps.tolist() == [1, 2, 5]


# --------------------------------------------------------------------------- formats read before: kept so

SPEECHBRAIN = "".join(
    f"epoch: {e}, lr: 1.00e+00 - train loss: {2.5 - e / 5:.2f} - valid loss: {2.3 - e / 5:.2f}, valid CER: "
    f"{40 - e:.2f}, valid WER: {80 - 2 * e:.2f}\n"
    for e in range(1, 5)
)
KERAS = "".join(
    f"Epoch {e}/4\n1875/1875 [==============================] - 4s 2ms/step - loss: {0.6 - e / 10:.4f} - "
    f"accuracy: {0.7 + e / 50:.4f} - val_loss: {0.7 - e / 10:.4f} - val_accuracy: {0.65 + e / 50:.4f}\n"
    for e in range(1, 5)
)
DETECTRON2 = "".join(
    f"[01/01 10:00:{i:02d} d2.utils.events]:  eta: 1 day, 0:00:00  iter: {20 * i - 1}  total_loss: {2 - i / 10:.3f}  "
    f"loss_cls: 0.7  loss_box_reg: 0.1  time: 0.4  data_time: 0.01  lr: {0.0002 * i:.4f}  max_mem: 3500M\n"
    for i in range(1, 5)
)


@pytest.mark.parametrize(
    ("text", "train", "evals", "expected_steps"),
    [
        (SPEECHBRAIN, "train_loss", ["valid_loss", "valid_CER", "valid_WER"], [1, 2, 3, 4]),
        (KERAS, "loss", ["val_loss", "val_accuracy"], [1, 2, 3, 4]),
        (DETECTRON2, "total_loss", [], [19, 39, 59, 79]),
    ],
    ids=["speechbrain", "keras", "detectron2"],
)
def test_formats_read_before_keep_their_names_roles_and_steps(tmp_path, text, train, evals, expected_steps) -> None:
    points, roles = read(tmp_path / "train_log.txt", text)
    assert primary_train_loss(assign_roles(points)) == train and steps(points, train) == expected_steps
    assert [name for name in evals if roles[name] == "eval" and steps(points, name) == expected_steps] == evals


# --------------------------------------------------------------------------- Ultralytics results.csv

# log-CelloBowHoldApp-1 (corpus_real train, healthy; 23matthewc/CelloBowHoldApp runs/train/exp2/results.csv,
# YOLOv5): its first three rows, as YOLOv5 pads them; epochs counted from 0.
YOLOV5_HEADER = (
    "epoch", "train/box_loss", "train/obj_loss", "train/cls_loss", "metrics/precision", "metrics/recall",
    "metrics/mAP_0.5", "metrics/mAP_0.5:0.95", "val/box_loss", "val/obj_loss", "val/cls_loss", "x/lr0", "x/lr1",
    "x/lr2",
)  # fmt: skip
YOLOV5_ROWS = [
    (0, 0.11078, 0.018586, 0.044857, 0.019186, 0.11212, 0.0089863, 0.0014437, 0.073963, 0.014192, 0.036484,
     0.0012, 0.0012, 0.0892),
    (1, 0.089832, 0.020058, 0.037022, 0.056496, 0.27879, 0.046451, 0.010239, 0.063184, 0.014164, 0.03178,
     0.0024835, 0.0024835, 0.077484),
    (2, 0.073934, 0.0215, 0.029576, 0.67851, 0.22211, 0.12683, 0.024557, 0.059012, 0.011868, 0.024068,
     0.0037498, 0.0037498, 0.06575),
]  # fmt: skip
# log-ADOS_2024-1 (corpus_real train, healthy; 0012223/ADOS_2024 runs/detect/train/results.csv, YOLOv8): epochs
# 1-2 (box and cls losses, mAP50-95), epochs counted from 1.
YOLOV8_ROWS = [(1, 0.55257, 3.1406, 0.34417), (2, 0.52578, 2.2193, 0.70021)]


def padded_csv(header: tuple[str, ...], rows: list[tuple[float, ...]], width: int = 20) -> str:
    lines = [",".join(name.rjust(width) for name in header)]
    lines += [",".join(str(value).rjust(width) for value in row) for row in rows]
    return "\n".join(lines) + "\n"


def test_a_yolov5_results_csv_is_read_with_its_epochs_as_steps(tmp_path) -> None:
    """YOLOv5's results.csv had its rows counted and the check said the file printed no step numbers. Its
    0-based epoch column is the step, from 1: step N ends the N-th epoch, as in YOLOv8's file. Its header
    (``metrics/mAP_0.5:0.95``, a colon in a name) is a header under any file name, not only ``.csv``."""
    points, roles = read(tmp_path / "results.csv", padded_csv(YOLOV5_HEADER, YOLOV5_ROWS))
    assert points["train/box_loss"] == [(1, 0.11078), (2, 0.089832), (3, 0.073934)]
    assert roles["metrics/mAP_0.5:0.95"] == "eval" and steps(points, "metrics/mAP_0.5:0.95") == [1, 2, 3]
    report = json.loads(cli("read", str(tmp_path / "results.csv"), "--json", home=tmp_path / "h", cwd=tmp_path).stdout)
    assert COUNTED_STEPS_NOTE not in report.get("warnings", []) and report["last_step"] == 3, report


def test_a_yolov8_results_csv_read_in_two_checks_and_resumed_keeps_its_epochs(tmp_path) -> None:
    """YOLOv8 counts epochs from 1: epoch N is step N. A run resumed from epoch 1's checkpoint appends epoch 2
    again: it is step 2 again (the store keeps the later point, as for any resumed run), not a 4th step."""
    log = tmp_path / "results.csv"
    header = ("epoch", "train/box_loss", "train/cls_loss", "metrics/mAP50-95(B)")
    log.write_text(padded_csv(header, YOLOV8_ROWS[:1]))
    source = LogFileSource(log)
    first = source.read(None)
    with log.open("a") as fh:
        resumed = [YOLOV8_ROWS[1], (3, 0.51, 2.0, 0.71), (2, 0.5259, 2.2191, 0.7003)]
        fh.write(padded_csv(header, resumed).split("\n", 1)[1])  # rows only
    second = source.read(first.cursor)
    assert first.series["train/box_loss"].steps.tolist() == [1]
    assert second.series["train/box_loss"].steps.tolist() == [2, 3, 2]
    assert COUNTED_STEPS_NOTE not in first.warnings + second.warnings


def test_a_yolov5_header_is_a_csv_header_under_any_file_name() -> None:
    """Copied to ``results.txt`` (or read from stdin's capture), YOLOv5's header was not taken for one: no line
    of the file held a metric."""
    parsed = parse_lines(padded_csv(YOLOV5_HEADER, YOLOV5_ROWS).splitlines())
    assert parsed.series["metrics/mAP_0.5:0.95"].steps.tolist() == [1, 2, 3], parsed.warnings
    assert csv_header("loss:0.5,acc:0.3", ",", forced=False) is None  # values, not names
