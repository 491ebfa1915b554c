"""bin/training-check-server, the plugin's launcher: its first start sets up a virtual environment of its own,
and a client that gives up waiting (Claude Code allows a server 30 s) cannot stop that set-up half way."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = ROOT / "bin" / "training-check-server"
SETUP_TIMEOUT_SECONDS = 600
CLIENT_GIVES_UP_AFTER_SECONDS = 3


def test_a_client_that_gives_up_does_not_stop_the_first_set_up(tmp_path):
    venv = tmp_path / "plugin-data" / "venv"
    env = {**os.environ, "TRAINING_CHECK_VENV": str(venv), "TRAINING_CHECK_HOME": str(tmp_path / "state")}
    first = subprocess.Popen(
        [str(LAUNCHER)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    time.sleep(CLIENT_GIVES_UP_AFTER_SECONDS)
    assert first.poll() is None, "the launcher should still be waiting for its set-up"
    os.killpg(first.pid, signal.SIGKILL)  # what a client does to a server that did not answer in time
    first.wait()
    stamp = venv / ".training-check-server-installed"
    deadline = time.monotonic() + SETUP_TIMEOUT_SECONDS
    while not stamp.exists() and time.monotonic() < deadline:
        time.sleep(1)
    log = Path(f"{venv}.setup.log")
    assert stamp.exists(), log.read_text()[-3000:] if log.exists() else "no set-up log"
    assert not Path(f"{venv}.setup-lock").exists()

    async def listed():
        params = StdioServerParameters(command=str(LAUNCHER), env=env, cwd=str(tmp_path))
        async with Client(params) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    started = time.monotonic()
    assert "check" in anyio.run(listed)
    assert time.monotonic() - started < 60, "once set up, the launcher starts the server at once"
