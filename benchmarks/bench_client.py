"""What a client receives from the server, and how soon: sizes on the wire and start-up times.

    .venv/bin/python benchmarks/bench_client.py [--repeat 7]

Everything is measured as a client gets it: the server is started as `python -m mcp_training_check serve`
and spoken to in newline-delimited JSON-RPC over its stdin/stdout, as Claude Code does.

Printed, in one run:
(a) the demo's STOP `check` (the demo's training and fault, checked on the demo's schedule until it says
    stop): tokens of everything the result carries, all content blocks + structuredContent, as chars / 4;
    target ≤ 1,500
(b) the `tools/list` answer in bytes; target ≤ 12,000
(c) start-up, median wall seconds of --repeat interleaved rounds, side by side with `python -c pass`: a
    cold CLI `check` of a small local log (≤ 0.5 s) and server start → `tools/list` answered (≤ 1 s),
    with the MCP SDK's own import beside it (the part of the server's start that is not this package's)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mcp_training_check.examples.demo import CONFIG_TEMPLATE, DEMO_STEPS, FAULT_STEP  # noqa: E402
from tests.runs import grow, live_copy, train  # noqa: E402

CHECK_TOKENS_TARGET = 1500
TOOLS_LIST_BYTES_TARGET = 12_000
CLI_CHECK_SECONDS_TARGET = 0.5
SERVER_START_SECONDS_TARGET = 1.0
CHARS_PER_TOKEN = 4
PROTOCOL_VERSION = "2025-06-18"  # what Claude Code 2.1 asks for
DEMO_CHECK_STEPS = (100, 380, 778, 1619, 3099)
"""The steps the demo's checks saw on its compressed clock (README: t+30 min 778, t+60 1619, t+120 3099)."""
SMALL_LOG_STEPS = 300
SDK_IMPORT = "import mcp.server.mcpserver"  # the floor of any server built on the SDK's MCPServer
ANSWER_TIMEOUT_SECONDS = 120


