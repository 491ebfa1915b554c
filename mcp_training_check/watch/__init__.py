"""`training-check watch RUN`: the skill's check loop in a terminal, for people without an agent.

    loop      `watch_run`: check, one line per check, review / stop / reschedule as the skill does, sleep
              until the next check; the clock and the sleep are passed in (`WatchClock`)
    command   `watch_command`: the CLI's entry (Ctrl-C and SIGTERM end it cleanly, exit 130 / 143)

Uses `service.Monitor` like the MCP server and the CLI do; never stops a run unless asked to (--stop).
"""

from .command import EXIT_INTERRUPTED, EXIT_TERMINATED, watch_command
from .loop import REAL_SECONDS_PER_MINUTE, WatchClock, compressed_clock, watch_run

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "REAL_SECONDS_PER_MINUTE",
    "WatchClock",
    "compressed_clock",
    "watch_command",
    "watch_run",
]
