"""The run's chart for the API reviewers: the `plot` picture, small enough to send next to the numbers."""

from __future__ import annotations

from ..errors import MetricMissing
from ..plot import render_within
from .prompt import ReviewFacts

__all__ = ["IMAGE_MEDIA_TYPE", "MAX_REVIEW_IMAGE_BYTES", "review_image"]

MAX_REVIEW_IMAGE_BYTES = 300_000
"""The cap on the PNG sent with a review. The four-panel chart is ~60–150 kB at 100 dpi; the Anthropic API
takes up to 5 MB per image and OpenAI-compatible endpoints (often behind proxies with 1 MB body limits)
less, and an image costs ~1,000–1,600 input tokens at this size whatever its bytes. Over the cap the chart
is redrawn at a lower resolution (plot.MIN_DPI at the least), else left out."""
IMAGE_MEDIA_TYPE = "image/png"


def review_image(facts: ReviewFacts) -> bytes | None:
    """The chart of the reviewed run with the verdict's signals marked, under MAX_REVIEW_IMAGE_BYTES;
    None when there is no history to draw or it cannot fit."""
    if facts.history is None:
        return None
    try:
        chart = render_within(
            facts.history, facts.roles, facts.verdict.signals, title=facts.run, max_bytes=MAX_REVIEW_IMAGE_BYTES
        )
    except MetricMissing:
        return None
    return chart.png if chart is not None else None
