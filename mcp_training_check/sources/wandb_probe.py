"""A W&B server that refuses the connection is answered at once, not after wandb's retries.

With nothing listening at the base URL, `wandb.Api` spends its whole timeout (and its start-up) before it
gives up: a check took 10–12 s to fall back to the log or say unreachable. A refused TCP connection is a
definite answer, so one connect to the server's host and port comes first. Only a refusal ends the read
there: a server that accepts slowly, answers slowly or cannot be resolved goes on to wandb as before, with
its full timeout, so no slow server is cut short.
"""

from __future__ import annotations

import socket
import urllib.request
from urllib.parse import urlsplit

from ..errors import SourceUnavailable

__all__ = ["PROBE_SECONDS", "refuse_fast"]

PROBE_SECONDS = 1.0
"""Longest wait for the connect: a host that neither accepts nor refuses by then goes on to wandb."""

_DEFAULT_PORTS = {"http": 80, "https": 443}


def refuse_fast(base_url: str | None, timeout_seconds: float) -> None:
    """Raise `SourceUnavailable` when nothing listens at ``base_url``. None (wandb's own default or its
    settings file decide the server), a proxy in the way, or any answer but a refusal: nothing is said."""
    address = _address(base_url)
    if address is None or _proxied(address[0]):
        return
    try:
        with socket.create_connection(address, timeout=min(PROBE_SECONDS, timeout_seconds)):
            return
    except ConnectionRefusedError as exc:
        raise SourceUnavailable(
            f"W&B at {base_url} refused the connection: nothing listens on {address[0]}:{address[1]} ({exc}); "
            "start the server or fix WANDB_BASE_URL (or the run's URL), or set log_fallback for this run in "
            "training-check.toml."
        ) from exc
    except OSError:  # a timeout, a name that does not resolve, no route: wandb decides, within its timeout
        return


def _address(base_url: str | None) -> tuple[str, int] | None:
    if not base_url:
        return None
    parts = urlsplit(base_url)
    if parts.hostname is None or parts.scheme not in _DEFAULT_PORTS:
        return None
    try:
        return parts.hostname, parts.port or _DEFAULT_PORTS[parts.scheme]
    except ValueError:  # a port out of range: wandb names that problem itself
        return None


def _proxied(host: str) -> bool:
    """Requests to ``host`` go through an HTTP(S) proxy: the direct connect says nothing about them."""
    proxies = urllib.request.getproxies()
    return bool(proxies.get("http") or proxies.get("https")) and not urllib.request.proxy_bypass(host)
