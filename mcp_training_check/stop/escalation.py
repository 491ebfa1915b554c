"""The sequence every stop follows, whatever it stops (a pid here or over SSH, a tmux or screen session, a
Slurm job, a configured command): send the first signal, wait up to the grace period for the thing to be
gone, send KILL when allowed, wait again, and say how it ended. Callers word the outcome for what they stop.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Ending", "Escalation", "escalate_signals", "wait_gone"]


class Ending(enum.Enum):
    GONE = "gone within the grace period"
    NOT_KILLED = "still there after the grace period, and KILL was not allowed (or was the first signal)"
    KILLED = "gone after KILL"
    STUCK = "still there after KILL"


@dataclass
class Escalation:
    ending: Ending
    sent: list[str] = field(default_factory=list)  # the signals something received, in order


def escalate_signals(
    is_gone: Callable[[], bool],
    send: Callable[[str], bool],
    first: str,
    *,
    grace_seconds: float,
    kill_after_grace: bool,
    poll_seconds: float,
    confirm_seconds: float,
) -> Escalation:
    """SIG``first``, wait up to ``grace_seconds``, then KILL (when allowed) and wait up to ``confirm_seconds``.

    ``send`` returns False when nothing received the signal (the process was already gone); the wait that
    follows then tells whether it is gone.
    """
    escalation = Escalation(Ending.GONE)
    if send(first):
        escalation.sent.append(first)
    if wait_gone(is_gone, grace_seconds, poll_seconds):
        return escalation
    if first == "KILL" or not kill_after_grace:
        escalation.ending = Ending.NOT_KILLED
        return escalation
    if send("KILL"):
        escalation.sent.append("KILL")
    gone = wait_gone(is_gone, confirm_seconds, poll_seconds)
    escalation.ending = Ending.KILLED if gone else Ending.STUCK
    return escalation


def wait_gone(is_gone: Callable[[], bool], seconds: float, poll_seconds: float) -> bool:
    """True as soon as ``is_gone()`` is; False when ``seconds`` pass first (``is_gone`` is asked at least once)."""
    deadline = time.monotonic() + seconds
    while True:
        if is_gone():
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(poll_seconds, remaining))
