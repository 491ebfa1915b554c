"""The reviewer's extras on a long run: the chart it sends and the prompt the agent backend hands over.

    .venv/bin/python benchmarks/bench_review.py [--points 100000] [--repeats 5]

Printed, in one run, for a JSONL log of ``--points`` steps (loss, LR, grad norm, an eval every 500 steps)
that diverges in its last tenth:
(a) the chart's PNG size against the cap the API backends enforce (`MAX_REVIEW_IMAGE_BYTES`); ≤ 1
(b) drawing it in a warm process (median wall ms) — bounded by the stored history, not the run's length
(c) a cold process that imports the plot stage and draws, side by side with `python -c pass` (median wall s):
    what the first review of a server's life pays on top of the API call
(d) the agent backend's escalate_review result (prompt included) in tokens (≈ JSON bytes / 4); ≤ 1,500
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp_training_check.config import load_config
from mcp_training_check.plot import render_chart
from mcp_training_check.review import MAX_REVIEW_IMAGE_BYTES
from mcp_training_check.service import Monitor

RESULT_TARGET_TOKENS = 1500
BYTES_PER_TOKEN = 4
EVAL_EVERY = 500


def write_log(path: Path, points: int) -> None:
    """Loss falling to ~1, then growing 0.05 % a step over the last tenth (a slow divergence)."""
    start = int(points * 0.9)
    with path.open("w") as out:
        for i in range(points):
            loss = 3.0 * math.exp(-i / (points / 8)) + 1.0 + 0.05 * math.sin(i * 0.7)
            if i >= start:
                loss *= 1.0005 ** (i - start)
            row: dict[str, float] = {"step": i, "loss": loss, "lr": 3e-4, "grad_norm": 1.0 + 0.1 * math.cos(i)}
            if i % EVAL_EVERY == 0:
                row["eval_loss"] = loss * 1.1
            out.write(json.dumps(row) + "\n")


def wall(command: list[str], repeats: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, check=True, env=env, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "TRAINING_CHECK_HOME": str(work / "home")}
        for name in ("ANTHROPIC_API_KEY", "LLM_API_KEY"):
            env.pop(name, None)
            os.environ.pop(name, None)
        os.environ["TRAINING_CHECK_HOME"] = env["TRAINING_CHECK_HOME"]
        log = work / "run.jsonl"
        write_log(log, args.points)
        monitor = Monitor(config=load_config(cwd=work))
        report = monitor.check(str(log))
        ctx = monitor.context(str(log))
        history = monitor.store.load_history(ctx.key)
        roles = monitor._roles(ctx, history.metrics)
        signals = report.verdict.signals if report.verdict else []
        draws, png = [], b""
        for _ in range(args.repeats):
            started = time.perf_counter()
            png = render_chart(history, roles, signals, title=str(log)).png
            draws.append(time.perf_counter() - started)
        script = (
            "from mcp_training_check.service import Monitor\n"
            f"Monitor().plot({str(log)!r}, output=__import__('pathlib').Path({str(work / 'cold.png')!r}))"
        )
        cold = wall([sys.executable, "-c", script], args.repeats, env)
        bare = wall([sys.executable, "-c", "pass"], args.repeats, env)
        print(f"run: {args.points:,} steps, verdict {report.verdict.decision.value if report.verdict else None}")
        ratio = len(png) / MAX_REVIEW_IMAGE_BYTES
        print(f"(a) chart PNG {len(png):,} bytes vs cap {MAX_REVIEW_IMAGE_BYTES:,}: {ratio:.2f} (≤ 1)")
        print(f"(b) drawing in a warm process: {statistics.median(draws) * 1000:.0f} ms (median of {args.repeats})")
        print(f"(c) cold `plot` process {cold:.2f} s vs `python -c pass` {bare:.2f} s (medians of {args.repeats})")
        unsure = _agent_result_tokens(work)
        print(f"(d) agent-backend escalate_review result: {unsure:,} tokens (≤ {RESULT_TARGET_TOKENS:,})")


def _agent_result_tokens(work: Path) -> int:
    """The agent backend's WAIT (prompt included) for a run the judge is unsure about, as JSON tokens."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.review_fixtures import RUN, unsure_project

    project = work / "unsure"
    project.mkdir()
    result = unsure_project(project).escalate_review(RUN)
    assert result.next_action == "record_review", result.summary
    return len(json.dumps(result.model_dump(mode="json", exclude_none=True))) // BYTES_PER_TOKEN


if __name__ == "__main__":
    main()
