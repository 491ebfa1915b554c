"""The run's picture: `plot` through the MCP client (an image block, the saved path, the structured result), the
CLI's `plot -o`, and what the chart holds for a diverging and a healthy run (panels, log scale, flagged steps).
"""

from __future__ import annotations

import base64
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mcp.types import ImageContent, TextContent

from mcp_training_check.config import load_config
from mcp_training_check.models import PlotResult
from mcp_training_check.plot import MIN_DPI, render_chart, render_within
from mcp_training_check.server import build_server
from mcp_training_check.service import Monitor
from tests.fake_openai import PNG_MAGIC
from tests.test_judge_helpers import ar1
from tests.test_server import call

POINTS = 400
STEPS_PER_POINT = 10
DIVERGE_FROM = 300  # point index where the LR is raised 50× and the loss blows up


def write_log(path, *, diverge: bool) -> None:
    """A JSONL log: loss falling with noise, a cosine LR, a grad norm and an eval every 50 points; with
    ``diverge`` the LR jumps at DIVERGE_FROM and the loss and grad norm grow 4 % a point, then NaN."""
    rng = np.random.default_rng(5)
    noise = np.exp(ar1(POINTS, 0.05, 0.5, rng))
    lines = []
    for i in range(POINTS):
        lr = 3e-4 * 0.5 * (1 + math.cos(math.pi * i / POINTS))
        loss, grad = 3.0 * math.exp(-i / 120) + 0.8, 1.0 + 2.0 * math.exp(-i / 60)
        if diverge and i >= DIVERGE_FROM:
            lr, loss, grad = lr * 50, loss * 1.04 ** (i - DIVERGE_FROM), grad * 1.06 ** (i - DIVERGE_FROM)
            if i >= POINTS - 20:
                loss = grad = float("nan")
        row = {"step": i * STEPS_PER_POINT, "loss": loss * noise[i], "lr": lr, "grad_norm": grad * noise[i]}
        if i % 50 == 0:
            row["eval_loss"] = loss * 1.1
        lines.append(json.dumps(row))  # NaN is written as NaN, as Python loggers do
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def diverging(tmp_path):
    log = tmp_path / "diverging.jsonl"
    write_log(log, diverge=True)
    monitor = Monitor(config=load_config(cwd=tmp_path))
    report = monitor.check(str(log))
    assert report.verdict is not None and report.verdict.decision.value == "stop", report.summary
    return monitor, str(log), report.verdict


def test_the_plot_tool_returns_the_png_as_an_image_and_its_path(diverging, isolated_home):
    monitor, run, verdict = diverging
    result = call(build_server(monitor), "plot", {"run": run})
    assert not result.is_error, result.content
    images = [block for block in result.content if isinstance(block, ImageContent)]
    assert len(images) == 1 and images[0].mime_type == "image/png"
    png = base64.b64decode(images[0].data)
    assert png.startswith(PNG_MAGIC)
    plotted = PlotResult.model_validate(result.structured_content)
    assert Path(plotted.path).read_bytes() == png, "the saved file is the picture sent"
    assert Path(plotted.path).parent == isolated_home / "plots", "saved under the state directory"
    assert plotted.panels == ["training loss", "eval", "learning rate", "grad norm"]
    assert plotted.decision is not None and plotted.decision.value == "stop"
    flagged = sorted({s.step for s in verdict.signals if s.step is not None and s.severity.value != "info"})
    assert plotted.flagged_steps == flagged and flagged, "the judge's flagged steps are marked"
    assert plotted.png_bytes == len(png) and plotted.path in plotted.summary
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    assert texts == [plotted.summary], "the summary once (it came twice: before and after the image)"


def test_the_chart_draws_loss_and_grad_norm_on_a_log_scale_unless_a_value_is_not_positive(diverging, tmp_path):
    monitor, run, verdict = diverging
    key = monitor.context(run).key
    history = monitor.store.load_history(key)
    roles = monitor._roles(monitor.context(run), history.metrics)
    chart = render_chart(history, roles, verdict.signals, title=run)
    assert chart.log_scale == ["training loss", "grad norm"]
    history.metrics["loss"].values[0] = 0.0  # a zero cannot go on a log axis: linear instead
    assert render_chart(history, roles, [], title=run).log_scale == ["grad norm"]


def test_a_flagged_episode_is_shaded_from_where_it_began(tmp_path, isolated_home):
    """A blow-up judged at its last step began earlier (its ``since_step``): the chart shades that span, so
    the picture shows where the trouble started, not only the step it was judged at."""
    log = tmp_path / "blown.jsonl"
    values = [2.1, 1.9, 1.8, 1.75, 1.7, 1.72, 2.9, 5.1, 9.6, 14.2, 15.0, 15.8, 16.1]
    log.write_text("".join(json.dumps({"step": 10 * (i + 1), "loss": v}) + "\n" for i, v in enumerate(values)))
    monitor = Monitor()
    verdict = monitor.check(str(log)).verdict
    assert verdict is not None and verdict.decision.value == "unsure"
    history = monitor.store.load_history(monitor.context(str(log)).key)
    chart = render_chart(history, monitor._roles(monitor.context(str(log)), history.metrics), verdict.signals,
                         title="blown")  # fmt: skip
    monitor.close()
    blowup = next(s for s in verdict.signals if "blew up" in s.message)
    assert (blowup.evidence["since_step"], 130) in chart.episodes and blowup.evidence["since_step"] < 130
    # the spike scan, which reads a short log from its 4th point, shades the jump at step 70 that began it
    assert min(start for start, _ in chart.episodes) == 70, chart.episodes


