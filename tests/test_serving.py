"""What a client receives: titles, clean descriptions, lean schemas, one copy of each result, argument
errors that name the fix. Through the SDK's real client, in-process, against the real tool table."""

from __future__ import annotations

import json
from typing import Annotated, Any

import anyio
import jsonschema
import pytest
from mcp import Client
from mcp.types import CallToolResult, ImageContent, TextContent
from pydantic import BaseModel

from mcp_training_check.models import CheckReport, MetricSnapshot, Severity
from mcp_training_check.server import build_server
from mcp_training_check.service import Monitor
from mcp_training_check.serving import ToolServer, lean_schema, outline_schema
from mcp_training_check.serving.tools import omit_empty_optionals

from .runs import live_copy, train

MAX_TOOLS_LIST_BYTES = 12_000  # the issue's target for the whole list (benchmarks/bench_client.py prints it)
MAX_CHECK_TOKENS = 1500  # a STOP check, all content blocks + structuredContent, chars / 4
CHARS_PER_TOKEN = 4


def listed_tools(server) -> list[Any]:
    async def go():
        async with Client(server) as client:
            return (await client.list_tools()).tools

    return anyio.run(go)


def call(server, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    async def go():
        async with Client(server) as client:
            return await client.call_tool(tool, arguments)

    return anyio.run(go)


def wire(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.fixture(scope="module")
def broken_run(tmp_path_factory):
    return train(tmp_path_factory.mktemp("broken"), steps=2000, fault_step=1000)


# --------------------------------------------------------------------------- the tool list


def test_every_tool_has_a_title_and_a_clean_description():
    for tool in listed_tools(build_server(Monitor())):
        assert tool.title and tool.title != tool.name, tool.name
        assert tool.description and tool.description == tool.description.strip()
        assert "\n " not in tool.description and "  " not in tool.description, repr(tool.description)


def test_tool_list_is_small_and_its_schemas_lean():
    tools = listed_tools(build_server(Monitor()))
    dumped = wire({"tools": [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]})
    assert len(dumped.encode()) <= MAX_TOOLS_LIST_BYTES, f"tools/list is {len(dumped.encode())} bytes"
    assert '"title":"Run"' not in dumped and '"default":null' not in dumped
    check = next(tool for tool in tools if tool.name == "check")
    assert check.input_schema["properties"]["run"]["description"]  # what the model reads stays
    assert set(check.output_schema["properties"]["next_action"]["enum"]) >= {"stop_run", "escalate_review"}


def test_a_tool_added_later_inherits_title_and_description():
    server = ToolServer(name="t")

    @server.tool()
    def plot_run(run: str) -> MetricSnapshot:
        """Draw the run.

        Second paragraph, indented
        over two lines."""
        raise AssertionError("not called")

    (tool,) = listed_tools(server)
    assert tool.title == "Plot run"
    assert tool.description == "Draw the run.\n\nSecond paragraph, indented over two lines."


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        ({"type": "object", "properties": {"title": {"title": "Title", "type": "string"}}}, {"title": "x"},
         {"title": 1}),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None, "title": "N"}, None, "1"),
        ({"anyOf": [{"type": "string", "pattern": "^(a|b)$"}, {"type": "null"}]}, "a", "c"),
        ({"anyOf": [{"type": "object", "additionalProperties": {"type": "number"}}, {"type": "null"}]}, {"k": 1},
         {"k": "x"}),
    ],
)
def test_lean_input_schema_accepts_and_refuses_the_same_values(schema, good, bad):
    lean = lean_schema(schema)
    assert "title" not in lean or isinstance(lean.get("title"), dict)
    for candidate in (schema, lean):
        jsonschema.validate(good, candidate)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, candidate)
    if "properties" in schema:
        assert "title" in lean["properties"], "a property called title is a name, not a generated title"


def test_optional_arguments_and_results_have_one_type_and_required_nullables_any_of():
    """No ``type`` arrays: clients that map schemas onto one-type dialects reject them (Inspector --strict)."""
    arguments = {"type": "object", "required": ["a"], "properties": {
        "a": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "b": {"anyOf": [{"type": "object", "additionalProperties": {"type": "number"}}, {"type": "null"}],
              "default": None, "description": "d"},
    }}  # fmt: skip
    lean = lean_schema(arguments)
    assert lean["properties"]["a"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert lean["properties"]["b"] == {"type": "object", "additionalProperties": {"type": "number"}, "description": "d"}
    jsonschema.validate({"a": None}, lean)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"a": None, "b": {"k": "x"}}, lean)
    results = {"type": "object", "required": ["r"], "properties": {
        "r": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "o": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
    }}  # fmt: skip
    outline = outline_schema(results)
    assert outline["properties"] == {"r": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "o": {"type": "integer"}}


