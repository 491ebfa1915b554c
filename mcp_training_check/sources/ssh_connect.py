"""SSH connections made the way `ssh` would make them, with paramiko's failures turned into fixes.

- Where: ``[user@]host[:port]`` from the run, resolved through ``~/.ssh/config`` (HostName, User, Port,
  IdentityFile, UserKnownHostsFile); what the run says explicitly wins, as on the ssh command line.
- Who the server is: host keys from ``~/.ssh/known_hosts`` (or the config's UserKnownHostsFile) and
  ``/etc/ssh/ssh_known_hosts``. An unknown key is *rejected*, never added: a tool an agent calls must not
  trust a machine on first sight. Nothing is ever written to a known_hosts file.
- Who we are: the ssh agent, ``~/.ssh/id_*`` and the config's IdentityFile (paramiko's defaults).
- How long: one ``timeout_seconds`` bounds connecting, the banner, authentication, opening a channel and
  each read or command afterwards, so a dead host gives an error within that time instead of a hang.

- Through what: ``ProxyJump`` hops (each connected and its host key checked like the host's, the next
  one reached through a ``direct-tcpip`` channel of the previous one) or a ``ProxyCommand`` (run by
  ``/bin/sh``, tokens expanded as ssh does: ``ssh_proxy``); paramiko applies neither by itself.
"""

from __future__ import annotations

import dataclasses
import getpass
import os
import shlex
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, TypeAlias

import paramiko

from ..errors import TrainingCheckError
from . import ssh_proxy

__all__ = [
    "DEFAULT_SSH_TIMEOUT_SECONDS",
    "RemoteResult",
    "SshTarget",
    "UnknownHostKey",
    "resolve_target",
    "run_remote",
    "ssh_client",
]

DEFAULT_SSH_TIMEOUT_SECONDS = 10.0
SSH_CONFIG = "~/.ssh/config"
USER_KNOWN_HOSTS = "~/.ssh/known_hosts"
SYSTEM_KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts"
DEFAULT_PORT = 22
REMOTE_OUTPUT_MAX_BYTES = 4096  # every command we run prints a line or two


@dataclass(frozen=True)
class SshTarget:
    """One remote machine, after ``~/.ssh/config`` was applied."""

    host: str  # as the run names it (may be an alias of ~/.ssh/config)
    hostname: str
    port: int
    user: str
    identity_files: tuple[str, ...]
    known_hosts_files: tuple[str, ...]
    jumps: tuple[SshTarget, ...] = ()  # ProxyJump hops, the first one connected first
    proxy_command: str | None = None  # ProxyCommand, tokens expanded

    @property
    def proxied(self) -> bool:
        return bool(self.jumps) or self.proxy_command is not None

    @property
    def where(self) -> str:
        """``user@host:port``, naming the alias too when ~/.ssh/config renamed it, and the proxy if any."""
        alias = f" (Host {self.host} in {SSH_CONFIG})" if self.host != self.hostname else ""
        if self.jumps:
            alias += f" via ProxyJump {','.join(hop.host for hop in self.jumps)}"
        elif self.proxy_command is not None:
            alias += f" via ProxyCommand `{self.proxy_command}`"
        return f"{self.user}@{self.hostname}:{self.port}{alias}"

    @property
    def ssh_command(self) -> str:
        """The command that makes the same connection by hand, for error messages."""
        if self.proxied:  # through the alias, so that ssh applies the same proxy
            return f"ssh -p {self.port} {self.user}@{self.host} true"
        return f"ssh -p {self.port} {self.user}@{self.hostname} true"

    @property
    def keyscan_command(self) -> str:
        return f"ssh-keyscan -p {self.port} {self.hostname} >> {self.known_hosts_files[0]}"


class UnknownHostKey(paramiko.SSHException):
    """The server's host key is in no known_hosts file (raised by `_RejectUnknownHost`)."""

    def __init__(self, hostname: str, key: paramiko.PKey) -> None:
        super().__init__(f"host key of {hostname} is unknown")
        self.key_type = key.get_name()
        self.fingerprint = key.fingerprint


class _RejectUnknownHost(paramiko.MissingHostKeyPolicy):
    """paramiko's RejectPolicy, but raising an error that carries the offered key's fingerprint."""

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        raise UnknownHostKey(hostname, key)


# --------------------------------------------------------------------------- where


def resolve_target(spec: str, error: type[TrainingCheckError]) -> SshTarget:
    """``[user@]host[:port]`` (a RunRef's host) through ``~/.ssh/config``; ``error`` is what to raise."""
    return _resolve(spec, error, depth=0, with_proxy=True)


