"""`ToolServer`: the SDK's `MCPServer` with this project's conventions applied to every tool.

What a client receives, and why:

- **Descriptions** are the docstring without its indentation and with its hard-wrapped lines joined;
  every tool has a `title` (given, or made from its name).
- **Published schemas are lean.** pydantic gives every property a `title` that only repeats its name, and
  every optional argument `default: null` and an `anyOf [X, null]` pair: input schemas keep what the model
  reads (descriptions, limits, patterns) without those. Output schemas, which clients use to validate a
  result, are outlined one level deep (`OUTPUT_SCHEMA_DEPTH`): the result's fields, types, enums, required.
- **A result is sent once.** The SDK puts a pretty-printed JSON copy of `structuredContent` into the text
  block. Claude Code shows the model only `structuredContent` when it is there, and every other client
  can read it too: the text block becomes the result's one-line `summary`. Optional fields that are
  null or empty are left out: the schema does not require them, and absent reads as none. Other blocks a
  tool returns (an image) are kept.
- **Argument errors name the argument and the fix**, not pydantic's text with its URLs.
"""

from __future__ import annotations

import difflib
import inspect
import json
import threading
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, ContentBlock, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

__all__ = ["Deferred", "ToolServer", "argument_problem", "lean_schema", "outline_schema", "result_text"]

SERVER_LOG_LEVEL = "WARNING"
"""The SDK's default, INFO, logs every rejected call to stderr as well as answering it (see ToolServer)."""
MAX_SHOWN_VALUE_CHARS = 60
"""A rejected argument value is quoted in the error up to this length (enough to recognise it)."""


class ToolServer(MCPServer):
    """`MCPServer` whose tools all follow the conventions in this module's docstring. It logs warnings and
    errors only: at the SDK's default (INFO) every rejected call is printed to stderr a second time, which
    clients such as the Inspector show beside the error result itself."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("log_level", SERVER_LOG_LEVEL)
        super().__init__(*args, **kwargs)

    def add_tool(
        self,
        fn: Any,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: Any = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> None:
        tool_name = name or fn.__name__
        super().add_tool(
            fn,
            name=tool_name,
            title=title or default_title(tool_name),
            description=clean_description(description or fn.__doc__ or ""),
            annotations=annotations,
            icons=icons,
            meta=meta,
            structured_output=structured_output,
        )

    async def list_tools(self) -> list[MCPTool]:
        return [lean_tool(tool) for tool in await super().list_tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None) -> Any:
        unknown = unknown_arguments(name, arguments, await self._input_schema(name))
        if unknown:
            raise ToolError(unknown)
        try:
            result = await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                schema = await self._input_schema(name)
                raise ToolError(argument_problem(name, exc.__cause__, schema)) from exc.__cause__
            raise
        if not isinstance(result, CallToolResult) or result.is_error or result.structured_content is None:
            return result
        structured = omit_empty_optionals(result.structured_content, await self._output_schema(name))
        return result.model_copy(
            update={"content": result_blocks(result.content, result.structured_content, structured),
                    "structured_content": structured}
        )  # fmt: skip

    async def _input_schema(self, name: str) -> dict[str, Any]:
        return next((tool.input_schema for tool in await super().list_tools() if tool.name == name), {})

    async def _output_schema(self, name: str) -> dict[str, Any]:
        tool = next((tool for tool in await super().list_tools() if tool.name == name), None)
        return (tool.output_schema if tool is not None else None) or {}


class Deferred:
    """An object made on first use: attribute access creates it once (thread-safe: tools run in worker
    threads) and forwards to it. The server hands its tools a deferred `Monitor`, so starting the server
    and listing its tools imports neither numpy nor the sources."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._made: Any = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        with self._lock:
            if self._made is None:
                self._made = self._factory()
        return getattr(self._made, name)


