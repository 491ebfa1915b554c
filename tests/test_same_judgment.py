"""Same judgment whatever the source: corpus runs written as a real `.wandb` file, JSONL, CSV and printed
log lines, each growing between checks and read by `Monitor.check`, get the same decision and the same
signals at every check."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.replay import EVAL_KEYS, TRAIN_KEYS, Run, _new_points, checkpoints, load_corpus
from mcp_training_check.config import ProjectConfig, RunEntry
from mcp_training_check.service import Monitor
from tests.wandb_writer import RunFileWriter, go_json_number, history_record, run_record

CHECKS = 15
KEYS = (*TRAIN_KEYS, *EVAL_KEYS)
Rows = dict[int, dict[str, float]]


def _rows(run: Run, lo: int | None, hi: int) -> Rows:
    rows: Rows = {}
    for name, chunk in _new_points(run, lo, hi).items():
        for step, value in zip(chunk.steps.tolist(), chunk.values.tolist(), strict=True):
            rows.setdefault(step, {})[name] = value
    return dict(sorted(rows.items()))


def _text(value: float) -> str:
    return repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else "inf" if value > 0 else "-inf")


class Writer:
    """Appends the rows of one check to a file in one format."""

    suffix = ""

    def __init__(self, path: Path, run: Run) -> None:
        self.path, self.run = path, run
        path.write_bytes(self.head())

    def head(self) -> bytes:
        return b""

    def lines(self, rows: Rows) -> list[str]:
        raise NotImplementedError

    def append(self, rows: Rows) -> None:
        with self.path.open("a") as fh:
            fh.writelines(line + "\n" for line in self.lines(rows))


class Jsonl(Writer):
    suffix = ".jsonl"

    def lines(self, rows: Rows) -> list[str]:
        out = []
        for step, row in rows.items():
            for keys in (TRAIN_KEYS, EVAL_KEYS):
                cells = [f'"{k}": {_json(row[k])}' for k in keys if k in row]
                if cells:
                    out.append("{" + f'"step": {step}, ' + ", ".join(cells) + "}")
        return out


def _json(value: float) -> str:
    return repr(value) if math.isfinite(value) else ("NaN" if math.isnan(value) else "Infinity")


class Csv(Writer):
    suffix = ".csv"

    def head(self) -> bytes:
        return ("step," + ",".join(KEYS) + "\n").encode()

    def lines(self, rows: Rows) -> list[str]:
        return [f"{step}," + ",".join(_text(row[k]) if k in row else "" for k in KEYS) for step, row in rows.items()]


class Printed(Writer):
    suffix = ".log"

    def lines(self, rows: Rows) -> list[str]:
        out = []
        for step, row in rows.items():
            for keys in (TRAIN_KEYS, EVAL_KEYS):
                cells = [f"{k} {_text(row[k])}" for k in keys if k in row]
                if cells:
                    out.append(f"[INFO] step {step} | " + " | ".join(cells))
        return out


class Wandb(Writer):
    """A `.wandb` file framed as wandb 0.31 writes it (tests/wandb_writer.py, validated byte for byte)."""

    suffix = ".wandb"

    def __init__(self, path: Path, run: Run) -> None:
        super().__init__(path, run)
        self.num = 1
        with path.open("wb") as fh:
            writer = RunFileWriter.create(fh)
            writer.write(run_record(self.num, run.id, config={"total_steps": run.config["total_steps"]}))

    def append(self, rows: Rows) -> None:
        with self.path.open("ab") as fh:
            writer = RunFileWriter(fh, self.path.stat().st_size)
            for step, row in rows.items():
                self.num += 1
                items = [("_step", str(step)), *((k, go_json_number(v)) for k, v in row.items())]
                writer.write(history_record(self.num, items, step))


FORMATS: dict[str, Callable[[Path, Run], Writer]] = {"wandb": Wandb, "jsonl": Jsonl, "csv": Csv, "printed": Printed}


def _replay(run: Run, fmt: str, workdir: Path) -> list[tuple[str, list[tuple[str, str, str | None]]]]:
    make = FORMATS[fmt]
    workdir.mkdir()
    writer = make(workdir / f"run-{run.id}{getattr(make, 'suffix', '')}", run)
    assert writer.path.suffix == getattr(make, "suffix", "")
    entry = RunEntry(run=str(writer.path), baselines=run.baselines, total_steps=run.config["total_steps"])
    monitor = Monitor(home=workdir / "home", config=ProjectConfig(path=None, base_dir=workdir, cwd=workdir,
                                                                   runs={"r": entry}))  # fmt: skip
    out = []
    try:
        prev = None
        for cut in checkpoints(run, CHECKS):
            writer.append(_rows(run, prev, cut))
            report = monitor.check("r")
            assert report.verdict is not None, report.summary
            out.append(
                (report.verdict.decision.value,
                 [(s.kind.value, s.severity.value, s.metric) for s in report.verdict.signals])
            )  # fmt: skip
            prev = cut
    finally:
        monitor.close()
    return out


@pytest.fixture(scope="module")
def corpus() -> dict[str, Run]:
    return {run.id: run for run in load_corpus()}


@pytest.mark.parametrize("run_id", ["b15", "b04", "a07"])
def test_every_source_gives_the_same_decisions(corpus, run_id, tmp_path):
    """HF trap (NaN grad norm under a finite loss), fp16 Inf overflow, dense evals with overfitting."""
    run = corpus[run_id]
    results = {fmt: _replay(run, fmt, tmp_path / fmt) for fmt in FORMATS}
    reference = results["jsonl"]
    assert len(reference) == CHECKS
    assert {d for d, _ in reference} != {"continue"}, "a run judged fine throughout proves little"
    for fmt, got in results.items():
        for i, (a, b) in enumerate(zip(got, reference, strict=True)):
            assert a == b, (fmt, i, a, b)
