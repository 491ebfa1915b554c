"""Stopping a Slurm job (method = "slurm") on a real one-node Slurm started by the tests (tests/slurm.py):
a batch job that logs is signalled with scancel, KILLed when it ignores TERM, and verified gone from squeue;
by id and by name, on this machine and through the loopback sshd."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import pytest

from mcp_training_check.config import load_config
from mcp_training_check.models import StopMethod, StopOutcome
from mcp_training_check.service import Monitor
from mcp_training_check.stop.hosts import LocalHost
from mcp_training_check.stop.slurm import SlurmTarget
from mcp_training_check.stop.targets import escalate_target

from .slurm import SlurmCluster
from .sshd import SshServer
from .test_stop_targets import TRAINING

START_SECONDS = 30.0
GRACE_SECONDS = 2.0


def submit(cluster: SlurmCluster, tmp_path: Path, *flags: str) -> tuple[str, str, Path]:
    """sbatch a batch script that runs the logging training; wait until it logs. (job id, job name, log).

    With ``--ignore-term`` the script ``exec``s the training: a shell would die of the TERM itself and end
    the job (Slurm then kills what is left), so only a training that *is* the batch step can ignore it."""
    log = tmp_path / "train.log"
    (tmp_path / "train.py").write_text(TRAINING)
    script = tmp_path / "job.sh"
    exec_ = "exec " if "--ignore-term" in flags else ""
    script.write_text(f"#!/bin/sh\n{exec_}{sys.executable} {tmp_path / 'train.py'} {log} {' '.join(flags)}\n")
    name = f"tc{uuid.uuid4().hex[:10]}"
    job = cluster.sbatch(script, name, tmp_path / "slurm.out")
    deadline = time.monotonic() + START_SECONDS
    while not (log.exists() and log.read_text().count('"step"') >= 3):
        if time.monotonic() > deadline:
            pytest.fail(f"job {job} never logged (state {cluster.active_state(job)!r})")
        time.sleep(0.1)
    assert cluster.active_state(job) == "RUNNING"
    return job, name, log


def monitor_for(tmp_path: Path, stop: str, run: str | None = None) -> Monitor:
    (tmp_path / "training-check.toml").write_text(
        f'[runs.job]\nrun = "{run or tmp_path / "train.log"}"\nnotes = "notes.md"\n[runs.job.stop]\n{stop}\n'
    )
    return Monitor(config=load_config(tmp_path / "training-check.toml"))


def test_slurm_job_by_id_is_cancelled_with_term_and_verified_gone(slurm, tmp_path):
    job, _, log = submit(slurm, tmp_path)
    monitor = monitor_for(tmp_path, f'method = "slurm"\njob_id = "{job}"\ngrace_seconds = 20')
    result = monitor.stop_run("job", confirm=True, reason="loss diverged")
    assert result.outcome is StopOutcome.STOPPED and result.verified, result.summary
    assert result.method is StopMethod.SLURM and result.signals_sent == ["TERM"]
    assert slurm.active_state(job) == "", "squeue no longer lists the job as active"
    assert log.read_text().endswith("term\n"), "the training got TERM and exited by itself"
    incident = monitor.store.find_incident(monitor.context("job").key)
    assert incident is not None and incident["verified"] and f"Slurm job {job}" in incident["target"]
    assert f"slurm, Slurm job {job}" in (tmp_path / "notes.md").read_text()


def test_slurm_job_by_name_ignoring_term_is_killed(slurm, tmp_path):
    job, name, log = submit(slurm, tmp_path, "--ignore-term")
    target = SlurmTarget(LocalHost(), job_id=None, job_name=name)
    attempt = escalate_target(target, "TERM", grace_seconds=GRACE_SECONDS, kill_after_grace=True, poll_seconds=0.2)
    assert attempt.outcome is StopOutcome.STOPPED and attempt.verified, attempt.message
    assert attempt.signals_sent == ["TERM", "KILL"] and f"(id {job})" in attempt.target
    assert slurm.active_state(job) == "" and "term" not in log.read_text()


def test_slurm_job_ignoring_term_without_kill_is_requested(slurm, tmp_path):
    job, _, _ = submit(slurm, tmp_path, "--ignore-term")
    target = SlurmTarget(LocalHost(), job_id=job, job_name=None)
    attempt = escalate_target(target, "TERM", grace_seconds=GRACE_SECONDS, kill_after_grace=False, poll_seconds=0.2)
    assert attempt.outcome is StopOutcome.REQUESTED and not attempt.verified and attempt.signals_sent == ["TERM"]
    assert slurm.active_state(job) == "RUNNING"
    escalate_target(target, "KILL", grace_seconds=30, kill_after_grace=False, poll_seconds=0.2)
    assert slurm.active_state(job) == ""


def test_finished_and_unknown_jobs_are_already_stopped(slurm, tmp_path):
    job, _, _ = submit(slurm, tmp_path)
    escalate_target(SlurmTarget(LocalHost(), job_id=job, job_name=None), "KILL", grace_seconds=30,
                    kill_after_grace=False, poll_seconds=0.2)  # fmt: skip
    for target in (
        SlurmTarget(LocalHost(), job_id=job, job_name=None),
        SlurmTarget(LocalHost(), job_id="999999", job_name=None),
        SlurmTarget(LocalHost(), job_id=None, job_name="nosuchjobname"),
    ):
        attempt = escalate_target(target, "TERM", grace_seconds=1, kill_after_grace=True, poll_seconds=0.2)
        assert attempt.outcome is StopOutcome.ALREADY_STOPPED and attempt.signals_sent == []


def test_slurm_job_by_name_stopped_over_ssh(ssh_home: SshServer, slurm, tmp_path):
    job, name, log = submit(slurm, tmp_path)
    monitor = monitor_for(
        tmp_path, f'method = "slurm"\njob_name = "{name}"\nremote = true\ngrace_seconds = 20',
        run=ssh_home.url(tmp_path / "train.log"),
    )  # fmt: skip
    result = monitor.stop_run("job", confirm=True, reason="over ssh")
    assert result.outcome is StopOutcome.STOPPED and result.verified, result.summary
    assert result.signals_sent == ["TERM"] and slurm.active_state(job) == ""
    assert log.read_text().endswith("term\n")
