"""The action: stop the training where it runs, verify it ended, and keep the evidence.

    dispatch    which stop the config asks for, sending it, the incident and result that describe it
    local       a process on this machine: signal, grace wait, KILL, verify (`escalate` serves SSH too)
    ssh         the same sequence on the run's SSH host
    wandb       W&B's StopRun mutation and a bounded wait for the run to leave ``running``
    targets     what holds the training: a tmux or screen session, a configured command (and the sequence
                every target goes through); slurm: a Slurm job
    escalation  the sequence every stop follows: first signal, grace wait, KILL when allowed, wait again
    hosts       where a target's commands run: this machine; remote: the run's SSH host
    incidents   the incident record and its Markdown entry in the project's notes

Stop settings come only from ``training-check.toml``, never from a tool argument.
"""

from .dispatch import (
    KEY_METRICS_IN_INCIDENT,
    SentStop,
    already_stopped,
    gone_since_signalled,
    incident_for,
    no_stop_configured,
    send_stop,
    stop_result,
)
from .incidents import Incident, KeyMetric, render_incident, write_incident_note
from .local import StopAttempt, stop_local_process
from .wandb import WandbStopAttempt, stop_wandb_run

__all__ = [
    "KEY_METRICS_IN_INCIDENT",
    "Incident",
    "KeyMetric",
    "SentStop",
    "StopAttempt",
    "WandbStopAttempt",
    "already_stopped",
    "gone_since_signalled",
    "incident_for",
    "no_stop_configured",
    "render_incident",
    "send_stop",
    "stop_local_process",
    "stop_remote_process",
    "stop_result",
    "stop_wandb_run",
    "write_incident_note",
]


def __getattr__(name: str) -> object:
    """``stop.stop_remote_process`` without importing paramiko until an SSH stop needs it."""
    if name == "stop_remote_process":
        from .ssh import stop_remote_process

        return stop_remote_process
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
