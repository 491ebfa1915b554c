"""Streamable HTTP: loopback by default, a static bearer token anywhere else.

The server takes one static token (``--token`` or ``TRAINING_CHECK_HTTP_TOKEN``); it has no OAuth. MCP
clients that get a 401 start OAuth discovery (RFC 9728 protected-resource metadata, RFC 8414
authorization-server metadata, then dynamic client registration at ``/register``), and report whatever
that last step got. So:

- a request without the token, or with a wrong one, gets 401 with ``WWW-Authenticate: Bearer
  error="invalid_token", error_description="bearer token required ..."`` and the same words as a JSON-RPC
  error body (what the Python SDK and the Inspector's ``--stored-auth-only`` show);
- the discovery documents (``/.well-known/...``) answer 404 without asking for the token: no OAuth is
  advertised that the server could not honour;
- ``/register``, ``/authorize`` and ``/token`` answer 404 with an OAuth error body saying "bearer token
  required" and how to send it, which is what clients then show (Claude Code: "Dynamic Client
  Registration rejected (HTTP 404): bearer token required: ...").
"""

from __future__ import annotations

import hmac
import json
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import TrainingCheckError

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["LOOPBACK_HOSTS", "TOKEN_ENV", "TOKEN_REQUIRED", "bearer_guard", "serve_http"]

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
TOKEN_ENV = "TRAINING_CHECK_HTTP_TOKEN"
TOKEN_REQUIRED = (
    "bearer token required: this server takes a static token and has no OAuth. Send the header "
    f"'Authorization: Bearer <token>' with the server's --token / {TOKEN_ENV} (claude mcp add --transport "
    "http NAME URL --header 'Authorization: Bearer <token>')"
)
OAUTH_PATHS = ("/register", "/authorize", "/token")
"""Where OAuth clients fall back to when discovery finds no metadata (MCP 2025-03-26 default endpoints)."""

UNAUTHORIZED_CODE = -32001
"""JSON-RPC error code of the 401 body (the implementation-defined server-error range; MCP servers commonly use
-32001 for an unauthenticated request). A JSON-RPC body is what the Python SDK client reports as the error."""

AsgiApp = Callable[..., Awaitable[None]]


def bearer_guard(app: AsgiApp, token: str) -> AsgiApp:
    """ASGI wrapper refusing HTTP requests without ``Authorization: Bearer <token>``, as described above."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        if path.startswith("/.well-known/"):
            await _answer(send, 404, {"error": "not_found", "error_description": "no OAuth here: " + TOKEN_REQUIRED})
            return
        headers = dict(scope.get("headers") or [])
        if hmac.compare_digest(headers.get(b"authorization", b""), expected):
            await app(scope, receive, send)
            return
        if path in OAUTH_PATHS:
            await _answer(send, 404, {"error": "invalid_request", "error_description": TOKEN_REQUIRED})
            return
        challenge = f'Bearer realm="training-check", error="invalid_token", error_description="{TOKEN_REQUIRED}"'
        rejection = {"jsonrpc": "2.0", "id": None, "error": {"code": UNAUTHORIZED_CODE, "message": TOKEN_REQUIRED}}
        await _answer(send, 401, rejection, challenge)

    return guarded


async def _answer(send: Any, status: int, body: dict[str, Any], challenge: str | None = None) -> None:
    headers = [(b"content-type", b"application/json")]
    if challenge is not None:
        headers.append((b"www-authenticate", challenge.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(body).encode() + b"\n"})


def serve_http(server: MCPServer, *, host: str, port: int, token: str | None) -> None:
    """Streamable HTTP on ``host:port``; any address but loopback requires a bearer token (stop_run kills
    training jobs)."""
    import uvicorn

    if not 0 <= port <= 65535:
        raise TrainingCheckError(f"port {port} is not a port number from 0 to 65535: pick one such as 8765.")
    if host not in LOOPBACK_HOSTS and not token:
        raise TrainingCheckError(
            f"refusing to listen on {host} without a bearer token: stop_run kills training jobs. "
            f"Set {TOKEN_ENV} (or --token) or listen on 127.0.0.1."
        )
    app: Any = server.streamable_http_app(host=host)
    if token:
        app = bearer_guard(app, token)
    listening = _listen(host, port)
    bound_port = listening.getsockname()[1]
    guarded = "; every request needs its bearer token" if token else ""
    print(
        f"training-check: serving MCP over streamable HTTP at {_url(host, bound_port)}{guarded}; Ctrl-C to stop",
        file=sys.stderr, flush=True,
    )  # fmt: skip
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listening])


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a port in use or an unknown address is one line naming the
    fix (uvicorn printed "ERROR: [Errno 98] ..." and exited 3), and port 0's pick can be told."""
    listening = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a restart reuses the port
    try:
        listening.bind((host, port))
        listening.listen()
        return listening
    except OSError as exc:
        listening.close()
        why = exc.strerror or str(exc)
        raise TrainingCheckError(
            f"cannot listen on {host} port {port} ({why}): pick another port (--http PORT, 0 picks a free one), "
            "stop what listens there, or pass --host with an address of this machine"
        ) from exc


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/mcp"
