"""Stop a run through W&B: the `StopRun` mutation, then a bounded wait for the run to leave `running`.

W&B only sets a flag. The training process learns of it through its own wandb client (its stop poll,
about every 15 s), which then interrupts the main thread with SIGINT. A process that ignores SIGINT
(e.g. started with ``nohup cmd &`` from a non-interactive shell), an offline run, or a hung one never
stops this way. So the outcome is `STOPPED` only once W&B reports the run no longer running, and
`REQUESTED` ("requested, not confirmed") otherwise.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..models import RunRef, RunStatus, StopOutcome
from ..sources.wandb_api import ApiFactory, default_api_factory, run_info, wandb_errors

POLL_SECONDS = 2.0
"""How often the run's state is re-read while waiting for it to stop."""


@dataclass(frozen=True)
class WandbStopAttempt:
    outcome: StopOutcome
    verified: bool
    message: str
    final_status: RunStatus
    signals_sent: list[str] = field(default_factory=list)


def stop_wandb_run(
    ref: RunRef,
    *,
    verify_seconds: float,
    timeout_seconds: float,
    api_factory: ApiFactory | None = None,
    poll_seconds: float = POLL_SECONDS,
) -> WandbStopAttempt:
    """Flag the run stopped on its W&B server and wait up to ``verify_seconds`` for it to end."""
    path = f"{ref.entity}/{ref.project}/{ref.run_id}"
    factory = api_factory or default_api_factory(ref, timeout_seconds)
    where = ref.host or "the W&B server"
    api = factory()
    with wandb_errors(where=where, timeout_seconds=timeout_seconds, run=path):
        api.flush()
        run = api.run(path)
        status = run_info(run).status
        if status.has_ended:
            return WandbStopAttempt(
                StopOutcome.ALREADY_STOPPED,
                True,
                f"W&B says run {path} is already {status.value}; nothing sent",
                status,
            )
        run.stop()
    started = time.monotonic()
    deadline = started + verify_seconds
    while True:
        with wandb_errors(where=where, timeout_seconds=timeout_seconds, run=path):
            api.flush()
            status = run_info(api.run(path)).status
        if status.has_ended:  # finished, crashed, failed, killed, preempted: not preempting/unknown
            waited = time.monotonic() - started
            return WandbStopAttempt(
                StopOutcome.STOPPED, True,
                f"StopRun sent; W&B reports run {path} {status.value} after {waited:.0f} s",
                status, ["wandb:StopRun"],
            )  # fmt: skip
        if time.monotonic() >= deadline:
            break
        time.sleep(min(poll_seconds, max(deadline - time.monotonic(), 0.0)))
    return WandbStopAttempt(
        StopOutcome.REQUESTED, False,
        f"stop requested, not confirmed: StopRun sent, but run {path} was still running after "
        f"{verify_seconds:g} s. The training process learns of a W&B stop only through its own wandb client "
        "(about every 15 s) and then gets SIGINT; a process that ignores SIGINT (nohup … &), runs offline or "
        "hangs never stops this way. Check again later, or stop it on its machine (configure pid_file)",
        status, ["wandb:StopRun"],
    )  # fmt: skip
