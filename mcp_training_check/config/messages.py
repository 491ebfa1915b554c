"""The messages of a bad ``training-check.toml``: ``FILE:LINE: table.key: what is wrong and how to fix it``.

``syntax_message`` rewrites a tomllib error; ``validation_message`` turns each pydantic error into a line
that names the key as written (quoted when it must be), the line that wrote it (from ``toml_lines``),
and the fix: the allowed keys and the closest one for a typo, the expected type, the allowed values.
"""

from __future__ import annotations

import difflib
import re
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from .toml_lines import BARE_KEY

__all__ = ["syntax_message", "validation_message"]

_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def syntax_message(message: str, shown: str, text: str) -> str:
    """tomllib's message with its position moved to the front: ``FILE:LINE:COLUMN: problem``."""
    match = _TOML_POSITION.search(message)
    if match:
        line, column = match.groups()
        return f"{shown}:{line}:{column}: {message[: match.start()]}; fix the TOML syntax there."
    end_line = text.count("\n") + 1
    return f"{shown}:{end_line}: {message.removesuffix(' (at end of document)')}; fix the TOML syntax."


_TYPE_WORDS = {
    "float_type": "a number",
    "int_type": "an integer",
    "bool_type": "true or false",
    "string_type": "a string",
    "dict_type": "a table",
    "model_type": "a table",
    "path_type": "a path string",
}


def validation_message(
    exc: ValidationError, shown: str, lines: dict[tuple[str, ...], int], root: type[BaseModel]
) -> str:
    """One ``FILE:LINE: table.key: problem`` line per error, in file order; ``root`` is the file's model."""
    entries = []
    for error in exc.errors(include_url=False):
        loc = tuple(str(part) for part in error["loc"])
        line = _line_for(loc, lines)
        where = f"{shown}:{line}" if line else shown
        entries.append((line or 0, f"{where}: {_dotted(loc)}: {_describe(error, loc, root)}"))
    return "\n".join(message for _, message in sorted(entries))


def _describe(error: Any, loc: tuple[str, ...], root: type[BaseModel]) -> str:
    kind, value = error["type"], error.get("input")
    if kind == "extra_forbidden":
        allowed = _allowed_keys(root, loc[:-1])
        close = difflib.get_close_matches(loc[-1], allowed, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"unknown key {loc[-1]!r}; {hint}allowed keys: {', '.join(allowed)}."
    if kind == "missing":
        return f"required key {loc[-1]!r} is missing; add it."
    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", error["ctx"]["expected"])
        return f"{value!r} is not one of {', '.join(choices)}."
    if kind in _TYPE_WORDS:
        return f"expected {_TYPE_WORDS[kind]}, got {value!r}; change the value."
    message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Input ")
    return f"{message}, got {value!r}." if kind != "value_error" else f"{message}."


def _dotted(loc: tuple[str, ...]) -> str:
    return ".".join(part if BARE_KEY.fullmatch(part) else f'"{part}"' for part in loc)


def _allowed_keys(root: type[BaseModel], loc: tuple[str, ...]) -> list[str]:
    """The field names of the model found at ``loc`` below ``root`` (dict keys in ``loc`` are stepped over)."""
    annotation: Any = root
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            annotation = annotation.model_fields[part].annotation
        elif get_origin(annotation) is dict:
            annotation = get_args(annotation)[1]
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return []


def _unwrap(annotation: Any) -> Any:
    """``X | None`` → ``X``."""
    if get_origin(annotation) in (Union, UnionType):
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        return members[0] if len(members) == 1 else annotation
    return annotation


def _line_for(loc: tuple[str, ...], lines: dict[tuple[str, ...], int]) -> int | None:
    """The line of the longest prefix of ``loc`` the text defines (a missing key → its table)."""
    for end in range(len(loc), 0, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None