def clean_description(text: str) -> str:
    """A docstring as a client shows it: no indentation, and hard-wrapped lines joined into paragraphs."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in paragraph.splitlines()) for paragraph in paragraphs)


def default_title(name: str) -> str:
    """``check_many`` → "Check many": for a tool registered without a title."""
    return name.replace("_", " ").capitalize()


# --------------------------------------------------------------------------- results


def result_text(structured: dict[str, Any]) -> str:
    """The text block of a result: its ``summary`` line, or compact JSON for a result without one."""
    summary = structured.get("summary")
    if isinstance(summary, str) and summary:
        return summary
    return json.dumps(structured, separators=(",", ":"), ensure_ascii=False)


def result_blocks(
    content: list[ContentBlock], full: dict[str, Any], structured: dict[str, Any]
) -> list[ContentBlock]:
    """The summary first, then every block that is neither a JSON copy of the structured result nor the
    summary again (a tool that builds its own content, as `plot` does, sent its summary twice)."""
    summary = TextContent(type="text", text=result_text(structured))
    kept = [block for block in content if not _is_json_copy(block, full) and block != summary]
    return [summary, *kept]


def _is_json_copy(block: ContentBlock, structured: dict[str, Any]) -> bool:
    if not isinstance(block, TextContent):
        return False
    try:
        return bool(json.loads(block.text) == structured)
    except ValueError:
        return False


def omit_empty_optionals(value: Any, schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """``value`` without the optional fields that say nothing, at every depth: a null, an empty list or
    object (`warnings: []`, `evidence: {}`). A required field stays whatever it holds. Free-form objects (a
    run's config, W&B summary values) keep their contents: only declared properties are pruned."""
    defs = schema.get("$defs", defs or {})
    schema = _resolve(schema, defs)
    if isinstance(value, dict) and "properties" in schema:
        required = set(schema.get("required", ()))
        properties = schema["properties"]
        return {
            key: omit_empty_optionals(item, properties[key], defs) if key in properties else item
            for key, item in value.items()
            if key in required or not _says_nothing(item)
        }
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [omit_empty_optionals(item, schema["items"], defs) for item in value]
    return value


def _says_nothing(value: Any) -> bool:
    """Null or empty. A false or zero stays: `restarted: false` and `new_points: 0` are answers a client
    reads, by name."""
    return value is None or value == [] or value == {}


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Follow a local ``$ref``; of an ``anyOf``, the one object branch (``Model | None``)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolve(defs.get(ref.removeprefix("#/$defs/"), {}), defs)
    branches = [_resolve(branch, defs) for branch in schema.get("anyOf", ()) if branch.get("type") != "null"]
    if len(branches) == 1:
        return branches[0]
    return schema


# --------------------------------------------------------------------------- schemas


def lean_tool(tool: MCPTool) -> MCPTool:
    output = outline_schema(tool.output_schema) if tool.output_schema is not None else None
    return tool.model_copy(update={"input_schema": lean_schema(tool.input_schema), "output_schema": output})


def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema without pydantic's generated titles and null defaults, every type a single one.

    An optional argument's ``anyOf [{type: X, ...}, {type: null}]`` is written as its X branch: leaving
    it out means none, and the tool still accepts an explicit null. A required nullable one keeps its
    ``anyOf``. A ``type`` array (``[X, "null"]``) is legal JSON Schema but not portable: clients that map
    tool schemas onto one-type dialects (Gemini's OpenAPI subset) reject it; the MCP Inspector's
    ``--strict`` warns of it. What the model reads (descriptions, limits, patterns) stays."""
    return _lean(schema)


def _lean(node: Any) -> Any:
    if isinstance(node, list):
        return [_lean(item) for item in node]
    if not isinstance(node, dict):
        return node
    lean: dict[str, Any] = {}
    required = set(node.get("required", ()))
    for key, value in node.items():
        if key == "properties":  # a map of names to schemas: a property may be called "title"
            lean[key] = {name: _optional(_lean(sub), name in required) for name, sub in value.items()}
        elif key == "$defs":
            lean[key] = {name: _lean(sub) for name, sub in value.items()}
        elif (key == "title" and isinstance(value, str)) or (key == "default" and value is None):
            continue
        else:
            lean[key] = _lean(value)
    return lean


def _optional(node: dict[str, Any], required: bool) -> dict[str, Any]:
    """An optional property's ``X | None`` as X (absent is none); a required one as it is."""
    branches = node.get("anyOf")
    if required or not isinstance(branches, list) or len(branches) != 2 or {"type": "null"} not in branches:
        return node
    other = branches[0] if branches[1] == {"type": "null"} else branches[1]
    rest = {key: value for key, value in node.items() if key != "anyOf"}
    return {**other, **rest}


OUTPUT_SCHEMA_DEPTH = 1
"""Levels of an output schema that are spelled out: the result's own fields with their types and enums
(`summary`, `next_action`, `decision`, ...); the objects they hold are only "object". The full shapes are
the pydantic models in models.py, which validate every result before it is sent. Published in full they
made tools/list 28 KB, 70 % of it output schemas, that every client loads for every session; the target is
12 KB for the whole list."""


def outline_schema(schema: dict[str, Any], depth: int = OUTPUT_SCHEMA_DEPTH) -> dict[str, Any]:
    """An output schema cut to ``depth`` levels of properties: types, enums and required fields, without
    descriptions, titles, defaults or ``$defs``. Every result the full schema accepts, once its optional
    fields that say nothing are left out as the server sends them (`omit_empty_optionals`), it
    accepts."""
    return _outline(schema, depth, schema.get("$defs", {}))


def _outline(schema: dict[str, Any], depth: int, defs: dict[str, Any], required: bool = True) -> dict[str, Any]:
    """An optional field's null is never sent (`omit_empty_optionals`), so its outline is its one type; a
    required nullable field is ``anyOf`` its type and null (one type each: see `lean_schema`)."""
    nullable = required and any(branch.get("type") == "null" for branch in schema.get("anyOf", ()))
    resolved = _resolve(schema, defs)
    if "enum" in resolved:
        return {"enum": [*resolved["enum"], *([None] if nullable else [])]}
    kind = resolved.get("type")
    if kind is None:
        return {}
    outline: dict[str, Any] = {"type": kind}
    if kind == "object" and "properties" in resolved and depth > 0:
        needed = set(resolved.get("required", ()))
        outline["properties"] = {
            name: _outline(sub, depth - 1, defs, name in needed) for name, sub in resolved["properties"].items()
        }
        if resolved.get("required"):
            outline["required"] = resolved["required"]
    return {"anyOf": [outline, {"type": "null"}]} if nullable else outline


# --------------------------------------------------------------------------- argument errors


def argument_problem(tool: str, error: ValidationError, input_schema: dict[str, Any]) -> str:
    """pydantic's rejection of a call's arguments → one message naming each argument, what is wrong with
    it and what it should be (from the argument's own description)."""
    properties = input_schema.get("properties", {})
    problems = []
    for item in error.errors(include_url=False):
        location = [str(part) for part in item["loc"]]
        name = location[0] if location else "arguments"
        where = ".".join(location) or "arguments"
        problem = f"`{where}` {_what_is_wrong(item)}"
        described = properties.get(name, {}).get("description")
        if described:
            problem += f" (`{name}`: {described})"
        problems.append(problem)
    return f"{tool}: invalid arguments: {'; '.join(problems)}. Call {tool} again with the arguments fixed."


def unknown_arguments(tool: str, arguments: dict[str, Any], input_schema: dict[str, Any]) -> str | None:
    """The arguments a call names that `tool` does not take, as one message (None: all known). pydantic drops
    them silently, so a misspelled `baseline` would leave the call without the baseline it was meant to use."""
    known = list(input_schema.get("properties", {}))
    unknown = [name for name in arguments if name not in known]
    if not known or not unknown:
        return None
    problems = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        problems.append(f"`{name}` is not an argument of {tool}" + (f" (did you mean `{close[0]}`?)" if close else ""))
    return (
        f"{tool}: invalid arguments: {'; '.join(problems)}; it takes {', '.join(known)}. "
        f"Call {tool} again with the arguments fixed."
    )


def _what_is_wrong(item: Any) -> str:
    if item["type"] == "missing":
        return "is missing"
    shown = _shown(item.get("input"))
    if item["type"] == "string_pattern_mismatch":  # the pattern is for machines; the description says it
        return f"does not have an allowed value, got {shown}"
    message = str(item["msg"])
    message = message.removeprefix("Input ").removeprefix("Value ")
    message = message[0].lower() + message[1:] if message else "is not valid"
    return f"{message}, got {shown}"


def _shown(value: Any) -> str:
    shown = json.dumps(value, default=str)
    return shown if len(shown) <= MAX_SHOWN_VALUE_CHARS else shown[: MAX_SHOWN_VALUE_CHARS - 1] + "…"
