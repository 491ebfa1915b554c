"""Network namespaces for the SSH tests: a host the tests' own process cannot reach (see tests/sshd.py
`netns_jump_pair`). Making one needs root; `netns_unavailable` says why not, for the skip."""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

NAMESPACE_SECONDS = 20.0  # making a namespace takes milliseconds; this is for a loaded machine


@functools.cache
def netns_unavailable() -> str | None:
    """Why the tests cannot make a network namespace on this machine, or None when they can."""
    if os.geteuid() != 0:
        return f"creating a network namespace needs root and the tests run as uid {os.geteuid()} (CI runs as root)"
    for program in ("unshare", "nsenter", "ip"):
        if shutil.which(program) is None:
            return f"`{program}` is not installed (Debian: util-linux for unshare/nsenter, iproute2 for ip)"
    probe = ["unshare", "--net", "ip", "link", "set", "lo", "up"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=NAMESPACE_SECONDS)
    except subprocess.TimeoutExpired:
        return f"`{' '.join(probe)}` did not finish within {NAMESPACE_SECONDS:g} s"
    if done.returncode != 0:
        return f"`{' '.join(probe)}` failed with exit status {done.returncode}: {done.stderr.strip()}"
    return None


@contextmanager
def network_namespace() -> Iterator[Path]:
    """A new network namespace whose only interface is its loopback, up; held open by a ``sleep`` for as long as
    the block runs. Yields its /proc/PID/ns/net path, for ``nsenter --net=``."""
    holder = subprocess.Popen(["unshare", "--net", "sleep", "infinity"])
    try:
        netns = Path(f"/proc/{holder.pid}/ns/net")
        _wait_until_unshared(netns, holder)
        subprocess.run(in_netns(netns, ["ip", "link", "set", "lo", "up"]), check=True, timeout=10)
        yield netns
    finally:
        holder.terminate()
        holder.wait(timeout=10)


def _wait_until_unshared(netns: Path, holder: subprocess.Popen[bytes]) -> None:
    """``unshare`` runs in the tests' namespace until it has made the new one and become ``sleep``."""
    ours = os.readlink("/proc/self/ns/net")
    deadline = time.monotonic() + NAMESPACE_SECONDS
    while time.monotonic() < deadline:
        if holder.poll() is not None:
            pytest.fail(f"`unshare --net sleep infinity` exited with {holder.returncode}")
        if os.readlink(netns) != ours:
            return
        time.sleep(0.01)
    pytest.fail(f"`unshare --net` made no network namespace within {NAMESPACE_SECONDS:g} s")


@contextmanager
def closed_port(address: str) -> Iterator[int]:
    """A port bound and never listened on: connecting there is refused, and nothing else can listen there
    while the block runs."""
    with socket.socket() as sock:
        sock.bind((address, 0))
        yield int(sock.getsockname()[1])


def in_netns(netns: Path | None, command: list[str]) -> list[str]:
    """``command`` run inside ``netns`` (a /proc/PID/ns/net path), or as it is when None."""
    return command if netns is None else ["nsenter", f"--net={netns}", *command]


def links(netns: Path) -> list[str]:
    """The network interfaces of ``netns``, by name."""
    shown = subprocess.run(in_netns(netns, ["ip", "-o", "link", "show"]), capture_output=True, text=True, check=True)
    return [line.split(":")[1].strip() for line in shown.stdout.splitlines()]