def test_tools_list_has_no_type_arrays():
    tools = listed_tools(build_server(Monitor()))
    listed = wire([tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools])
    assert '"type":["' not in listed, "a type array: not portable to one-type schema dialects"


def test_outline_keeps_every_valid_result_valid(tmp_path, broken_run):
    """The outlined output schema accepts what the full one accepts (a real STOP check), and still refuses
    a result missing a required field or with a next_action outside its enum."""
    live = live_copy(broken_run, tmp_path, 0.75)
    report = Monitor().check(str(live)).model_dump(mode="json")
    full = CheckReport.model_json_schema()
    outline = outline_schema(full)
    sent = omit_empty_optionals(report, full)
    jsonschema.validate(report, full)
    for schema in (full, outline):
        jsonschema.validate(sent, schema)
    for broken in ({**report, "next_action": "panic"}, {k: v for k, v in report.items() if k != "schedule"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, outline)


# --------------------------------------------------------------------------- results


def test_stop_check_arrives_once_as_summary_plus_structured_content(tmp_path, broken_run):
    live = live_copy(broken_run, tmp_path, 0.75)
    result = call(build_server(Monitor()), "check", {"run": str(live)})
    assert not result.is_error
    report = CheckReport.model_validate(result.structured_content)
    assert report.next_action == "stop_run"
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    assert texts == [report.summary], "the text block is the summary line, not a JSON copy"
    received = wire([block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content])
    tokens = (len(received) + len(wire(result.structured_content))) / CHARS_PER_TOKEN
    assert tokens <= MAX_CHECK_TOKENS, f"a STOP check is {tokens:.0f} tokens"
    assert "null" not in wire(result.structured_content["schedule"]), "optional nulls are left out"


def test_a_stop_checks_reasons_are_sent_once(tmp_path, broken_run):
    """Each signal's sentence with its numbers is in its ``message`` alone: the verdict's summary said the main
    one a second time (the check's summary and text block carried a third and fourth copy before that); the
    summaries now say the decision, the first clause and the count."""
    live = live_copy(broken_run, tmp_path, 0.75)
    result = call(build_server(Monitor()), "check", {"run": str(live)})
    report = CheckReport.model_validate(result.structured_content)
    assert report.verdict is not None
    received = wire([block.model_dump(mode="json") for block in result.content]) + wire(result.structured_content)
    for signal in report.verdict.signals:
        assert received.count(wire(signal.message)[1:-1]) == 1, signal.message
    main = report.verdict.signals[0]
    critical = sum(s.severity is Severity.CRITICAL for s in report.verdict.signals)
    assert report.verdict.summary == f"STOP: {main.gist()} (+{critical - 1} more critical)."
    assert main.message.startswith(main.gist()) and len(main.gist()) < len(main.message)
    assert report.summary == f"STOP: {main.gist()} (+{critical - 1} more critical); {report.schedule.summary}"


def test_null_optionals_go_but_required_and_free_form_nulls_stay():
    schema = CheckReport.model_json_schema()
    snapshot = {
        "run": "r", "summary": "s", "data_source": "log", "last_step": None,
        "run_info": {"status": "running", "url": None, "config": {"warmup": None}, "summary": {"loss": None}},
        "metrics": [{"name": "loss", "role": "train_loss", "direction": "lower", "last": None, "best": None}],
    }  # fmt: skip
    pruned = omit_empty_optionals({"run": "r", "snapshot": snapshot, "verdict": None}, schema)
    assert "verdict" not in pruned and "last_step" not in pruned["snapshot"]
    assert "url" not in pruned["snapshot"]["run_info"]
    assert pruned["snapshot"]["run_info"]["config"] == {"warmup": None}  # the run's own config, as it is
    assert pruned["snapshot"]["run_info"]["summary"] == {"loss": None}
    metric = pruned["snapshot"]["metrics"][0]
    assert metric == {"name": "loss", "role": "train_loss", "direction": "lower", "last": None}  # last is required


def test_empty_optionals_go_but_zeros_falses_and_free_form_contents_stay():
    """A STOP check carried `summary: {}`, `warnings: []`, `evidence: {}`: tokens that say nothing. A false
    or a zero is an answer a client reads by name (`new_points: 0`), so it stays, as does a required field."""
    schema = CheckReport.model_json_schema()
    snapshot = {
        "run": "r", "summary": "s", "data_source": "log", "new_points": 0, "restarted": False, "warnings": [],
        "run_info": {"status": "running", "config": {}, "summary": {}},
        "metrics": [{"name": "loss", "role": "train_loss", "direction": "lower", "last": 0.5, "recent": []}],
    }  # fmt: skip
    verdict = {"decision": "stop", "summary": "", "signals": [
        {"kind": "spike", "severity": "watch", "message": "m", "evidence": {}},
        {"kind": "spike", "severity": "watch", "message": "n", "evidence": {"z": 0.0}},
    ]}  # fmt: skip
    schedule = {"summary": "s", "monitoring": False, "reason": "r"}
    report = {"run": "r", "summary": "s", "snapshot": snapshot, "verdict": verdict, "schedule": schedule,
              "next_action": "stop_run"}  # fmt: skip
    pruned = omit_empty_optionals(report, schema)
    assert pruned["snapshot"] == {
        "run": "r", "summary": "s", "data_source": "log", "new_points": 0, "restarted": False,
        "run_info": {"status": "running"},
        "metrics": [{"name": "loss", "role": "train_loss", "direction": "lower", "last": 0.5}],
    }  # fmt: skip
    assert pruned["verdict"]["summary"] == "" and pruned["schedule"]["monitoring"] is False  # required
    assert "evidence" not in pruned["verdict"]["signals"][0]
    assert pruned["verdict"]["signals"][1]["evidence"] == {"z": 0.0}  # free-form contents stay
    jsonschema.validate(pruned, schema)
    rebuilt = CheckReport.model_validate(pruned).model_dump(mode="json")
    assert rebuilt == CheckReport.model_validate(report).model_dump(mode="json"), "nothing left out is lost"


class Drawing(BaseModel):
    summary: str
    path: str


def test_a_tool_returning_an_image_keeps_it_and_loses_only_the_json_copy():
    server = ToolServer(name="t")

    @server.tool()
    def draw() -> Annotated[CallToolResult, Drawing]:
        """Draw."""
        data = Drawing(summary="drew 3 panels", path="/tmp/run.png")
        return CallToolResult(
            content=[ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
                     TextContent(type="text", text=data.model_dump_json())],
            structured_content=data.model_dump(mode="json"),
        )  # fmt: skip

    result = call(server, "draw", {})
    assert [block.type for block in result.content] == ["text", "image"]
    assert result.content[0].text == "drew 3 panels"


# --------------------------------------------------------------------------- argument errors


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("check", {}, ["`run` is missing", "entity/project/run_id"]),
        ("check", {"run": 5}, ["`run` should be a valid string, got 5"]),
        ("stop_run", {"run": "x", "confirm": True}, ["`reason` is missing", "incident record"]),
        ("schedule_next", {"run": "x", "review": "maybe"},
         ['`review` does not have an allowed value, got "maybe"', "STOP, CONTINUE or WAIT"]),
        ("check", {"run": "x", "roles": ["a"]}, ["`roles`", "Metric role overrides"]),
    ],
)
def test_argument_errors_name_the_argument_and_the_fix(tool, arguments, expected):
    result = call(build_server(Monitor()), tool, arguments)
    assert result.is_error
    text = " ".join(block.text for block in result.content if isinstance(block, TextContent))
    for part in expected:
        assert part in text, text
    assert "pydantic.dev" not in text and "validation error for" not in text and f"Call {tool} again" in text


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("check", {"run": "x", "baseline": {"val/acc": 0.7}}, ["`baseline` is not an argument", "`baselines`"]),
        ("stop_run", {"run": "x", "confirm": True, "reason": "r", "pid": 1}, ["`pid` is not an argument"]),
    ],
)
def test_an_unknown_argument_is_refused_by_name_not_dropped(tool, arguments, expected):
    """Before, a misspelled argument (`baseline` for `baselines`) was dropped without a word and the call ran
    without it: the agent believed the run was judged against its baseline. Nothing is read or stopped."""
    result = call(build_server(Monitor()), tool, arguments)
    assert result.is_error
    text = " ".join(block.text for block in result.content if isinstance(block, TextContent))
    for part in expected:
        assert part in text, text
    assert f"Call {tool} again" in text
