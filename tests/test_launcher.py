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
    lock = Path(f"{venv}.setup-lock")
    released_by = time.monotonic() + 30  # the stamp is written just before the lock is released
    while lock.exists() and time.monotonic() < released_by:
        time.sleep(0.2)
    assert not lock.exists()

    async def listed():
        params = StdioServerParameters(command=str(LAUNCHER), env=env, cwd=str(tmp_path))
        async with Client(params) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    started = time.monotonic()
    assert "check" in anyio.run(listed)
    assert time.monotonic() - started < 60, "once set up, the launcher starts the server at once"


def venv_with_this_projects_dependencies(venv: Path) -> None:
    """A real virtual environment that sees the test environment's installed packages (through a .pth file), so
    the launcher's real `pip install -e` has only this package to build: seconds, not a download."""
    subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
    deps = next((ROOT / ".venv" / "lib").glob("python3*/site-packages"))
    next((venv / "lib").glob("python3*/site-packages")).joinpath("_deps.pth").write_text(f"{deps}\n")


def test_a_set_up_lock_left_by_a_killed_set_up_is_taken_over(tmp_path):
    """Before, the launcher defined its lock functions twice and the later copy, without the pid check, won:
    a lock left by a set-up that was killed (a reboot, an OOM kill) made every start wait for ever (and the
    detached set-up 10 minutes), so the server never started until the user found and removed the lock."""
    venv = tmp_path / "plugin-data" / "venv"
    venv_with_this_projects_dependencies(venv)
    lock = Path(f"{venv}.setup-lock")
    lock.mkdir()
    gone = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True).stdout.strip()
    (lock / "pid").write_text(f"{gone}\n")
    env = {**os.environ, "TRAINING_CHECK_VENV": str(venv), "TRAINING_CHECK_HOME": str(tmp_path / "state")}
    done = subprocess.run(
        [str(LAUNCHER), "--setup-only"], env=env, capture_output=True, text=True, timeout=SETUP_TIMEOUT_SECONDS // 4
    )
    assert done.returncode == 0, done.stderr
    assert f"taking over the set-up lock of process {gone}, which is gone" in done.stderr
    assert (venv / ".training-check-server-installed").exists() and not lock.exists()
