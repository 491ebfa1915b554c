#!/usr/bin/env python3
"""Set up and run on a fresh machine with only Python >= 3.11.

    python3 dev.py demo      create .venv, install, run the built-in demo (no account, no network)
    python3 dev.py test      create .venv, install with test extras, run ruff, mypy and the test suite
                             (the SSH tests start a real OpenSSH sshd: installed with apt-get when root;
                             the client tests run Claude Code and the MCP Inspector, which they install
                             with npm into .venv/npm: Node.js >= 20, installed with apt-get when root;
                             the stop-target tests run tmux, screen and a one-node Slurm with munge:
                             installed with apt-get when root, skipped with the reason otherwise)
    python3 dev.py bench     run the benchmarks in benchmarks/ (speed, size, and the judge replay)

The virtual environment is reused while pyproject.toml is unchanged (a hash stamp in .venv).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".installed-pyproject-sha256"
MIN_PYTHON = (3, 11)
SSHD = Path("/usr/sbin/sshd")  # the SSH tests run a real OpenSSH server on 127.0.0.1
STOP_TARGET_PACKAGES = {"tmux": "tmux", "screen": "screen", "slurmctld": "slurm-wlm", "munged": "munge"}
"""Program → Debian package for tests/test_stop_targets.py and tests/test_stop_slurm.py."""


def python() -> Path:
    return VENV / "bin" / "python"


def ensure_venv(extras: str) -> None:
    if sys.version_info < MIN_PYTHON:
        sys.exit(f"dev.py: Python >= 3.11 is required, this is {sys.version.split()[0]}")
    if not python().exists():
        print("dev.py: creating .venv", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extras.encode()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    print(f"dev.py: installing mcp-training-check[{extras}] into .venv", flush=True)
    run([str(python()), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    run([str(python()), "-m", "pip", "install", "--quiet", "-e", f".[{extras}]"])
    STAMP.write_text(wanted)


def run(command: list[str]) -> None:
    result = subprocess.run(command, cwd=ROOT)
    if result.returncode != 0:
        sys.exit(result.returncode)


def demo(args: list[str]) -> None:
    ensure_venv("test")
    run([str(python()), "-m", "mcp_training_check", "demo", *args])


def ensure_sshd() -> None:
    """The SSH tests need OpenSSH's sshd. As root on Debian/Ubuntu (CI on a clean clone) install it;
    otherwise say what to install and stop, rather than let those tests fail one by one."""
    if SSHD.exists():
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("dev.py: installing openssh-server (the SSH tests start a real sshd on 127.0.0.1)", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "openssh-server"]):
            if subprocess.run(command, env=env).returncode != 0:
                sys.exit(f"dev.py: `{' '.join(command)}` failed; install openssh-server by hand and rerun")
        return
    sys.exit(
        f"dev.py: {SSHD} is missing; the SSH tests start a real OpenSSH server. Install it "
        "(Debian/Ubuntu: `sudo apt-get install -y openssh-server`; Fedora: `sudo dnf install openssh-server`) "
        "and rerun `python3 dev.py test`."
    )


def ensure_npm() -> None:
    """tests/test_clients.py installs Claude Code and the MCP Inspector with npm. As root on Debian/Ubuntu
    install Node.js (its package brings npm); otherwise say what to install and stop."""
    if shutil.which("npm"):
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("dev.py: installing nodejs and npm (the client tests run Claude Code and the MCP Inspector)", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], env=env)
        for package in ("nodejs", "npm"):  # NodeSource's nodejs brings npm; Debian's splits it out
            if not shutil.which("npm"):
                subprocess.run(["apt-get", "install", "-y", "-qq", package], env=env)
        if shutil.which("npm"):
            return
    sys.exit(
        "dev.py: npm is missing; the client tests install Claude Code and the MCP Inspector with it. Install "
        "Node.js >= 20 (https://nodejs.org, or your distribution's nodejs and npm) and rerun `python3 dev.py test`."
    )


def ensure_stop_targets() -> None:
    """The stop-target tests start tmux, screen and a one-node Slurm (munged, slurmctld, slurmd). As root on
    Debian/Ubuntu install what is missing; otherwise those tests skip and say what to install."""
    missing = sorted({package for program, package in STOP_TARGET_PACKAGES.items() if not shutil.which(program)})
    if not missing or os.geteuid() != 0 or not shutil.which("apt-get"):
        if missing:
            print(f"dev.py: {', '.join(missing)} missing: their stop-target tests will skip", flush=True)
        return
    print(f"dev.py: installing {', '.join(missing)} (the stop-target tests run them)", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], env=env)
    if subprocess.run(["apt-get", "install", "-y", "-qq", *missing], env=env).returncode != 0:
        sys.exit(f"dev.py: `apt-get install {' '.join(missing)}` failed; install them by hand and rerun")


def test(args: list[str]) -> None:
    ensure_venv("test")
    ensure_sshd()
    ensure_npm()
    ensure_stop_targets()
    linted = ["mcp_training_check", "tests", "benchmarks", "corpus", "corpus_real", "dev.py"]
    run([str(python()), "-m", "ruff", "check", *linted])
    run([str(python()), "-m", "mypy"])
    run([str(python()), "-m", "pytest", "-q", *args])


def bench(args: list[str]) -> None:
    ensure_venv("test")
    scripts = [*sorted((ROOT / "benchmarks").glob("bench_*.py")), ROOT / "benchmarks" / "replay.py"]
    for script in scripts:
        print(f"== {script.name}", flush=True)
        run([str(python()), str(script), *args])


COMMANDS = {"demo": demo, "test": test, "bench": bench}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(__doc__)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    COMMANDS[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
