"""A long run's first check reads the recent history exactly and an overview of the rest; later checks fill
the rest in until the stored series are what a full read stores; no stop rests on the overview alone.

Local ``.wandb`` files are written with tests/wandb_writer.py (the bytes wandb 0.31 writes) and read with
the sizes scaled down (`LIMITS`), so a few hundred KB behave like the gigabytes the defaults are for.
"""

from __future__ import annotations

import dataclasses
import io
import math
import os
import tempfile
from pathlib import Path

import anyio
import numpy as np
import pytest
from mcp import Client

from mcp_training_check.cli import TerminalProgress
from mcp_training_check.judge import judge
from mcp_training_check.judge.policy import exact_evidence_only
from mcp_training_check.models import Decision, MetricSnapshot, Severity, Signal, SignalKind
from mcp_training_check.roles import assign_roles
from mcp_training_check.server import build_server
from mcp_training_check.service import Monitor
from mcp_training_check.sources import ThrottledProgress, wandb_file
from mcp_training_check.sources.wandb_file import BLOCK_SIZE, DEFAULT_LIMITS, WandbFileSource
from mcp_training_check.state import RunHistory, StateStore
from tests.wandb_writer import RunFileWriter, go_json_number, history_record, run_record

LIMITS = dataclasses.replace(
    DEFAULT_LIMITS,
    small_bytes=4 * BLOCK_SIZE,
    head_bytes=BLOCK_SIZE,
    tail_first_bytes=2 * BLOCK_SIZE,
    tail_max_bytes=8 * BLOCK_SIZE,
    tail_points=2048,
    overview_reads=3,
    fill_bytes_per_check=6 * BLOCK_SIZE,
)
EVAL_EVERY = 50


# --------------------------------------------------------------------------- local run files


def _items(step: int, nan_at: frozenset[int]) -> list[tuple[str, str]]:
    loss = math.nan if step in nan_at else 2.0 / (1.0 + step * 1e-3)
    items = [("train/loss", go_json_number(loss)), ("train/grad_norm", go_json_number(1.0 + (step % 7) * 0.1))]
    if step % EVAL_EVERY == 0:
        items.append(("eval/loss", go_json_number(2.5 / (1.0 + step * 1e-3))))
    return [*items, ("_step", str(step))]


def append_steps(path: Path, steps: range, nan_at: frozenset[int] = frozenset()) -> None:
    new = not path.exists()
    with open(path, "ab") as handle:
        writer = RunFileWriter.create(handle) if new else RunFileWriter(handle, path.stat().st_size)
        if new:
            writer.write(run_record(1, "tailrun1", name="tail", config={"learning_rate": 1e-3}))
        for step in steps:
            writer.write(history_record(step + 2, _items(step, nan_at), step))


def read_into(store: StateStore, source: WandbFileSource, key: str = "run"):
    batch = source.read(store.get_cursor(key))
    store.apply_batch(key, batch)
    return batch


def assert_same_history(exact: RunHistory, filled: RunHistory) -> None:
    assert filled.exact_from is None and set(exact.metrics) == set(filled.metrics)
    for name, want in exact.metrics.items():
        got = filled.metrics[name]
        assert np.array_equal(want.steps, got.steps), name
        assert np.allclose(want.values, got.values, equal_nan=True, rtol=1e-12), name
        assert (want.raw_from, want.total_points, want.non_finite) == (got.raw_from, got.total_points, got.non_finite)
        assert (want.min_step, want.max_step, want.first_step) == (got.min_step, got.max_step, got.first_step)
        assert want.min_value == pytest.approx(got.min_value) and want.max_value == pytest.approx(got.max_value)


def test_tail_first_then_fill_in_stores_what_a_full_read_stores(tmp_path):
    path = tmp_path / "run-tailrun1.wandb"
    nan_at = frozenset({1234, 1235})  # in the sampled middle: exact counts only once filled in
    append_steps(path, range(12_000), nan_at)
    store = StateStore(tmp_path / "tail")
    source = WandbFileSource(path, limits=LIMITS)

    first = read_into(store, source)
    assert first.fill is not None and first.fill.first and not first.fill.done
    history = store.load_history("run")
    assert history.exact_from == first.fill.exact_from and 0 < history.exact_from < 12_000
    loss = history.metrics["train/loss"]
    assert loss.raw_steps.size == 2048 and np.array_equal(loss.raw_steps, np.arange(12_000 - 2048, 12_000))
    assert loss.total_points < 12_000  # the older history is a sample
    assert first.new_points < 0.6 * 12_000 * 2 and first.skipped_chunks == 0

    checks, step = 0, 12_000
    while history.exact_from is not None:  # a live run: more steps arrive between checks
        append_steps(path, range(step, step + 300))
        step += 300
        read_into(store, source)
        history = store.load_history("run")
        checks += 1
        assert checks < 50, "the fill-in never arrived"
    assert checks > 1  # it took several bounded pieces

    full = StateStore(tmp_path / "full")
    read_into(full, WandbFileSource(path, limits=dataclasses.replace(DEFAULT_LIMITS, small_bytes=1 << 40)))
    assert_same_history(full.load_history("run"), history)
    assert history.metrics["train/loss"].non_finite == 2
    assert store.fill_points("run") == 0  # no shadow series left behind
    append_steps(path, range(step, step + 10))
    assert read_into(store, source).fill is None  # and later reads are plain incremental ones


