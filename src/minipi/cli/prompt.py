"""The question prompt of ``minipi chat``.

On a terminal it is the stdlib's ``readline``: line editing, arrow keys, and a history kept
in the data directory (``chat_history``, 0600, the last 1000 questions). Ctrl-C at the prompt
clears the line (as in a shell); Ctrl-D, ``exit``, ``quit``, ``q`` or ``退出`` leave, with a
line end so the shell's prompt starts clean. From a pipe it reads plain lines.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TextIO

__all__ = ["ChatPrompt"]

_LEAVE = ("exit", "quit", "q", "退出")
_HISTORY = 1000


class ChatPrompt:
    """Questions, one at a time, until the user leaves (``read`` returns None)."""

    def __init__(self, source: TextIO, history: Path | None) -> None:
        self.source = source
        self.terminal = source is sys.stdin and source.isatty()
        self.history = history if self.terminal else None
        if self.history is not None:
            self._load(self.history)

    def read(self) -> str | None:
        """The next question ("" for an empty line), or None to leave."""
        line = self._terminal_line() if self.terminal else self._piped_line()
        if line is None:
            return None
        question = line.strip()
        return None if question.lower() in _LEAVE else question

    def close(self) -> None:
        """Save the history (a failure to is not worth an error: it is only a convenience)."""
        if self.history is None:
            return
        import readline

        with contextlib.suppress(OSError):
            self.history.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.history, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            os.close(fd)
            readline.write_history_file(self.history)

    def _terminal_line(self) -> str | None:
        # readline writes its prompt to stdout; when stdout is not the terminal (answers go
        # to a file), the prompt goes to stderr instead, never into the answers
        screen = sys.stdout if sys.stdout.isatty() else sys.stderr
        while True:
            try:
                if screen is sys.stdout:
                    return input("> ")
                print("> ", end="", file=screen, flush=True)
                return input()
            except KeyboardInterrupt:  # clears the line, as a shell does
                print(file=screen, flush=True)
            except EOFError:  # Ctrl-D: leave on a line of its own
                print(file=screen, flush=True)
                return None

    def _piped_line(self) -> str | None:
        try:
            line = self.source.readline()
        except KeyboardInterrupt:
            return None
        return line or None

    @staticmethod
    def _load(path: Path) -> None:
        import readline  # line editing for input(); only on a terminal

        readline.set_history_length(_HISTORY)
        with contextlib.suppress(OSError):
            if path.is_file() and not path.is_symlink():
                readline.read_history_file(path)
