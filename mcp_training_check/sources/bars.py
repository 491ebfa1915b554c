"""Progress bars redrawn in place, as a log's steps and values: tqdm's postfix, Lightning's Rich bar and
Ultralytics' console table. A bar shows the latest values at every refresh, so a value is a point only when
it changes, a count redrawn several times is one point (its last refresh's), and the bar's count gives the
step when the log prints no step of its own.

``BarLines`` is mixed into ``logparse.LogParser``, whose state (the attributes declared here, set in its
``__init__`` and carried by its ``to_state``) and whose ``_emit`` and ``_kind`` it uses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..models import MetricRole
from ..roles import infer_role
from .base import STEP_RANGE, SeriesBuilder
from .epochs import EpochState
from .loglines import BarRefresh

__all__ = ["MAX_BAR_METRICS", "BarLines"]

MAX_BAR_METRICS = 256
"""Metric names the parser state keeps for progress bars: each one's last value a bar showed, and the names
printed metric lines brought (a bar never feeds those)."""


class BarLines:
    """The bar half of the log parser (see the module docstring)."""

    last_step: int | None
    printed_keys: set[str]  # metrics printed lines brought: bars never feed them
    epochs: EpochState
    bar_label: str | None  # the bar whose count gives the steps (the first with metrics)
    bar_n: int  # its latest count
    bar_offset: int  # the counts of its earlier resets (epochs): step = offset + count
    bar_values: dict[str, float]  # the last value a bar showed of each metric
    bar_step: int | None  # the step of the latest points taken from a bar
    bar_pending: tuple[int, dict[str, float]] | None  # the latest refresh's points (`_bar_line`)

    def _emit(
        self, metrics: Mapping[str, float], step: int | None, kind: str, sink: SeriesBuilder, *, printed: bool = True
    ) -> None:
        raise NotImplementedError

    def _kind(self, metrics: Mapping[str, float]) -> str:
        raise NotImplementedError

    def _bar_train_loss_at_its_count(self, sink: SeriesBuilder) -> None:
        """At the end of what was read, the train loss a bar shows is a point at the bar's count when the count
        has moved past the latest point: a converged loss at the bar's 3 significant digits
        changes no value, yet the run has advanced (without this the check saw no new points). The count is a
        tqdm bar's, else that of a bar placed by epoch and batch (Lightning's Rich bar, Ultralytics' table).
        Evals are not repeated (a repeated eval would pass for another eval), and a log with printed metric
        lines keeps its own steps."""
        step = self._bar_count()
        if self.printed_keys or step is None or self.last_step is None:
            return
        losses = {
            n: v for n, v in self.bar_values.items() if infer_role(n).role is MetricRole.TRAIN_LOSS and math.isfinite(v)
        }  # a NaN shown again adds nothing: the stop names where it began
        if step > self.last_step and losses:
            self._emit(losses, step, "train", sink, printed=False)

    def _bar_count(self) -> int | None:
        """The step a bar redrawn in place last showed: a tqdm bar's count over its epochs, else the epoch and
        batch of the latest line placed that way (only bars reach here: printed lines set `printed_keys`)."""
        if self.bar_label is not None:
            return self.bar_offset + self.bar_n
        return None if self.epochs.epoch is None else self.epochs.offset + self.epochs.batch

    @property
    def bar_steps(self) -> bool:
        """Whether a progress bar's counts give this log's steps (it feeds a metric printed lines do not)."""
        return self.bar_label is not None and not self.printed_keys.issuperset(self.bar_values)

    def _bar_line(self, bar: BarRefresh, sink: SeriesBuilder) -> None:
        """A tqdm postfix's values, each taken when it differs from the last value a bar showed of it: a bar
        shows the latest values at every refresh (Lightning refreshes once with the old values when the count
        moves, then with the new ones), so an unchanged value is the same point again. A metric that printed
        lines also carry is theirs alone (printed lines hold every point; a bar, what it happened to show).
        So a refresh's points wait for the next refresh or the end of the read: a log that prints its metrics
        after its first bar (a loop that shows the loss in its bar and prints it every N steps) then gets no
        bar point at all."""
        step = self._bar_step(bar)
        if step is not None:
            self._refresh(step, bar.metrics, sink)

    def _refresh(
        self, step: int, metrics: Mapping[str, float], sink: SeriesBuilder, *, new_only: bool = True
    ) -> None:
        """One refresh of a bar redrawn in place (tqdm's postfix, Rich, Ultralytics' table) at `step`: the values
        it shows anew (all of them unless `new_only`: a row that holds only the epoch's running means, which may
        stay put for a batch) wait as the step's points; a later refresh of the same step replaces them (the
        last one wins: a bar redrawn ten times in a step is one point, not ten), one of another step sends them
        on."""
        fresh = {
            name: value for name, value in metrics.items()
            if name not in self.printed_keys and (not new_only or self._shows_new(name, value, step))
        }  # fmt: skip
        if not fresh:
            return
        if len(self.bar_values) < MAX_BAR_METRICS or set(fresh) <= set(self.bar_values):
            self.bar_values.update(fresh)
        if self.bar_pending is not None and self.bar_pending[0] == step:
            fresh = {**self.bar_pending[1], **fresh}
        else:
            self._flush_bar(sink)
        self.bar_pending, self.bar_step = (step, fresh), step

    def _shows_new(self, name: str, value: float, step: int) -> bool:
        """A value the bar did not show last time; a NaN or Inf again at each new step: a loss that stays NaN
        is NaN at every step, and the judge must see it go on."""
        before = self.bar_values.get(name)
        if before is None:
            return True
        if math.isfinite(value):
            return before != value
        return step != self.bar_step or not (before == value or (math.isnan(before) and math.isnan(value)))

    def _flush_bar(self, sink: SeriesBuilder) -> None:
        if self.bar_pending is None:
            return
        step, points = self.bar_pending
        self.bar_pending = None
        kept = {name: value for name, value in points.items() if name not in self.printed_keys}
        self._emit(kept, step, self._kind(kept), sink, printed=False)

    def _bar_step(self, bar: BarRefresh) -> int | None:
        """The step of a bar refresh. The first bar with metrics counts the steps: each time its count goes back
        (the next epoch) the count it reached is added to an offset. Another bar's values (an outer epoch bar)
        land at the latest step. None at count 0: a bar just reset still shows the previous epoch's values."""
        if self.bar_label is None:
            self.bar_label = bar.label
        if bar.label != self.bar_label:
            return self.last_step
        if bar.n == 0:
            return None
        offset = self.bar_offset + self.bar_n if bar.n < self.bar_n else self.bar_offset
        if offset + bar.n > STEP_RANGE[1]:
            raise OverflowError(f"bar count {bar.n} is beyond int64")  # one hostile line, the state untouched
        self.bar_n, self.bar_offset = bar.n, offset
        return offset + bar.n