def test_small_file_is_read_whole(tmp_path):
    path = tmp_path / "run-small.wandb"
    append_steps(path, range(300))
    assert path.stat().st_size <= LIMITS.small_bytes
    batch = WandbFileSource(path, limits=LIMITS).read(None)
    assert batch.fill is None and len(batch.series["train/loss"]) == 300


def test_replaced_file_during_fill_starts_over_without_stale_shadow(tmp_path):
    path = tmp_path / "run-tailrun1.wandb"
    append_steps(path, range(12_000))
    store = StateStore(tmp_path / "state")
    source = WandbFileSource(path, limits=LIMITS)
    read_into(store, source)
    read_into(store, source)  # a first piece of fill-in is stored under the shadow key
    assert store.fill_points("run") > 0
    path.unlink()
    append_steps(path, range(9_000))  # a new run in its place
    batch = read_into(store, source)
    assert batch.restarted and batch.fill is not None and batch.fill.first
    assert store.fill_points("run") == 0
    assert store.load_history("run").last_step == 8_999


def test_tail_first_read_still_stops_on_a_nan_in_the_exact_tail(tmp_path):
    path = tmp_path / "run-tailrun1.wandb"
    append_steps(path, range(12_000), nan_at=frozenset(range(11_990, 12_000)))
    store = StateStore(tmp_path / "state")
    read_into(store, WandbFileSource(path, limits=LIMITS))
    history = store.load_history("run")
    assert history.exact_from is not None
    verdict = judge(history, assign_roles(history.metrics))
    assert verdict.decision is Decision.STOP and verdict.signals[0].kind is SignalKind.NON_FINITE


# --------------------------------------------------------------------------- no stop on an overview


def _critical(step: int | None, since: int | None = None) -> Signal:
    evidence = {} if since is None else {"since_step": float(since)}
    return Signal(
        kind=SignalKind.DIVERGENCE, severity=Severity.CRITICAL, metric="loss", step=step, message="loss rose.",
        evidence=evidence,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("exact_from", "signal", "kept"),
    [
        (None, _critical(10), True),  # all exact
        (1000, _critical(5000), True),  # evidence in the exact part
        (1000, _critical(5000, since=1000), True),
        (1000, _critical(5000, since=400), False),  # it starts in the overview
        (1000, _critical(500), False),
        (1000, _critical(None), False),  # no step to place it: not enough to stop
    ],
)
def test_no_stop_rests_on_the_overview(exact_from, signal, kept):
    out = exact_evidence_only([signal], RunHistory(run_key="r", exact_from=exact_from))
    assert (out[0].severity is Severity.CRITICAL) is kept
    if not kept:
        assert out[0].severity is Severity.WARNING and "overview" in out[0].message


# --------------------------------------------------------------------------- through the product


@pytest.fixture
def scaled_defaults(monkeypatch):
    """The product's own sources, with the sizes scaled down as in LIMITS (and a fill that arrives at once)."""
    limits = dataclasses.replace(LIMITS, fill_bytes_per_check=1 << 30)
    monkeypatch.setattr(wandb_file, "DEFAULT_LIMITS", limits)


def test_mcp_check_reports_progress_and_the_overview_flag(tmp_path, scaled_defaults):
    path = tmp_path / "run-tailrun1.wandb"
    append_steps(path, range(12_000))
    server = build_server(Monitor(home=tmp_path / "home"), progress_after_seconds=0)
    notes: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notes.append((progress, message))

    async def go():
        async with Client(server) as client:
            first = await client.call_tool("read_metrics", {"run": str(path)}, progress_callback=on_progress)
            second = await client.call_tool("read_metrics", {"run": str(path)}, progress_callback=on_progress)
            return first, second

    first, second = anyio.run(go)
    snap = MetricSnapshot.model_validate(first.structured_content)
    assert snap.overview_before_step is not None
    assert any("overview" in warning for warning in snap.warnings)
    assert MetricSnapshot.model_validate(second.structured_content).overview_before_step is None
    assert notes and any("newest" in (message or "") for _, message in notes)
    assert [p for p, _ in notes] == sorted(p for p, _ in notes)  # MCP progress only grows within a call


def test_terminal_progress_rewrites_one_line_and_clears_it():
    stream = io.StringIO()
    bar = TerminalProgress(stream)
    progress = ThrottledProgress(bar.show, after_seconds=0, every_seconds=0)
    progress(5, 10, "reading run.wandb, bytes")
    progress(10, 10, "reading run.wandb, bytes")
    bar.clear()
    text = stream.getvalue()
    assert text.count("\r") == 4 and "reading run.wandb, bytes: 10 of 10" in text and text.endswith("\r")


def test_throttled_progress_is_silent_for_quick_work():
    shown: list[str] = []
    progress = ThrottledProgress(lambda count, text: shown.append(text), after_seconds=60)
    progress(1, 2, "quick")
    assert shown == []


