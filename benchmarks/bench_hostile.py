"""Hostile inputs, each answered through the CLI (`check` in a cold process) and through the MCP server (one
stdio server per setting, spoken to in raw JSON-RPC), with the wall time of each answer printed beside the
bound the README's "Hostile inputs" table documents for it. Each is a first check (CLI and server keep
separate state). An sshd of our own on 127.0.0.1 serves the ssh:// rows when OpenSSH is installed.

    .venv/bin/python benchmarks/bench_hostile.py

Each row also says how it was answered (the first words of the error, or the decision) so a row that
answered within its bound but wrongly is visible too. Nothing here asserts a time: the machine is shared.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_client import StdioServer  # noqa: E402
from mcp_training_check.sources.logparse import MAX_LINE_BYTES  # noqa: E402

REFUSED_SECONDS = 1.0
"""A run that is not a regular file, a bad run string or a damaged state: refused before any read."""
COLD_CLI_SECONDS = 2.0
"""A cold CLI process adds its start-up (0.3 s measured for a whole check, `bench_client.py`)."""
SMALL_LOG_SECONDS = 2.0
"""A log of a few hundred lines with hostile lines in it: the lines are skipped, the rest read."""
SSH_TIMEOUT_SECONDS = 10.0
"""`ssh_timeout_seconds` (default 10) bounds connecting, login and each remote step."""
CLI_TIMEOUT_SECONDS = 120


@dataclass
class Case:
    name: str
    run: str
    bound: float  # seconds, for the MCP call; the CLI's is this plus the cold start
    setting: str = "plain"  # which server / working directory answers it


def good_lines(count: int) -> str:
    return "".join(json.dumps({"step": s, "loss": 2.0 - s / 1000}) + "\n" for s in range(count))


def hostile_log(base: Path, name: str, line: str) -> str:
    path = base / name
    path.write_text(good_lines(200) + line + good_lines(1).replace('"step": 0', '"step": 200'))
    return str(path)


def make_cases(base: Path, ssh_url: Callable[[Path], str] | None) -> list[Case]:
    fifo = base / "fifo.log"
    os.mkfifo(fifo)
    (base / "loop-a.log").symlink_to(base / "loop-b.log")
    (base / "loop-b.log").symlink_to(base / "loop-a.log")
    run_dir = base / "fifo-run" / "wandb" / "run-20261201_120000-abcd1234"
    run_dir.mkdir(parents=True)
    os.mkfifo(run_dir / "run-abcd1234.wandb")
    cases = [
        Case("FIFO as the log", str(fifo), REFUSED_SECONDS),
        Case("FIFO run-x.wandb in a run dir", str(base / "fifo-run"), REFUSED_SECONDS),
        Case("/dev/zero", "/dev/zero", REFUSED_SECONDS),
        Case("/dev/urandom", "/dev/urandom", REFUSED_SECONDS),
        Case("a socket", str(base / "metrics.sock"), REFUSED_SECONDS),
        Case("a directory with no W&B run", str(base / "empty-dir"), REFUSED_SECONDS),
        Case("symlink loop", str(base / "loop-a.log"), REFUSED_SECONDS),
        Case("300-character file name", str(base / ("x" * 300 + ".log")), REFUSED_SECONDS),
        Case("ssh://127.0.0.1:99999/x", "ssh://127.0.0.1:99999/x", REFUSED_SECONDS),
        Case("ssh://127.0.0.1:abc/x", "ssh://127.0.0.1:abc/x", REFUSED_SECONDS),
        Case("ssh://[::1/x", "ssh://[::1/x", REFUSED_SECONDS),
        Case(f"JSONL line of {2 * MAX_LINE_BYTES // 1024} KiB", hostile_log(
            base, "long.jsonl", '{"step": 5, "pad": "' + "x" * 2 * MAX_LINE_BYTES + '"}\n'), SMALL_LOG_SECONDS),
        Case("step 18446744073709551615", hostile_log(
            base, "step.jsonl", '{"step": 18446744073709551615, "loss": 1.0}\n'), SMALL_LOG_SECONDS),
        Case("400-digit number", hostile_log(
            base, "digits.jsonl", '{"step": 5, "loss": ' + "1" * 400 + "}\n"), SMALL_LOG_SECONDS),
        Case("JSON nested 100,000 deep", hostile_log(
            base, "nested.jsonl", '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}\n"), SMALL_LOG_SECONDS),
        Case("JSON nested 10,000 deep (< 64 KiB)", hostile_log(
            base, "nested2.jsonl", '{"x": ' + '{"a": ' * 10_000 + "1" + "}" * 10_000 + "}\n"), SMALL_LOG_SECONDS),
        Case("CSV cell of 200 KB", csv_log(base), SMALL_LOG_SECONDS),
        Case("state DB: garbled cursor cell", damaged_state_log(base), REFUSED_SECONDS, setting="damaged"),
        Case("training-check.toml nested 100,000 deep", "x.log", REFUSED_SECONDS, setting="nested_toml"),
        Case("judge threshold = nan", "x.log", REFUSED_SECONDS, setting="nan_toml"),
    ]  # fmt: skip
    (base / "empty-dir").mkdir()
    if ssh_url is not None:
        remote_fifo = base / "remote-fifo.log"
        os.mkfifo(remote_fifo)
        cases.append(Case("ssh:// FIFO (real sshd)", ssh_url(remote_fifo), SSH_TIMEOUT_SECONDS))
        cases.append(Case("ssh:// /dev/zero (real sshd)", ssh_url(Path("/dev/zero")), SSH_TIMEOUT_SECONDS))
        cases.append(Case("ssh:// JSONL with hostile lines", ssh_url(Path(hostile_log(
            base, "remote.jsonl", '{"step": 18446744073709551615, "loss": 1.0}\n'))), SSH_TIMEOUT_SECONDS))  # fmt: skip
    return cases


def csv_log(base: Path) -> str:
    path = base / "cells.csv"
    rows = "".join(f"{s},{2.0 - s / 1000}\n" for s in range(200))
    path.write_text("step,loss\n" + rows + '201,"' + "z" * 200_000 + '"\n202,1.7\n')
    return str(path)


def damaged_state_log(base: Path) -> str:
    """A log checked once into the "damaged" home, whose stored cursor is then garbled."""
    path = base / "damaged.jsonl"
    path.write_text(good_lines(200))
    for home in (base / "homes" / "damaged", base / "homes" / "damaged-cli"):
        cli(["check", str(path)], cwd=base, home=home)
        conn = sqlite3.connect(home / "state.sqlite3")
        conn.execute("UPDATE runs SET cursor = '{'")
        conn.commit()
        conn.close()
    return str(path)


def settings_dirs(base: Path) -> dict[str, tuple[Path, Path]]:
    """Working directory and state home of each setting."""
    dirs = {}
    for setting in ("plain", "damaged", "nested_toml", "nan_toml"):
        cwd = base if setting in ("plain", "damaged") else base / setting
        cwd.mkdir(exist_ok=True)
        dirs[setting] = (cwd, base / "homes" / setting)
    (base / "nested_toml" / "training-check.toml").write_text("[defaults]\nx = " + "[" * 100_000 + "]" * 100_000)
    (base / "nan_toml" / "training-check.toml").write_text("[defaults.judge]\ntrend_divergence_ratio = nan\n")
    for setting in ("nested_toml", "nan_toml"):
        (base / setting / "x.log").write_text("step 1 loss 2.0\n")
    return dirs


def cli(args: list[str], *, cwd: Path, home: Path) -> tuple[float, str]:
    env = {**os.environ, "TRAINING_CHECK_HOME": str(home)}
    env.pop("TRAINING_CHECK_CONFIG", None)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mcp_training_check", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_SECONDS,
    )  # fmt: skip
    wall = time.perf_counter() - started
    lines = (done.stderr if done.returncode else done.stdout).strip().splitlines() or [""]
    text = lines[-1] if done.returncode else next((ln for ln in lines if ln.startswith("verdict")), lines[0])
    return wall, text.removeprefix("training-check: ")


def mcp(server: StdioServer, run: str) -> tuple[float, str]:
    started = time.perf_counter()
    result, _ = server.request("tools/call", {"name": "check", "arguments": {"run": run}})
    wall = time.perf_counter() - started
    snapshot = (result.get("structuredContent") or {}).get("snapshot")
    if snapshot is not None:
        verdict = result["structuredContent"].get("verdict") or {}
        return wall, (
            f"{verdict.get('decision')}: last step {snapshot.get('last_step')}, "
            f"{snapshot.get('skipped_chunks', 0)} line(s) skipped"
        )
    return wall, result["content"][0]["text"].removeprefix("Error executing tool check: ")


@contextlib.contextmanager
def sshd(base: Path) -> Iterator[Callable[[Path], str] | None]:
    """A real OpenSSH server on 127.0.0.1 (tests/sshd.py's set-up), or None when sshd is not installed."""
    from tests import sshd as helpers

    if not helpers.SSHD.exists():
        yield None
        return
    ssh_base = base / "sshd"
    ssh_base.mkdir()
    host_key = helpers._keygen(ssh_base / "host_ed25519")
    (ssh_base / "authorized_keys").write_text(helpers._keygen(ssh_base / "user_ed25519") + "\n")
    helpers._keygen(ssh_base / "wrong_ed25519")
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    port = helpers.free_port()
    log = (ssh_base / "sshd.log").open("wb")
    process = subprocess.Popen(
        [str(helpers.SSHD), "-D", "-e", "-f", str(helpers._sshd_config(ssh_base, port)), "-p", str(port)],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        helpers._wait_for_banner(port, process, ssh_base / "sshd.log")
        home = helpers._ssh_client_files(ssh_base, port, getpass.getuser(), host_key)
        old_home = os.environ.get("HOME")
        os.environ["HOME"] = str(home)  # the CLI and the servers inherit it: ~/.ssh/config names the server
        os.environ.pop("SSH_AUTH_SOCK", None)
        yield lambda path: f"ssh://trainbox{path}"
    finally:
        if old_home is not None:
            os.environ["HOME"] = old_home
        process.terminate()
        process.wait(timeout=10)
        log.close()


def release_fifos(base: Path) -> None:
    for path in base.rglob("*"):
        if path.is_fifo():
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="bench-hostile-"))
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(base / "metrics.sock"))
    try:
        with sshd(base) as ssh_url:
            dirs = settings_dirs(base)
            cases = make_cases(base, ssh_url)
            servers = {}
            for setting, (cwd, home) in dirs.items():
                servers[setting] = StdioServer(cwd=cwd, home=home)
                servers[setting].initialize()
            print(f"{'input':42} {'CLI s':>7} {'MCP s':>7} {'bound':>6}  answer (MCP)")
            for case in cases:
                cwd, home = dirs[case.setting]
                cli_wall, _ = cli(["check", case.run], cwd=cwd, home=home.with_name(home.name + "-cli"))
                mcp_wall, answer = mcp(servers[case.setting], case.run)
                bound = f"{case.bound:g}"
                print(f"{case.name:42} {cli_wall:7.2f} {mcp_wall:7.2f} {bound:>6}  {answer[:90]}")
            for server in servers.values():
                server.close()
            busy = [p for p in base.rglob("*") if p.is_fifo() and fifo_has_reader(p)]
            print(f"FIFOs some process is still blocked opening: {len(busy)}")
            print(f"CLI bound = MCP bound + {COLD_CLI_SECONDS:g} s of cold start")
    finally:
        sock.close()
        release_fifos(base)
        shutil.rmtree(base, ignore_errors=True)


def fifo_has_reader(path: Path) -> bool:
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        return False
    return True


if __name__ == "__main__":
    main()
