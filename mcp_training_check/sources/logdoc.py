"""Training histories saved as one JSON document, rewritten whole at each save rather than appended to.

Three shapes are read, each turned into records that `LogParser` reads as JSONL lines:

- a Hugging Face ``trainer_state.json``: its ``log_history`` list (each record has its ``step``); its
  ``max_steps`` is the run's total;
- a Keras ``History.history`` dict of per-epoch lists (``json.dump(history.history, f)``, one line or
  indented), also under a ``"history"`` key: record *i* is epoch *i* + 1;
- a list of per-epoch or per-step dicts: their own step key, else an integer ``epoch``, else their place
  from 1.

A document cannot be read from a byte offset, so each read parses the whole file (up to
`MAX_DOCUMENT_BYTES`) and hands the parser only the records after those already read; the cursor keeps
their count and a crc of the first record. Fewer records than before, or another first record, is a new
history at that path: read from its start with ``restarted=True``. A document that does not parse while it
is being rewritten leaves the cursor as it was, with a note; so does one of another shape (a config, a bare list of
numbers), with a note that says what this reader knows.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Mapping
from typing import Any

from .base import Cursor, ReadBatch, SeriesBuilder
from .loglines import STEP_KEYS
from .logparse import LogParser, ParseNotes, restore_parser

__all__ = ["DOCUMENT_NOTE", "MAX_DOCUMENT_BYTES", "document_records", "looks_like_document", "read_document"]

MAX_DOCUMENT_BYTES = 64 << 20
"""A history document is parsed whole at each read; a larger file is read as lines (a JSONL log can be any
size, a saved history of a few hundred thousand records is a few tens of MB)."""

DOCUMENT_NOTE = (
    "note: this file is one JSON document ({shape}) that its training rewrites whole at each save, not a log it "
    "appends to: each check re-reads it and takes the records not read before ({new:,} of its {total:,})"
)

UNKNOWN_NOTE = (
    "note: this file is one JSON document, but not a training history this reader knows (a Hugging Face "
    "trainer_state.json, a Keras History dict of per-epoch number lists, a list of per-epoch records): point `run` "
    "at the file the training logs its metrics to, or its W&B run"
)

TORN_NOTE = (
    "note: the JSON document did not parse this time ({error}); it is probably being rewritten: the next check "
    "reads it again (if it stays so, point `run` at the training's console log or its W&B run)"
)


def _a_record(doc: Any) -> bool:
    """A dict holding a number of its own: one JSONL record (``{"lr": [0.1], "loss": 2.0}``), not a document."""
    return isinstance(doc, Mapping) and any(_number(v) and v is not None for v in doc.values())


def looks_like_document(head: bytes) -> bool:
    """Whether the file's first bytes start a JSON document rather than a JSONL log: a top-level list, an
    indented object (a first line of ``{`` alone), or an object on one line whose first key holds a list
    (``{"loss": [`` of a one-line Keras history, ``{"log_history": [``) and no record after it. A JSONL
    log's first line is a whole record with more lines after it."""
    text = head.lstrip().lstrip(b"\xef\xbb\xbf")
    if text.startswith(b"["):
        return True
    if not text.startswith(b"{"):
        return False
    first_line, _, rest = text.partition(b"\n")
    first_line = first_line.strip()
    if first_line == b"{":
        return True
    colon = first_line.find(b":")
    holds_list = colon > 0 and first_line[colon + 1 :].lstrip().startswith((b"[", b"{"))
    return holds_list and not rest.strip()


def document_records(doc: Any) -> tuple[list[dict[str, Any]], str, int | None] | None:
    """The records of a history document, what shape it is, and the run's total steps when it says so; None
    for a JSON document that is no training history this reader knows."""
    if isinstance(doc, Mapping) and isinstance(doc.get("log_history"), list):
        total = doc.get("max_steps")
        logged = [dict(r) for r in doc["log_history"] if isinstance(r, Mapping)]
        steps = total if isinstance(total, int) and total > 0 else None
        return logged, "a Hugging Face trainer_state.json", steps
    if isinstance(doc, Mapping) and isinstance(doc.get("history"), Mapping) and len(doc) <= 3:
        doc = doc["history"]
    if isinstance(doc, Mapping) and doc and all(_numbers(v) for v in doc.values()):
        length = max(len(v) for v in doc.values())
        epochs = [{"step": i + 1, **{k: v[i] for k, v in doc.items() if i < len(v)}} for i in range(length)]
        return epochs, "a Keras History dict of per-epoch lists", None
    if isinstance(doc, list) and doc and all(isinstance(r, Mapping) for r in doc):
        return [_stepped(dict(r), i) for i, r in enumerate(doc)], "a list of per-step records", None
    return None


def _numbers(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_number(x) for x in value)


def _number(x: Any) -> bool:
    return x is None or (isinstance(x, int | float) and not isinstance(x, bool))


def _stepped(record: dict[str, Any], index: int) -> dict[str, Any]:
    """A record with a step: its own step key, else its whole-number ``epoch``, else its place from 1."""
    if any(key in record for key in STEP_KEYS):
        return record
    epoch = record.get("epoch")
    if isinstance(epoch, int | float) and not isinstance(epoch, bool) and math.isfinite(epoch) and epoch == int(epoch):
        return {"step": int(epoch), **{k: v for k, v in record.items() if k != "epoch"}}
    return {"step": index + 1, **record}


def _first_crc(records: list[dict[str, Any]]) -> int:
    return zlib.crc32(json.dumps(records[0], sort_keys=True, default=str).encode()) if records else 0


def read_document(data: bytes, cursor: Cursor | None, identity: Mapping[str, Any]) -> ReadBatch | None:
    """The records of the document ``data`` after those the cursor has read, parsed as JSONL lines; None when
    ``data`` is no history document this reader knows (the caller reads it as lines)."""
    state = cursor.get("document") if cursor else None
    try:
        doc = json.loads(data.decode("utf-8", "replace").lstrip("\ufeff"))
    except ValueError as exc:
        if isinstance(state, Mapping) and cursor is not None:  # a document read before, caught mid-rewrite
            return ReadBatch(series={}, cursor=dict(cursor), notes=[TORN_NOTE.format(error=exc)])
        return None
    found = document_records(doc)
    if found is None:
        if _a_record(doc):
            return None  # one JSONL record so far: read as lines
        return ReadBatch(series={}, cursor=dict(cursor or {}), notes=[UNKNOWN_NOTE])
    records, shape, total = found
    seen = int(state.get("records", 0)) if isinstance(state, Mapping) else 0
    first_crc = _first_crc(records)
    same = isinstance(state, Mapping) and seen <= len(records) and state.get("first_crc") == first_crc
    kept = restore_parser(cursor, "jsonl") if same else None
    same = kept is not None  # a parser state it cannot use (a hand edit) is a read from the start
    parser = kept or LogParser("jsonl")
    start = seen if same else 0
    sink, notes = SeriesBuilder(), ParseNotes()
    parser.feed((json.dumps(r, default=str) for r in records[start:]), sink, notes)
    parser.finish(sink, notes)
    parser.total_steps = total or parser.total_steps
    new_cursor: Cursor = {
        "document": {"records": len(records), "first_crc": first_crc},
        "identity": dict(identity),
        "parser": parser.to_state(),
    }
    batch = ReadBatch(
        series=sink.build(), cursor=new_cursor, restarted=cursor is not None and not same, warnings=notes.warnings()
    )
    batch.notes.append(DOCUMENT_NOTE.format(shape=shape, new=len(records) - start, total=len(records)))
    return batch