def test_a_smaller_cap_gets_a_smaller_picture_or_none(diverging):
    monitor, run, verdict = diverging
    history = monitor.store.load_history(monitor.context(run).key)
    roles = monitor._roles(monitor.context(run), history.metrics)
    full = render_within(history, roles, verdict.signals, title=run, max_bytes=10**7)
    assert full is not None
    smaller = render_within(history, roles, verdict.signals, title=run, max_bytes=len(full.png) - 1)
    assert smaller is not None and smaller.dpi < full.dpi and len(smaller.png) < len(full.png)
    assert smaller.dpi >= MIN_DPI
    assert render_within(history, roles, verdict.signals, title=run, max_bytes=1000) is None


def test_cli_plot_writes_the_file_named(tmp_path, isolated_home):
    log = tmp_path / "healthy.jsonl"
    write_log(log, diverge=False)
    env = {**os.environ, "TRAINING_CHECK_HOME": str(isolated_home)}
    base = [sys.executable, "-m", "mcp_training_check"]
    out = tmp_path / "run.png"
    done = subprocess.run([*base, "plot", str(log), "-o", str(out), "--json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    plotted = PlotResult.model_validate(json.loads(done.stdout))
    assert plotted.path == str(out) and out.read_bytes().startswith(PNG_MAGIC)
    assert plotted.flagged_steps == [] and plotted.decision is None, "never judged: nothing flagged"


def run_plot_cli(log: Path, output: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRAINING_CHECK_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "mcp_training_check", "plot", str(log), "-o", str(output)],
                          cwd=log.parent, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.mark.parametrize("name", ["chart.txt", "chart.pdf", "chart"])
def test_cli_plot_refuses_a_name_that_is_not_a_png(tmp_path, isolated_home, name):
    """`plot -o chart.txt` wrote a PNG under that name without a word."""
    log = tmp_path / "healthy.jsonl"
    write_log(log, diverge=False)
    done = run_plot_cli(log, tmp_path / name, isolated_home)
    assert done.returncode == 2, done.stdout
    assert "must end in .png" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / name).exists()


def test_cli_plot_into_a_directory_writes_the_runs_png_inside_it(tmp_path, isolated_home):
    """`plot -o charts/` was 'cannot write the chart to charts (Is a directory)'."""
    log, charts = tmp_path / "healthy.jsonl", tmp_path / "charts"
    write_log(log, diverge=False)
    charts.mkdir()
    done = run_plot_cli(log, charts, isolated_home)
    assert done.returncode == 0, done.stderr
    [written] = charts.iterdir()
    assert written.suffix == ".png" and written.read_bytes().startswith(PNG_MAGIC) and str(written) in done.stdout


def test_cli_plot_into_a_directory_not_yet_there_creates_it(tmp_path, isolated_home):
    """`plot -o charts/` (the slash says a directory) was refused with "its name must end in .png" when the
    directory did not exist yet."""
    log, charts = tmp_path / "healthy.jsonl", tmp_path / "charts" / "run1"
    write_log(log, diverge=False)
    env = {**os.environ, "TRAINING_CHECK_HOME": str(isolated_home)}
    done = subprocess.run([sys.executable, "-m", "mcp_training_check", "plot", str(log), "-o", f"{charts}/"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    [written] = charts.iterdir()
    assert written.suffix == ".png" and written.read_bytes().startswith(PNG_MAGIC)


def test_a_run_without_a_metric_to_draw_is_an_error_naming_the_fix(tmp_path):
    log = tmp_path / "other.jsonl"
    log.write_text("\n".join(json.dumps({"step": i, "tokens_per_second": 1000.0 + i}) for i in range(50)) + "\n")
    result = call(build_server(Monitor(config=load_config(cwd=tmp_path))), "plot", {"run": str(log)})
    assert result.is_error
    text = " ".join(getattr(block, "text", "") for block in result.content)
    assert "nothing to draw" in text and "--role" in text


def test_plot_takes_the_roles_check_took(tmp_path, isolated_home):
    """A run whose loss only a role override names: `check --role objective=train_loss` judged it, then
    `plot` said "nothing to draw ... set --role", an option neither the plot tool nor `plot` took."""
    log = tmp_path / "odd.jsonl"
    log.write_text("\n".join(json.dumps({"step": i, "objective": 2.0 / (1 + i / 10)}) for i in range(100)) + "\n")
    server = build_server(Monitor(config=load_config(cwd=tmp_path)))
    assert not call(server, "check", {"run": str(log), "roles": {"objective": "train_loss"}}).is_error
    drawn = call(server, "plot", {"run": str(log), "roles": {"objective": "train_loss"}})
    assert not drawn.is_error, drawn.content
    assert drawn.structured_content["panels"] == ["training loss"]
    env = {**os.environ, "TRAINING_CHECK_HOME": str(isolated_home)}
    done = subprocess.run([sys.executable, "-m", "mcp_training_check", "plot", str(log), "--role",
                           "objective=train_loss", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert PlotResult.model_validate(json.loads(done.stdout)).panels == ["training loss"]
