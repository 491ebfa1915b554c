"""Hosts reached as OpenSSH reaches them: ProxyJump (one or more hops) and ProxyCommand, against two real
sshd instances (tests/sshd.py `jump_pair`): a jump host on 127.0.0.1 that forwards only to the inner host and
logs each forwarding request, which is how the tests see that the hop was used. Each test runs twice: with the
inner host on 127.0.0.2 beside the tests (``loopback``), and with the inner host in a network namespace of its
own that only the jump host reaches (``netns``; needs root, skipped with the reason elsewhere)."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_training_check.config import parse_run
from mcp_training_check.errors import SourceUnavailable
from mcp_training_check.models import DataSource
from mcp_training_check.service import Monitor
from mcp_training_check.sources import SshLogSource, ssh_proxy
from mcp_training_check.sources.ssh_connect import resolve_target
from mcp_training_check.stop.ssh import stop_remote_process

from . import netns
from .sshd import ProxyHome, _keygen
from .test_ssh_source import jsonl_rows
from .test_ssh_stop import reset_term

ERROR_SECONDS = 8.0  # a refused route fails well within this, on a loaded machine


def source(alias: str, path: Path) -> SshLogSource:
    return SshLogSource(parse_run(f"ssh://{alias}{path}"), timeout_seconds=5.0)


def write_log(tmp_path: Path, rows: int = 120) -> Path:
    log = tmp_path / "metrics.jsonl"
    log.write_text(jsonl_rows(0, rows))
    return log


def other_key(tmp_path: Path) -> str:
    """A host key no server uses: "type base64" as a known_hosts line holds it."""
    line = _keygen(tmp_path / "impostor_ed25519")
    return " ".join(line.split()[:2])


def accepted_logins(text: str) -> int:
    return text.count("Accepted publickey")


def test_check_through_a_jump_host_reads_incrementally_through_the_hop(proxy_home: ProxyHome, tmp_path):
    check_twice_through_the_jump_host(proxy_home, tmp_path)


def test_the_inner_host_is_reachable_only_through_the_jump_host(netns_proxy_home: ProxyHome, tmp_path):
    """The inner host's namespace has nothing but its loopback; its address and port, seen from the tests, is a
    port where nothing listens. A check through ProxyJump reads it all the same, incrementally."""
    pair = netns_proxy_home.pair
    assert pair.netns is not None and netns.links(pair.netns) == ["lo"]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((pair.inner.address, pair.inner.port), timeout=ERROR_SECONDS).close()
    direct = Monitor().check(f"ssh://inner-direct{write_log(tmp_path)}")
    assert direct.snapshot.data_source is DataSource.UNREACHABLE and direct.verdict is None
    inner = f"{pair.inner.address}:{pair.inner.port}"
    assert f"nothing accepts SSH connections at {inner}" in " ".join(direct.snapshot.warnings)
    check_twice_through_the_jump_host(netns_proxy_home, tmp_path)


def check_twice_through_the_jump_host(proxy_home: ProxyHome, tmp_path: Path) -> None:
    """Two checks of a log on the inner host through ``ProxyJump jump``: the second reads only the new rows, and
    each logged in on the inner host through a forward of the jump host."""
    pair = proxy_home.pair
    log = write_log(tmp_path)
    forwards, inner_logins = pair.forwards_to(pair.inner), accepted_logins(pair.inner.log_text())
    monitor = Monitor()
    run = f"ssh://inner{log}"
    first = monitor.check(run)
    assert first.snapshot.data_source is DataSource.SSH, first.snapshot.warnings
    assert first.snapshot.last_step == 119 and first.snapshot.run_info.host == pair.inner.address
    with log.open("a") as handle:
        handle.write(jsonl_rows(120, 130))
    second = monitor.check(run)
    assert second.snapshot.new_points == 20 and second.snapshot.last_step == 129
    assert pair.forwards_to(pair.inner) == forwards + 2, "each check asked the jump host to forward to the inner one"
    assert accepted_logins(pair.inner.log_text()) == inner_logins + 2


def test_two_hops_go_through_each_in_turn(proxy_home: ProxyHome, tmp_path):
    """``ProxyJump jump,USER@jump:PORT``: the first hop, then through it to the second (itself, here), then on."""
    pair = proxy_home.pair
    log = write_log(tmp_path)
    target = resolve_target("inner-twohops", SourceUnavailable)
    assert [(hop.host, hop.port, hop.user) for hop in target.jumps] == [
        ("jump", pair.jump.port, pair.user),
        ("jump", pair.jump.port, pair.user),
    ]
    to_jump, to_inner = pair.forwards_to(pair.jump), pair.forwards_to(pair.inner)
    jump_logins = accepted_logins(pair.jump.log_text())
    batch = source("inner-twohops", log).read(None)
    assert batch.series["loss"].steps.tolist() == list(range(120))
    assert pair.forwards_to(pair.jump) == to_jump + 1 and pair.forwards_to(pair.inner) == to_inner + 1
    assert accepted_logins(pair.jump.log_text()) == jump_logins + 2, "both hops logged in"


def test_proxy_command_with_the_real_ssh_client(proxy_home: ProxyHome, tmp_path):
    pair = proxy_home.pair
    log = write_log(tmp_path)
    forwards = pair.forwards_to(pair.inner)
    report = Monitor().check(f"ssh://inner-command{log}")
    assert report.snapshot.data_source is DataSource.SSH, report.snapshot.warnings
    assert report.snapshot.last_step == 119
    assert pair.forwards_to(pair.inner) == forwards + 1, "ssh -W asked the jump host to forward"


def test_changed_host_key_of_the_jump_host_is_refused_naming_the_hop(proxy_home: ProxyHome, tmp_path):
    pair = proxy_home.pair
    proxy_home.replace_host_key(pair.jump, other_key(tmp_path))
    inner_logins = accepted_logins(pair.inner.log_text())
    with pytest.raises(SourceUnavailable) as caught:
        source("inner", write_log(tmp_path)).read(None)
    message = str(caught.value)
    assert message.startswith("jump host jump (ProxyJump of inner): the host key of")
    assert f"127.0.0.1:{pair.jump.port} (Host jump in ~/.ssh/config) CHANGED" in message
    assert f"ssh-keygen -R '[127.0.0.1]:{pair.jump.port}'" in message
    assert accepted_logins(pair.inner.log_text()) == inner_logins, "nothing went past the refused hop"


def test_changed_host_key_of_the_host_behind_the_jump_is_refused(proxy_home: ProxyHome, tmp_path):
    pair = proxy_home.pair
    proxy_home.replace_host_key(pair.inner, other_key(tmp_path))
    before = proxy_home.known_hosts.read_bytes()
    report = Monitor().check(f"ssh://inner{write_log(tmp_path)}")
    assert report.snapshot.data_source is DataSource.UNREACHABLE and report.verdict is None
    message = " ".join(report.snapshot.warnings)
    assert f"{pair.inner.address}:{pair.inner.port} (Host inner in ~/.ssh/config) via ProxyJump jump CHANGED" in message
    assert f"`ssh -p {pair.inner.port} {pair.user}@inner` (through the same proxy)" in message, "no ssh-keyscan"
    assert proxy_home.known_hosts.read_bytes() == before


def test_changed_host_key_behind_a_proxy_command_is_refused(proxy_home: ProxyHome, tmp_path):
    inner = proxy_home.pair.inner
    proxy_home.replace_host_key(inner, other_key(tmp_path))
    target = re.escape(f"{inner.address}:{inner.port}")
    with pytest.raises(SourceUnavailable, match=rf"via ProxyCommand `ssh -F .* -W {target} jump` CHANGED"):
        source("inner-command", write_log(tmp_path)).read(None)


def test_jump_host_that_may_not_forward_there_says_so(proxy_home: ProxyHome, tmp_path):
    started = time.monotonic()
    with pytest.raises(SourceUnavailable) as caught:
        source("inner-blocked", write_log(tmp_path)).read(None)
    assert time.monotonic() - started < ERROR_SECONDS
    message = str(caught.value)
    address = proxy_home.pair.inner.address
    assert f"refused to connect on to {address}:" in message and "administratively prohibited" in message.lower()
    assert "AllowTcpForwarding, PermitOpen" in message


def test_failing_proxy_command_says_how_it_ended(proxy_home: ProxyHome, tmp_path):
    config = proxy_home.config
    broken = "Host broken\n  HostName 127.0.0.2\n  ProxyCommand sh -c 'echo no route to %h >&2; exit 3'\n\n"
    config.write_text(broken + config.read_text())
    started = time.monotonic()
    with pytest.raises(SourceUnavailable) as caught:
        SshLogSource(parse_run(f"ssh://broken{write_log(tmp_path)}"), timeout_seconds=30).read(None)
    assert time.monotonic() - started < ERROR_SECONDS, "the end of its output is an end of file, not a 30 s wait"
    message = str(caught.value)
    assert message.startswith(f"the ProxyCommand of {proxy_home.pair.user}@127.0.0.2:22 (Host broken in ~/.ssh/config)")
    assert "ended (exit status 3, it said: no route to 127.0.0.2)" in message


def test_a_host_name_from_a_tool_argument_never_reaches_the_proxy_shell(proxy_home: ProxyHome, tmp_path):
    """``Host *`` with a ProxyCommand and a run naming a host like ``$(touch x)``: refused before any process."""
    canary = tmp_path / "pwned"
    config = proxy_home.config
    config.write_text(config.read_text() + "Host *\n  ProxyCommand nc %h %p\n")
    for host in (f"$(touch {canary})", f"`touch {canary}`", f"a;touch {canary}", f"a|touch {canary}"):
        with pytest.raises(SourceUnavailable, match="not safe to put into ProxyCommand"):
            resolve_target(host, SourceUnavailable)
    snapshot = Monitor().read_metrics(f"ssh://x;touch{tmp_path}/train.log")  # host "x;touch"
    assert snapshot.data_source is DataSource.UNREACHABLE
    assert "host name 'x;touch' is not safe to put into ProxyCommand (%h)" in " ".join(snapshot.warnings)
    assert not canary.exists() and not Path("touch").exists()


@pytest.mark.parametrize(
    ("command", "expanded"),
    [
        ("ssh -W %h:%p bastion", "ssh -W 10.0.0.5:2222 bastion"),
        ("connect %r@%n %%h 100%%", "connect alice@gpu %h 100%"),
    ],
)
def test_proxy_command_tokens_expand_as_ssh_expands_them(command, expanded):
    result = ssh_proxy.expand_proxy_command(command, hostname="10.0.0.5", host="gpu", port=2222, user="alice")
    assert result == expanded


@pytest.mark.parametrize("command", ["ssh -W %h:%p %C", "trailing %"])
def test_proxy_command_with_a_token_ssh_does_not_know_is_refused(command):
    with pytest.raises(ssh_proxy.ProxyError, match="which ssh does not expand there"):
        ssh_proxy.expand_proxy_command(command, hostname="h", host="h", port=22, user="u")


@pytest.mark.parametrize(
    ("value", "hops"),
    [
        ("bastion", ["bastion"]),
        ("me@login.example.org:2200, gate", ["me@login.example.org:2200", "gate"]),
        ("ssh://me@login:2200", ["me@login:2200"]),
    ],
)
def test_proxy_jump_hops_are_split_as_ssh_splits_them(value, hops):
    assert ssh_proxy.split_jump_hops(value) == hops


@pytest.mark.parametrize("value", ["a,,b", "-oProxyCommand=x", "a b"])
def test_malformed_proxy_jump_is_refused(value):
    with pytest.raises(ssh_proxy.ProxyError):
        ssh_proxy.split_jump_hops(value)


def test_proxy_jump_loop_is_refused(proxy_home: ProxyHome):
    config = proxy_home.config
    config.write_text("Host loop1\n  ProxyJump loop2\nHost loop2\n  ProxyJump loop1\n\n" + config.read_text())
    with pytest.raises(SourceUnavailable, match="ProxyJump loop"):
        resolve_target("loop1", SourceUnavailable)


def test_a_process_behind_the_jump_host_is_stopped_and_verified_gone(proxy_home: ProxyHome):
    """stop_run's SSH method shares the connection code: the stop goes through the hop too."""
    pair = proxy_home.pair
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], preexec_fn=reset_term)
    try:
        forwards = pair.forwards_to(pair.inner)
        attempt = stop_remote_process(
            "inner", pid=child.pid, pid_file=None, grace_seconds=5, timeout_seconds=5, poll_seconds=0.05
        )
        assert attempt.verified and attempt.signals_sent == ["TERM"]
        assert child.wait(timeout=5) == -signal.SIGTERM
        assert pair.forwards_to(pair.inner) == forwards + 1
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=10)
