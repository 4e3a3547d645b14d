"""A real browser for the tests: headless Chromium driven over the DevTools protocol.

Chromium is started with ``--remote-debugging-pipe``: it reads commands from its file
descriptor 3 and writes replies and events to 4, as JSON messages ended by a NUL byte, so
no port, no websocket library and no driver program are needed. :class:`Browser` opens one
page, loads a URL, evaluates JavaScript in it and records what the page complained about
(exceptions, console errors, failed loads) and every URL it requested.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

#: Debian's package installs it as `chromium`; other systems as `chromium-browser`.
NAMES = ("chromium", "chromium-browser")


def chromium() -> str | None:
    """The Chromium program on PATH, if any."""
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    pass


def _above_4(fd: int) -> int:
    """``fd`` moved to a number above 4, so that putting the pipes on 3 and 4 in the child
    cannot overwrite one with the other."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 5)
    os.close(fd)
    return moved


#: Runs in the child before Chromium: the pipes onto fds 3 and 4, then Chromium itself
#: (a shell would do, but dash reads one-digit descriptors only).
_TRAMPOLINE = (
    "import os, sys; r, w = int(sys.argv[1]), int(sys.argv[2]); os.dup2(r, 3); os.dup2(w, 4); "
    "os.close(r); os.close(w); os.execv(sys.argv[3], sys.argv[3:])"
)


class Browser:
    """``with Browser() as b: b.open(url); b.evaluate("document.title")``."""

    def __init__(self, program: str | None = None, timeout_s: float = 30.0) -> None:
        program = program or chromium()
        if program is None:
            raise BrowserError("no chromium on PATH (bash scripts/install.sh --dev installs it)")
        self.timeout_s = timeout_s
        self.profile = tempfile.TemporaryDirectory(prefix="cga-chromium-")
        to_r, self._to = (_above_4(fd) for fd in os.pipe())
        self._from, from_w = (_above_4(fd) for fd in os.pipe())
        # fds 3 and 4 in Chromium are the two pipes (the trampoline moves them there).
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _TRAMPOLINE,
                str(to_r),
                str(from_w),
                program,
                "--headless",
                "--no-sandbox",  # as root, and in containers
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--remote-debugging-pipe",
                f"--user-data-dir={self.profile.name}",
                "about:blank",
            ],
            pass_fds=(to_r, from_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,  # D-Bus and GPU chatter of a headless browser
        )
        os.close(to_r)
        os.close(from_w)
        self._next_id = 0
        self._replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=self.session)

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                data = os.read(self._from, 1 << 20)
            except OSError:
                return
            if not data:
                return
            buffer += data
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    with self._lock:
                        waiting = self._replies.get(message["id"])
                    if waiting is not None:
                        waiting.put(message)
                else:
                    self.events.append(message)

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None
    ) -> dict[str, Any]:
        """Sends one DevTools command and returns its result."""
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            reply: queue.Queue[dict[str, Any]] = queue.Queue()
            self._replies[ident] = reply
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to, json.dumps(message).encode() + b"\0")
        try:
            answer = reply.get(timeout=self.timeout_s)
        except queue.Empty:
            raise BrowserError(f"{method}: no answer from chromium in {self.timeout_s} s") from None
        finally:
            with self._lock:
                del self._replies[ident]
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error']}")
        result: dict[str, Any] = answer.get("result", {})
        return result

    def _event(self, method: str, since: int) -> dict[str, Any] | None:
        for event in self.events[since:]:
            if event.get("method") == method:
                return event
        return None

    def open(self, url: str) -> None:
        """Loads ``url`` and waits for its load event."""
        since = len(self.events)
        self.call("Page.navigate", {"url": url}, session=self.session)
        deadline = time.monotonic() + self.timeout_s
        while self._event("Page.loadEventFired", since) is None:
            if time.monotonic() > deadline:
                raise BrowserError(f"{url}: not loaded in {self.timeout_s} s")
            time.sleep(0.05)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited); an exception
        thrown by it is a :class:`BrowserError`."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session=self.session,
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"{expression[:80]!r}: {text}")
        return result["result"].get("value")

    def wait_for(self, expression: str, what: str) -> Any:
        """Evaluates ``expression`` until it is truthy (React renders after the load)."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"{what}: not there after {self.timeout_s} s")
            time.sleep(0.05)

    def complaints(self) -> list[str]:
        """What the page reported as wrong: exceptions, console and log errors, loads that
        failed."""
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                out.append(f"exception: {details.get('exception', {}).get('description', '')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                texts = [str(a.get("value", a.get("description", ""))) for a in params["args"]]
                out.append(f"console.{params['type']}: {' '.join(texts)}")
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                entry = params["entry"]
                out.append(f"log: {entry.get('text')} {entry.get('url', '')}".rstrip())
            elif method == "Network.loadingFailed":
                out.append(f"failed load: {params.get('errorText')} ({params.get('type')})")
        return out

    def requested(self) -> list[str]:
        """Every URL the page asked for (data: URLs shortened to their media type)."""
        urls = []
        for event in self.events:
            if event.get("method") == "Network.requestWillBeSent":
                url = str(event["params"]["request"]["url"])
                urls.append(url.split(",", 1)[0] if url.startswith("data:") else url)
        return urls

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(BrowserError, OSError):
                self.call("Browser.close")
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=10)  # it ends at the pipe's end, when chromium exits
        for fd in (self._to, self._from):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def file_url(path: Path) -> str:
    return path.resolve().as_uri()
