"""Console logs drawn by progress bars that redraw one line with ``\\r``: Ultralytics YOLOv5/YOLOv8's training
table (the row is the bar's description), a tqdm postfix set several times per count, Lightning's Rich bar.
Each step counts once, with the values of its last refresh; each test failed on the reader before (the YOLO
table read nothing, the bars gave a point per refresh: 158 points for 40 steps)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from tqdm import tqdm

from mcp_training_check.roles import assign_roles
from mcp_training_check.sources.logs import LogFileSource
from tests.test_cli import cli

Points = dict[str, list[tuple[int, float]]]

V8_TRAIN = ("Epoch", "GPU_mem", "box_loss", "cls_loss", "dfl_loss", "Instances", "Size")
V8_VAL = ("Class", "Images", "Instances", "Box(P", "R", "mAP50", "mAP50-95)")
V5_TRAIN = ("Epoch", "gpu_mem", "box", "obj", "cls", "labels", "img_size")
V5_VAL = ("Class", "Images", "Labels", "P", "R", "mAP@.5", "mAP@.5:.95")


def read(path: Path) -> Points:
    series = LogFileSource(path).read(None).series
    return {name: list(zip(c.steps.tolist(), c.values.tolist(), strict=True)) for name, c in series.items()}


def batch_losses(epoch: int, batch: int, batches: int, nan_from_epoch: int | None) -> list[float]:
    if nan_from_epoch is not None and epoch >= nan_from_epoch:
        return [math.nan] * 3
    level = 1.0 + 1.5 * math.exp(-(epoch * batches + batch) / 60)
    return [0.55 * level + 0.01 * (batch % 3), 0.8 * level, 0.9 * level]


def yolo_console(
    path: Path, *, version: int, epochs: int, batches: int, nan_from_epoch: int | None = None
) -> dict[int, list[float]]:
    """A YOLO training's console as the real tqdm writes it to a file, with the header, row and validation
    formats of Ultralytics' trainer and validator (YOLOv8) or YOLOv5's train.py and val.py. Returns the running
    mean losses each step's last refresh shows."""
    width, bar_format = (11, "{l_bar}{bar:10}{r_bar}") if version == 8 else (10, "{l_bar}{bar:10}{r_bar}{bar:-10b}")
    shown: dict[int, list[float]] = {}
    with path.open("w") as out:
        for epoch in range(epochs):
            header = V8_TRAIN if version == 8 else V5_TRAIN
            out.write(("\n" + f"%{width}s" * 7) % header + "\n")
            pbar = tqdm(enumerate(range(batches)), total=batches, file=out, bar_format=bar_format, mininterval=0)
            mean: list[float] = []
            for i, _ in pbar:
                items = batch_losses(epoch, i, batches, nan_from_epoch)
                mean = items if not mean else [(m * i + x) / (i + 1) for m, x in zip(mean, items, strict=True)]
                label = f"{epoch + 1}/{epochs}" if version == 8 else f"{epoch}/{epochs - 1}"
                desc = (f"%{width}s" * 2 + f"%{width}.4g" * 5) % (label, "3.21G", *mean, 40 + i % 7, 640)
                pbar.set_description(desc)  # drawn at count i; the update after it draws count i + 1
                shown[epoch * batches + max(i, 1)] = [float(f"{m:.4g}") for m in mean]
            pbar.close()
            shown[(epoch + 1) * batches] = [float(f"{m:.4g}") for m in mean]
            names, row = (V8_VAL, "%22s") if version == 8 else (V5_VAL, "%20s")
            for _ in tqdm(range(4), desc=(row + "%11s" * 6) % names, file=out, bar_format=bar_format, mininterval=0):
                pass
            m = 0.7 * (1 - math.exp(-(epoch + 1) / 3))
            out.write((row + "%11i" * 2 + "%11.3g" * 4) % ("all", 128, 929, m + 0.03, m - 0.02, m, 0.65 * m) + "\n")
    return shown


