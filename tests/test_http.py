"""Streamable HTTP: loopback by default, bearer token required anywhere else."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import anyio
from mcp import Client


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(tmp_path, *args: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {**os.environ, "TRAINING_CHECK_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_training_check", "serve", "--http", str(port), *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc, port
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(proc.stderr.read().decode() if proc.stderr else "server did not start")


def test_loopback_http_serves_tools(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(f"step {i} | loss {2.0 / (1 + i / 40):.4f}\n" for i in range(200)))
    proc, port = start(tmp_path)
    try:

        async def go():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                return await client.call_tool("check", {"run": str(log)})

        result = anyio.run(go)
        assert not result.is_error, result.content
        assert result.structured_content["verdict"]["decision"] == "continue"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_token_is_required_when_set(tmp_path):
    proc, port = start(tmp_path, "--token", "s3cret-token")
    try:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=b"{}", method="POST")
        try:
            urllib.request.urlopen(request, timeout=10)
            raise AssertionError("request without token was accepted")
        except urllib.error.HTTPError as exc:
            assert exc.code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_non_loopback_without_token_is_refused(tmp_path):
    env = {**os.environ, "TRAINING_CHECK_HOME": str(tmp_path / "home")}
    env.pop("TRAINING_CHECK_HTTP_TOKEN", None)
    done = subprocess.run(
        [sys.executable, "-m", "mcp_training_check", "serve", "--http", "0", "--host", "0.0.0.0"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "bearer token" in done.stderr
