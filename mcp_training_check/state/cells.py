"""Stored cells read back: each helper returns the value this code wrote, or raises ValueError / TypeError
for anything else (a bit flip, a hand edit). `StateStore` decodes every cell under `decoding`, which turns
those errors into `CellDamage`; its transaction turns that into the one "damaged" message (`database.damaged`).
An error from the data being written (a caller's bug) is not decoding, and stays what it is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np

__all__ = [
    "CellDamage",
    "decoding",
    "float_or_none",
    "int_cell",
    "int_or_none",
    "json_object",
    "raw_points",
    "stored_time",
    "text_cell",
    "utc_text",
]

DECODE_ERRORS = (ValueError, TypeError, KeyError, IndexError, OverflowError)
"""What decoding a cell raises when its bytes are not what this code wrote (JSONDecodeError and pydantic's
ValidationError are ValueErrors)."""


class CellDamage(Exception):
    """A stored cell could not be decoded: what was being read, and why."""


@contextmanager
def decoding(what: str) -> Iterator[None]:
    """Decode cells of ``what``; a `DECODE_ERRORS` error becomes `CellDamage`."""
    try:
        yield
    except DECODE_ERRORS as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise CellDamage(f"{what}: {type(exc).__name__}: {first}") from exc


def raw_points(steps: Any, values: Any) -> tuple[np.ndarray, np.ndarray]:
    raw_steps, raw_values = np.frombuffer(steps, dtype="<i8"), np.frombuffer(values, dtype="<f8")
    if raw_steps.shape != raw_values.shape:
        raise ValueError(f"a series holds {raw_steps.size} steps but {raw_values.size} values")
    return raw_steps, raw_values


def text_cell(cell: Any) -> str:
    if not isinstance(cell, str):
        raise TypeError(f"expected a text cell, found {cell!r:.40}")
    return cell


def int_cell(cell: Any) -> int:
    if not isinstance(cell, int) or isinstance(cell, bool):
        raise TypeError(f"expected an integer cell, found {cell!r:.40}")
    return cell


def int_or_none(cell: Any) -> int | None:
    return None if cell is None else int_cell(cell)


def float_or_none(cell: Any) -> float | None:
    if cell is None:
        return None
    if not isinstance(cell, int | float) or isinstance(cell, bool):
        raise TypeError(f"expected a number cell, found {cell!r:.40}")
    return float(cell)


def json_object(cell: Any, what: str) -> dict[str, Any]:
    value = json.loads(cell)
    if not isinstance(value, dict):
        raise ValueError(f"the stored {what} is not a JSON object")
    return value


def utc_text(at: datetime | None = None) -> str:
    """Fixed-width UTC ISO text, so text order is time order (what `stored_time` reads back). Naive times are
    taken as local."""
    return (at or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="microseconds")


def stored_time(cell: Any) -> datetime:
    """A time written by this code: ISO text with its UTC offset."""
    at = datetime.fromisoformat(cell)
    if at.tzinfo is None:
        raise ValueError(f"the stored time {cell!r:.40} has no UTC offset")
    return at