@pytest.mark.parametrize("version", [8, 5])
def test_a_yolo_console_is_read_one_point_per_batch_and_its_validation_row_per_epoch(tmp_path, version) -> None:
    log = tmp_path / "train.log"
    shown = yolo_console(log, version=version, epochs=3, batches=5)
    points = read(log)
    losses = ["train/box_loss", "train/cls_loss", "train/dfl_loss"]
    maps = ["metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)"]
    if version == 5:
        losses = ["train/box_loss", "train/obj_loss", "train/cls_loss"]
        maps = ["metrics/precision", "metrics/recall", "metrics/mAP_0.5", "metrics/mAP_0.5:0.95"]
    assert sorted(points) == sorted(losses + maps)
    for k, name in enumerate(losses):
        assert points[name] == [(step, values[k]) for step, values in sorted(shown.items())], name
    assert [step for step, _ in points[maps[2]]] == [5, 10, 15], "validation lands at the epoch's last batch"
    assert points[maps[2]][0][1] == pytest.approx(0.7 * (1 - math.exp(-1 / 3)), abs=1e-3)
    roles = {name: info.role.value for name, info in assign_roles(LogFileSource(log).read(None).series).items()}
    assert all(roles[name] == "train_loss" for name in losses) and all(roles[name] == "eval" for name in maps)


def test_the_bar_ultralytics_draws_itself_is_read_too(tmp_path) -> None:
    """Ultralytics 8.3's own TQDM: ``\\r\\033[K{desc}: {percent:.0f}% {bar} {n}/{total} {rate} {elapsed}{remaining}``
    (utils/tqdm.py), its bar of ━ ╸ ─ twelve wide."""
    out = ["\n" + ("%11s" * 7) % V8_TRAIN + "\n"]
    for n in range(1, 5):
        desc = ("%11s" * 2 + "%11.4g" * 5) % ("1/10", "2.5G", 1.2 - n / 100, 0.9, 1.1, 33, 640)
        bar = "━" * (3 * n) + "─" * (12 - 3 * n)
        out += [f"\r\033[K{desc}: {25 * n}% {bar} {n}/4 3.8it/s {n * 0.3:.1f}s<{(4 - n) * 0.3:.1f}s"] * 2
    out.append("\n" + ("%22s" + "%11s" * 6) % V8_VAL + ": 100% ━━━━━━━━━━━━ 2/2 5.1it/s 0.4s\n")
    out.append(("%22s" + "%11i" * 2 + "%11.3g" * 4) % ("all", 16, 120, 0.51, 0.42, 0.44, 0.27) + "\n")
    log = tmp_path / "train.log"
    log.write_text("".join(out))
    points = read(log)
    assert points["train/box_loss"] == [(1, 1.19), (2, 1.18), (3, 1.17), (4, 1.16)]
    assert points["metrics/mAP50-95(B)"] == [(4, 0.27)]


