"""How the tools are served: one way, shared by every tool, to build what a client receives.

    tools   `ToolServer`: the MCP server class the tool table registers on. Every tool, including tools
            added later, gets a dedented description and a title; lean published schemas; a result whose
            text block is its one-line summary (the data is in structuredContent, once); argument errors
            that name the argument and its fix
    http    streamable HTTP: loopback by default, a bearer token anywhere else, and a 401 that says
            "bearer token required" without advertising OAuth the server cannot do
"""

from .tools import Deferred, ToolServer, argument_problem, lean_schema, outline_schema, result_text

__all__ = ["Deferred", "ToolServer", "argument_problem", "lean_schema", "outline_schema", "result_text"]