class StdioServer:
    """`training-check serve` as a subprocess, spoken to in raw JSON-RPC lines."""

    def __init__(self, *, cwd: Path, home: Path) -> None:
        env = {**os.environ, "TRAINING_CHECK_HOME": str(home), "PYTHONUNBUFFERED": "1"}
        env.pop("TRAINING_CHECK_CONFIG", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_training_check", "serve"],
            cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self._next_id = 0

    def request(self, method: str, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], int]:
        """The answer's ``result`` and the byte length of the answer line."""
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params or {}})
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"the server exited (code {self.process.wait()}) before answering {method}")
            message = json.loads(line)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"], len(line)

    def initialize(self) -> None:
        self.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "bench_client", "version": "1"},
        })  # fmt: skip
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def wire_chars(value: Any) -> int:
    """Characters of ``value`` as JSON on the wire (compact, as the server sends it)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def received_chars(result: dict[str, Any]) -> int:
    """What a client holds of a tool result: every content block and the structured content."""
    return wire_chars(result.get("content", [])) + wire_chars(result.get("structuredContent", {}))


# --------------------------------------------------------------------------- sizes


def demo_stop_check(workdir: Path) -> dict[str, Any]:
    """The demo's run, checked over stdio at the steps the demo's schedule saw, until it says stop."""
    finished = train(workdir / "train", steps=DEMO_STEPS, fault_step=FAULT_STEP)
    project = workdir / "project"
    fractions = [step / DEMO_STEPS for step in DEMO_CHECK_STEPS]
    live = live_copy(finished, project, fractions[0])
    (project / "training-check.toml").write_text(CONFIG_TEMPLATE.replace("wandb/latest-run", str(live)))
    server = StdioServer(cwd=project, home=workdir / "home")
    try:
        server.initialize()
        tools, tools_bytes = server.request("tools/list")
        for fraction in fractions:
            grow(live, finished, fraction)
            result, _ = server.request("tools/call", {"name": "check", "arguments": {"run": "demo"}})
            if result["structuredContent"]["next_action"] == "stop_run":
                break
    finally:
        server.close()
    report = result["structuredContent"]
    return {
        "tools_list_bytes": len(json.dumps(tools, separators=(",", ":")).encode()),
        "tools_list_line_bytes": tools_bytes,
        "tools": len(tools["tools"]),
        "check_chars": received_chars(result),
        "check_text_chars": wire_chars(result.get("content", [])),
        "check_structured_chars": wire_chars(report),
        "check_step": report["snapshot"].get("last_step"),
        "check_decision": (report.get("verdict") or {}).get("decision"),
    }


# --------------------------------------------------------------------------- start-up


def seconds(run_once: Any) -> float:
    started = time.perf_counter()
    run_once()
    return time.perf_counter() - started


def cli_check_once(log: Path, workdir: Path) -> None:
    home = workdir / "cli-home"
    shutil.rmtree(home, ignore_errors=True)  # cold: no state yet, as on the first check of a run
    env = {**os.environ, "TRAINING_CHECK_HOME": str(home)}
    command = [str(Path(sys.executable).with_name("training-check")), "check", str(log), "--json"]
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["verdict"]["decision"] == "continue", done.stdout


def server_start_once(workdir: Path) -> None:
    server = StdioServer(cwd=workdir, home=workdir / "server-home")
    try:
        server.initialize()
        tools, _ = server.request("tools/list")
        assert tools["tools"], "no tools listed"
    finally:
        server.close()


def start_up(workdir: Path, repeat: int) -> dict[str, float]:
    """Median wall seconds of each figure over ``repeat`` rounds; each round runs every figure once, in
    turn, so a machine that speeds up or slows down between minutes weighs on all of them alike."""
    log = workdir / "small.jsonl"
    log.write_text("".join(json.dumps({"step": i, "loss": 3.0 / (1 + i / 50)}) + "\n" for i in range(SMALL_LOG_STEPS)))
    figures = {
        "python_pass": lambda: subprocess.run([sys.executable, "-c", "pass"], check=True),
        "sdk_import": lambda: subprocess.run([sys.executable, "-c", SDK_IMPORT], check=True),
        "cli_check": lambda: cli_check_once(log, workdir),
        "server_tools_list": lambda: server_start_once(workdir),
    }
    times: dict[str, list[float]] = {key: [] for key in figures}
    for _ in range(repeat):
        for key, run_once in figures.items():
            times[key].append(seconds(run_once))
    return {key: statistics.median(values) for key, values in times.items()}


# --------------------------------------------------------------------------- report


def verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "OVER TARGET"


def print_report(sizes: dict[str, Any], times: dict[str, float], repeat: int) -> None:
    tokens = sizes["check_chars"] / CHARS_PER_TOKEN
    print(f"(a) demo STOP check (step {sizes['check_step']}, decision {sizes['check_decision']}): "
          f"{sizes['check_chars']:,} chars received = {tokens:,.0f} tokens "
          f"(content blocks {sizes['check_text_chars']:,} + structuredContent {sizes['check_structured_chars']:,}); "
          f"target ≤ {CHECK_TOKENS_TARGET:,}: {verdict(tokens, CHECK_TOKENS_TARGET)}")  # fmt: skip
    print(f"(b) tools/list: {sizes['tools_list_bytes']:,} bytes for {sizes['tools']} tools "
          f"(the whole JSON-RPC answer line {sizes['tools_list_line_bytes']:,}); target ≤ {TOOLS_LIST_BYTES_TARGET:,}: "
          f"{verdict(sizes['tools_list_bytes'], TOOLS_LIST_BYTES_TARGET)}")  # fmt: skip
    bare, sdk = times["python_pass"], times["sdk_import"]
    head = f"(c) start-up, median of {repeat} interleaved rounds"
    print(f"{head:<42} seconds   × python -c pass ({bare:.3f} s)   target")
    for key, label, target in (
        ("cli_check", "cold CLI `check` of a 300-step log", CLI_CHECK_SECONDS_TARGET),
        ("server_tools_list", "server start → tools/list answered", SERVER_START_SECONDS_TARGET),
    ):
        value = times[key]
        print(f"    {label:<38} {value:7.3f}   {value / bare:8.1f}×{'':17} ≤ {target} s: {verdict(value, target)}")
    print(f"    of which the MCP SDK's own import ({SDK_IMPORT!r}): {sdk:.3f} s; "
          f"the server's start beyond it: {times['server_tools_list'] - sdk:.3f} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per start-up figure (median)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-client-") as tmp:
        workdir = Path(tmp)
        # start-up first: the demo's training runs in this process, and its numpy (OpenBLAS) threads keep a
        # core busy for a while after it, which would slow the cold processes timed here
        times = start_up(workdir, args.repeat)
        sizes = demo_stop_check(workdir)
    if args.json:
        print(json.dumps({**sizes, **times}))
    else:
        print_report(sizes, times, args.repeat)


if __name__ == "__main__":
    main()
