"""The file-free half of the text-log reader: text lines → ``(metric, step, value)`` points.

``LogParser`` picks a format for each line (JSONL, CSV/TSV, Hugging Face Trainer dicts, MLPerf's
``:::MLLOG`` events, printed lines; the grammars are in ``loglines`` and ``mllog``) and assigns steps;
its state is a small JSON-able dict that travels in a cursor. ``parse_lines`` is the one-call entry point.
``lognotes.ParseNotes`` collects what matters besides numbers: fatal and error lines, and lines that could
not be parsed. ``logs`` feeds it bytes and files.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..models import MetricRole
from ..roles import infer_role
from .bars import MAX_BAR_METRICS, BarLines
from .base import STEP_RANGE, Cursor, SeriesBuilder, SeriesChunk
from .epochs import EpochBatch, EpochState, epoch_batch, epoch_step, loss_log_line
from .loglines import (
    EXPLICIT_STEP_KEYS,
    HF_TRAIN_KEYS,
    IGNORED_KEYS,
    csv_header,
    flatten,
    hf_dict,
    json_dict,
    parse_float,
    pop_step,
    prefix_counts,
    progress_bar,
    record_split,
    split_row,
    step_total,
    text_metrics,
    under_split,
)
from .lognotes import (
    ERROR_PREFIX,
    FATAL_PREFIX,
    HIDDEN_LINES_NOTE,
    MAX_LINE_BYTES,
    MAX_WARNINGS,
    ParseNotes,
)
from .mllog import MLLOG_MARKER, MllogEvent, parse_mllog_line
from .yolo import train_header, train_row, val_header, val_row

__all__ = [
    "COUNTED_STEPS_NOTE",
    "ERROR_PREFIX",
    "FATAL_PREFIX",
    "FORMATS",
    "HIDDEN_LINES_NOTE",
    "MAX_LINE_BYTES",
    "MAX_WARNINGS",
    "LogParser",
    "ParseNotes",
    "ParsedLines",
    "parse_lines",
    "restore_parser",
]

FORMATS = ("jsonl", "csv", "tsv", "hf", "text")
TRAINER_BANNER_MARKERS = (
    "  Num examples = ",
    "  Num Epochs = ",
    "  Instantaneous batch size per device = ",
    "batch size has been adjusted to",
    "  Total train batch size (",
    "  Gradient Accumulation steps = ",
    "  Total optimization steps = ",
    "  Number of trainable parameters = ",
    "  Batch size = ",
)
"""The lines of the HF Trainer's ``***** Running training *****`` and ``***** Running Evaluation *****``
banners (also printed by the accelerate and diffusers example scripts): sizes, not metrics. Read as
``key = value`` lines they became metrics (``Epochs``, ``device``, ``steps`` 375, ``examples``) and, in a
log without step numbers, each was counted as a step: 4 at the start and 2 at every evaluation."""
SKIP_LINE_MARKERS = ("OVERFLOW!",)  # DeepSpeed fp16 skipped step: normal, and its numbers are not metrics
PARSER_STATE_VERSION = 1
UTF8_BOM = "\ufeff"

MAX_MLLOG_METRICS = 256
"""Metric names whose last MLLOG step the parser state keeps (a log names a handful)."""

LINE_FAILURES = (OverflowError, RecursionError, csv.Error)
"""What one hostile line can make a grammar raise (a number beyond float or int64, JSON nested thousands
deep, a CSV field past the csv module's limit): that line is skipped and counted, the read goes on."""

FINAL_LINE_MARKERS = ("train_runtime", "Training completed", '"key": "run_stop"')
"""A line the training prints once, when it has finished: the HF Trainer's closing metrics dict
(``{'train_runtime': ..., 'train_loss': ...}``) and its "Training completed." message, and MLPerf's
``:::MLLOG {..., "key": "run_stop", ...}`` event. A training line after it (a resumed run appending to
the same log) clears it."""

TRAINER_SUMMARY_KEYS = ("train_runtime", "train_samples_per_second", "train_steps_per_second")
"""The keys of the HF Trainer's closing dict (``{'train_runtime': 812.4, 'train_samples_per_second': 27.6,
'train_steps_per_second': 3.45, 'train_loss': 0.83, 'epoch': 3.0}``, its ``speed_metrics``): its numbers are the
whole run's (``train_loss`` is the AVERAGE loss of every step, above the latest logged loss of a falling one),
not a logged step, so the dict adds no point. It says the run finished (`FINAL_LINE_MARKERS`): the snapshot's
status, which ends monitoring. A record is one when it holds the runtime and a throughput and no step's
training keys (`_closing_summary`): a logger of its own may log an elapsed ``train_runtime`` at every step."""

COUNTED_STEPS_NOTE = (
    "note: this log prints no step numbers: a step here is the count of its metric lines so far (its 10th line "
    "with a train metric is step 10), not the training's optimizer step"
)

TRAINER_STATE_NOTE = (
    "note: this is a Hugging Face trainer_state.json too large to re-read whole at each check (over 64 MiB; "
    "smaller ones are read as the document they are): point `run` at the training's console output (the "
    "Trainer prints every log there as {'loss': ...}) or at its W&B run"
)

_FINAL_LINE = re.compile("|".join(re.escape(m) for m in FINAL_LINE_MARKERS))
_SKIP_LINE = re.compile("|".join(re.escape(m) for m in SKIP_LINE_MARKERS))
_TRAINER_BANNER = re.compile(  # an indented marker: indented after a logger prefix, or first on a stripped line
    "|".join(("(?:^|  )" if m.startswith(" ") else "") + re.escape(m.lstrip()) for m in TRAINER_BANNER_MARKERS)
)
# the example scripts' `trainer.log_metrics` block: "***** train metrics *****", then "  train_loss = 0.8301" lines
_METRICS_BLOCK = re.compile(r"\*{5} \w+ metrics \*{5}")
_MAYBE_NUMBER = re.compile(r"\d|nan|inf", re.IGNORECASE)
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # colours, and tqdm's cursor moves between its bars


def _closing_summary(metrics: Mapping[str, float]) -> bool:
    """The HF Trainer's closing dict (`TRAINER_SUMMARY_KEYS`), not a step's record."""
    runtime, *throughputs = TRAINER_SUMMARY_KEYS
    return runtime in metrics and any(k in metrics for k in throughputs) and not HF_TRAIN_KEYS.intersection(metrics)


def _trainer_banner(text: str) -> bool:
    """A line of the Trainer's banners (`TRAINER_BANNER_MARKERS`), indented or not (the lines reach here
    stripped: printed without a logger prefix, "  Num Epochs = 3" was read as a metric and a step). The
    substring tests first: the regex of nine markers cost 1 µs a line, 0.3 s on a 300,000-line log, for lines
    that are nearly never there."""
    return (" = " in text or "adjusted to" in text) and _TRAINER_BANNER.search(text) is not None


# --------------------------------------------------------------------------- parser


class LogParser(BarLines):
    """Per-file parse state: format, CSV header, and the counters that stand in for a missing step.

    Steps: a line's own step key wins. A training line without one takes the next counter value (or the
    latest explicit step once the file has shown one); an eval line without one takes the latest step, so
    ``eval_loss`` lands where the preceding ``loss`` did. ``to_state``/``from_state`` carry this across reads.

    Progress bars (`_bar_line`) are the fallback for a log that prints its metrics nowhere else.
    """

    def __init__(self, fmt: str | None = None) -> None:
        if fmt is not None and fmt not in FORMATS:
            raise ConfigError(f"log format {fmt!r} is unknown; use one of: {', '.join(FORMATS)} (or omit it)")
        self.fmt = fmt
        self.csv_header: list[str] | None = None
        self.csv_delim: str | None = {"csv": ",", "tsv": "\t"}.get(fmt or "")
        self.lines_seen = 0  # non-empty lines
        self.counter = 0
        self.eval_counter = 0
        self.last_step: int | None = None
        self.explicit_steps = False
        self.in_long_line = False  # the start of the line being read was dropped: drop up to its end
        self.finished = False  # the latest training line was followed by a FINAL_LINE_MARKERS line
        self.in_metrics_block = False  # inside a "***** train metrics *****" block (`_metrics_block_line`)
        self.csv_epoch_base: int | None = None  # added to a CSV's epoch column when it is the step (`_csv_epoch`)
        self.mllog_benchmark: str | None = None  # MLPerf's submission_benchmark: what eval_accuracy holds
        self.mllog_fine = False  # an MLLOG event was placed by samples or steps: epochs no longer place one
        self.mllog_at: dict[str, int] = {}  # the step each MLLOG metric was last placed at
        self.total_steps: int | None = None  # a metric line's "step N/TOTAL": the run's own total
        self.bar_label: str | None = None  # the bar whose count gives the steps (the first with metrics)
        self.bar_n = 0  # its latest count
        self.bar_offset = 0  # the counts of its earlier resets (epochs): step = offset + count
        self.bar_values: dict[str, float] = {}  # the last value a bar showed of each metric
        self.bar_step: int | None = None  # the step of the latest points taken from a bar
        self.printed_keys: set[str] = set()  # metrics printed lines brought: bars never feed them
        self.bar_pending: tuple[int, dict[str, float]] | None = None  # the latest refresh's points (`_bar_line`)
        self.epochs = EpochState()  # where lines that count batches within an epoch stand (`epochs.epoch_step`)
        self.yolo_train: list[str] | None = None  # the metrics of Ultralytics' training table (`_yolo_line`)
        self.yolo_val: list[str] | None = None  # and of its validation row

    def to_state(self) -> dict[str, Any]:
        return {
            "v": PARSER_STATE_VERSION,
            "fmt": self.fmt,
            "csv_header": self.csv_header,
            "csv_delim": self.csv_delim,
            "lines_seen": self.lines_seen,
            "counter": self.counter,
            "eval_counter": self.eval_counter,
            "last_step": self.last_step,
            "explicit_steps": self.explicit_steps,
            "in_long_line": self.in_long_line,
            "finished": self.finished,
            "metrics_block": self.in_metrics_block,
            "csv_epoch_base": self.csv_epoch_base,
            "mllog": [self.mllog_benchmark, self.mllog_fine, self.mllog_at],
            "total_steps": self.total_steps,
            "bar": [
                self.bar_label, self.bar_n, self.bar_offset, self.bar_values, sorted(self.printed_keys), self.bar_step
            ],
            "epoch": [
                -1 if self.epochs.epoch is None else self.epochs.epoch,
                self.epochs.batch,
                self.epochs.offset,
                self.epochs.length_unknown,
            ],
            "yolo": [self.yolo_train, self.yolo_val],
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any], fmt: str | None = None) -> LogParser:
        """Rebuild from ``to_state``; raises ValueError for a state this version did not write."""
        if state.get("v") != PARSER_STATE_VERSION:
            raise ValueError(f"parser state version {state.get('v')!r} is not {PARSER_STATE_VERSION}")
        try:
            parser = cls(state.get("fmt") or fmt)
            header = state.get("csv_header")
            parser.csv_header = None if header is None else [str(h) for h in header]
            parser.csv_delim = state.get("csv_delim") or parser.csv_delim
            parser.lines_seen = int(state["lines_seen"])
            parser.counter = int(state["counter"])
            parser.eval_counter = int(state["eval_counter"])
            last = state.get("last_step")
            parser.last_step = None if last is None else int(last)
            parser.explicit_steps = bool(state["explicit_steps"])
            parser.in_long_line = bool(state.get("in_long_line", False))
            parser.finished = bool(state.get("finished", False))
            parser.in_metrics_block = bool(state.get("metrics_block", False))
            base = state.get("csv_epoch_base")
            parser.csv_epoch_base = None if base is None else int(base)
            benchmark, fine, at = state.get("mllog") or [None, False, {}]
            parser.mllog_benchmark = None if benchmark is None else str(benchmark)
            parser.mllog_fine = bool(fine)
            parser.mllog_at = {str(name): int(step) for name, step in dict(at).items()}
            total = state.get("total_steps")
            parser.total_steps = None if total is None else int(total)
            label, bar_n, offset, values, printed, bar_step = state.get("bar") or [None, 0, 0, {}, [], None]
            parser.bar_step = None if bar_step is None else int(bar_step)
            parser.bar_label = None if label is None else str(label)
            parser.bar_n, parser.bar_offset = int(bar_n), int(offset)
            parser.bar_values = {str(name): float(value) for name, value in dict(values).items()}
            parser.printed_keys = {str(name) for name in printed}
            epoch_at, batch, offset, unknown = state.get("epoch") or [-1, 0, 0, False]
            epoch = None if int(epoch_at) < 0 else int(epoch_at)
            parser.epochs = EpochState(epoch, int(batch), int(offset), bool(unknown))
            train, val = state.get("yolo") or [None, None]
            parser.yolo_train = None if train is None else [str(name) for name in train]
            parser.yolo_val = None if val is None else [str(name) for name in val]
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise ValueError(f"parser state is malformed: {exc}") from exc
        return parser

    def feed(self, lines: Iterable[str], sink: SeriesBuilder, notes: ParseNotes) -> None:
        if notes.counter_at_start is None:
            notes.counter_at_start = self.counter
        for line in lines:
            if self.in_long_line:  # the end of a line whose start was dropped (`drop_long_line`)
                self.in_long_line = False
                continue
            if len(line) > MAX_LINE_BYTES:
                notes.skip_hostile()
                continue
            notes.scan(line)
            if "\x1b" in line:
                line = _ANSI_ESCAPE.sub("", line)
            text = line.strip() if self.lines_seen else line.strip().lstrip(UTF8_BOM)
            if text:
                position = (self.counter, self.last_step)
                try:
                    self._line(text, sink, notes)
                except LINE_FAILURES:
                    notes.skip_hostile()
                self.lines_seen += 1
                moved = (self.counter, self.last_step) != position
                if moved:  # a training line (a final marker on a step's record is a logger's own key)
                    self.finished = False
                elif _FINAL_LINE.search(text):
                    self.finished = True

    def finish(self, sink: SeriesBuilder, notes: ParseNotes) -> None:
        """The end of what one read brought (after its last `feed`, not after each chunk of it): the latest bar
        refresh's points, a bar's train loss at its count, and whether any line so far held a metric."""
        self._flush_bar(sink)
        self._bar_train_loss_at_its_count(sink)
        notes.unrecognized_lines = self.lines_seen if self._nothing_recognized() else 0
        counted = not self.explicit_steps and self.counter > (notes.counter_at_start or 0)
        if counted and COUNTED_STEPS_NOTE not in notes.extra:  # said at each read whose points it places
            notes.extra.append(COUNTED_STEPS_NOTE)

    def _nothing_recognized(self) -> bool:
        """No line read so far held a metric, and none set up a format (a CSV header waits for its rows)."""
        placed = self.counter or self.eval_counter or self.last_step is not None or self.mllog_at
        return bool(self.lines_seen) and not placed and self.csv_header is None and self.bar_label is None

    def drop_long_line(self, notes: ParseNotes) -> None:
        """The bytes read of a line are over `MAX_LINE_BYTES` and it has not ended: they are dropped, and so is
        the rest of it when it comes (counted once)."""
        if not self.in_long_line:
            notes.skip_hostile()
        self.in_long_line = True

    # ----------------------------------------------------------------------- per line

    def _line(self, text: str, sink: SeriesBuilder, notes: ParseNotes) -> None:
        fmt = self.fmt
        if self.csv_delim is not None and (fmt in ("csv", "tsv") or self.csv_header is not None):
            self._csv_line(text, sink, notes)
            return
        if fmt is None and self.lines_seen == 0 and self._try_header(text):
            return
        if text.startswith('"log_history"'):
            notes.extra.append(TRAINER_STATE_NOTE)
            return
        if self._metrics_block_line(text):
            return
        if MLLOG_MARKER in text and self._mllog_line(text, sink):  # before: submission_benchmark has no digit
            return
        if fmt in (None, "text") and "poch" in text and (columns := train_header(text)) is not None:
            self.yolo_train = columns  # a header of words only: before the test for a number
            return
        if not _MAYBE_NUMBER.search(text) or _SKIP_LINE.search(text) or _trainer_banner(text):
            return
        if fmt in (None, "jsonl") and self._json_line(text, sink, notes):
            return
        if fmt in (None, "hf") and self._hf_line(text, sink):
            return
        if fmt in (None, "text"):
            if self._yolo_line(text, sink) or self._loss_log_line(text, sink):
                return
            bar = progress_bar(text)
            if bar is not None:
                self._bar_line(bar, sink)
                return
            found = text_metrics(text)
            if found is not None:
                metrics, step = found
                if step is None and (position := epoch_batch(text)) is not None:
                    metrics.pop(position.label, None)
                    metrics["epoch"], step = position.epoch, self._epoch_step(position)
                    if position.redrawn:
                        self._refresh(step, metrics, sink)
                        return
                self._emit(metrics, step, self._kind(metrics), sink)
                self.total_steps = step_total(text) or self.total_steps

    def _metrics_block_line(self, text: str) -> bool:
        """A line of the HF example scripts' `trainer.log_metrics` block (``***** train metrics *****``, then
        ``train_loss = 0.8301``, ``train_runtime = 0:13:32.40``, ...): the run's averages and sizes, and the
        evaluation's metrics that its dict just before gave, so none is a point. Read as ``key = value`` lines
        each was a metric and, without step numbers, a step, and the run's average loss a last point."""
        if "*****" in text and _METRICS_BLOCK.search(text):
            self.in_metrics_block = True
            return True
        if self.in_metrics_block and " = " in text and "{" not in text:
            return True
        self.in_metrics_block = False
        return False

    def _yolo_line(self, text: str, sink: SeriesBuilder) -> bool:
        """Ultralytics' console table (``yolo``): a refresh of an epoch's bar under the training header, placed by
        its epoch and batch count like any redrawn bar; the validation header; its ``all`` row, at the step the
        epoch's bar reached."""
        if self.yolo_train is not None and (row := train_row(text, self.yolo_train)) is not None:
            if row.batch:  # count 0: a bar just drawn, showing no batch of its epoch yet
                step = self._epoch_step(EpochBatch("epoch", row.epoch, row.batch, row.batches, redrawn=True))
                self._refresh(step, row.losses, sink, new_only=False)
            return True
        if self.yolo_val is not None and (val := val_row(text, self.yolo_val)) is not None:
            self._flush_bar(sink)  # the epoch's last refresh: its step is where the validation lands
            self._emit(val.metrics, None, "eval", sink)
            return True
        if "Class" in text and (columns := val_header(text)) is not None:
            self.yolo_val = columns
            return True
        return False

    def _loss_log_line(self, text: str, sink: SeriesBuilder) -> bool:
        """A pix2pix-style ``loss_log.txt`` line (`epochs.loss_log_line`), placed by its epoch and ``iters``."""
        found = loss_log_line(text)
        if found is not None:
            position, losses = found
            self._emit(losses | {"epoch": position.epoch}, self._epoch_step(position), "train", sink)
        return found is not None

    def _epoch_step(self, at: EpochBatch) -> int:
        """The step of a line that counts batches within an epoch (`epochs.epoch_step`)."""
        step, self.epochs = epoch_step(at, self.epochs)
        return step

    def _try_header(self, text: str) -> bool:
        delim = "\t" if "\t" in text else "," if "," in text else None
        header = csv_header(text, delim, forced=False)
        if header is not None:
            self.csv_header, self.csv_delim = header, delim
        return header is not None

    def _csv_line(self, text: str, sink: SeriesBuilder, notes: ParseNotes) -> None:
        assert self.csv_delim is not None
        if self.csv_header is None:
            self.csv_header = csv_header(text, self.csv_delim, forced=True)
            return
        cells = split_row(text, self.csv_delim)
        missing = len(self.csv_header) - len(cells)
        if missing > 0 and csv_header(text, self.csv_delim, forced=False) is None:
            cells += [""] * missing  # trailing empty cells lost to strip() (TSV)
        if len(cells) != len(self.csv_header):
            renamed = csv_header(text, self.csv_delim, forced=False)  # a new header (columns added)
            if renamed is not None:
                self.csv_header = renamed
            else:
                notes.skipped += 1
            return
        metrics: dict[str, float] = {}
        for name, cell in zip(self.csv_header, cells, strict=True):
            cell = cell.strip()
            if not cell or name.lower() in IGNORED_KEYS:
                continue
            try:
                metrics[name] = parse_float(cell)  # accepts nan, inf, -inf, Infinity
            except ValueError:
                continue
        step = pop_step(metrics)
        self._emit(metrics, self._csv_epoch(metrics) if step is None else step, self._kind(metrics), sink)

    def _csv_epoch(self, metrics: Mapping[str, float]) -> int | None:
        """The step of a CSV row without a step column but with a whole-number ``epoch`` (Ultralytics'
        ``results.csv``, Keras' ``CSVLogger``): its epoch, counted from 1. YOLOv5 and Keras number epochs from
        0, YOLOv8 from 1: a file whose first epoch read is 0 is shifted by one, so step N ends the N-th epoch in
        both. An epoch that goes back (resumed from an earlier checkpoint, or a new run appended to the file)
        is a step that goes back: its points replace the later ones', as a resumed run's do. The rows were
        counted (a resumed run's epochs then passed for new ones) and the check said the file had no step
        numbers."""
        epoch = metrics.get("epoch")
        if epoch is None or not (math.isfinite(epoch) and epoch == int(epoch) and 0 <= epoch < STEP_RANGE[1]):
            return None
        if self.csv_epoch_base is None:
            self.csv_epoch_base = 1 if epoch == 0 else 0
        return int(epoch) + self.csv_epoch_base

    def _json_line(self, text: str, sink: SeriesBuilder, notes: ParseNotes) -> bool:
        if '{"' not in text:
            return False
        data = json_dict(text)
        if data is None:
            if text.startswith("{"):
                notes.skipped += 1  # a torn or corrupt JSONL record
                return True
            return False
        metrics = {k: v for k, v in flatten(data).items() if k.lower() not in IGNORED_KEYS}
        if _closing_summary(metrics):
            return True  # no point (`TRAINER_SUMMARY_KEYS`)
        split = record_split(data)
        if split:
            metrics = under_split(metrics, split)
        step = self._record_step(metrics, text, '{"', evaluates=bool(split))
        self._emit(metrics, step, "eval" if split else self._kind(metrics), sink)
        return True

    def _record_step(self, metrics: dict[str, float], text: str, opener: str, *, evaluates: bool = False) -> int | None:
        """The step of a dict record, popped from `metrics`: its step key; MMDetection's ``"epoch"`` and
        ``"iter"`` (a batch count within the epoch; in an eval record, the eval loader's count, so no step);
        else a step printed before the dict (``Step: 100, {...}``, whose ``Epoch 3`` becomes ``epoch``)."""
        if "iter" in metrics and "epoch" in metrics and not EXPLICIT_STEP_KEYS.intersection(metrics):
            epoch, batch = metrics["epoch"], metrics.pop("iter")
            whole = all(math.isfinite(n) and n == int(n) and n >= 0 for n in (epoch, batch))
            if evaluates or not whole:
                return None
            return self._epoch_step(EpochBatch("epoch", int(epoch), int(batch), None))
        step = pop_step(metrics)
        if step is not None:
            return step
        prefix = prefix_counts(text, opener)
        if "epoch" in prefix:
            metrics.setdefault("epoch", prefix["epoch"])
        return pop_step(prefix)

    def _mllog_line(self, text: str, sink: SeriesBuilder) -> bool:
        event = parse_mllog_line(text, self.mllog_benchmark)
        if event is None:
            return False
        if event.benchmark is not None:
            self.mllog_benchmark = event.benchmark
        if event.metrics:
            step = self._mllog_step(event)
            self._emit(event.metrics, step, self._kind(event.metrics), sink)
            if len(self.mllog_at) < MAX_MLLOG_METRICS or set(event.metrics) <= set(self.mllog_at):
                self.mllog_at.update(dict.fromkeys(event.metrics, self.last_step or 0))
        return True

    def _mllog_step(self, event: MllogEvent) -> int | None:
        """Samples or steps place an event. An epoch number does only in a log that has no finer axis, and
        only while it moves: BERT v1.0 logs epoch 1 at every eval, DLRM fractions of an epoch. Such an event
        goes one step past the latest (log order); in a log counted in steps, at the latest step."""
        if event.fine is not None:
            self.mllog_fine = True
            return event.fine
        if self.mllog_fine:
            return None
        latest, epoch = self.last_step or 0, event.epoch
        if epoch is None or epoch != int(epoch) or epoch < latest:
            return latest + 1
        if any(self.mllog_at.get(name) == epoch for name in event.metrics):
            return latest + 1
        return int(epoch)

    def _hf_line(self, text: str, sink: SeriesBuilder) -> bool:
        if "{'" not in text:
            return False
        metrics = hf_dict(text)
        if metrics is None:
            return False
        if _closing_summary(metrics):
            return True  # no point (`TRAINER_SUMMARY_KEYS`)
        step = self._record_step(metrics, text, "{'")
        self._emit(metrics, step, "train" if HF_TRAIN_KEYS.intersection(metrics) else self._kind(metrics), sink)
        return True

    @staticmethod
    def _kind(metrics: Mapping[str, float]) -> str:
        """Kind "eval" when the line holds eval metrics and nothing train-side, else "train"."""
        roles = {infer_role(name).role for name in metrics}
        trainish = roles & {MetricRole.TRAIN_LOSS, MetricRole.LEARNING_RATE, MetricRole.GRAD_NORM}
        return "eval" if MetricRole.EVAL in roles and not trainish else "train"

    def _step_for(self, step: int | None, kind: str) -> int:
        if step is not None:
            if not STEP_RANGE[0] <= step <= STEP_RANGE[1]:
                raise OverflowError(f"step {step} is outside int64")
            self.last_step, self.explicit_steps = step, True
            return step
        if kind == "train" and not (self.explicit_steps and self.last_step is not None):
            self.counter += 1
            self.last_step = self.counter
            return self.counter
        if self.last_step is not None:
            return self.last_step
        self.eval_counter += 1
        return self.eval_counter

    def _emit(
        self, metrics: Mapping[str, float], step: int | None, kind: str, sink: SeriesBuilder, *, printed: bool = True
    ) -> None:
        if not metrics:
            return
        if printed and len(self.printed_keys) < MAX_BAR_METRICS and not self.printed_keys.issuperset(metrics):
            self.printed_keys.update(list(metrics)[: MAX_BAR_METRICS - len(self.printed_keys)])
        at = self._step_for(step, kind)
        for name, value in metrics.items():
            sink.add(name, at, value)


