"""Clients nobody here wrote: Claude Code and the MCP Inspector CLI, installed from npm, against the plugin,
the README's commands, `.mcp.json.example` and the HTTP server with a token.

The npm packages go into .venv/npm (once; pinned versions). Claude Code runs with HOME in a temporary
directory and without auto-update, telemetry or other traffic. The server is started by the plugin's own
launcher, bin/training-check-server, which sets up a virtual environment of its own on first use: here one
in a temporary directory, made once per session.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .runs import train

ROOT = Path(__file__).resolve().parents[1]
NPM_PREFIX = ROOT / ".venv" / "npm"
PACKAGES = {"@anthropic-ai/claude-code": "2.1.332", "@modelcontextprotocol/inspector": "2.12.0"}
"""Pinned: npm would otherwise pick older releases whose `engines` match Node 20 (Inspector 0.15)."""
LAUNCHER = ROOT / "bin" / "training-check-server"
README_ADD = 'claude mcp add --scope user training-check -- "$PWD/bin/training-check-server"'
CLIENT_TIMEOUT_SECONDS = 180
SETUP_TIMEOUT_SECONDS = 900


def installed_version(package: str) -> str | None:
    manifest = NPM_PREFIX / "node_modules" / package / "package.json"
    return json.loads(manifest.read_text())["version"] if manifest.exists() else None


@pytest.fixture(scope="session")
def npm_bin() -> Path:
    """Claude Code and the Inspector CLI at their pinned versions, installed with npm when missing."""
    if any(installed_version(package) != version for package, version in PACKAGES.items()):
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is missing: these tests run Claude Code and the MCP Inspector (install Node.js >= 20)")
        specs = [f"{package}@{version}" for package, version in PACKAGES.items()]
        done = subprocess.run(
            [npm, "install", "--prefix", str(NPM_PREFIX), "--no-audit", "--no-fund", *specs],
            capture_output=True, text=True, timeout=SETUP_TIMEOUT_SECONDS,
        )  # fmt: skip
        assert done.returncode == 0, f"npm install failed:\n{done.stderr[-3000:]}"
    return NPM_PREFIX / "node_modules" / ".bin"


@pytest.fixture(scope="session")
def server_venv(tmp_path_factory) -> Path:
    """The launcher's first-use set-up, as on a machine that only has the plugin (its own venv)."""
    venv = tmp_path_factory.mktemp("plugin-data") / "venv"
    env = {**os.environ, "TRAINING_CHECK_VENV": str(venv)}
    done = subprocess.run(
        [str(LAUNCHER), "--setup-only"], env=env, capture_output=True, text=True, timeout=SETUP_TIMEOUT_SECONDS
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ready" in done.stderr and (venv / "bin" / "python").exists()
    return venv


@pytest.fixture
def claude_env(tmp_path, server_venv) -> dict[str, str]:
    home = tmp_path / "claude-home"
    home.mkdir()
    return {
        "PATH": os.environ["PATH"], "HOME": str(home), "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "TRAINING_CHECK_VENV": str(server_venv),
        "TRAINING_CHECK_HOME": str(tmp_path / "state"),
    }  # fmt: skip


def run_client(npm_bin: Path, program: str, *args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(npm_bin / program), *args], env=env, cwd=cwd, capture_output=True, text=True,
        timeout=CLIENT_TIMEOUT_SECONDS,
    )  # fmt: skip


def server_line(listing: str, name: str) -> str:
    """The line `claude mcp list` prints for server ``name``."""
    lines = [line for line in listing.splitlines() if line.startswith(f"{name}:")]
    assert lines, f"{name} not listed:\n{listing}"
    return lines[0]


# --------------------------------------------------------------------------- Claude Code


