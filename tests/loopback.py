"""What the fake API servers on 127.0.0.1 share: a free port, tracked connections, a hard close.

`LoopbackServer` starts a threading HTTP server whose handler class (from `handler_class`) gets the
server as ``fake``; `TrackedHandler` records every open connection, so `close` can drop keep-alive
connections and release requests a test holds hung, and no client thread outlives its test.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class LoopbackServer:
    thread_name = "LoopbackServer"

    def __init__(self, lock: threading.Lock | threading.RLock) -> None:
        self.lock = lock
        self.release = threading.Event()  # set to let requests held hung go
        self._connections: set[socket.socket] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._url: str | None = None  # kept after close: a test may aim a client at a closed port

    def handler_class(self) -> type[TrackedHandler]:
        raise NotImplementedError

    def start(self) -> Self:
        handler = type("Handler", (self.handler_class(),), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        host, port = self._httpd.server_address[:2]
        self._url = f"http://{host!s}:{port}"
        threading.Thread(target=self._httpd.serve_forever, name=self.thread_name, daemon=True).start()
        return self

    def close(self) -> None:
        """Stop listening, let hung requests go and drop every open (keep-alive) connection."""
        self.release.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        with self.lock:
            connections, self._connections = list(self._connections), set()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        assert self._url is not None, "server not started"
        return self._url


class TrackedHandler(BaseHTTPRequestHandler):
    fake: LoopbackServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        with self.fake.lock:
            self.fake._connections.add(self.connection)

    def finish(self) -> None:
        with self.fake.lock:
            self.fake._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()