@dataclass
class ParsedLines:
    """What ``parse_lines`` found: new points, the parser state to pass next time, and notable lines."""

    series: dict[str, SeriesChunk]
    state: dict[str, Any]
    warnings: list[str]
    skipped_lines: int = 0

    @property
    def fatal_lines(self) -> list[str]:
        return [w.removeprefix(FATAL_PREFIX) for w in self.warnings if w.startswith(FATAL_PREFIX)]


def parse_lines(lines: Iterable[str], state: Mapping[str, Any] | None = None, *, fmt: str | None = None) -> ParsedLines:
    """Parse text lines (no files involved); ``state`` is the previous ``ParsedLines.state`` or None."""
    parser = LogParser.from_state(state, fmt) if state is not None else LogParser(fmt)
    notes = ParseNotes()
    sink = SeriesBuilder()
    parser.feed(lines, sink, notes)
    parser.finish(sink, notes)
    return ParsedLines(sink.build(), parser.to_state(), notes.warnings(), notes.skipped)


def restore_parser(cursor: Cursor | None, fmt: str | None) -> LogParser | None:
    """The parser saved in ``cursor['parser']``, or None when there is none or it cannot be used (a hand edit,
    a foreign state): the caller then reads from the start."""
    state = cursor.get("parser") if cursor else None
    if not isinstance(state, Mapping):
        return None
    try:
        return LogParser.from_state(state, fmt)
    except ValueError:
        return None
