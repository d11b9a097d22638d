"""A real S3 server for tests: moto's, on a free loopback port, with credentials in the environment."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest


@contextlib.contextmanager
def moto_s3(secret: str = "testing", log: list[tuple[str, str]] | None = None) -> Iterator[Any]:
    """An ``s3fs.S3FileSystem`` talking to a fresh moto server; the environment is restored after. With
    ``log``, each request the server answers is appended to it: (method, path?query)."""
    moto_server = pytest.importorskip("moto.server")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    if log is not None:
        app = server._server.app  # (werkzeug's server: its handler calls server.app per request)

        def logged(environ: dict[str, Any], start_response: Any) -> Any:
            log.append(
                (environ["REQUEST_METHOD"], f"{environ['PATH_INFO']}?{environ['QUERY_STRING']}")
            )
            return app(environ, start_response)

        server._server.app = logged
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": secret,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    try:
        yield s3fs.S3FileSystem()
    finally:
        server.stop()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
