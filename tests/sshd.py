"""A real OpenSSH server on 127.0.0.1 for the SSH tests, and a HOME whose ~/.ssh points at it.

`sshd_server` (session): host and user keys made by ssh-keygen, an sshd_config of our own (key login
only, its own AuthorizedKeysFile and PidFile in a temporary directory), and ``sshd -D -e`` in the
foreground. `ssh_home` (per test): HOME set to a directory holding ``.ssh/config`` and
``.ssh/known_hosts`` for that server, and no ssh agent, so the user's real ~/.ssh is never read or written.

Host aliases in that ssh config:
  trainbox   the right key and a known host key: everything works
  wrongkey   a key the server does not accept
  stranger   a known_hosts file (UserKnownHostsFile) that does not hold the server's key

Jump hosts (`jump_pair`, `proxy_home`) come in two constructions, each test running on both: ``loopback``, a
jump host on 127.0.0.1 allowed to forward only to an inner host on 127.0.0.2 (which the tests could still reach
directly), and ``netns``, an inner host in a network namespace of its own that only the jump host can reach
(skipped, with the reason, where no namespace can be made: it needs root).
"""

from __future__ import annotations

import contextlib
import dataclasses
import getpass
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from .netns import closed_port, in_netns, netns_unavailable, network_namespace

SSHD = Path("/usr/sbin/sshd")
INETD = Path(__file__).with_name("inetd.py")
START_SECONDS = 20.0


@dataclass(frozen=True)
class SshServer:
    port: int
    user: str
    home: Path  # HOME for the tests: .ssh/config and .ssh/known_hosts
    base: Path

    @property
    def known_hosts(self) -> Path:
        return self.home / ".ssh" / "known_hosts"

    @property
    def stranger_known_hosts(self) -> Path:
        return self.base / "stranger_known_hosts"

    def url(self, path: Path | str, alias: str = "trainbox") -> str:
        return f"ssh://{alias}{path}"


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


def _sshd_config(base: Path, port: int, *, address: str = "127.0.0.1", sftp: bool = True, extra: str = "") -> Path:
    """``sftp=False`` leaves out ``Subsystem sftp`` (such an sshd refuses SFTP); ``extra``: more lines."""
    config = base / "sshd_config"
    config.write_text(
        f"ListenAddress {address}\nPort {port}\nHostKey {base / 'host_ed25519'}\nPidFile {base / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {base / 'authorized_keys'}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
        + ("Subsystem sftp internal-sftp\n" if sftp else "")
        + f"SetEnv SLURM_CONF={base / 'slurm' / 'slurm.conf'}\n"  # the cluster of tests/slurm.py, when it runs
        + (extra or "LogLevel VERBOSE\n")
    )
    return config


@dataclass(frozen=True)
class Sshd:
    """One running sshd: where it listens, its host key (a known_hosts line without the name), its log."""

    address: str
    port: int
    host_key: str
    log: Path

    @property
    def known_hosts_name(self) -> str:
        return f"[{self.address}]:{self.port}"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _prepare_sshd(base: Path, authorized_key: str) -> str:
    """Host key and authorized_keys in ``base``; returns the host key's public line."""
    _require_sshd()
    base.mkdir(parents=True, exist_ok=True)
    host_key = _keygen(base / "host_ed25519")
    (base / "authorized_keys").write_text(authorized_key + "\n")
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # privilege separation directory sshd insists on
    return host_key


@contextmanager
def running_sshd(
    base: Path, *, authorized_key: str, address: str = "127.0.0.1", sftp: bool = True, extra: str = "",
    port: int | None = None, netns: Path | None = None,
) -> Iterator[Sshd]:  # fmt: skip
    """An sshd in the foreground with its own host key in ``base``, accepting ``authorized_key``; inside the
    network namespace ``netns`` (a /proc/PID/ns/net path) when given, where the tests cannot connect to it."""
    host_key = _prepare_sshd(base, authorized_key)
    port = port or free_port(address)
    log = base / "sshd.log"
    config = _sshd_config(base, port, address=address, sftp=sftp, extra=extra)
    command = [str(SSHD), "-D", "-e", "-f", str(config), "-p", str(port)]
    with log.open("wb") as log_file:
        process = subprocess.Popen(in_netns(netns, command), stdout=log_file, stderr=subprocess.STDOUT)
    try:
        if netns is None:
            _wait_for_banner(port, process, log, address)
        else:
            _wait_for_log_line(f"Server listening on {address} port {port}", process, log)
        yield Sshd(address=address, port=port, host_key=host_key, log=log)
    finally:
        process.terminate()
        process.wait(timeout=10)


