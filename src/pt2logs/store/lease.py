"""Mutual exclusion and liveness on a local disk and on an object store.

Local warehouses use ``flock``: the kernel drops a dead process's locks, so a lock
nobody holds means its holder is gone.

Object stores have no locks, so a holder proves it is alive with a **lease**: an
object it created and rewrites (a heartbeat) every ``LEASE_S / 6`` seconds. A lease
whose object was not rewritten for ``LEASE_S`` seconds (measured on the store's own
clock, or on the waiter's monotonic clock) belongs to a dead or stuck holder.

* The warehouse lock ``<wh>/_lock`` is created with a conditional write
  (S3 ``If-None-Match: *``: exactly one creator wins), renewed with ``If-Match: <etag>``
  (a holder that lost it learns so) and deleted with ``If-Match`` (a waiter breaks
  only the expired lease it saw, never a fresh one).
* A remote transaction's marker ``_txn/<txn>.json`` is a lease too (see
  :mod:`pt2logs.store.recovery`).

Conditional requests are used where the filesystem is s3fs (AWS S3, MinIO, moto,
and other S3-compatible servers that honour them); on other object stores the
same checks are done by reading first (a narrow race remains there).
"""

from __future__ import annotations

import email.utils
import errno
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any

#: seconds without a heartbeat after which a remote lease is expired (env PT2LOGS_LEASE_S)
LEASE_S = float(os.environ.get("PT2LOGS_LEASE_S", 60))


def lease_s() -> float:
    return float(os.environ.get("PT2LOGS_LEASE_S", LEASE_S))


class LeaseLost(Exception):
    """This process no longer holds the lease it was relying on."""


def _is_s3(fs: Any) -> bool:
    return hasattr(fs, "call_s3") and hasattr(fs, "split_path")


def _split(fs: Any, path: str) -> tuple[str, str]:
    bucket, key, _ = fs.split_path(path)
    return bucket, key


def _precondition_failed(e: OSError) -> bool:
    """s3fs turns HTTP 412 (PreconditionFailed) into OSError(EINVAL)."""
    return getattr(e, "errno", None) == errno.EINVAL or "pre-condition" in str(e).lower()


def _invalidate(fs: Any, path: str) -> None:
    inv = getattr(fs, "invalidate_cache", None)
    if inv is not None:
        inv(path)


def put_new(fs: Any, path: str, data: bytes) -> str | None:
    """Create ``path`` only if it does not exist; its ETag, or None if it existed."""
    _invalidate(fs, path)
    if _is_s3(fs):
        b, k = _split(fs, path)
        try:
            return fs.call_s3("put_object", Bucket=b, Key=k, Body=data, IfNoneMatch="*")["ETag"]
        except FileExistsError:
            return None
    if fs.exists(path):
        return None
    fs.pipe(path, data)
    return head(fs, path)[0]  # type: ignore[index]


def put_if(fs: Any, path: str, data: bytes, etag: str) -> str | None:
    """Replace ``path`` only if it still has ``etag``; the new ETag, or None if it changed or is gone."""
    _invalidate(fs, path)
    if _is_s3(fs):
        b, k = _split(fs, path)
        try:
            return fs.call_s3("put_object", Bucket=b, Key=k, Body=data, IfMatch=etag)["ETag"]
        except FileNotFoundError:
            return None
        except OSError as e:
            if _precondition_failed(e):
                return None
            raise
    h = head(fs, path)
    if h is None or h[0] != etag:
        return None
    fs.pipe(path, data)
    return head(fs, path)[0]  # type: ignore[index]


def delete_if(fs: Any, path: str, etag: str) -> bool:
    """Delete ``path`` only if it still has ``etag``."""
    _invalidate(fs, path)
    if _is_s3(fs):
        b, k = _split(fs, path)
        try:
            fs.call_s3("delete_object", Bucket=b, Key=k, IfMatch=etag)
        except FileNotFoundError:
            return False
        except OSError as e:
            if _precondition_failed(e):
                return False
            raise
        _invalidate(fs, path)
        return True
    h = head(fs, path)
    if h is None or h[0] != etag:
        return False
    fs.rm(path)
    return True


def head(fs: Any, path: str) -> tuple[str, float] | None:
    """(ETag, last-modified epoch seconds) of ``path``, or None if it does not exist."""
    _invalidate(fs, path)
    try:
        info = fs.info(path)
    except FileNotFoundError:
        return None
    return str(info.get("ETag") or info.get("etag") or info.get("mtime") or ""), mtime_of(info)


