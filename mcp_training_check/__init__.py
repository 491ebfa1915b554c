"""mcp-training-check: watch the quality of running ML training jobs.

Public surface: `Monitor` (the operations), the models, and the error tree. The MCP server is in
`server`, the command line in `cli`.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
