"""Tail-first first checks against full reads on the labelled corpus: does the judge decide the same?

A corpus run becomes a real ``.wandb`` file (tests/wandb_writer.py writes the bytes wandb 0.31 writes:
a run record with the config, then per step what wandb writes per ``log()``: a runtime summary, a
summary update and a history record holding every metric logged at it, ~370 bytes a step). At each
cut the file is read twice from scratch: whole (what every first check did before), and tail-first
with `CORPUS_LIMITS`, the default sizes scaled down to the corpus's few-thousand-step runs (a tail of at
most 32 blocks, enough for `TAIL_POINTS` values of the dense metrics, and 4 sampled blocks of overview),
and each read is stored and judged as a first check. Used by
``bench_first_check.py`` (parts d and e) and tests/test_first_check.py (the assertion). Alone:

    .venv/bin/python benchmarks/tail_first.py [--corpus corpus/runs.jsonl.gz --corpus corpus_real/runs.jsonl.gz]

prints parts (d) and (e) for each ``--corpus`` (default: both corpora).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.corpus_runs import CORPUS, CORPUS_REAL, Run, load_corpus  # noqa: E402
from benchmarks.replay import DEFAULT_CHECKS, evaluate, markdown, split_scores  # noqa: E402
from mcp_training_check.judge import judge  # noqa: E402
from mcp_training_check.models import Decision, Verdict  # noqa: E402
from mcp_training_check.roles import assign_roles  # noqa: E402
from mcp_training_check.service import PREVIOUS_VERDICTS  # noqa: E402
from mcp_training_check.sources.base import ReadBatch  # noqa: E402
from mcp_training_check.sources.wandb_file import BLOCK_SIZE, DEFAULT_LIMITS, TailLimits, WandbFileSource  # noqa: E402
from mcp_training_check.state import StateStore  # noqa: E402
from tests.wandb_writer import RunFileWriter, go_json_number, history_record, run_record, summary_record  # noqa: E402

__all__ = [
    "CORPUS_LIMITS",
    "CORPUS_REAL",
    "SMALLEST_LIMITS",
    "STRESS_LIMITS",
    "FirstChecks",
    "append_corpus_steps",
    "compare_first_checks",
    "corpus_report",
    "late_start_tables",
    "replay_from",
    "write_corpus_run",
]

CORPUS_LIMITS = dataclasses.replace(
    DEFAULT_LIMITS,
    small_bytes=0,
    head_bytes=BLOCK_SIZE,
    tail_first_bytes=2 * BLOCK_SIZE,
    tail_max_bytes=32 * BLOCK_SIZE,
    overview_reads=4,
    fill_bytes_per_check=16 * BLOCK_SIZE,
)
"""The default limits scaled to corpus runs (1,000-5,000 steps): the runs longer than ~3,500 steps get a
real overview (their older steps sampled), shorter ones are read whole."""

STRESS_LIMITS = dataclasses.replace(CORPUS_LIMITS, tail_max_bytes=8 * BLOCK_SIZE, overview_reads=2)
"""A tail that holds fewer values than state's 2,048-point recent window (8 blocks), 2 overview blocks."""

SMALLEST_LIMITS = dataclasses.replace(
    DEFAULT_LIMITS,
    small_bytes=0,
    head_bytes=BLOCK_SIZE,
    tail_first_bytes=1,
    tail_max_bytes=BLOCK_SIZE,
    overview_reads=1,
    fill_bytes_per_check=4 * BLOCK_SIZE,
)
"""The smallest sizes a `.wandb` read has: one 32 KiB block of head, the block holding the file's last byte
as the tail (at most one whole block), one overview block. A file over one block (~125 single-metric
steps) is read tail-first, one over ~4 blocks gets an overview. Shown for a corpus whose runs are too short
for the stress sizes to sample (corpus_real/: a few to a few hundred evals)."""

FEW_OVERVIEWS = 0.1
"""When the stress sizes give fewer than this share of a corpus's first checks an overview, the corpus's
files are too small for them to test anything, and the smallest sizes are shown too."""

LATE_STARTS = (0.5, 0.8)
"""Where monitoring starts in the replay tables (e): the first check then reads half / most of the run."""

WHOLE = dataclasses.replace(DEFAULT_LIMITS, small_bytes=1 << 62)
"""Limits under which every file is read whole: the first checks as they were."""

CUT_FRACTIONS = (0.6, 0.8, 1.0)
"""Where in each run a first check is made."""

SECONDS_PER_STEP = 0.137


def _rows(run: Run, lo: int | None, hi: int) -> dict[int, list[tuple[str, str]]]:
    """The run's values with lo < step ≤ hi, per step, as (key, value_json)."""
    rows: dict[int, list[tuple[str, str]]] = {}
    for name, (steps, values) in run.metrics.items():
        keep = (steps <= hi) if lo is None else (steps > lo) & (steps <= hi)
        for step, value in zip(steps[keep].tolist(), values[keep].tolist(), strict=True):
            rows.setdefault(step, []).append((name, go_json_number(float(value))))
    return rows


