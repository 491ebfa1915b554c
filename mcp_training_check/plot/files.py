"""Where a chart is written, and what the plot tool says about it."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import ConfigError
from ..models import PlotResult, Verdict
from .render import Chart

__all__ = ["PLOTS_DIR", "plot_output", "plot_path", "plot_result", "save_chart"]

PLOTS_DIR = "plots"
MAX_NAME_CHARS = 100
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def plot_path(output: Path | None, home: Path, run_key: str) -> Path:
    """``output`` (a directory gets the run's file name inside it), else ``<state home>/plots/<run>.png``.
    A name without ``.png`` is refused: the chart is a PNG, and ``-o chart.txt`` or ``-o chart.pdf`` would
    hold one under a name that says otherwise."""
    name = _UNSAFE.sub("_", run_key).strip("._")[-MAX_NAME_CHARS:] or "run"
    if output is None:
        return home / PLOTS_DIR / f"{name}.png"
    if output.is_dir():
        return output / f"{name}.png"
    if output.suffix.lower() != ".png":
        raise ConfigError(
            f"-o {output}: the chart is written as a PNG, so its name must end in .png "
            f"(e.g. -o {output.with_suffix('.png')}), or name a directory (-o {output}/ creates it); "
            "other formats are not drawn"
        )
    return output


def plot_output(raw: str | None) -> Path | None:
    """The CLI's ``-o``: a name ending in a slash is a directory, created when missing (``-o plots/`` was
    refused as "must end in .png" unless the directory existed already)."""
    if not raw:
        return None
    output = Path(raw)
    if raw.endswith(("/", os.sep)) and not output.is_dir():
        try:
            output.mkdir(parents=True)
        except OSError as exc:
            reason = f"cannot create the directory {output} ({exc.strerror})"
            raise ConfigError(f"{reason}: pass -o with a writable path") from exc
    return output


def save_chart(chart: Chart, path: Path) -> Path:
    """Write the PNG (creating the plots directory under the state home); a ConfigError names the path."""
    try:
        if path.parent.name == PLOTS_DIR:
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(chart.png)
    except OSError as exc:
        raise ConfigError(f"cannot write the chart to {path} ({exc.strerror}): pass -o with a writable path") from exc
    return path.resolve()


def plot_result(run: str, chart: Chart, path: Path, verdict: Verdict | None) -> PlotResult:
    marked = f", {len(chart.flagged_steps)} flagged step(s) of the latest {verdict.decision.value} verdict" if (
        verdict is not None and chart.flagged_steps
    ) else ""
    return PlotResult(
        run=run,
        summary=f"{', '.join(chart.panels)} for {len(chart.metrics)} metric(s){marked}: {path}",
        path=str(path),
        panels=chart.panels,
        flagged_steps=chart.flagged_steps,
        decision=verdict.decision if verdict is not None else None,
        png_bytes=len(chart.png),
    )
