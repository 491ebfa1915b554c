"""Where each key of a TOML text is written: ``key_lines`` maps table and key paths to 1-based lines.

tomllib gives line numbers only for syntax errors; ``config`` uses this map to point a schema error
(a pydantic location such as ``("runs", "bert", "stop", "pid")``) at the line that wrote the key. The
scanner reads just enough TOML for that: table headers, dotted and quoted keys, inline tables and arrays;
values are skipped, not decoded, and the text is assumed to be valid TOML already.
"""

from __future__ import annotations

import bisect
import json
import re
import tomllib

__all__ = ["BARE_KEY", "MAX_NESTING", "key_lines", "table_key", "too_deep_at"]

MAX_NESTING = 32
"""Arrays and inline tables inside each other: the file needs 2; tomllib recurses per level and would
fail with a RecursionError near a few hundred, so deeper text is refused before it is parsed."""


_NESTING_TOKENS = re.compile(r"[\[\]{}\"'#\n\\.=]")


def too_deep_at(text: str, limit: int = MAX_NESTING) -> int | None:
    """The 1-based line where nesting first passes ``limit``, or None: ``[`` / ``{`` inside each other, or the
    parts of a dotted key or table header (``a.b.c``; tomllib's time grows with their square). Strings and
    comments are skipped; only the characters that matter are visited, so a long value costs one regex scan."""
    depth, line, quote, skip_to = 0, 1, "", 0
    dots, in_value, header = 0, False, False  # key parts on this line: in a [table] header or before its "="
    for match in _NESTING_TOKENS.finditer(text):
        at, char = match.start(), match.group()
        if char == "\n":
            line += 1
            dots, in_value, header = 0, False, False
        if at < skip_to or char == "\n":
            continue
        if not quote and char in ".=":
            in_value = in_value or (char == "=" and depth == 0)
            dots += char == "." and (header or (depth == 0 and not in_value))
            if dots >= limit:
                return line
            continue
        header = header or (not quote and char == "[" and depth == 0 and not in_value)
        if quote:
            if char == "\\" and quote == '"':
                skip_to = at + 2  # an escaped character, never a closing quote
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "#":
            end = text.find("\n", at)
            skip_to = len(text) if end < 0 else end
        elif char in "[{":
            depth += 1
            if depth > limit:
                return line
        elif char in "]}":
            depth = max(depth - 1, 0)
    return None


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Map every table and key path in valid TOML ``text`` to the 1-based line that defines it.

    A path only implied by a longer one (``runs.bert`` by ``[runs.bert.stop]``) gets the line of its
    first mention unless it is defined explicitly. Array items are keyed by their index as a string.
    """
    scanner = _KeyScanner(text)
    scanner.scan()
    return {**scanner.implied, **scanner.defined}


BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def table_key(name: str) -> str:
    """A run's name as messages write its table: bare when TOML allows, else quoted (``runs."my run"``, not
    ``runs.my run``, which names no table)."""
    return name if BARE_KEY.fullmatch(name) else json.dumps(name, ensure_ascii=False)

_BASIC_STRING_STOPS = re.compile(r'["\\]')
_LITERAL_STRING_STOPS = re.compile("'")


class _KeyScanner:
    """Just enough of a TOML reader to know where keys are; values are skipped, not decoded."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.newlines = [match.start() for match in re.finditer("\n", text)]
        self.defined: dict[tuple[str, ...], int] = {}
        self.implied: dict[tuple[str, ...], int] = {}

    def line(self) -> int:
        return bisect.bisect_right(self.newlines, self.pos - 1) + 1

    def record(self, path: tuple[str, ...], line: int) -> None:
        if len(path) > MAX_NESTING:  # no schema location is that deep; recording every prefix would be quadratic
            path = path[:MAX_NESTING]
        self.defined.setdefault(path, line)
        for end in range(1, len(path)):
            self.implied.setdefault(path[:end], line)

    def peek(self, count: int = 1) -> str:
        return self.text[self.pos : self.pos + count]

    def skip(self, newlines: bool) -> None:
        """Skip blanks and comments (and line breaks when ``newlines``)."""
        blanks = " \t\r\n" if newlines else " \t\r"
        while self.pos < len(self.text):
            if self.text[self.pos] in blanks:
                self.pos += 1
            elif self.text[self.pos] == "#":
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end
            else:
                return

    def scan(self) -> None:
        table: tuple[str, ...] = ()
        while True:
            self.skip(newlines=True)
            if self.pos >= len(self.text):
                return
            line = self.line()
            if self.peek() == "[":
                double = self.peek(2) == "[["
                self.pos += 2 if double else 1
                table = self.key()
                self.pos += 2 if double else 1
                self.record(table, line)
            else:
                self.key_value(table)

    def key_value(self, prefix: tuple[str, ...]) -> None:
        line = self.line()
        path = prefix + self.key()
        self.record(path, line)
        self.skip(newlines=False)
        self.pos += 1  # '='
        self.value(path)

    def key(self) -> tuple[str, ...]:
        parts = []
        while True:
            self.skip(newlines=False)
            parts.append(self.simple_key())
            self.skip(newlines=False)
            if self.peek() != ".":
                return tuple(parts)
            self.pos += 1

    def simple_key(self) -> str:
        if self.peek() in "\"'":
            start = self.pos
            self.string()
            return str(tomllib.loads(f"k = {self.text[start : self.pos]}")["k"])
        match = BARE_KEY.match(self.text, self.pos)
        if match is None:
            raise ValueError(f"no key at offset {self.pos}")
        self.pos = match.end()
        return match.group()

    def string(self) -> None:
        quote = self.peek()
        delimiter = quote * 3 if self.peek(3) == quote * 3 else quote
        self.pos += len(delimiter)
        stops = _BASIC_STRING_STOPS if quote == '"' else _LITERAL_STRING_STOPS
        while self.pos < len(self.text):
            stop = stops.search(self.text, self.pos)  # jump to the next quote (or escape): a long value is one search
            self.pos = len(self.text) if stop is None else stop.start()
            if stop is None or self.text.startswith(delimiter, self.pos):
                break
            self.pos += 2 if self.peek() == "\\" else 1
        self.pos += len(delimiter)
        while delimiter != quote and self.peek() == quote:  # """a"""" ends with a quote in the value
            self.pos += 1

    def value(self, path: tuple[str, ...]) -> None:
        self.skip(newlines=False)
        char = self.peek()
        if char in "\"'":
            self.string()
        elif char == "{":
            self.container(path, "}", inline_table=True)
        elif char == "[":
            self.container(path, "]", inline_table=False)
        else:
            while self.pos < len(self.text) and self.text[self.pos] not in ",]}\n#":
                self.pos += 1

    def container(self, path: tuple[str, ...], closer: str, *, inline_table: bool) -> None:
        """An inline table ``{k = v, ...}`` or an array ``[v, ...]`` (items keyed by index)."""
        self.pos += 1
        index = 0
        while True:
            self.skip(newlines=True)
            if self.peek() in (closer, ""):
                self.pos += 1
                return
            if self.peek() == ",":
                self.pos += 1
                index += 1
                continue
            if inline_table:
                self.key_value(path)
            else:
                self.record((*path, str(index)), self.line())
                self.value((*path, str(index)))
