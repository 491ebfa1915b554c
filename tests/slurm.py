"""A one-node Slurm cluster on this machine for the Slurm stop tests: munged, slurmctld and slurmd (Debian's
``munge`` and ``slurm-wlm``) started in the foreground with a key, sockets, state and spool directories and a
minimal ``slurm.conf`` of their own in a temporary directory, on free ports. Nothing under /etc is used.

`slurm_cluster` (session) starts it once; `slurm` (per test) sets ``SLURM_CONF`` so ``sbatch``, ``squeue``
and ``scancel`` find it. The sshd of tests/sshd.py sets the same ``SLURM_CONF`` (``SetEnv``) for its
sessions, at ``SshServer.base / "slurm" / "slurm.conf"``, which is where this cluster writes it.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .sshd import SshServer, free_port

START_SECONDS = 60.0
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel")
MEMORY_MARGIN_MB = 256  # RealMemory must not exceed what slurmd finds, or the node is refused as INVAL


@dataclass(frozen=True)
class SlurmCluster:
    conf: Path
    base: Path

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def sbatch(self, script: Path, name: str, log: Path) -> str:
        done = subprocess.run(
            ["sbatch", "--parsable", f"--job-name={name}", f"--output={log}", str(script)],
            capture_output=True, text=True, env=self.env(), check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().split(";")[0]

    def active_state(self, job: str) -> str:
        """The job's state while squeue lists it among active jobs (its default), else ""."""
        done = subprocess.run(
            ["squeue", "--noheader", f"--jobs={job}", "--format=%T"], capture_output=True, text=True, env=self.env()
        )
        return done.stdout.strip()


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024 - MEMORY_MARGIN_MB
    return 1024


def _slurm_conf(base: Path, munge_socket: Path) -> str:
    return "\n".join(
        [
            "ClusterName=trainingcheck",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={munge_socket}",
            f"StateSaveLocation={base / 'state'}",
            f"SlurmdSpoolDir={base / 'spool'}",
            f"SlurmctldPidFile={base / 'slurmctld.pid'}",
            f"SlurmdPidFile={base / 'slurmd.pid'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "ReturnToService=2",
            "KillWait=5",
            f"SlurmctldLogFile={base / 'slurmctld.log'}",
            f"SlurmdLogFile={base / 'slurmd.log'}",
            f"NodeName=localhost CPUs={os.cpu_count() or 1} RealMemory={_memory_mb()} State=UNKNOWN",
            "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


def _skip_reason() -> str | None:
    missing = [program for program in PROGRAMS if shutil.which(program) is None]
    if missing:
        return f"{', '.join(missing)} not installed (python3 dev.py test installs slurm-wlm and munge as root)"
    if os.geteuid() != 0:
        return "slurmd launches jobs as their owner with setuid, so it must run as root"
    return None


def _wait_idle(cluster: SlurmCluster, daemons: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        for daemon in daemons:
            if daemon.poll() is not None:
                pytest.fail(f"{daemon.args[0]} exited with {daemon.returncode}:\n{_logs(cluster.base)}")
        sinfo = ["sinfo", "--noheader", "--format=%T"]
        state = subprocess.run(sinfo, capture_output=True, text=True, env=cluster.env())
        if state.stdout.strip() == "idle":
            return
        time.sleep(0.2)
    pytest.fail(f"the Slurm node did not become idle within {START_SECONDS:g} s:\n{_logs(cluster.base)}")


def _logs(base: Path) -> str:
    return "\n".join(f"== {path.name}\n{path.read_text()[-3000:]}" for path in sorted(base.glob("*.log")))


@pytest.fixture(scope="session")
def slurm_cluster(sshd_server: SshServer) -> Iterator[SlurmCluster]:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    base = sshd_server.base / "slurm"
    for directory in ("munge", "state", "spool"):
        (base / directory).mkdir(parents=True, exist_ok=True)
    key = base / "munge" / "munge.key"
    key.write_bytes(os.urandom(128))
    key.chmod(0o600)
    socket = base / "munge" / "munge.socket"
    conf = base / "slurm.conf"
    conf.write_text(_slurm_conf(base, socket))
    cluster = SlurmCluster(conf=conf, base=base)
    daemons: list[subprocess.Popen[bytes]] = []
    try:
        munge = [
            "munged", "--foreground", "--force", f"--socket={socket}", f"--key-file={key}",
            f"--pid-file={base / 'munge' / 'munged.pid'}", f"--log-file={base / 'munged.log'}",
            f"--seed-file={base / 'munge' / 'seed'}",
        ]  # fmt: skip
        daemons.append(_start(munge, base / "munged.out.log"))
        _wait_for(socket, daemons[0], base)
        daemons.append(_start(["slurmctld", "-D", "-i", "-f", str(conf)], base / "slurmctld.out.log"))
        daemons.append(_start(["slurmd", "-D", "-N", "localhost", "-f", str(conf)], base / "slurmd.out.log"))
        _wait_idle(cluster, daemons)
        yield cluster
    finally:
        if len(daemons) == 3:  # a failed test may leave its job running: no training outlives the cluster
            subprocess.run(["scancel", f"--user={getpass.getuser()}"], env=cluster.env(), capture_output=True)
            _wait_no_jobs(cluster)
        for daemon in reversed(daemons):
            daemon.terminate()
            try:
                daemon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait(timeout=5)


def _wait_no_jobs(cluster: SlurmCluster) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        listed = subprocess.run(["squeue", "--noheader"], capture_output=True, text=True, env=cluster.env())
        if listed.returncode != 0 or not listed.stdout.strip():
            return
        time.sleep(0.2)


def _start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)


def _wait_for(socket: Path, daemon: subprocess.Popen[bytes], base: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while not socket.exists():
        if daemon.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"munged did not create {socket}:\n{_logs(base)}")
        time.sleep(0.05)


@pytest.fixture
def slurm(slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> SlurmCluster:
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    return slurm_cluster