def test_a_yolov8_run_gone_nan_is_stopped_from_its_console(tmp_path) -> None:
    log = tmp_path / "train.log"
    yolo_console(log, version=8, epochs=8, batches=30, nan_from_epoch=6)
    report = json.loads(cli("check", str(log), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    assert report["verdict"]["decision"] == "stop", report["summary"]
    assert report["verdict"]["signals"][0]["message"].startswith("train/box_loss is NaN at step 240")


def test_a_yolo_console_read_in_pieces_gives_the_points_of_one_read(tmp_path) -> None:
    """The table's columns travel in the parser state: a check reading a live console in pieces."""
    whole = tmp_path / "whole.log"
    yolo_console(whole, version=8, epochs=3, batches=5)
    expected = read(whole)
    assert len(expected["train/box_loss"]) == 15 and len(expected["metrics/mAP50(B)"]) == 3
    data = whole.read_bytes()
    path = tmp_path / "live.log"
    path.write_bytes(b"")
    source, cursor, pieces = LogFileSource(path), None, {}
    for start in range(0, len(data), 997):
        with path.open("ab") as out:
            out.write(data[start : start + 997])
        batch = source.read(cursor)
        cursor = batch.cursor
        for name, chunk in batch.series.items():
            pieces.setdefault(name, {}).update(zip(chunk.steps.tolist(), chunk.values.tolist(), strict=True))
    assert {name: sorted(p.items()) for name, p in pieces.items()} == expected


def test_a_tqdm_postfix_set_several_times_per_count_is_one_point_per_step_the_last_one(tmp_path) -> None:
    """A loop with gradient accumulation sets the postfix at each micro-batch: the real tqdm redraws the same
    count four times with four losses; the step is the count, its value the last drawn."""
    log = tmp_path / "console.log"
    last: dict[int, float] = {}
    with log.open("w") as out:
        bar = tqdm(range(1, 41), desc="train", file=out, mininterval=0, ascii=True)
        for step in bar:
            for micro in range(4):
                loss = round(2.0 * math.exp(-step / 20) + 0.001 * micro, 4)
                bar.set_postfix(loss=f"{loss:.4f}", refresh=True)
                last[step - 1] = loss  # drawn at the count before the update
        bar.close()
    points = read(log)["loss"]
    assert [s for s, _ in points] == list(range(1, 41)), "one point per step"
    assert points[:-1] == [(s, last[s]) for s in range(1, 40)], "the last refresh of each count wins"


def rich_refreshes(epochs: int, batches: int) -> str:
    """Lightning's RichProgressBar redrawn in place, as rich 15 writes a live display to a terminal (the shape
    captured from the real library: ``\\r\\x1b[2K`` then the line): when the count moves the bar is drawn with
    the old metrics, then with the new ones, then once more; the epoch's val_loss, drawn at its end, stays shown
    through the next epoch."""
    out, train, val = ["\x1b[?25l"], "v_num: 0", ""
    for epoch in range(epochs):
        for n in range(1, batches + 1):
            bar = "━" * (40 * n // batches) + " " * (40 - 40 * n // batches)
            line = f"\r\x1b[2KEpoch {epoch}/{epochs - 1} {bar} {n}/{batches} 0:00:01 • 0:00:02 "
            out.append(line + train + val)
            train = f"v_num: 0 train_loss: {2.0 * math.exp(-(epoch * batches + n) / 30) + 0.1:.3f}"
            out += [line + train + val] * 2
        val = f" val_loss: {0.3 + 2.0 * math.exp(-(epoch + 1) * batches / 30):.3f}"
        out.append(line + train + val)
    return "".join(out) + "\n\x1b[?25h"


def test_a_rich_bar_redrawn_in_place_counts_each_step_once_and_each_val_loss_once(tmp_path) -> None:
    log = tmp_path / "console.log"
    log.write_bytes(rich_refreshes(3, 10).encode())
    points = read(log)
    assert [s for s, _ in points["train_loss"]] == list(range(1, 31)), "one point per step"
    assert [s for s, _ in points["val_loss"]] == [10, 20, 30], "a val_loss still shown is not a new eval"


def test_a_rich_bar_whose_loss_shows_no_change_still_moves_the_runs_step(tmp_path) -> None:
    """A converged loss at the Rich bar's 3 digits: the next check's bar refreshes change no value, yet the
    run advanced. As for a tqdm bar, the train loss it shows is a point at its latest count at the end of each
    read (before, the second check read no point and the step stayed at the first check's)."""
    log = tmp_path / "console.log"

    def refreshes(first: int, last: int) -> str:
        return "".join(
            f"\r\x1b[2KEpoch 0/9 {'━' * (40 * n // 1000):<40} {n}/1000 0:00:01 • 0:00:02 v_num: 0 train_loss: 0.231"
            for n in range(first, last + 1)
        )

    log.write_text(refreshes(1, 100) + "\n")
    steps = []
    for first, last in [(101, 200), (201, 300)]:
        report = json.loads(cli("check", str(log), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
        steps.append(report["snapshot"]["last_step"])
        with log.open("a") as out:
            out.write(refreshes(first, last) + "\n")
    report = json.loads(cli("check", str(log), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    steps.append(report["snapshot"]["last_step"])
    assert steps == [100, 200, 300]
    assert report["snapshot"]["new_points"] == 1
