"""A real OpenSSH server on 127.0.0.1 for the SSH tests, and a HOME whose ~/.ssh points at it.

`sshd_server` (session): host and user keys made by ssh-keygen, an sshd_config of our own (key login
only, its own AuthorizedKeysFile and PidFile in a temporary directory), and ``sshd -D -e`` in the
foreground. `ssh_home` (per test): HOME set to a directory holding ``.ssh/config`` and
``.ssh/known_hosts`` for that server, and no ssh agent, so the user's real ~/.ssh is never read or written.

Host aliases in that ssh config:
  trainbox   the right key and a known host key: everything works
  wrongkey   a key the server does not accept
  stranger   a known_hosts file (UserKnownHostsFile) that does not hold the server's key
"""

from __future__ import annotations

import getpass
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = Path("/usr/sbin/sshd")
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


def _sshd_config(base: Path, port: int) -> Path:
    config = base / "sshd_config"
    config.write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {base / 'host_ed25519'}\nPidFile {base / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {base / 'authorized_keys'}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
        "Subsystem sftp internal-sftp\nLogLevel VERBOSE\n"
        f"SetEnv SLURM_CONF={base / 'slurm' / 'slurm.conf'}\n"  # the cluster of tests/slurm.py, when it runs
    )
    return config


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


def _wait_for_banner(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"sshd exited with {process.returncode}:\n{log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                if sock.recv(4).startswith(b"SSH-"):
                    return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"sshd did not answer on 127.0.0.1:{port} within {START_SECONDS:g} s:\n{log.read_text()}")


@pytest.fixture(scope="session")
def sshd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    if not SSHD.exists():
        pytest.fail(
            f"{SSHD} is missing: the SSH tests need a real OpenSSH server. Run `python3 dev.py test` (as root it "
            "installs openssh-server), or `apt-get install -y openssh-server`."
        )
    base = tmp_path_factory.mktemp("sshd")
    host_key = _keygen(base / "host_ed25519")
    (base / "authorized_keys").write_text(_keygen(base / "user_ed25519") + "\n")
    _keygen(base / "wrong_ed25519")
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # privilege separation directory sshd insists on
    port = free_port()
    log = base / "sshd.log"
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            [str(SSHD), "-D", "-e", "-f", str(_sshd_config(base, port)), "-p", str(port)],
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for_banner(port, process, log)
        user = getpass.getuser()
        yield SshServer(port=port, user=user, home=_ssh_client_files(base, port, user, host_key), base=base)
    finally:
        process.terminate()
        process.wait(timeout=10)


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
