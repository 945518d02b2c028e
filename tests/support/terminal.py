"""A pseudo-terminal a test types into as a person would: ``python -m minipi ARGS`` reads
it as its controlling terminal, so Ctrl-C typed is a real SIGINT (the ``terminals`` fixture of
``conftest.py`` kills what a test opened)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

__all__ = ["Terminal"]


def _controlling_terminal() -> None:
    import fcntl
    import termios

    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """``python -m minipi ARGS`` on a pseudo-terminal, typed into like a person would."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "minipi", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            close_fds=True,
            start_new_session=True,
            preexec_fn=_controlling_terminal,  # so that ^C typed is a SIGINT, as in a shell
        )
        os.close(slave)
        self.seen = ""

    def expect(self, text: str, timeout: float = 30) -> str:
        """Read until ``text`` has appeared (after what was expected before)."""
        deadline = time.monotonic() + timeout
        while text not in self.seen and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self.seen += os.read(self.master, 65536).decode("utf-8", "replace")
                except OSError:
                    break
        assert text in self.seen, self.seen
        before, _, self.seen = self.seen.partition(text)
        return before

    def send(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def close(self) -> int:
        try:
            return self.process.wait(timeout=20)
        finally:
            self.kill()

    def kill(self) -> None:
        """Whatever happened, no process is left behind (and the terminal is closed)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.master >= 0:
            os.close(self.master)
            self.master = -1
