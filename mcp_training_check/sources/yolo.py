"""Ultralytics YOLOv5 / YOLOv8 console output: a table whose header names the columns and whose rows are
progress-bar descriptions, and the validation row under its own header.

Training (one bar per epoch; its description is the row, redrawn at every refresh)::

          Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size
          1/100      3.21G      1.234     0.5678      1.111         45        640: 45%|####5     | 21/47 [...]

YOLOv5 writes ``Epoch gpu_mem box obj cls labels img_size`` and counts epochs from 0 (``0/299``); newer
Ultralytics releases draw the bar themselves (``640: 45% ━━━━━╸────── 21/47 3.8it/s 5.5s<6.8s``). The losses are
the epoch's running means so far. Validation (a bar whose description is the header, then one row)::

                     Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|###| 4/4 [...]
                       all        128        929      0.712      0.634      0.681      0.472

(YOLOv5: ``Class Images Labels P R mAP@.5 mAP@.5:.95``). Names follow the ``results.csv`` both write, so a
console log and its CSV read alike: ``train/box_loss``, ``metrics/mAP50(B)`` (YOLOv5: ``metrics/mAP_0.5``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .loglines import parse_float

__all__ = ["TrainRow", "ValRow", "train_header", "train_row", "val_header", "val_row"]

_TRAIN_FIRST = ("epoch", "gpu_mem")
_TRAIN_LAST = ({"instances", "labels", "targets"}, {"size", "img_size"})
_VAL_FIRST = ("class", "images")
_VAL_COUNT = {"instances", "labels"}
_EPOCH = re.compile(r"(\d+)/(\d+)")
_MEMORY = re.compile(r"\d+(?:\.\d+)?[KMGT]?B?")
# the bar after a row: tqdm's "45%|####5     | 21/47 [...]" or Ultralytics' own "45% ━━━━━╸────── 21/47 3.8it/s"
_BAR = re.compile(r":\s+\d{1,3}%(?:\|[^|]*\||\s+\S+)\s+(\d+)/(\d+)\b")
_GROUPS = {"box": "B", "mask": "M", "pose": "P", "obb": "B"}
_V8_NAMES = {"p": "precision", "r": "recall", "map50": "mAP50", "map50-95": "mAP50-95"}
_V5_NAMES = {"p": "precision", "r": "recall", "map@.5": "mAP_0.5", "map@.5:.95": "mAP_0.5:0.95"}


@dataclass(frozen=True)
class TrainRow:
    """One refresh of an epoch's bar: its epoch, its batch count and total, the running mean losses."""

    epoch: int
    batch: int
    batches: int
    losses: dict[str, float]


@dataclass(frozen=True)
class ValRow:
    """The ``all`` row of a validation: the mean precision, recall and mAPs over the classes."""

    metrics: dict[str, float]


def _words(text: str) -> list[str]:
    bar = text.find(": ")
    head = text[:bar] if bar >= 0 and _BAR.match(text, bar) else text
    return head.split()


def train_header(text: str) -> list[str] | None:
    """The metric names of a training header (``train/box_loss`` …), or None when ``text`` is not one."""
    words = _words(text)
    if len(words) < 5 or tuple(w.lower() for w in words[:2]) != _TRAIN_FIRST:
        return None
    if words[-2].lower() not in _TRAIN_LAST[0] or words[-1].lower() not in _TRAIN_LAST[1]:
        return None
    losses = words[2:-2]
    if not all(re.fullmatch(r"[A-Za-z_]+", w) for w in losses):
        return None
    return [f"train/{w if w.endswith('loss') else f'{w}_loss'}" for w in losses]


def train_row(text: str, columns: list[str]) -> TrainRow | None:
    """A training bar's refresh under a header of ``columns``, or None."""
    bar = _BAR.search(text)
    if bar is None:
        return None
    words = text[: bar.start()].split()
    if len(words) != len(columns) + 4:
        return None
    epoch = _EPOCH.fullmatch(words[0])
    if epoch is None or _MEMORY.fullmatch(words[1]) is None:
        return None
    try:
        values = [parse_float(w) for w in words[2 : 2 + len(columns)]]
    except ValueError:
        return None
    return TrainRow(int(epoch[1]), int(bar[1]), int(bar[2]), dict(zip(columns, values, strict=True)))


def val_header(text: str) -> list[str] | None:
    """The metric names of a validation header (``metrics/precision(B)`` …), or None."""
    words = _words(text)
    if len(words) < 4 or tuple(w.lower() for w in words[:2]) != _VAL_FIRST or words[2].lower() not in _VAL_COUNT:
        return None
    names: list[str] = []
    group = ""
    for word in words[3:]:
        low = word.lower()
        if "(" in low:
            prefix, low = low.split("(", 1)
            group = _GROUPS.get(prefix, prefix[:1].upper())
        low = low.rstrip(")")
        if group:
            name = _V8_NAMES.get(low)
            names.append(f"metrics/{name}({group})" if name else "")
        else:
            name = _V5_NAMES.get(low) or _V8_NAMES.get(low)
            names.append(f"metrics/{name}" if name else "")
    return names if any(names) else None


def val_row(text: str, columns: list[str]) -> ValRow | None:
    """The ``all`` row under a validation header of ``columns`` (a class's own row is not read), or None."""
    words = text.split()
    if len(words) != len(columns) + 3 or words[0] != "all" or not (words[1].isdigit() and words[2].isdigit()):
        return None
    try:
        values = [parse_float(w) for w in words[3:]]
    except ValueError:
        return None
    return ValRow({name: value for name, value in zip(columns, values, strict=True) if name})
