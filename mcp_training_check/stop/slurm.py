"""A Slurm job as a stop target (``method = "slurm"``): by id, or every active job of ours with a given name.

The signal goes through ``scancel --full --signal=NAME`` (``--full``: to the batch script and its children
as well as to the job's steps, which is where a ``python train.py`` batch job runs); KILL after the grace
period is ``scancel --full --signal=KILL``. A pending job has nothing to signal and is cancelled outright.
"Gone" is read from ``squeue -t all`` (every state, including the finished ones it still remembers);
once squeue has forgotten the job (MinJobAge) it is asked of ``sacct``, and a job neither knows is gone.
"""

from __future__ import annotations

from ..errors import StopError
from .hosts import CommandResult, Host

__all__ = ["SlurmTarget"]

SLURM_KILL_CONFIRM_SECONDS = 30.0
"""KILL goes through slurmctld and the node's slurmd, then the job passes through COMPLETING (epilog)."""
FINISHED_STATES = frozenset(
    {
        "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
        "REVOKED", "TIMEOUT",
    }
)  # fmt: skip
"""Job states (squeue's %T, sacct's State) in which nothing of the job runs any more."""
_UNKNOWN_JOB = "Invalid job id"


class SlurmTarget:
    confirm_seconds = SLURM_KILL_CONFIRM_SECONDS

    def __init__(self, host: Host, *, job_id: str | None, job_name: str | None) -> None:
        self.host = host
        self.pids: list[int] = []  # Slurm signals the job's processes itself
        self.job_name = job_name
        self._ids: list[str] | None = [job_id] if job_id is not None else None
        self.what = f"Slurm job {job_id}{host.where}" if job_id else f"Slurm job(s) named {job_name!r}{host.where}"

    def job_ids(self) -> list[str]:
        """The job id, or the ids of our active jobs with the name (looked up once, then followed)."""
        if self._ids is None:
            result = self._run(["squeue", "--noheader", "--me", f"--name={self.job_name}", "--format=%i"])
            self._ids = result.stdout.split()
            if self._ids:
                self.what += f" (id {', '.join(self._ids)})"
        return self._ids

    def present(self) -> bool:
        return any(_active(self.state(job)) for job in self.job_ids())

    def state(self, job: str) -> str:
        """The job's state; "" when neither squeue nor sacct knows it any more."""
        result = self.host.run(["squeue", "--noheader", "--states=all", f"--jobs={job}", "--format=%T"])
        if result.exit_status == 127:
            raise StopError(f"`squeue` is not installed{self.host.where} (or not on the PATH); is it a Slurm node?")
        states = result.stdout.split()
        if result.exit_status == 0 and states:
            return _least_finished(states)
        if result.exit_status != 0 and _UNKNOWN_JOB not in result.stderr:
            raise StopError(f"`squeue --jobs={job}` failed{self.host.where}: {result.stderr or 'no output'}")
        accounted = self.host.run(["sacct", "--noheader", "--allocations", f"--jobs={job}", "--format=State"])
        states = [line.split()[0] for line in accounted.stdout.splitlines() if line.strip()]
        return _least_finished(states) if accounted.exit_status == 0 and states else ""

    def signal(self, name: str) -> bool:
        reached = False
        for job in self.job_ids():
            state = self.state(job)
            if not _active(state):
                continue
            argv = ["scancel", job] if state == "PENDING" else ["scancel", "--full", f"--signal={name}", job]
            result = self.host.run(argv)
            if result.exit_status == 0:
                reached = True
            elif _active(self.state(job)):
                raise StopError(f"`{' '.join(argv)}` failed{self.host.where}: {result.stderr or result.exit_status}")
        return reached

    def _run(self, argv: list[str]) -> CommandResult:
        result = self.host.run(argv)
        if result.exit_status == 127:
            raise StopError(f"`{argv[0]}` is not installed{self.host.where} (or not on the PATH).")
        if result.exit_status != 0:
            raise StopError(f"`{' '.join(argv)}` failed{self.host.where}: {result.stderr or 'no output'}")
        return result


def _active(state: str) -> bool:
    """Known to Slurm and not finished ("" is a job neither squeue nor sacct knows: long gone, or never was)."""
    return bool(state) and state not in FINISHED_STATES


def _least_finished(states: list[str]) -> str:
    """One state for the job: a still-running one (array tasks, steps) wins over the finished ones."""
    running = [state for state in states if state.rstrip("+") not in FINISHED_STATES]
    return (running or states)[0].rstrip("+")