def append_corpus_steps(path: Path, run: Run, lo: int | None, hi: int) -> None:
    """Append the run's steps lo < step ≤ hi as wandb writes them (the run record first, for a new file)."""
    new = not path.exists()
    with open(path, "ab") as handle:
        writer = RunFileWriter.create(handle) if new else RunFileWriter(handle, path.stat().st_size)
        if new:
            writer.write(run_record(1, run.id, name=run.id, config=run.run_config("full")))
        rows = _rows(run, lo, hi)
        num = 2 + 3 * (lo or 0)
        for step in sorted(rows):
            runtime = go_json_number(step * SECONDS_PER_STEP)
            items = [*rows[step], ("_runtime", runtime), ("_step", str(step))]
            writer.write(summary_record(num, [(("_wandb", "runtime"), runtime), ("_runtime", runtime)]))
            writer.write(summary_record(num + 1, items))
            writer.write(history_record(num + 2, items, step))
            num += 3


def write_corpus_run(path: Path, run: Run, upto: int) -> None:
    """The run's points up to step ``upto`` as a wandb 0.31 run file."""
    path.unlink(missing_ok=True)
    append_corpus_steps(path, run, None, upto)


@dataclass
class FirstChecks:
    run: str
    cut: int
    full: Decision
    tail_first: Decision
    exact_from: int | None  # None: the tail-first read covered the whole file
    holdout: bool = False  # a holdout run: counted, never named with its decisions (the split stays blind)

    @property
    def same(self) -> bool:
        return self.full is self.tail_first


def _first_check(run: Run, batch: ReadBatch, home: Path) -> tuple[Decision, int | None]:
    with StateStore(home) as store:
        store.apply_batch("run", batch)
        history = store.load_history("run")
    verdict = judge(history, assign_roles(history.metrics), baselines=run.baselines, run_config=run.run_config("full"))
    return verdict.decision, history.exact_from


def compare_first_checks(
    runs: Sequence[Run], limits: TailLimits = CORPUS_LIMITS, fractions: Sequence[float] = CUT_FRACTIONS
) -> list[FirstChecks]:
    """Each run, cut at each fraction: the first check's decision from a full read and from a tail-first one."""
    out = []
    with tempfile.TemporaryDirectory(prefix="tail-first-") as tmp:
        root = Path(tmp)
        for run in runs:
            for fraction in fractions:
                cut = int(run.first_step + round((run.last_step - run.first_step) * fraction))
                path = root / f"run-{run.id}-{cut}.wandb"
                write_corpus_run(path, run, cut)
                whole = WandbFileSource(path, limits=WHOLE).read(None)
                full, _ = _first_check(run, whole, root / f"full-{run.id}-{cut}")
                tail_batch = WandbFileSource(path, limits=limits).read(None)
                tail, exact_from = _first_check(run, tail_batch, root / f"tail-{run.id}-{cut}")
                out.append(FirstChecks(run.id, cut, full, tail, exact_from, run.split == "holdout"))
                path.unlink()
    return out


def summarize(results: Sequence[FirstChecks]) -> str:
    """The agreement table: per cut fraction, checks with an overview, and decisions that differ."""
    with_overview = [r for r in results if r.exact_from is not None]
    differ = [r for r in results if not r.same]
    lines = [
        f"{len(results)} first checks ({len(with_overview)} with a sampled overview): "
        f"{len(results) - len(differ)} decide as a full read, {len(differ)} differ",
    ]
    lines += [
        f"  {r.run} at step {r.cut:,}: full {r.full.value}, tail-first {r.tail_first.value}"
        for r in differ
        if not r.holdout
    ]
    if hidden := sum(r.holdout for r in differ):
        lines.append(f"  and {hidden} first check(s) of holdout runs (not named: the holdout stays blind)")
    share = np.mean([r.same for r in results]) if results else 1.0
    lines.append(f"agreement {share:.1%} (target 100%)")
    return "\n".join(lines)


# --------------------------------------------------------------------------- replays starting late


def start_index(fraction: float, cuts: int) -> int:
    """The check monitoring starts at, ``fraction`` into a replay of ``cuts`` checks. A run whose steps are
    sparse (epochs, a few evals: corpus_real/) has fewer distinct cuts than ``--checks``; it starts the same
    fraction into its own, and always has a first check."""
    return min(round(fraction * cuts), cuts - 1)