def _resolve(spec: str, error: type[TrainingCheckError], *, depth: int, with_proxy: bool) -> SshTarget:
    user, _, hostport = spec.rpartition("@")
    host, port = _split_port(hostport, spec, error)
    options = _ssh_config(host, error)
    known = options.get("userknownhostsfile", USER_KNOWN_HOSTS).split()
    target = SshTarget(
        host=host,
        hostname=options.get("hostname", host),
        port=port or int(options.get("port", DEFAULT_PORT)),
        user=user or options.get("user") or getpass.getuser(),
        identity_files=tuple(_expand(path) for path in options.get("identityfile", []) if Path(_expand(path)).exists()),
        known_hosts_files=(*(_expand(path) for path in known), SYSTEM_KNOWN_HOSTS),
    )
    jump, command = ssh_proxy.option(options, "proxyjump"), ssh_proxy.option(options, "proxycommand")
    if not with_proxy or (jump is None and command is None):
        return target
    if depth >= ssh_proxy.MAX_PROXY_DEPTH:
        raise error(
            f"{SSH_CONFIG}: host {host} is reached through more than {ssh_proxy.MAX_PROXY_DEPTH} jump hosts, "
            "which looks like a ProxyJump loop; check the ProxyJump lines (`ssh -G HOST | grep -i proxy`). A "
            "ProxyJump under `Host *` applies to the jump host too: exclude it (`Host * !bastion`)."
        )
    try:
        if jump is not None and command is not None:
            raise ssh_proxy.ProxyError(
                "both ProxyJump and ProxyCommand are set and ssh would use whichever comes first; keep one"
            )
        if jump is not None:
            hops = ssh_proxy.split_jump_hops(jump)
            first = _resolve(hops[0], error, depth=depth + 1, with_proxy=True)
            rest = [_resolve(hop, error, depth=depth + 1, with_proxy=False) for hop in hops[1:]]
            return dataclasses.replace(target, jumps=(first, *rest))
        assert command is not None
        expanded = ssh_proxy.expand_proxy_command(
            command, hostname=target.hostname, host=host, port=target.port, user=target.user
        )
        return dataclasses.replace(target, proxy_command=expanded)
    except ssh_proxy.ProxyError as exc:
        raise error(f"{SSH_CONFIG}, Host {host}: {exc} (check with `ssh -G {shlex.quote(host)}`).") from exc


def _split_port(hostport: str, spec: str, error: type[TrainingCheckError]) -> tuple[str, int | None]:
    if hostport.startswith("["):  # an IPv6 address: [::1] or [::1]:2222
        host, _, rest = hostport[1:].partition("]")
        colon, port = rest[:1], rest[1:]
    else:
        host, colon, port = hostport.rpartition(":")
        host = host if colon else hostport
    if not colon:
        return host, None
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise error(f"ssh host {spec!r}: port {port!r} is not a number from 1 to 65535.")
    return host, int(port)


def _ssh_config(host: str, error: type[TrainingCheckError]) -> paramiko.SSHConfigDict:
    path = Path(_expand(SSH_CONFIG))
    if not path.is_file():
        return paramiko.SSHConfigDict({"hostname": host})
    try:
        return _RawProxyConfig.from_path(str(path)).lookup(host)
    except (paramiko.SSHException, OSError, ValueError) as exc:
        raise error(f"{path}: cannot use it for host {host} ({exc}); fix it (check with `ssh -G {host}`).") from exc


class _RawProxyConfig(paramiko.SSHConfig):
    """paramiko's parser, leaving ProxyCommand/ProxyJump tokens alone: paramiko expands them with the
    config's user and port (not the run's) and without ``%%``; ``ssh_proxy`` expands them as ssh does."""

    TOKENS_BY_CONFIG_KEY: ClassVar[dict[str, list[str]]] = {
        key: tokens
        for key, tokens in paramiko.SSHConfig.TOKENS_BY_CONFIG_KEY.items()
        if key not in ("proxycommand", "proxyjump")
    }


def _expand(path: str) -> str:
    return os.path.expanduser(path)


# --------------------------------------------------------------------------- connect


@contextmanager
def ssh_client(
    target: SshTarget, *, timeout_seconds: float, error: type[TrainingCheckError]
) -> Iterator[paramiko.SSHClient]:
    """A connected client, through the target's jump hosts or ProxyCommand; every SSH failure inside the
    block becomes ``error`` with the fix in it. Each hop is closed after the connection through it."""
    with ExitStack() as stack:
        sock = _proxy_socket(target, stack, timeout_seconds, error)
        yield stack.enter_context(_client(target, sock, timeout_seconds, error))


Sock: TypeAlias = paramiko.Channel | ssh_proxy.ProxyProcess | None