def _require_sshd() -> None:
    if not SSHD.exists():
        pytest.fail(
            f"{SSHD} is missing: the SSH tests need a real OpenSSH server. Run `python3 dev.py test` (as root it "
            "installs openssh-server), or `apt-get install -y openssh-server`."
        )


def _ssh_client_files(base: Path, port: int, user: str, host_key: str) -> Path:
    home = base / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key}\n")
    (base / "stranger_known_hosts").write_text("")
    hosts = {
        "trainbox": f"IdentityFile {base / 'user_ed25519'}",
        "wrongkey": f"IdentityFile {base / 'wrong_ed25519'}",
        "stranger": f"IdentityFile {base / 'user_ed25519'}\n  UserKnownHostsFile {base / 'stranger_known_hosts'}",
    }
    (home / ".ssh" / "config").write_text(
        "".join(
            f"Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  {extra}\n\n"
            for alias, extra in hosts.items()
        )
    )
    return home


def _wait_for_banner(port: int, process: subprocess.Popen[bytes], log: Path, address: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"sshd exited with {process.returncode}:\n{log.read_text()}")
        try:
            with socket.create_connection((address, port), timeout=1) as sock:
                if sock.recv(4).startswith(b"SSH-"):
                    return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"sshd did not answer on {address}:{port} within {START_SECONDS:g} s:\n{log.read_text()}")


