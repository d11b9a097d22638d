"""A headless Chromium driven over the DevTools protocol, with no dependency beyond the stdlib.

Chromium is started with ``--remote-debugging-pipe``: it reads protocol messages (JSON, each
ended by a NUL byte) from file descriptor 3 and writes replies and events to descriptor 4, so no
websocket client is needed. :func:`find_chromium` installs Debian's ``chromium`` with apt-get when
it is missing and we are root (as ``.ci/run`` does), and says why when it cannot.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium(install: bool = True) -> tuple[str | None, str]:
    """(path to a chromium, "") or (None, why there is none)."""
    for n in NAMES:
        p = shutil.which(n)
        if p:
            return p, ""
    if not install:
        return None, "no chromium on PATH"
    if not shutil.which("apt-get"):
        return None, "no chromium on PATH and no apt-get to install it"
    if os.geteuid() != 0:
        return None, "no chromium on PATH; install it with `sudo apt-get install chromium`"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, timeout=300)
        r = subprocess.run(
            ["apt-get", "install", "-y", "-qq", "chromium"],
            env=env,
            capture_output=True,
            timeout=900,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"installing chromium failed: {e}"
    p = shutil.which("chromium")
    return (
        (p, "")
        if p
        else (None, "apt-get install chromium failed: " + r.stderr.decode(errors="replace")[-300:])
    )


class CDPError(Exception):
    pass


class Browser:
    """One headless Chromium; :meth:`open` gives a :class:`Tab`."""

    def __init__(
        self, exe: str, *, width: int = 1280, height: int = 900, extra: tuple[str, ...] = ()
    ):
        self.profile = tempfile.mkdtemp(prefix="pt2logs-chromium-")
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()

        def fds() -> None:  # in the child: the pipe ends become descriptors 3 and 4
            hi = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_chrome_r, from_chrome_w)]
            for src, dst in zip(hi, (3, 4), strict=True):
                os.dup2(src, dst)
                os.set_inheritable(dst, True)

        args = [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--remote-debugging-pipe",
            f"--user-data-dir={self.profile}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-dev-shm-usage",
            "--mute-audio",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            *extra,
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            args,
            preexec_fn=fds,
            close_fds=False,
            stdin=subprocess.DEVNULL,  # noqa: PLW1509
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._id = 0
        self._lock = threading.Lock()
        self._replies: dict[int, dict] = {}
        self._cond = threading.Condition()
        self.events: list[dict] = []
        self._stderr: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(
            target=lambda: self._stderr.extend(iter(self.proc.stderr.readline, b"")), daemon=True
        ).start()

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._r, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._cond.notify_all()
                return
            buf += chunk
            *msgs, buf = buf.split(b"\0")
            with self._cond:
                for m in msgs:
                    d = json.loads(m)
                    if "id" in d:
                        self._replies[d["id"]] = d
                    else:
                        self.events.append(d)
                self._cond.notify_all()

    def send(
        self,
        method: str,
        params: dict | None = None,
        session: str | None = None,
        timeout: float = 30,
    ) -> dict:
        with self._lock:
            self._id += 1
            mid = self._id
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + timeout
        with self._cond:
            while mid not in self._replies:
                left = end - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise CDPError(
                        f"{method}: no reply (chromium {'exited' if self.proc.poll() is not None else 'timed out'}); "
                        f"stderr: {b''.join(self._stderr)[-500:].decode(errors='replace')}"
                    )
                self._cond.wait(left)
            d = self._replies.pop(mid)
        if "error" in d:
            raise CDPError(f"{method}: {d['error']}")
        return d.get("result", {})

    def wait_event(self, method: str, session: str | None, timeout: float = 30) -> dict:
        end = time.monotonic() + timeout
        with self._cond:
            while True:
                for e in self.events:
                    if e.get("method") == method and e.get("sessionId") == session:
                        return e
                left = end - time.monotonic()
                if left <= 0:
                    raise CDPError(f"no {method} event in {timeout} s")
                self._cond.wait(left)

    def open(self, url: str, timeout: float = 30) -> Tab:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        tab = Tab(self, session)
        for domain in ("Page", "Runtime", "Log", "Network"):
            tab.send(f"{domain}.enable")
        tab.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired", session, timeout)
        return tab

    def close(self) -> None:
        with contextlib.suppress(CDPError, OSError):
            self.send("Browser.close", timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._w, self._r):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Tab:
    def __init__(self, browser: Browser, session: str):
        self.browser, self.session = browser, session

    def send(self, method: str, params: dict | None = None, timeout: float = 30) -> dict:
        return self.browser.send(method, params, self.session, timeout)

    def eval(self, expression: str, timeout: float = 30) -> Any:
        r = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout,
        )
        if "exceptionDetails" in r:
            raise CDPError(f"{expression[:80]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30) -> Any:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            v = self.eval(expression)
            if v:
                return v
            time.sleep(0.05)
        raise CDPError(f"timed out waiting for {expression}")

    def events(self, *methods: str) -> list[dict]:
        return [
            e
            for e in list(self.browser.events)
            if e.get("sessionId") == self.session and e.get("method") in methods
        ]

    def console_problems(self, levels: tuple[str, ...] = ("error", "assert")) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (failed loads, CSP reports)."""
        out = []
        for e in self.events("Runtime.consoleAPICalled"):
            p = e["params"]
            if p["type"] in levels:
                out.append(
                    f"console.{p['type']}: "
                    + " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
                )
        for e in self.events("Runtime.exceptionThrown"):
            d = e["params"]["exceptionDetails"]
            out.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")
        for e in self.events("Log.entryAdded"):
            entry = e["params"]["entry"]
            if entry["level"] in ("error",) or "Content Security Policy" in entry.get("text", ""):
                out.append(f"log.{entry['level']}: {entry.get('text')} {entry.get('url', '')}")
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events("Network.requestWillBeSent")]

    def hover(self, x: float, y: float) -> None:
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def screenshot(
        self, path: Path, width: int = 1280, clip: tuple[int, int, int, int] | None = None
    ) -> Path:
        """The whole page (not only the viewport), or the ``clip`` (x, y, width, height) of it, as a PNG."""
        height = int(self.eval("Math.ceil(document.documentElement.scrollHeight)"))
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        time.sleep(0.3)
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": True}
        if clip:
            params["clip"] = dict(zip(("x", "y", "width", "height"), clip, strict=True), scale=1)
        data = self.send("Page.captureScreenshot", params, timeout=60)["data"]
        path.write_bytes(base64.b64decode(data))
        return path
