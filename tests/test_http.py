"""Streamable HTTP: loopback by default, bearer token required anywhere else."""

from __future__ import annotations

import json
import os
import re
import select
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


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


def test_serve_says_where_it_listens_and_port_0_names_the_port_it_picked(tmp_path):
    """`serve --http PORT` printed nothing at all, so `--http 0` served on a port nobody could know."""
    env = {**os.environ, "TRAINING_CHECK_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen([sys.executable, "-m", "mcp_training_check", "serve", "--http", "0"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        ready, _, _ = select.select([proc.stderr], [], [], 30)
        assert ready, "serve --http said nothing within 30 s"
        line = proc.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
        assert found and int(found[1]) != 0, line

        async def go():
            async with Client(found[0]) as client:
                return await client.list_tools()

        assert any(tool.name == "check" for tool in anyio.run(go).tools)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_port_in_use_is_one_line_naming_the_fix(tmp_path):
    """uvicorn printed 'ERROR: [Errno 98] error while attempting to bind ...' and exited 3."""
    env = {**os.environ, "TRAINING_CHECK_HOME": str(tmp_path / "home")}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "mcp_training_check", "serve", "--http", str(port)],
                              env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"cannot listen on 127.0.0.1 port {port} (Address already in use)" in done.stderr
    assert "--http PORT" in done.stderr and "Traceback" not in done.stderr and "Errno" not in done.stderr


def http_answer(port: int, path: str, *, method: str = "GET", token: str | None = None) -> tuple[int, dict, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = b"{}" if method == "POST" else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def test_a_missing_or_wrong_token_is_told_bearer_token_required_and_no_oauth_is_advertised(tmp_path):
    proc, port = start(tmp_path, "--token", "s3cret-token")
    try:
        for token in (None, "wrong"):
            status, headers, body = http_answer(port, "/mcp", method="POST", token=token)
            assert status == 401
            assert headers["www-authenticate"].startswith('Bearer realm="training-check", error="invalid_token"')
            assert "bearer token required" in headers["www-authenticate"]
            assert json.loads(body)["error"]["message"].startswith("bearer token required")
        for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
                     "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):  # fmt: skip
            status, headers, body = http_answer(port, path)
            assert status == 404, path  # no metadata, and not a 401 that sends clients looking for it
            assert "authorization_servers" not in body and "www-authenticate" not in {k.lower() for k in headers}
        status, _, body = http_answer(port, "/register", method="POST")
        assert status == 404 and json.loads(body)["error_description"].startswith("bearer token required")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_sdk_client_hears_bearer_token_required_and_works_with_the_token(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(f"step {i} | loss {2.0 / (1 + i / 40):.4f}\n" for i in range(200)))
    proc, port = start(tmp_path, "--token", "s3cret-token")
    url = f"http://127.0.0.1:{port}/mcp"
    try:

        async def without_token():
            async with Client(url) as client:
                await client.list_tools()

        with pytest.raises(BaseException) as refused:
            anyio.run(without_token)
        assert "bearer token required" in repr(refused.value)

        async def with_token():
            http = httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret-token"})
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                return await client.call_tool("check", {"run": str(log)})

        result = anyio.run(with_token)
        assert not result.is_error and result.structured_content["verdict"]["decision"] == "continue"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