def test_claude_validates_the_plugin_and_its_marketplace(npm_bin, claude_env, tmp_path):
    done = run_client(npm_bin, "claude", "plugin", "validate", str(ROOT), env=claude_env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation passed" in done.stdout
    assert "skills: training-check:training-check" in done.stdout
    assert "mcpServers: training-check stdio ${CLAUDE_PLUGIN_ROOT}/bin/training-check-server" in done.stdout


def test_plugin_installed_from_its_marketplace_connects(npm_bin, claude_env, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    marketplace_add = ["plugin", "marketplace", "add", str(ROOT)]
    for command in (marketplace_add, ["plugin", "install", "training-check@training-check"]):
        done = run_client(npm_bin, "claude", *command, env=claude_env, cwd=project)
        assert done.returncode == 0, done.stdout + done.stderr
    listing = run_client(npm_bin, "claude", "mcp", "list", env=claude_env, cwd=project).stdout
    assert "✔ Connected" in server_line(listing, "plugin:training-check:training-check"), listing


def test_the_readme_command_and_the_example_config_connect(npm_bin, claude_env, tmp_path):
    assert README_ADD in (ROOT / "README.md").read_text(), "the README's quick start changed: update this test"
    added = run_client(
        npm_bin, "claude", "mcp", "add", "--scope", "user", "training-check", "--", str(LAUNCHER),
        env=claude_env, cwd=ROOT,
    )  # the README's command, run in the clone ($PWD = ROOT)
    assert added.returncode == 0, added.stdout + added.stderr
    elsewhere = tmp_path / "some-project"
    elsewhere.mkdir()
    listing = run_client(npm_bin, "claude", "mcp", "list", env=claude_env, cwd=elsewhere).stdout
    assert "✔ Connected" in server_line(listing, "training-check"), listing
    run_client(npm_bin, "claude", "mcp", "remove", "--scope", "user", "training-check", env=claude_env, cwd=ROOT)

    project = tmp_path / "training-project"
    project.mkdir()
    shutil.copy(ROOT / ".mcp.json.example", project / ".mcp.json")
    trust_project(Path(claude_env["HOME"]), project)
    listing = run_client(
        npm_bin, "claude", "mcp", "list", env={**claude_env, "TRAINING_CHECK_ROOT": str(ROOT)}, cwd=project
    ).stdout
    assert "✔ Connected" in server_line(listing, "training-check"), listing


def trust_project(home: Path, project: Path) -> None:
    """What answering Claude Code's trust and .mcp.json approval prompts writes to ~/.claude.json."""
    config_path = home / ".claude.json"
    config = json.loads(config_path.read_text()) if config_path.exists() else {}
    config.setdefault("projects", {})[str(project)] = {
        "hasTrustDialogAccepted": True, "enabledMcpjsonServers": ["training-check"],
    }  # fmt: skip
    config_path.write_text(json.dumps(config))


# --------------------------------------------------------------------------- MCP Inspector CLI


def inspector_run(npm_bin: Path, server_venv: Path, tmp_path: Path, *method: str) -> subprocess.CompletedProcess:
    done = run_client(
        npm_bin, "mcp-inspector", "--cli", str(LAUNCHER),
        "-e", f"TRAINING_CHECK_VENV={server_venv}", "-e", f"TRAINING_CHECK_HOME={tmp_path / 'state'}",
        *method, env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)}, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def inspector(npm_bin: Path, server_venv: Path, tmp_path: Path, *method: str) -> dict:
    return json.loads(inspector_run(npm_bin, server_venv, tmp_path, *method).stdout)


def test_inspector_strict_finds_the_schemas_portable(npm_bin, server_venv, tmp_path):
    """--strict checks every tool schema for constructs some clients reject (``type`` arrays among them)."""
    done = inspector_run(npm_bin, server_venv, tmp_path, "--method", "tools/list", "--strict")
    assert "Warning" not in done.stderr and "Error" not in done.stderr, done.stderr[:3000]
    assert len(json.loads(done.stdout)["tools"]) == 9


def test_inspector_lists_the_tools_and_checks_an_example_run(npm_bin, server_venv, tmp_path):
    listed = inspector(npm_bin, server_venv, tmp_path, "--method", "tools/list")
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert {"check", "stop_run", "schedule_next"} <= set(tools)
    assert all(tool.get("title") for tool in tools.values())
    run = train(tmp_path / "example", steps=600)
    result = inspector(
        npm_bin, server_venv, tmp_path, "--method", "tools/call", "--tool-name", "check", "--tool-arg", f"run={run}"
    )
    report = result["structuredContent"]
    assert report["verdict"]["decision"] == "continue" and report["next_action"] == "end_monitoring"
    assert [block["text"] for block in result["content"]] == [report["summary"]]


# --------------------------------------------------------------------------- HTTP with a token


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def http_server(tmp_path):
    port = free_port()
    env = {**os.environ, "TRAINING_CHECK_HOME": str(tmp_path / "state"), "TRAINING_CHECK_HTTP_TOKEN": "s3cret"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_training_check", "serve", "--http", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=10)


def test_clients_without_the_token_are_told_bearer_token_required(npm_bin, claude_env, tmp_path, http_server):
    for name, extra in (("no-token", []), ("token", ["--header", "Authorization: Bearer s3cret"])):
        args = ["mcp", "add", "--transport", "http", name, http_server, *extra]
        assert run_client(npm_bin, "claude", *args, env=claude_env, cwd=tmp_path).returncode == 0
    listing = run_client(npm_bin, "claude", "mcp", "list", env=claude_env, cwd=tmp_path).stdout
    assert "bearer token required" in server_line(listing, "no-token"), listing
    assert "✔ Connected" in server_line(listing, "token"), listing

    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    refused = run_client(
        npm_bin, "mcp-inspector", "--cli", http_server, "--stored-auth-only", "--method", "tools/list",
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert refused.returncode != 0 and "bearer token required" in refused.stdout + refused.stderr
    allowed = run_client(
        npm_bin, "mcp-inspector", "--cli", http_server, "--header", "Authorization: Bearer s3cret",
        "--method", "tools/list", env=env, cwd=tmp_path,
    )  # fmt: skip
    assert allowed.returncode == 0 and "check" in {tool["name"] for tool in json.loads(allowed.stdout)["tools"]}
