"""Start-up: the server, the service and the CLI import no heavy library until a code path needs it.

anthropic alone takes about a second to import, wandb half a second; a check of a local log needs
neither. Each import is checked in a fresh interpreter, since this test process has them all loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("anthropic", "wandb", "paramiko", "openai", "matplotlib")


def modules_loaded_by(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(name for name in modules if name.split(".")[0] in HEAVY)


@pytest.mark.parametrize(
    "module",
    ["mcp_training_check.server", "mcp_training_check.service", "mcp_training_check.cli"],
)
def test_importing_does_not_load_heavy_libraries(module):
    assert heavy_in(modules_loaded_by(f"import {module}")) == []


def test_starting_the_server_loads_neither_heavy_libraries_nor_the_service():
    """The server lists its tools before the service (numpy, the sources, the judge) is needed."""
    code = (
        "import anyio\nfrom mcp import Client\nfrom mcp_training_check.server import build_server\n"
        "async def listed():\n"
        "    async with Client(build_server()) as client:\n"
        "        assert (await client.list_tools()).tools\n"
        "anyio.run(listed)"
    )
    loaded = modules_loaded_by(code)
    assert heavy_in(loaded) == []
    assert "mcp_training_check.service" not in loaded and "numpy" not in loaded


def local_log_check(tmp_path, steps: int, check: str) -> str:
    """Code that checks a fresh ``steps``-point local log with ``check`` (``{log}`` is its path) in its own
    state directory."""
    log = tmp_path / "train.jsonl"
    log.write_text("".join(json.dumps({"step": i, "loss": 3 / (1 + i / 50)}) + "\n" for i in range(steps)))
    home = f"import os\nos.environ['TRAINING_CHECK_HOME'] = {str(tmp_path / 'home')!r}\n"
    return home + check.format(log=repr(str(log)))


def test_checking_a_local_log_does_not_load_heavy_libraries(tmp_path):
    code = local_log_check(tmp_path, 200, (
        "from mcp_training_check.service import Monitor\n"
        "report = Monitor().check({log})\n"
        "assert report.verdict is not None, report"
    ))  # fmt: skip
    assert heavy_in(modules_loaded_by(code)) == []


def test_a_wandb_file_read_does_load_wandb_protobufs():
    """The probe can see a lazy import happen: reading the Record module pulls wandb in."""
    code = "from mcp_training_check.sources import wandb_file\nwandb_file.pb.Record()"
    assert "wandb" in heavy_in(modules_loaded_by(code))


LATER_STAGES = (
    "mcp_training_check.stop",
    "mcp_training_check.review",
    "mcp_training_check.plot",
    "mcp_training_check.sources.wandb_file",
    "mcp_training_check.sources.wandb_api",
)
"""What a check of a local log never runs; importing them anyway cost a cold CLI check about 0.1 s of its
0.5 s target (medians of 11 interleaved rounds: 0.556 s with them, 0.444 s without)."""


def test_a_cold_cli_check_of_a_local_log_imports_no_later_stage_nor_wandb_reader(tmp_path):
    cli_check = "from mcp_training_check.cli import main\nassert main(['check', {log}, '--json']) == 0\n"
    code = local_log_check(tmp_path, 300, cli_check)
    loaded = modules_loaded_by(code)
    assert "mcp_training_check.judge" in loaded  # the check did run
    assert sorted(m for m in loaded if any(m == name or m.startswith(name + ".") for name in LATER_STAGES)) == []
