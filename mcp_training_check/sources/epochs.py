"""Training lines that count batches within an epoch instead of printing a step, and the step the parser
gives them: the batches of the epochs before plus the line's count (`epoch_step`).

Pure functions of one line of text (`epoch_batch`, `loss_log_line`) and of the small state the parser
carries across reads (`EpochState`). ``logparse.LogParser`` decides which grammar a line gets.

pytorch-CycleGAN-and-pix2pix's ``loss_log.txt`` (CycleGAN, pix2pix, and the forks that keep its
``Visualizer``: pix2pixHD, BicycleGAN, GANILLA, DeblurGAN, …) is one of them::

    ================ Training Loss (Sun Mar  1 10:00:00 2020) ================
    (epoch: 1, iters: 100, time: 0.123, data: 0.002) G_GAN: 1.121 G_L1: 5.300 D_real: 0.696 D_fake: 0.400

``iters`` counts the samples of the epoch so far and restarts at each epoch (pix2pixHD prints
``(epoch: 1, iters: 100, time: 0.123)``); ``time`` and ``data`` are the seconds per sample of compute and
loading; every ``name: value`` after the header is one of the model's training losses
(``Visualizer.print_current_losses`` prints ``model.get_current_losses()`` and nothing else), so each is
named under ``train/``, as the model's losses are: ``train/G_L1``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from .base import STEP_RANGE
from .loglines import parse_float

__all__ = ["LOSS_LOG_SPLIT", "EpochBatch", "EpochState", "epoch_batch", "epoch_step", "loss_log_line"]


@dataclass(frozen=True)
class EpochBatch:
    """Where a line stands when it counts batches within an epoch: the parser turns it into a step."""

    label: str  # the word the epoch number follows ("Train", "Epoch"): not a metric
    epoch: int
    batch: int
    batches: int | None  # the epoch's length, when the line states it
    redrawn: bool = False  # a progress bar redrawn in place (Rich): a refresh repeats the values it showed


# Lines that count batches within an epoch: timm's "Train: 0 [ 100/1251 (  8%)]", torchvision's
# "Epoch: [0]  [  0/5005]", mmengine's "Epoch(train)  [1][  50/7330]", ESPnet's "1epoch:train:1-100batch:".
_EPOCH_BATCH = (
    re.compile(
        r"\b(?P<label>Epoch|Train)(?:\(train\))?:?\s*\[?\s*(?P<epoch>\d+)\s*\]?\s*"
        r"\[\s*(?P<batch>\d+)\s*/\s*(?P<batches>\d+)\s*[\](]"
    ),
    re.compile(r"\b(?P<epoch>\d+)(?P<label>epoch):train:\d+-(?P<batch>\d+)batch\b"),
    # Lightning's RichProgressBar: "Epoch 3/9  ━━━━━━━━━━━ 120/120 0:00:10 • 0:00:00 12.30it/s train_loss: 0.5"
    re.compile(r"\b(?P<label>Epoch) (?P<epoch>\d+)/\d+\s+[━╸╺╾╼ ]+\s*(?P<batch>\d+)/(?P<batches>\d+)\s"),
)


def epoch_batch(text: str) -> EpochBatch | None:
    """The epoch and batch count a training line prints in place of a step, or None."""
    if "poch" not in text and "Train" not in text:
        return None
    for pattern in _EPOCH_BATCH:
        found = pattern.search(text)
        if found is not None:
            batches = found.groupdict().get("batches")
            total = int(batches) if batches else None
            redrawn = pattern is _EPOCH_BATCH[-1]
            return EpochBatch(found["label"], int(found["epoch"]), int(found["batch"]), total, redrawn)
    return None


LOSS_LOG_SPLIT = "train"
"""The split a loss_log.txt line's terms are named under: the file holds the training losses alone."""

_LOSS_LOG_HEADER = re.compile(r"\(epoch:\s*(?P<epoch>\d+),\s*iters:\s*(?P<batch>\d+)(?:,\s*\w+:\s*[-+.\deE]+)*\)")
_LOSS_LOG_TERM = re.compile(r"(?P<name>[A-Za-z_][\w.-]*):\s*(?P<value>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))")


def loss_log_line(text: str) -> tuple[EpochBatch, dict[str, float]] | None:
    """Where a pix2pix-style ``loss_log.txt`` line stands and its losses, named under ``train/``; None for
    another line. The header's ``time`` and ``data`` are timings, not metrics: dropped."""
    if not text.startswith("(epoch:"):
        return None
    header = _LOSS_LOG_HEADER.match(text)
    if header is None:
        return None
    losses = {
        f"{LOSS_LOG_SPLIT}/{term['name']}": parse_float(term["value"])
        for term in _LOSS_LOG_TERM.finditer(text, header.end())
    }
    position = EpochBatch("epoch", int(header["epoch"]), int(header["batch"]), None)
    return (position, losses) if losses else None


class EpochState(NamedTuple):
    """What the parser carries for these lines: the latest line's epoch (None before one), its batch count,
    the steps of the epochs before it, and whether an epoch's length is still unknown."""

    epoch: int | None = None
    batch: int = 0
    offset: int = 0
    length_unknown: bool = False


def epoch_step(at: EpochBatch, state: EpochState) -> tuple[int, EpochState]:
    """The step of a line that counts batches within an epoch, and the state after it: the batches of the
    epochs before it plus its count. An epoch's length is what the line states ("[ 100/1251]"), else the last
    count its epoch showed (MMDetection's log.json logs every 50th batch: its steps run up to 49 short per
    epoch; a loss_log.txt its print frequency). A count that did not go back at the new epoch is the run's own
    (an iteration-based runner): no offset. Read from its middle (tail-first), a log whose lines state the
    length is exact; else `log_tail` starts the part at an estimate (``length_unknown``). Raises
    OverflowError for a step beyond int64 (one hostile line; the state is untouched)."""
    offset, ended = state.offset, state.epoch is not None and at.epoch > state.epoch
    if ended:
        length = at.batches or (state.batch if at.batch <= state.batch else 0)
        offset += (at.epoch - (state.epoch or 0)) * length
    if offset + at.batch > STEP_RANGE[1]:
        raise OverflowError(f"epoch {at.epoch} batch {at.batch} is beyond int64")
    first = state.epoch is None
    unknown = at.batches is None and not ended and (first or state.length_unknown)
    return offset + at.batch, EpochState(at.epoch, at.batch, offset, unknown)
