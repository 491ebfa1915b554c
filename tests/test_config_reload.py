"""The server re-reads training-check.toml when it changes (issue 10, item 2): taking `[runs.r.stop]` out
while `serve` runs takes away the right to stop at the next call. A real `serve` subprocess over stdio,
driven by the MCP SDK's client, and real processes to stop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_training_check.config import load_config
from mcp_training_check.errors import ConfigError
from mcp_training_check.service import Monitor

from .runs import default_sigint
from .test_server import stdio_server

LOG_LINES = 60
SLEEPER = "import time\nprint('ready', flush=True)\ntime.sleep(600)\n"


def _project(tmp_path: Path, stop: str) -> None:
    (tmp_path / "training-check.toml").write_text(f'[runs.r]\nrun = "a.log"\nnotes = "notes.md"\n{stop}')


def _sleeper() -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SLEEPER], stdout=subprocess.PIPE, text=True, preexec_fn=default_sigint
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _text(result) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def test_serve_forgets_a_removed_stop_table_and_learns_a_new_one(tmp_path):
    (tmp_path / "a.log").write_text(
        "".join(json.dumps({"step": s, "loss": 3.0 / (1 + s)}) + "\n" for s in range(LOG_LINES))
    )
    proc = _sleeper()
    (tmp_path / "p.pid").write_text(str(proc.pid))
    with_stop = '[runs.r.stop]\npid_file = "p.pid"\ngrace_seconds = 5\n'
    _project(tmp_path, with_stop)
    params = stdio_server(tmp_path)

    async def go():
        async with Client(params) as client:
            checked = await client.call_tool("check", {"run": "r"})  # the server has loaded the file
            _project(tmp_path, "")  # the right to stop is taken away while it runs
            refused = await client.call_tool("stop_run", {"run": "r", "confirm": True, "reason": "x"})
            alive_after_refusal = proc.poll() is None
            _project(tmp_path, with_stop)
            stopped = await client.call_tool("stop_run", {"run": "r", "confirm": True, "reason": "y"})
            return checked, refused, alive_after_refusal, stopped

    try:
        checked, refused, alive, stopped = anyio.run(go)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    assert not checked.is_error, _text(checked)
    assert refused.is_error and "no way to stop run" in _text(refused), _text(refused)
    assert alive, "the process was killed although the file no longer allows stopping it"
    assert not stopped.is_error, _text(stopped)
    assert stopped.structured_content["outcome"] == "stopped"


def test_a_same_size_edit_within_one_clock_tick_is_seen(tmp_path):
    """The content is compared, not only size and modification time."""
    (tmp_path / "a.log").write_text('{"step": 1, "loss": 2.0}\n')
    _project(tmp_path, "[runs.r.stop]\npid = 111111\n")
    path = tmp_path / "training-check.toml"
    before = os.stat(path)
    monitor = Monitor(config=load_config(path))
    assert monitor.context("r").settings.stop.pid == 111111
    _project(tmp_path, "[runs.r.stop]\npid = 222222\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size
    assert monitor.context("r").settings.stop.pid == 222222


def test_a_discovered_file_created_later_is_loaded_and_a_broken_edit_is_an_error(tmp_path, monkeypatch):
    from mcp_training_check.config import ReloadingConfig

    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()  # discovery stops here
    configs = ReloadingConfig()
    assert configs.current().path is None
    _project(tmp_path, "")
    assert configs.current().path == tmp_path / "training-check.toml"
    assert set(configs.current().runs) == {"r"}
    (tmp_path / "training-check.toml").write_text("[runs.r\n")
    with pytest.raises(ConfigError, match=r"training-check\.toml"):
        configs.current()  # a broken edit is an error, never the old config