@contextmanager
def _client(
    target: SshTarget, sock: Sock, timeout_seconds: float, error: type[TrainingCheckError]
) -> Iterator[paramiko.SSHClient]:
    client = paramiko.SSHClient()
    try:
        with _proxy_failure(target, sock, error), ssh_errors(target, timeout_seconds=timeout_seconds, error=error):
            for path in target.known_hosts_files:
                if Path(path).is_file():
                    client.load_system_host_keys(path)  # "system": paramiko never writes these back
            client.set_missing_host_key_policy(_RejectUnknownHost())
            _connect(client, target, timeout_seconds, sock)
            yield client
    finally:
        client.close()


def _proxy_socket(target: SshTarget, stack: ExitStack, timeout_seconds: float, error: type[TrainingCheckError]) -> Sock:
    """What the connection to ``target`` runs over: a ProxyCommand, the last jump host's channel, or None."""
    if target.proxy_command is not None:
        try:
            proxy = ssh_proxy.ProxyProcess(target.proxy_command)
        except OSError as exc:
            raise error(f"the ProxyCommand of {target.where} did not start: {exc}; fix it in {SSH_CONFIG}.") from exc
        stack.callback(proxy.close)
        return proxy
    sock: Sock = None
    for index, hop in enumerate(target.jumps):
        after = target.jumps[index + 1] if index + 1 < len(target.jumps) else target
        try:
            if index == 0:
                sock = _proxy_socket(hop, stack, timeout_seconds, error)  # only the first hop's own proxy counts
            hop_client = stack.enter_context(_client(hop, sock, timeout_seconds, error))
            with ssh_errors(hop, timeout_seconds=timeout_seconds, error=error):
                sock = _forward(hop_client, hop, after, timeout_seconds)
        except TrainingCheckError as exc:
            raise error(f"jump host {hop.host} (ProxyJump of {target.host}): {exc}") from exc
    return sock


def _forward(client: paramiko.SSHClient, hop: SshTarget, after: SshTarget, timeout_seconds: float) -> paramiko.Channel:
    """A ``direct-tcpip`` channel from ``hop`` to the next host, as ``ssh -J`` opens it."""
    transport = client.get_transport()
    assert transport is not None  # connected just before
    try:
        return transport.open_channel(
            "direct-tcpip", (after.hostname, after.port), ("127.0.0.1", 0), timeout=timeout_seconds
        )
    except paramiko.ChannelException as exc:
        raise JumpRefused(hop, after, exc.text) from exc


class JumpRefused(paramiko.SSHException):
    """A jump host would not open the connection to the next host (translated by `ssh_errors`)."""

    def __init__(self, hop: SshTarget, after: SshTarget, reason: str) -> None:
        super().__init__(f"{hop.hostname} refused to connect on to {after.hostname}:{after.port}: {reason}")
        self.after, self.reason = after, reason


@contextmanager
def _proxy_failure(target: SshTarget, sock: Sock, error: type[TrainingCheckError]) -> Iterator[None]:
    """When a connection through a ProxyCommand fails and the command has ended, say how it ended."""
    try:
        yield
    except TrainingCheckError as exc:
        ended = sock.failure() if isinstance(sock, ssh_proxy.ProxyProcess) else None
        if ended is None:
            raise
        raise error(
            f"the ProxyCommand of {target.where} ended ({ended}), and the connection through it with it. Fix "
            f"it in {SSH_CONFIG}; `{target.ssh_command}` runs it the same way."
        ) from exc


def _connect(client: paramiko.SSHClient, target: SshTarget, timeout_seconds: float, sock: Sock) -> None:
    """``client.connect`` with every stage bounded, raising the transport's own failure.

    When the server never sends its banner, paramiko's transport thread records "Error reading SSH
    protocol banner", but ``connect`` may stop waiting first (after ``timeout``) and fail with "No existing
    session" while that thread still waits. Both mean the handshake did not finish in time.
    """
    try:
        client.connect(
            target.hostname,
            port=target.port,
            username=target.user,
            key_filename=list(target.identity_files) or None,
            timeout=timeout_seconds,
            banner_timeout=timeout_seconds,
            auth_timeout=timeout_seconds,
            channel_timeout=timeout_seconds,
            sock=sock,
        )
    except (paramiko.AuthenticationException, paramiko.BadHostKeyException, UnknownHostKey):
        raise
    except paramiko.SSHException as exc:
        transport = client.get_transport()
        cause = (transport.get_exception() if transport is not None else None) or exc
        if "protocol banner" in str(cause) or "No existing session" in str(cause):
            raise TimeoutError(f"the SSH handshake did not finish within {timeout_seconds:g} s") from cause
        if cause is not exc:
            raise cause from exc
        raise


