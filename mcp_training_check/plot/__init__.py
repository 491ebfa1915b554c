"""The picture of a run: training loss (log scale), evals, learning rate and grad norm over steps, with
the points the judge flagged marked.

    render   stored history + metric roles + the latest verdict's signals → PNG bytes (`Chart`)
    files    where the PNG is written (``-o``, else the state home's plots/) and the plot tool's result

Reads the stored history (`state`) and the signals it is handed; matplotlib (Agg, no pyplot) is
imported only when a chart is drawn. `review` attaches the chart to API reviews; `plot` serves people.
"""

from .files import PLOTS_DIR, plot_output, plot_path, plot_result, save_chart
from .render import (
    DEFAULT_DPI,
    MAX_LINES_PER_PANEL,
    MIN_DPI,
    Chart,
    render_chart,
    render_within,
)

__all__ = [
    "DEFAULT_DPI",
    "MAX_LINES_PER_PANEL",
    "MIN_DPI",
    "PLOTS_DIR",
    "Chart",
    "plot_output",
    "plot_path",
    "plot_result",
    "render_chart",
    "render_within",
    "save_chart",
]
