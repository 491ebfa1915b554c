"""What parsing a log notices besides numbers: its fatal and error lines (a Python traceback quoted by the
exception line that ends it), lines skipped as malformed or hostile, and notes for the snapshot's warnings.

``ParseNotes`` is filled line by line by ``logparse.LogParser.feed`` and turned into warnings once a read is
done; it keeps the most recent ``MAX_WARNINGS`` of each kind.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

__all__ = [
    "ERROR_PREFIX",
    "FATAL_PREFIX",
    "HIDDEN_LINES_NOTE",
    "MAX_LINE_BYTES",
    "MAX_WARNINGS",
    "ParseNotes",
]

FATAL_MARKERS = ("loss scale already at minimum",)
TRACEBACK_HEADER = "Traceback (most recent call last)"
TRACEBACK_CHAIN_LINES = ("During handling of the above exception", "The above exception was the direct cause")
ERROR_MARKERS = (TRACEBACK_HEADER, "CUDA out of memory", "RuntimeError", "NCCL error")
FATAL_PREFIX = "fatal: "
ERROR_PREFIX = "error: "
MAX_WARNINGS = 20  # per kind and per read; the most recent are kept
WARNING_LINE_CHARS = 240

MAX_LINE_BYTES = 64 * 1024
"""A log line longer than this is skipped and counted, never parsed: a metrics line is a few hundred bytes
(2,000 metrics of JSONL fit), and a longer one (a config dump, a corrupt record) would cost time and stack."""

HIDDEN_LINES_NOTE = "note: earlier error/fatal lines of the log not shown:"

_ANY_MARKER = re.compile("|".join(re.escape(m) for m in FATAL_MARKERS + ERROR_MARKERS))


@dataclass
class ParseNotes:
    """What parsing noticed besides numbers: fatal and error lines (the latest kept), malformed lines."""

    fatal: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_WARNINGS))
    errors: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_WARNINGS))
    fatal_seen: int = 0
    errors_seen: int = 0
    skipped: int = 0
    skipped_hostile: int = 0  # of ``skipped``: too long, a number out of range, nested too deep
    extra: list[str] = field(default_factory=list)
    unrecognized_lines: int = 0  # set when no line the log's parser has read so far held a metric
    counter_at_start: int | None = None  # the parser's line counter when this read began
    # inside a Python traceback: what precedes its header on each line (torchrun's "[rank1]: ", else "")
    traceback_prefix: str | None = None

    def scan(self, line: str) -> None:
        if self.traceback_prefix is not None and self._traceback_line(line):
            return
        if _ANY_MARKER.search(line) is None:  # one C-level scan for the common case
            return
        header = line.find(TRACEBACK_HEADER)
        if header >= 0:
            self.traceback_prefix = line[:header]
        if any(marker in line for marker in FATAL_MARKERS):
            self.fatal.append(FATAL_PREFIX + line.strip()[:WARNING_LINE_CHARS])
            self.fatal_seen += 1
        else:
            self.errors.append(ERROR_PREFIX + line.strip()[:WARNING_LINE_CHARS])
            self.errors_seen += 1

    def _traceback_line(self, line: str) -> bool:
        """Whether `line`, inside a traceback, was taken care of here: its frames and source lines (indented) are
        not error lines of their own, and its exception line replaces the header quoted for it, since that says
        why the training died (a `KeyError` names no marker). A new header is left to `scan`."""
        prefix = self.traceback_prefix or ""
        body = line.rstrip("\r\n")
        if not body.startswith(prefix):
            self.traceback_prefix = None  # another process's line: this traceback's end was not printed here
            return False
        body = body[len(prefix) :]
        if not body.strip() or body[0].isspace() or body.startswith(TRACEBACK_CHAIN_LINES):
            return True
        if body.startswith(TRACEBACK_HEADER):
            return False
        self.traceback_prefix = None
        header = ERROR_PREFIX + (prefix + TRACEBACK_HEADER)
        if self.errors and self.errors[-1].startswith(header):
            self.errors[-1] = ERROR_PREFIX + line.strip()[:WARNING_LINE_CHARS]
            return True
        return False

    def skip_hostile(self) -> None:
        self.skipped += 1
        self.skipped_hostile += 1

    def warnings(self) -> list[str]:
        out = [*self.fatal, *self.errors, *self.extra]
        hidden = self.fatal_seen - len(self.fatal) + self.errors_seen - len(self.errors)
        if hidden:
            out.append(f"{HIDDEN_LINES_NOTE} {hidden}")
        if self.unrecognized_lines and not (self.fatal_seen or self.errors_seen):  # else a crash is the news
            out.append(
                f"note: none of the lines read so far ({self.unrecognized_lines}) holds a metric in a form this "
                "reader knows (JSONL, CSV/TSV, Hugging Face Trainer dicts, 'key: value' or 'key=value' text, a tqdm "
                "bar's postfix): if the training prints its metrics later, the next check reads them; else point "
                "`run` at the file it logs its metrics to (or its W&B run)"
            )
        if self.skipped_hostile:
            out.append(
                f"note: {self.skipped_hostile} log line(s) skipped: longer than {MAX_LINE_BYTES // 1024} KiB, a step "
                "or number out of range, or nested too deep"
            )
        return out