def replay_from(
    run: Run,
    cuts: Sequence[int],
    start_fraction: float,
    limits: TailLimits,
    workdir: Path,
    overviews: list[str] | None = None,
) -> list[Decision]:
    """Monitoring that begins ``start_fraction`` into a replay (`start_index`; its first check reads the run
    so far, with ``limits``), then checks the growing ``.wandb`` file at every later cut, earlier verdicts
    carried as `Monitor` carries them. Checks before the start did not happen: they count as continue. A run
    whose first check got an overview is added to ``overviews``."""
    start = start_index(start_fraction, len(cuts))
    path = workdir / f"run-{run.id}.wandb"
    path.unlink(missing_ok=True)
    source = WandbFileSource(path, limits=limits)
    previous: list[Verdict] = []
    decisions = [Decision.CONTINUE] * start
    with StateStore(workdir / f"state-{run.id}-{limits.small_bytes}") as store:
        prev_cut: int | None = None
        for cut in cuts[start:]:
            append_corpus_steps(path, run, prev_cut, cut)
            store.apply_batch("run", source.read(store.get_cursor("run")))
            history = store.load_history("run")
            if prev_cut is None and history.exact_from is not None and overviews is not None:
                overviews.append(run.id)
            prev_cut = cut
            verdict = judge(
                history, assign_roles(history.metrics), baselines=run.baselines,
                previous=previous[:PREVIOUS_VERDICTS], run_config=run.run_config("full"),
            )  # fmt: skip
            previous.insert(0, Verdict.model_validate_json(verdict.model_dump_json()))
            decisions.append(verdict.decision)
    path.unlink()
    return decisions


def late_start_tables(
    runs: Sequence[Run], start_fraction: float, limits: TailLimits = CORPUS_LIMITS, checks: int = DEFAULT_CHECKS
) -> str:
    """The replay tables (benchmarks/replay.py's scoring) of monitoring that starts ``start_fraction`` into
    each run, its first check a full read vs tail-first with ``limits``."""
    start = start_index(start_fraction, checks)
    overviews: list[str] = []
    with tempfile.TemporaryDirectory(prefix="late-start-") as tmp:
        work = Path(tmp)
        full = evaluate(runs, lambda run, cuts: replay_from(run, cuts, start_fraction, WHOLE, work), checks)
        tail = evaluate(
            runs, lambda run, cuts: replay_from(run, cuts, start_fraction, limits, work, overviews), checks
        )
    tables = {f"full first check at {start + 1}": full, f"tail-first first check at {start + 1}": tail}
    differing = [a.run for a, b in zip(full, tail, strict=True) if a.decisions != b.decisions]
    differ = [run.id for run in differing if run.split != "holdout"]
    differ += [f"{n} holdout run(s)"] if (n := len(differing) - len(differ)) else []
    sparse = sum(len(r.decisions) < checks for r in full)
    scores = {name: split_scores(results) for name, results in tables.items()}
    return markdown(scores) + (
        f"\n{len(overviews)} of {len(runs)} runs had an overview at their first check; "
        f"{len(runs) - len(differing)} get the same decision at every check"
        + (f" (differ: {', '.join(differ)})" if differ else "")
        + (f"; {sparse} runs have fewer than {checks} distinct checks (sparse steps) and start as far "
           "into their own" if sparse else "")
    )  # fmt: skip


# --------------------------------------------------------------------------- both parts, per corpus


def corpus_label(path: Path) -> str:
    """corpus/runs.jsonl.gz, corpus_real/runs.jsonl.gz: both files have the same name."""
    return f"{path.parent.name}/{path.name}"


def corpus_report(path: Path) -> None:
    """Print parts (d) and (e) of bench_first_check.py for one corpus."""
    runs = load_corpus(path)
    label = corpus_label(path)
    print(f"\n(d) {label}: first checks tail-first vs full read, default sizes scaled to the corpus")
    print(summarize(compare_first_checks(runs, CORPUS_LIMITS)))
    print("    stress: a tail shorter than the 2,048-point recent window (8 blocks), 2 overview blocks")
    stress = compare_first_checks(runs, STRESS_LIMITS)
    print(summarize(stress))
    sizes = [("", CORPUS_LIMITS), ("    stress sizes:", STRESS_LIMITS)]
    if sum(r.exact_from is not None for r in stress) < FEW_OVERVIEWS * len(stress):
        print("    smallest: one 32 KiB block of head, of tail and of overview (the stress sizes sampled little)")
        print(summarize(compare_first_checks(runs, SMALLEST_LIMITS)))
        sizes.append(("    smallest sizes:", SMALLEST_LIMITS))
    for fraction in LATE_STARTS:
        print(f"\n(e) {label}: replay tables, monitoring from {fraction:.0%} into each run (checks before: continue)")
        for heading, limits in sizes:
            if heading:
                print(heading)
            print(late_start_tables(runs, fraction, limits))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, action="append", help="a corpus file; give it twice for both")
    args = parser.parse_args(argv)
    for path in args.corpus or [CORPUS, CORPUS_REAL]:
        corpus_report(path)


if __name__ == "__main__":
    main()
