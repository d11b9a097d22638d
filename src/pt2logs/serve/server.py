"""Running the app with uvicorn: on a socket bound before the server starts (so the URL, with the port a
``--port 0`` got, is known before the first request), quietly (the CLI prints; uvicorn logs only
warnings), in the foreground (``pt2logs serve``: Ctrl-C stops it cleanly) or in a thread (tests, bench)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8765


def bind(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: a free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}/"


def make_server(app: Any, log_level: str = "warning") -> uvicorn.Server:
    return uvicorn.Server(
        uvicorn.Config(
            app, log_level=log_level, access_log=False, lifespan="off", timeout_graceful_shutdown=2
        )
    )


class Background:
    """The app served from a thread on a free port of 127.0.0.1 (``with Background(app) as url: ...``)."""

    def __init__(self, app: Any, host: str = DEFAULT_HOST, port: int = 0):
        self.sock = bind(host, port)
        self.url = url_of(self.sock)
        self.server = make_server(app)
        self.thread = threading.Thread(
            target=self.server.run,
            kwargs={"sockets": [self.sock]},
            daemon=True,
            name="pt2logs-serve",
        )

    def __enter__(self) -> str:
        self.thread.start()
        end = time.monotonic() + 30
        while not self.server.started and self.thread.is_alive() and time.monotonic() < end:
            time.sleep(0.01)
        if not self.server.started:
            raise RuntimeError("the server did not start")
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()
