"""A tiny inetd for the SSH tests: ``python inetd.py ADDRESS PORT COMMAND...`` listens on ADDRESS:PORT in the
network namespace it runs in, prints one line ``listening ADDRESS:PORT`` once it does, and runs COMMAND for each
connection with the connection as stdin and stdout, as inetd runs ``sshd -i``.

tests/sshd.py starts one in the tests' own namespace and one inside the inner host's namespace, each running the
same ``sshd -i`` inside the inner namespace: the jump host answers in both worlds and forwards inside the inner one.
"""

from __future__ import annotations

import socket
import subprocess
import sys


def serve(address: str, port: int, command: list[str]) -> None:
    sessions: list[subprocess.Popen[bytes]] = []
    with socket.create_server((address, port), backlog=16) as server:
        print(f"listening {address}:{port}", flush=True)
        while True:
            connection, _peer = server.accept()
            with connection:
                sessions.append(subprocess.Popen(command, stdin=connection.fileno(), stdout=connection.fileno()))
            sessions = [session for session in sessions if session.poll() is None]  # reaps the finished ones


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