@contextmanager
def ssh_errors(target: SshTarget, *, timeout_seconds: float, error: type[TrainingCheckError]) -> Iterator[None]:
    """Translate paramiko's and the socket layer's exceptions into ``error`` naming the fix."""
    try:
        yield
    except TrainingCheckError:
        raise
    except UnknownHostKey as exc:
        raise error(_unknown_host_key(target, exc)) from exc
    except paramiko.BadHostKeyException as exc:
        raise error(_changed_host_key(target, exc)) from exc
    except JumpRefused as exc:
        raise error(
            f"{exc}. Check that {target.where} can reach {exc.after.hostname}:{exc.after.port} and that its sshd "
            "allows forwarding there (AllowTcpForwarding, PermitOpen)."
        ) from exc
    except paramiko.AuthenticationException as exc:
        raise error(_auth_failed(target, exc)) from exc
    except TimeoutError as exc:
        raise error(
            f"{target.where} did not answer within {timeout_seconds:g} s (ssh_timeout_seconds); check that the "
            f"machine is up and reachable (`{target.ssh_command}`), or set log_fallback for this run."
        ) from exc
    except paramiko.ssh_exception.NoValidConnectionsError as exc:
        raise error(
            f"nothing accepts SSH connections at {target.hostname}:{target.port} ({exc.strerror or exc}); check "
            "the port (ssh://host:PORT/path or Port in ~/.ssh/config) and that sshd runs there."
        ) from exc
    except socket.gaierror as exc:
        raise error(
            f"cannot resolve the host name {target.hostname!r} ({exc}); check its spelling, or add a Host "
            f"entry with HostName to {SSH_CONFIG}."
        ) from exc
    except (paramiko.SSHException, EOFError, OSError) as exc:
        raise error(
            f"SSH to {target.where} failed: {exc or type(exc).__name__}; try `{target.ssh_command}` to see why, "
            "or set log_fallback for this run."
        ) from exc


def _unknown_host_key(target: SshTarget, exc: UnknownHostKey) -> str:
    files = ", ".join(target.known_hosts_files)
    return (
        f"the host key of {target.where} is not in known_hosts ({files}), so the connection was refused and "
        f"nothing was read. The server offered {exc.key_type} {exc.fingerprint}: confirm that fingerprint with "
        f"the machine's owner, then {_learn_key(target)}."
    )


def _learn_key(target: SshTarget) -> str:
    """How to put the host's key into known_hosts; ssh-keyscan cannot go through a proxy."""
    if target.proxied:
        return f"connect once with `{target.ssh_command.removesuffix(' true')}` (through the same proxy) and accept it"
    return (
        f"run `{target.keyscan_command}` (or connect once with `ssh -p {target.port} {target.user}@{target.hostname}` "
        "and accept it)"
    )


def _changed_host_key(target: SshTarget, exc: paramiko.BadHostKeyException) -> str:
    name = target.hostname if target.port == DEFAULT_PORT else f"[{target.hostname}]:{target.port}"
    return (
        f"the host key of {target.where} CHANGED: it offered {exc.key.get_name()} {exc.key.fingerprint}, "
        f"known_hosts holds {exc.expected_key.fingerprint}. Someone may be intercepting the connection; if you "
        f"know the machine was reinstalled, run `ssh-keygen -R {shlex.quote(name)}` and then "
        f"{_learn_key(target)}."
    )


def _auth_failed(target: SshTarget, exc: paramiko.AuthenticationException) -> str:
    keys = ", ".join(["the ssh agent", "~/.ssh/id_*", *target.identity_files])
    return (
        f"{target.where} refused to log in {target.user} ({exc}); tried {keys}. Add your public key to "
        f"~/.ssh/authorized_keys of {target.user} there (`ssh-copy-id -p {target.port} "
        f"{target.user}@{target.hostname}`), or set IdentityFile for Host {target.host} in {SSH_CONFIG}; "
        f"`{target.ssh_command}` must work without a password."
    )


# --------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class RemoteResult:
    exit_status: int
    stdout: str
    stderr: str


def run_remote(client: paramiko.SSHClient, argv: list[str], *, timeout_seconds: float) -> RemoteResult:
    """Run one command on the remote host, every argument quoted; bounded in time and output.

    Raises ``TimeoutError`` (translated by `ssh_errors`) when it does not finish in time.
    """
    return run_remote_script(client, " ".join(shlex.quote(arg) for arg in argv), timeout_seconds=timeout_seconds)


def run_remote_script(client: paramiko.SSHClient, script: str, *, timeout_seconds: float) -> RemoteResult:
    """Run a shell command line the caller built from constants and `shlex.quote`-d values."""
    stdin, stdout, stderr = client.exec_command(script, timeout=timeout_seconds)
    stdin.close()
    out = stdout.read(REMOTE_OUTPUT_MAX_BYTES)
    err = stderr.read(REMOTE_OUTPUT_MAX_BYTES)
    if not stdout.channel.status_event.wait(timeout_seconds):
        raise TimeoutError(f"remote command did not finish within {timeout_seconds:g} s")
    return RemoteResult(
        stdout.channel.exit_status, out.decode("utf-8", "replace").strip(), err.decode("utf-8", "replace").strip()
    )
