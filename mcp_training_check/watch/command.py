"""`training-check watch`'s command: the loop on the wall clock, printing to stdout, ended by a signal.

Ctrl-C (SIGINT) and SIGTERM (systemd, `kill`, tmux closing) end the watch between two statements of
the loop; the state store's transactions and run lock leave nothing half-written. The exit code says
which: 130 for Ctrl-C, 143 for SIGTERM (the shell's 128 + signal number), 0 when monitoring is over.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from ..errors import ConfigError
from ..service import Monitor
from .loop import REAL_SECONDS_PER_MINUTE, compressed_clock, refuse_an_unwatchable_run, watch_run

__all__ = ["EXIT_INTERRUPTED", "EXIT_TERMINATED", "watch_command"]

EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(Exception):
    """SIGTERM arrived."""


def _print(line: str) -> None:
    print(line, flush=True)  # one line per check, visible at once under tmux, systemd or a pipe


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def watch_command(run: str, *, act_on_stop: bool, seconds_per_minute: float = REAL_SECONDS_PER_MINUTE) -> int:
    """Watch ``run`` until monitoring is over (0), Ctrl-C (130) or SIGTERM (143)."""
    if not seconds_per_minute > 0:
        raise ConfigError(f"--seconds-per-minute must be a positive number of seconds, not {seconds_per_minute:g}")
    clock = compressed_clock(seconds_per_minute)
    speed = "" if seconds_per_minute == REAL_SECONDS_PER_MINUTE else f", {seconds_per_minute:g} s per minute"
    acting = "stops it on STOP as training-check.toml says" if act_on_stop else "never stops it (no --stop)"
    monitor = Monitor(clock=clock.now)
    try:
        refuse_an_unwatchable_run(monitor, run, act_on_stop=act_on_stop)  # before "watching …", not after it
        _print(f"watching {run}: one line per check, {acting}{speed}; Ctrl-C to quit")
        with _sigterm_raises():
            watch_run(monitor, run, act_on_stop=act_on_stop, clock=clock, emit=_print)
    except KeyboardInterrupt:
        print("\nwatch: interrupted (Ctrl-C)", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except Terminated:
        print("watch: terminated (SIGTERM)", file=sys.stderr, flush=True)
        return EXIT_TERMINATED
    finally:
        monitor.close()
    return 0
