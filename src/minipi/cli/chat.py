"""What ``minipi chat`` does: a conversation about the project's files, until exit or Ctrl-D.

It opens with one line on stderr (the project, the model, how to leave, ``/help``). Each line
typed is a question whose run follows the conversation so far, or a command: a first word of
``/`` and a name (``/help``, ``/clear``, ``/model``; ``/etc/hosts`` is a path, so a question),
answered by minipi and never sent to the model. ``/clear`` starts a new conversation in the
same session: the questions before it stay saved there.

A question that reads a file this conversation already read, unchanged since (``ReadCache``:
same size, times and inode), is answered with the same text without reading the file again
(``details["reused"]``); the result is the same as a new read, so the evidence check traces
its figures to this question's read as before. A changed file is read again.

Ctrl-C during a question cancels that question (its run ends ``cancelled``, closed and saved);
at the prompt it clears the line (``prompt.py``). With a session, each step is saved. On a
terminal each answer is shown once (in the log).
"""

from __future__ import annotations

import os
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from minipi.cli.app import _note, _out_of_time, _rooted, _run, _Session, _show, _start
from minipi.cli.prompt import ChatPrompt
from minipi.cli.settings import RunOptions, data_dir
from minipi.cli.words import Words, plural, words_for
from minipi.errors import ConfigError, MiniPiError
from minipi.files.sandbox import ReadCache

if TYPE_CHECKING:
    from minipi.ai.types import Item
    from minipi.session import OpenSession

__all__ = ["COMMANDS", "chat", "command_of"]

COMMANDS = ("help", "clear", "model")
"""The chat's own commands, typed as ``/help``..."""


def chat(options: RunOptions, stdin: TextIO | None = None) -> int:
    """The interactive terminal of seed 004 (module docstring); the exit code."""
    source = stdin or sys.stdin
    options, by_default = _rooted(options)
    history_file = (options.data_dir or data_dir(os.environ)) / "chat_history"
    with ExitStack() as stack:
        try:
            book, session, history = _start(options, stack, source, Words(False), auto=True)
        except MiniPiError as error:
            return _out_of_time(error)
        session.reads = ReadCache()
        talk = _Chat(options, session, book, history, source)
        talk.greet(by_default)
        prompt = ChatPrompt(source, history_file)
        stack.callback(prompt.close)
        while (line := prompt.read()) is not None:
            talk.take(line)
    return 0


def command_of(line: str) -> str | None:
    """The command a line gives (``/help`` -> ``help``, any case), or None for a question: a
    first word of ``/`` and a name with no other ``/`` (``/etc/hosts what is it?`` asks)."""
    first = line.split(maxsplit=1)[0] if line.strip() else ""
    if len(first) < 2 or not first.startswith("/") or "/" in first[1:]:
        return None
    return first[1:].lower()


@dataclass
class _Chat:
    """One chat: its setup, the conversation so far, and the language minipi speaks in (the
    last question's)."""

    options: RunOptions
    session: _Session
    book: OpenSession | None
    history: list[Item]
    source: TextIO

    def __post_init__(self) -> None:
        self.words = words_for(self.book.last_question() if self.book is not None else "")
        self.once = _answer_in_log(self.options)

    def greet(self, by_default: bool) -> None:
        """The opening line (not with --json or -q), and what a resumed session holds."""
        if not (self.options.json or self.options.quiet):
            where = self.words("project_cwd") if by_default else ""
            model = self.session.client.model
            _note(self.words("chat_greeting", root=self.options.root, where=where, model=model))
        book = self.book
        if book is not None and (self.options.session is not None or self.options.resume):
            _note(f"[session {book.name}] {plural(book.runs(), 'earlier question')}")

    def take(self, line: str) -> None:
        """One line typed: a command, a question, or nothing."""
        name = command_of(line)
        if name is not None:
            self.command(name, line.split(maxsplit=1)[0])
        elif line and not _withheld_in_chat(self.session, line):
            self.ask(line)

    def ask(self, question: str) -> None:
        session, options = self.session, self.options
        result = _run(session, options, question, self.history, self.source, self.book)
        self.history = list(result.items)
        self.words = words_for(question)
        _show(result, options, self.words, answer=not self.once)

    def command(self, name: str, typed: str) -> None:
        if name == "help":
            _note(self.words("chat_help"))
        elif name == "clear":
            self.clear()
        elif name == "model":
            _note(_model_line(self.session, self.words))
        else:
            _note(self.words("chat_unknown", command=typed))

    def clear(self) -> None:
        """A new conversation in the same session: no history, and no read to reuse."""
        self.history = []
        if self.session.reads is not None:
            self.session.reads.clear()
        if self.book is None:
            _note(self.words("chat_cleared_unsaved"))
        else:
            _note(self.words("chat_cleared", name=self.book.name))


def _model_line(session: _Session, words: Words) -> str:
    """The model in use, and where it answers (the local engine: its model file too)."""
    model = session.model
    if model.model_file is not None:
        return words(
            "chat_model_file", model=model.client.model, file=model.model_file, url=model.base_url
        )
    return words("chat_model", model=model.client.model, url=model.base_url)


def _withheld_in_chat(session: _Session, question: str) -> bool:
    """Whether a chat question fits only withheld MCP tools (``refuse_withheld``): then
    it is not sent, and the chat says why and goes on."""
    if session.mcp is None:
        return False
    from minipi.cli.mcp import refuse_withheld

    try:
        refuse_withheld(session.mcp, session.settings, session.files, question)
    except ConfigError as error:
        _note(f"minipi: {error}")
        return True
    return False


def _answer_in_log(options: RunOptions) -> bool:
    """Whether the log shows each answer on the terminal that stdout is (then it is not
    printed again); never with --json or -q, which have no such log."""
    terminal = sys.stdout.isatty() and sys.stderr.isatty()
    return terminal and not options.json and not options.quiet