def mtime_of(info: dict[str, Any]) -> float:
    mt = (
        info.get("LastModified")
        or info.get("mtime")
        or info.get("last_modified")
        or info.get("updated")
    )
    if hasattr(mt, "timestamp"):
        return float(mt.timestamp())
    try:
        return float(mt or 0)
    except (TypeError, ValueError):
        return 0.0


def server_now(fs: Any, path: str) -> float:
    """The object store's clock (the Date of a cheap request), so ages are not skewed by ours."""
    if _is_s3(fs):
        b, k = _split(fs, path)
        try:
            r = fs.call_s3("list_objects_v2", Bucket=b, Prefix=k, MaxKeys=1)
            date = r["ResponseMetadata"]["HTTPHeaders"]["date"]
            return email.utils.parsedate_to_datetime(date).timestamp()
        except Exception:  # noqa: BLE001 - no Date header: our clock
            pass
    return time.time()


class Heartbeat:
    """Calls ``renew`` every ``interval`` seconds in a daemon thread until stopped.
    ``renew`` returns False when the lease is gone; ``lost`` then stays True."""

    def __init__(self, renew: Callable[[], bool], interval: float):
        self.renew = renew
        self.interval = interval
        self.lost = False
        self.last_ok = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pt2logs-heartbeat", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                ok = self.renew()
            except Exception:  # noqa: BLE001 - a failed request: try again next beat
                continue
            if not ok:
                self.lost = True
                return
            self.last_ok = time.monotonic()

    def check(self, what: str) -> None:
        """Raise LeaseLost if the lease is gone or may have expired (no renewal for most of a lease)."""
        if self.lost or time.monotonic() - self.last_ok > 0.8 * lease_s():
            raise LeaseLost(
                f"{what}: lease lost (no heartbeat for {time.monotonic() - self.last_ok:.0f} s)"
            )

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=max(5.0, self.interval * 2))


class LocalLock:
    """An exclusive ``flock`` on ``path``; released by the kernel if the process dies."""

    def __init__(self, path: str):
        self.path = path
        self._f: Any = None

    def acquire(self) -> None:
        import fcntl

        self._f = open(self.path, "a+b")  # noqa: SIM115 - held until release()
        fcntl.flock(self._f, fcntl.LOCK_EX)

    def check(self, what: str) -> None:
        pass

    def release(self) -> None:
        import fcntl

        if self._f is not None:
            fcntl.flock(self._f, fcntl.LOCK_UN)
            self._f.close()
            self._f = None


class RemoteLock:
    """A lease object created with ``If-None-Match`` and kept alive by a heartbeat."""

    def __init__(self, fs: Any, path: str, owner: str):
        self.fs = fs
        self.path = path
        self.owner = owner
        self.etag: str | None = None
        self._beat: Heartbeat | None = None

    def _body(self) -> bytes:
        import orjson

        return orjson.dumps(
            {"owner": self.owner, "pid": os.getpid(), "lease_s": lease_s(), "renewed": time.time()}
        )

    def acquire(self, poll: float | None = None) -> None:
        poll = poll if poll is not None else min(1.0, lease_s() / 10)
        seen: tuple[str, float] | None = (
            None  # (etag of someone else's lease, when we first saw it)
        )
        while True:
            etag = put_new(self.fs, self.path, self._body())
            if etag is not None:
                self.etag = etag
                self._beat = Heartbeat(self._renew, lease_s() / 6)
                return
            h = head(self.fs, self.path)
            if h is not None:
                now = time.monotonic()
                if seen is None or seen[0] != h[0]:
                    seen = (h[0], now)
                    # already older than a lease on the store's clock (+1 s: it counts whole seconds)
                    if server_now(self.fs, self.path) - h[1] > lease_s() + 1:
                        seen = (h[0], now - lease_s() - 1)
                if now - seen[1] > lease_s():
                    # not renewed for a whole lease on our clock: its holder is gone; break only that lease
                    delete_if(self.fs, self.path, h[0])
                    seen = None
                    continue
            time.sleep(poll * (0.5 + random.random()))

    def _renew(self) -> bool:
        etag = put_if(self.fs, self.path, self._body(), self.etag or "")
        if etag is None:
            return False
        self.etag = etag
        return True

    def check(self, what: str) -> None:
        if self._beat is not None:
            self._beat.check(what)

    def release(self) -> None:
        if self._beat is not None:
            self._beat.stop()
            self._beat = None
        if self.etag is not None:
            delete_if(self.fs, self.path, self.etag)
            self.etag = None
