"""Headless Chromium driven through the Chrome DevTools protocol over a pipe (--remote-debugging-pipe: JSON
messages separated by NUL bytes on file descriptors 3 and 4), so the tests need no websocket library and no
network port. Only what the report's tests use: open a page, evaluate script, move and drag the mouse, take a
screenshot, and collect console errors, exceptions and every request the page makes."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

BINARY = next((shutil.which(c) for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run", "--mute-audio",
         # a machine without network must not stall on Chromium's own connections
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
         "--disable-default-apps", "--disable-extensions", "--remote-debugging-pipe"]


class ChromiumError(RuntimeError):
    pass


class Chromium:
    """One browser with one page; ``close`` (or a ``with`` block) ends it."""

    def __init__(self, profile: Path, width: int = 1280, height: int = 900, timeout: float = 120.0) -> None:
        if BINARY is None:
            raise ChromiumError("no chromium on PATH")
        self.timeout = timeout
        ours_r, chrome_w = os.pipe()  # chrome writes fd 4, we read
        chrome_r, ours_w = os.pipe()  # we write, chrome reads fd 3
        # file descriptors above 9, so bash's redirections to 3 and 4 cannot close one of them (dash takes one digit)
        high_r, high_w = fcntl.fcntl(chrome_r, fcntl.F_DUPFD, 10), fcntl.fcntl(chrome_w, fcntl.F_DUPFD, 10)
        os.close(chrome_r)
        os.close(chrome_w)
        args = [BINARY, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"]
        redirect = f'exec "$@" 3<&{high_r} 4>&{high_w} {high_r}<&- {high_w}>&-'
        self.proc = subprocess.Popen(["bash", "-c", redirect, "bash", *args], pass_fds=(high_r, high_w),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(high_r)
        os.close(high_w)
        self._out = os.fdopen(ours_w, "wb", buffering=0)
        self._in = os.fdopen(ours_r, "rb", buffering=0)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=self.session)
        self.call("Emulation.setDeviceMetricsOverride", session=self.session, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(ChromiumError, OSError):
            self.call("Browser.close")
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
        self._in.close()

    # ---- the protocol -----------------------------------------------------------------------------------
    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        self._out.write(json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise ChromiumError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _receive(self) -> dict[str, Any]:
        """The next message; a ChromiumError when none comes within the timeout (a read waits that long at most)."""
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            readable, _, _ = select.select([self._in], [], [], max(0.0, deadline - time.monotonic()))
            if not readable:
                raise ChromiumError(f"no answer from Chromium within {self.timeout:.0f} s")
            chunk = self._in.read(1 << 16)
            if not chunk:
                raise ChromiumError("Chromium went away")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)  # type: ignore[no-any-return]

    def page(self, method: str, **params: Any) -> dict[str, Any]:
        return self.call(method, session=self.session, **params)

    # ---- what the tests do ------------------------------------------------------------------------------
    def open(self, url: str, ready: str = "true") -> None:
        """Navigate and wait for the load event, then until ``ready`` (an expression) is true."""
        self.events.clear()
        self.page("Page.navigate", url=url)
        self.wait("Page.loadEventFired")
        self.wait_for(ready)

    def wait(self, event: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            for e in self.events:
                if e.get("method") == event:
                    return e
            self.events.append(self._receive())
        raise ChromiumError(f"no {event}")

    def wait_for(self, expression: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not self.eval(f"!!({expression})"):
            if time.monotonic() > deadline:
                raise ChromiumError(f"never true: {expression}")
            time.sleep(0.05)

    def eval(self, expression: str) -> Any:
        result = self.page("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise ChromiumError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def mouse(self, kind: str, x: float, y: float, buttons: int = 0, clickCount: int | None = None) -> None:  # noqa: N803
        clicks = clickCount if clickCount is not None else 0 if kind == "mouseMoved" else 1
        self.page("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left" if buttons or kind != "mouseMoved"
                  else "none", buttons=buttons, clickCount=clicks)

    def drag(self, x0: float, x1: float, y: float) -> None:
        self.mouse("mouseMoved", x0, y)
        self.mouse("mousePressed", x0, y, buttons=1)
        for i in range(1, 6):
            self.mouse("mouseMoved", x0 + (x1 - x0) * i / 5, y, buttons=1)
        self.mouse("mouseReleased", x1, y, buttons=1)

    def screenshot(self, path: Path, full_page: bool = False, clip: tuple[float, float, float, float] | None = None,
                   ) -> Path:
        """The viewport, the whole page, or ``clip`` (x, y, width, height in page CSS pixels)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.page("Page.getLayoutMetrics")["cssContentSize"]
            clip = (0, 0, size["width"], size["height"])
        if clip is not None:
            x, y, width, height = clip
            params.update(captureBeyondViewport=True, clip={"x": x, "y": y, "width": width, "height": height,
                                                            "scale": 1})
        path.write_bytes(base64.b64decode(self.page("Page.captureScreenshot", **params)["data"]))
        return path

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions and failed loads since the page opened."""
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(f"exception: {params['exceptionDetails'].get('exception', {}).get('description')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
                out.append(f"console.{params['type']}: {[a.get('value') for a in params.get('args', [])]}")
            elif method == "Log.entryAdded" and params["entry"].get("level") in ("error", "warning"):
                out.append(f"log: {params['entry'].get('text')}")
            elif method == "Network.loadingFailed":
                out.append(f"load failed: {params.get('errorText')}")
        return out

    def requests(self) -> list[str]:
        """The URLs the page asked for since it opened."""
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]