def _wait_for_log_line(line: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """For an sshd the tests cannot connect to: wait until its log says it listens."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if line in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            pytest.fail(f"sshd exited with {process.returncode}:\n{log.read_text()}")
        time.sleep(0.05)
    pytest.fail(f"sshd did not log {line!r} within {START_SECONDS:g} s:\n{log.read_text()}")


@pytest.fixture(scope="session")
def sshd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    _require_sshd()
    base = tmp_path_factory.mktemp("sshd")
    user_key = _keygen(base / "user_ed25519")
    _keygen(base / "wrong_ed25519")
    with running_sshd(base, authorized_key=user_key) as sshd:
        user = getpass.getuser()
        home = _ssh_client_files(base, sshd.port, user, sshd.host_key)
        yield SshServer(port=sshd.port, user=user, home=home, base=base)


@pytest.fixture
def ssh_home(sshd_server: SshServer, monkeypatch: pytest.MonkeyPatch) -> SshServer:
    """The test's HOME is the server's client side; no ssh agent, so only the configured keys count."""
    monkeypatch.setenv("HOME", str(sshd_server.home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return sshd_server


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word: a hung host, as SSH sees it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield int(sock.getsockname()[1])


# --------------------------------------------------------------------------- jump hosts


@dataclass(frozen=True)
class JumpPair:
    """A jump host on 127.0.0.1 that forwards only to the inner host and to itself (``PermitOpen``) and logs each
    forwarding request (LogLevel DEBUG1). ``netns``: the inner host's own network namespace, when it lives in
    one (the ``netns`` construction); None when it is on 127.0.0.2 beside the tests (``loopback``)."""

    jump: Sshd
    inner: Sshd
    key: Path  # the user's private key, accepted by both
    user: str
    netns: Path | None = None

    def forwards_to(self, sshd: Sshd) -> int:
        """How many forwarding (direct-tcpip) channels the jump host has opened to ``sshd`` so far."""
        return self.jump.log_text().count(f"target {sshd.address} port {sshd.port}")


def _permit(jump_port: int, inner: tuple[str, int]) -> str:
    return f"PermitOpen {inner[0]}:{inner[1]} 127.0.0.1:{jump_port}\nLogLevel DEBUG1\n"


@pytest.fixture(scope="session", params=["loopback", "netns"])
def jump_pair(request: pytest.FixtureRequest) -> JumpPair:
    """Each jump-host test runs on both constructions (see the module docstring)."""
    return request.getfixturevalue(f"{request.param}_jump_pair")


@pytest.fixture(scope="session")
def loopback_jump_pair(sshd_server: SshServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JumpPair]:
    """The jump host on 127.0.0.1, the inner host on 127.0.0.2, both in the tests' network namespace."""
    base = tmp_path_factory.mktemp("jump")
    user_key = (sshd_server.base / "user_ed25519.pub").read_text().strip()
    jump_port, inner_port = free_port(), free_port("127.0.0.2")
    permit = _permit(jump_port, ("127.0.0.2", inner_port))
    with (
        running_sshd(base / "jump", authorized_key=user_key, extra=permit, port=jump_port) as jump,
        running_sshd(base / "inner", authorized_key=user_key, address="127.0.0.2", port=inner_port) as inner,
    ):
        yield JumpPair(jump=jump, inner=inner, key=sshd_server.base / "user_ed25519", user=sshd_server.user)


@pytest.fixture(scope="session")
def netns_jump_pair(sshd_server: SshServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JumpPair]:
    """The inner host on 127.0.0.1:PORT inside a network namespace that has nothing but its loopback; in the
    tests' namespace that port is bound and never listened on, so connecting there is refused. The jump host is
    ``sshd -i`` run inside that namespace for each connection accepted on 127.0.0.1:JUMP_PORT, in the tests'
    namespace (how the tests reach it) and inside the inner one (so that it can forward to itself as well)."""
    reason = netns_unavailable()
    if reason is not None:
        pytest.skip(f"the inner host cannot be isolated in a network namespace: {reason}")
    base = tmp_path_factory.mktemp("jump-netns")
    user_key = (sshd_server.base / "user_ed25519.pub").read_text().strip()
    with closed_port("127.0.0.1") as inner_port, network_namespace() as netns:
        jump_port = free_port()
        permit = _permit(jump_port, ("127.0.0.1", inner_port))
        with (
            running_sshd(base / "inner", authorized_key=user_key, port=inner_port, netns=netns) as inner,
            inetd_sshd(base / "jump", authorized_key=user_key, port=jump_port, netns=netns, extra=permit) as jump,
        ):
            key = sshd_server.base / "user_ed25519"
            yield JumpPair(jump=jump, inner=inner, key=key, user=sshd_server.user, netns=netns)


@contextmanager
def inetd_sshd(base: Path, *, authorized_key: str, port: int, netns: Path, extra: str) -> Iterator[Sshd]:
    """``sshd -i`` inside ``netns`` for each connection to 127.0.0.1:PORT, in the tests' namespace and inside
    ``netns`` alike (tests/inetd.py accepts them); every session logs to one file."""
    host_key = _prepare_sshd(base, authorized_key)
    log = base / "sshd.log"
    sshd = [str(SSHD), "-i", "-e", "-f", str(_sshd_config(base, port, extra=extra))]
    inetd = [sys.executable, str(INETD), "127.0.0.1", str(port)]
    acceptors: list[subprocess.Popen[bytes]] = []
    try:
        with log.open("ab") as log_file:
            for command in ([*inetd, *in_netns(netns, sshd)], in_netns(netns, [*inetd, *sshd])):
                acceptors.append(
                    subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log_file, start_new_session=True)
                )
        for acceptor in acceptors:
            _wait_for_listening(acceptor, log)
        yield Sshd(address="127.0.0.1", port=port, host_key=host_key, log=log)
    finally:
        for acceptor in acceptors:  # each in its own process group, with the sessions it started
            with contextlib.suppress(ProcessLookupError):
                os.killpg(acceptor.pid, signal.SIGTERM)
            acceptor.wait(timeout=10)
            assert acceptor.stdout is not None
            acceptor.stdout.close()


def _wait_for_listening(acceptor: subprocess.Popen[bytes], log: Path) -> None:
    assert acceptor.stdout is not None
    ready, _, _ = select.select([acceptor.stdout], [], [], START_SECONDS)
    said = acceptor.stdout.readline() if ready else b""
    if not said.startswith(b"listening "):
        acceptor.poll()
        pytest.fail(
            f"tests/inetd.py did not start listening within {START_SECONDS:g} s (exit status {acceptor.returncode},"
            f" said {said!r}):\n{log.read_text(errors='replace')}"
        )