def test_cli_shows_no_bar_when_stderr_is_not_a_terminal(tmp_path, scaled_defaults, capsys, monkeypatch):
    from mcp_training_check.cli import main

    path = tmp_path / "run-tailrun1.wandb"
    append_steps(path, range(12_000))
    monkeypatch.setenv("TRAINING_CHECK_HOME", str(tmp_path / "home"))
    assert main(["read", str(path)]) == 0
    out = capsys.readouterr()
    assert "\r" not in out.err and "overview" in out.out
    assert os.environ["TRAINING_CHECK_HOME"]


# --------------------------------------------------------------------------- the corpus


def test_corpus_first_checks_tail_first_decide_as_full_reads():
    """benchmarks/tail_first.py on the corpus runs long enough to get an overview at the scaled sizes."""
    from benchmarks.corpus_runs import load_corpus
    from benchmarks.tail_first import compare_first_checks, summarize

    runs = [run for run in load_corpus() if run.last_step >= 3500]
    results = compare_first_checks(runs, fractions=(0.8, 1.0))
    assert sum(r.exact_from is not None for r in results) >= 5
    assert all(r.same for r in results), summarize(results)


def test_tail_limits_without_overview_reads_are_refused() -> None:
    """Zero overview reads would leave a long file's middle unread while its history looked exact."""
    with pytest.raises(ValueError, match="overview_reads must be at least 1"):
        dataclasses.replace(DEFAULT_LIMITS, overview_reads=0)


@pytest.mark.parametrize("read_bytes", [0, BLOCK_SIZE // 2, BLOCK_SIZE + 1])
def test_run_file_overview_reads_of_part_of_a_block_are_refused(tmp_path, read_bytes) -> None:
    """The limits type is the logs' too, whose overview reads any number of bytes; a .wandb file's only whole
    blocks (a record is found again only at a block start)."""
    with pytest.raises(ValueError, match=f"overview_read_bytes={read_bytes}: a .wandb file is sampled in whole"):
        WandbFileSource(tmp_path / "run-x.wandb", limits=dataclasses.replace(LIMITS, overview_read_bytes=read_bytes))


def _real_run(run_id: str):
    from benchmarks.corpus_runs import CORPUS_REAL, load_corpus

    (run,) = [run for run in load_corpus(CORPUS_REAL) if run.id == run_id]
    return run


EVAL_ONLY_RUN = "mlperf-v1.0-unet3d-google-tpu-v4-1024-jax-r1"  # 244 evals (Dice), no train loss, bad
SPARSE_RUN = "mlperf-v4.1-ssd-dell-r760x2h100nvl-pcie-r4"  # 4 evals, one an epoch: 4 distinct checks of 20


def test_corpus_real_eval_only_run_first_checks_tail_first_decide_as_full_reads(tmp_path):
    """An eval-only corpus_real run, long enough at the smallest sizes to be read tail-first (not whole)."""
    from benchmarks.tail_first import SMALLEST_LIMITS, compare_first_checks, summarize, write_corpus_run

    run = _real_run(EVAL_ONLY_RUN)
    assert set(run.metrics) == {"eval/mean_dice_score"}
    write_corpus_run(tmp_path / "run.wandb", run, run.last_step)
    assert (tmp_path / "run.wandb").stat().st_size > SMALLEST_LIMITS.read_whole_up_to
    results = compare_first_checks([run], SMALLEST_LIMITS)
    assert len(results) == 3 and all(r.same for r in results), summarize(results)


def test_late_start_replay_of_a_run_with_fewer_checks_than_the_grid():
    """A run with 4 distinct cuts starts 80 % into its own checks (it used to start past its end and fail)."""
    from benchmarks.replay import checkpoints
    from benchmarks.tail_first import SMALLEST_LIMITS, late_start_tables, replay_from

    sparse, eval_only = _real_run(SPARSE_RUN), _real_run(EVAL_ONLY_RUN)
    cuts = checkpoints(sparse)
    assert len(cuts) == 4
    with tempfile.TemporaryDirectory() as tmp:
        decisions = replay_from(sparse, cuts, 0.8, SMALLEST_LIMITS, Path(tmp))
    assert len(decisions) == 4 and decisions[:3] == [Decision.CONTINUE] * 3
    text = late_start_tables([sparse, eval_only], 0.8, SMALLEST_LIMITS)
    assert "2 get the same decision at every check" in text
    assert "1 runs have fewer than 20 distinct checks" in text


def test_agreement_summary_never_names_a_holdout_run() -> None:
    """The bench prints which first checks differ; a holdout run's decisions stay unseen (issue 9)."""
    from benchmarks.tail_first import FirstChecks, summarize
    from mcp_training_check.models import Decision

    rows = [
        FirstChecks("train-run", 100, Decision.CONTINUE, Decision.UNSURE, 50),
        FirstChecks("secret-run", 200, Decision.UNSURE, Decision.CONTINUE, 50, holdout=True),
    ]
    text = summarize(rows)
    assert "train-run at step 100: full continue, tail-first unsure" in text
    assert "secret-run" not in text and "1 first check(s) of holdout runs" in text
