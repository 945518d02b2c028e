"""Headless Chromium (Debian's ``chromium``) driven over the DevTools protocol on a pipe.

    with Browser.start(tmp_path) as browser:
        browser.open(page_file)                # waits for the load event
        browser.click("a.claim")               # a real mouse click at the element's centre
        browser.value("document.title")
        browser.screenshot(tmp_path / "page.png")
        browser.requests                       # every URL the page asked for

``--remote-debugging-pipe``: the protocol's JSON messages, each ended by a NUL byte, on the
child's file descriptors 3 (to it) and 4 (from it); no port, no websocket library.
``chromium_or_skip()`` gives the binary or skips the test, saying why.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Self

import pytest

__all__ = ["Browser", "chromium_or_skip"]

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-pipe",
)


def chromium_or_skip() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no headless Chromium here (Debian: apt-get install -y chromium; .ci/run does)")


class Browser:
    """One Chromium process and one page of it."""

    def __init__(self, process: subprocess.Popen[bytes], to_it: int, from_it: int) -> None:
        self.process, self.to_it, self.from_it = process, to_it, from_it
        self.buffer = b""
        self.next_id = 0
        self.session: str | None = None
        self.events: list[dict[str, Any]] = []
        self.requests: list[str] = []

    @classmethod
    def start(cls, profile: Path) -> Self:
        binary = chromium_or_skip()
        their_in, our_out = os.pipe()
        our_in, their_out = os.pipe()

        def wire() -> None:  # in the child: the pipes as fds 3 and 4, kept across exec
            # first above both: dup2 onto the fd itself would keep its close-on-exec flag
            high_in = fcntl.fcntl(their_in, fcntl.F_DUPFD, 10)
            high_out = fcntl.fcntl(their_out, fcntl.F_DUPFD, 10)
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire,  # only dup2 runs there
            close_fds=False,
        )
        os.close(their_in)
        os.close(their_out)
        browser = cls(process, our_out, our_in)
        target = browser.call("Target.createTarget", url="about:blank")["targetId"]
        attached = browser.call("Target.attachToTarget", targetId=target, flatten=True)
        browser.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Network"):
            browser.call(f"{domain}.enable")
        return browser

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        for fd in (self.to_it, self.from_it):
            os.close(fd)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if self.session is not None and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self.to_it, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read(deadline=time.monotonic() + 60)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self.from_it, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium exited")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        if "method" in message:
            self.events.append(message)
            if message["method"] == "Network.requestWillBeSent":
                self.requests.append(message["params"]["request"]["url"])
        return message

    def wait_for(self, method: str, seconds: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        seen = len(self.events)
        while True:
            for event in self.events[seen:]:
                if event["method"] == method:
                    return event
            seen = len(self.events)
            self._read(deadline)

    def open(self, page: Path | str, seconds: float = 60) -> float:
        """Load ``page`` (a file or a URL); the seconds until its load event."""
        url = page.as_uri() if isinstance(page, Path) else page
        self.events.clear()
        began = time.monotonic()
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired", seconds)
        return time.monotonic() - began

    def value(self, expression: str) -> Any:
        reply = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return reply["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click at the centre of the first element ``selector`` matches."""
        where = self.value(
            f"(function(){{var e=document.querySelector({json.dumps(selector)});"
            "e.scrollIntoView({block:'center'});var r=e.getBoundingClientRect();"
            "return [r.left+r.width/2, r.top+r.height/2];})()"
        )
        x, y = where
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def screenshot(self, path: Path, *, full: bool = False) -> Path:
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=full)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