@dataclass(frozen=True)
class ProxyHome:
    """HOME for a test that goes through jump hosts: its ~/.ssh/config names every route (see `proxy_home`)."""

    pair: JumpPair
    home: Path

    @property
    def config(self) -> Path:
        return self.home / ".ssh" / "config"

    @property
    def known_hosts(self) -> Path:
        return self.home / ".ssh" / "known_hosts"

    def replace_host_key(self, sshd: Sshd, key_line: str) -> None:
        """known_hosts with ``sshd``'s key replaced by another one: the host key "changed"."""
        name = f"{sshd.known_hosts_name} "
        lines = [line for line in self.known_hosts.read_text().splitlines() if not line.startswith(name)]
        self.known_hosts.write_text("\n".join([*lines, f"{name}{key_line}"]) + "\n")


def _host_block(alias: str, sshd: Sshd, pair: JumpPair, known: Path, extra: str = "") -> str:
    return (
        f"Host {alias}\n  HostName {sshd.address}\n  Port {sshd.port}\n  User {pair.user}\n  IdentityFile {pair.key}\n"
        f"  IdentitiesOnly yes\n  UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n  BatchMode yes\n"
        f"  UpdateHostKeys no\n{extra}\n"
    )


@pytest.fixture
def proxy_home(jump_pair: JumpPair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProxyHome:
    """HOME with .ssh/config and known_hosts for the jump pair; no ssh agent. Host aliases:

    jump            the jump host, directly
    inner           ProxyJump jump
    inner-twohops   ProxyJump jump,USER@jump:PORT (the jump host, then through it to itself, then inner)
    inner-command   ProxyCommand ssh -F <this config> -W %h:%p jump (the real OpenSSH client)
    inner-blocked   ProxyJump jump to a port of the inner address the jump host may not forward to
    inner-direct    the inner host without a jump (refused in the ``netns`` construction)
    """
    return _proxy_home(jump_pair, tmp_path, monkeypatch)


@pytest.fixture
def netns_proxy_home(netns_jump_pair: JumpPair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProxyHome:
    """`proxy_home` for the ``netns`` construction only (skipped where it cannot be made)."""
    return _proxy_home(netns_jump_pair, tmp_path, monkeypatch)


def _proxy_home(pair: JumpPair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProxyHome:
    home = tmp_path / "proxy-home"
    (home / ".ssh").mkdir(parents=True)
    known = home / ".ssh" / "known_hosts"
    known.write_text("".join(f"{s.known_hosts_name} {s.host_key}\n" for s in (pair.jump, pair.inner)))
    blocked = dataclasses.replace(pair.inner, port=free_port(pair.inner.address))
    config = home / ".ssh" / "config"
    config.write_text(
        _host_block("jump", pair.jump, pair, known)
        + _host_block("inner", pair.inner, pair, known, "  ProxyJump jump\n")
        + _host_block("inner-twohops", pair.inner, pair, known, f"  ProxyJump jump,{pair.user}@jump:{pair.jump.port}\n")
        + _host_block("inner-command", pair.inner, pair, known, f"  ProxyCommand ssh -F {config} -W %h:%p jump\n")
        + _host_block("inner-blocked", blocked, pair, known, "  ProxyJump jump\n")
        + _host_block("inner-direct", pair.inner, pair, known)
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return ProxyHome(pair=pair, home=home)


# --------------------------------------------------------------------------- no SFTP


@pytest.fixture(scope="session")
def sshd_without_sftp(sshd_server: SshServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """An sshd without ``Subsystem sftp``: it refuses SFTP, and commands still run."""
    user_key = (sshd_server.base / "user_ed25519.pub").read_text().strip()
    with running_sshd(tmp_path_factory.mktemp("nosftp"), authorized_key=user_key, sftp=False) as sshd:
        yield sshd


@pytest.fixture
def exec_home(
    sshd_server: SshServer, sshd_without_sftp: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> SshServer:
    """HOME whose ~/.ssh/config has the alias ``nosftp`` for `sshd_without_sftp`; no ssh agent."""
    home = tmp_path / "exec-home"
    (home / ".ssh").mkdir(parents=True)
    known = home / ".ssh" / "known_hosts"
    known.write_text(f"{sshd_without_sftp.known_hosts_name} {sshd_without_sftp.host_key}\n")
    (home / ".ssh" / "config").write_text(
        f"Host nosftp\n  HostName 127.0.0.1\n  Port {sshd_without_sftp.port}\n  User {sshd_server.user}\n"
        f"  IdentityFile {sshd_server.base / 'user_ed25519'}\n  UserKnownHostsFile {known}\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return SshServer(port=sshd_without_sftp.port, user=sshd_server.user, home=home, base=sshd_server.base)
