"""Load an HTML file in real headless Chromium over the DevTools protocol (no extra deps).

Chromium is started with ``--remote-debugging-pipe``: it reads DevTools
commands from fd 3 and writes replies and events to fd 4, each message a JSON
object ended by a NUL byte. We open a tab, record console errors, uncaught
exceptions, log errors and every network request, load the page, evaluate
expressions in it and take a full-page screenshot.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
)


_TRAMPOLINE = (
    "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
    "os.execv(sys.argv[3], sys.argv[3:])"
)


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome binary, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageResult:
    """What happened while the page loaded."""

    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    screenshot: bytes = b""


class _Pipe:
    def __init__(self, proc: subprocess.Popen[bytes], write_fd: int, read_fd: int) -> None:
        self.proc, self.write_fd, self.read_fd = proc, write_fd, read_fd
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> int:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        return self.next_id

    def _read_one(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from chromium in time")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                chunk = os.read(self.read_fd, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self.buffer += chunk
        raw, _, self.buffer = self.buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 30,
    ) -> dict[str, Any]:
        wanted = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_one(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method} failed: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def wait_event(self, method: str, timeout: float = 30) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                return event
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_one(deadline)
            self.events.append(message)
            if message.get("method") == method:
                return message


def _errors(events: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    errors, requests = [], []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append(
                "console: "
                + " ".join(
                    str(a.get("value", a.get("description"))) for a in params.get("args", [])
                )
            )
        elif method == "Runtime.exceptionThrown":
            errors.append("exception: " + str(params.get("exceptionDetails", {}).get("text")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            errors.append("log: " + str(params["entry"].get("text")))
        elif method == "Network.requestWillBeSent":
            requests.append(str(params.get("request", {}).get("url", "")))
    return errors, requests


def load_page(
    path: Path,
    *,
    evaluate: dict[str, str],
    width: int = 1280,
    height: int = 1600,
    timeout: float = 60,
) -> PageResult:
    """Load ``path`` in headless Chromium; evaluate ``{name: js expression}``; screenshot the page."""
    binary = find_chromium()
    if binary is None:
        raise FileNotFoundError("chromium not found")
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()

    # DevTools reads fd 3 and writes fd 4: a tiny Python trampoline moves our pipe
    # ends there and execs Chromium (no preexec_fn, unsafe in a threaded process).
    with tempfile.TemporaryDirectory() as profile:
        command = [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"]
        proc = subprocess.Popen(
            [sys.executable, "-c", _TRAMPOLINE, str(to_child_r), str(from_child_w), *command],
            pass_fds=(to_child_r, from_child_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        pipe = _Pipe(proc, to_child_w, from_child_r)
        try:
            return _drive(pipe, path, evaluate, width, height, timeout)
        finally:
            with contextlib.suppress(OSError):
                pipe.send("Browser.close")
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            os.close(to_child_w)
            os.close(from_child_r)


def _drive(
    pipe: _Pipe, path: Path, evaluate: dict[str, str], width: int, height: int, timeout: float
) -> PageResult:
    target = pipe.call("Target.createTarget", {"url": "about:blank"}, timeout=timeout)["targetId"]
    session = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Runtime", "Log", "Page", "Network"):
        pipe.call(f"{domain}.enable", session=session)
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
    pipe.call("Emulation.setDeviceMetricsOverride", metrics, session=session)
    pipe.events.clear()
    pipe.call("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
    pipe.wait_event("Page.loadEventFired", timeout=timeout)
    result = PageResult()
    for name, expression in evaluate.items():
        reply = pipe.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session
        )
        result.values[name] = reply.get("result", {}).get("value")
    shot = pipe.call("Page.captureScreenshot", {"format": "png"}, session=session)
    result.screenshot = base64.b64decode(shot["data"])
    result.errors, result.requests = _errors(pipe.events)
    return result
