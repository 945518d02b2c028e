"""Event sinks of the CLI: the seed's round-by-round log, JSON lines, and terminal-safe text."""

from __future__ import annotations

import json
import os
import sys
from contextlib import AbstractContextManager, nullcontext
from typing import TextIO

from minipi.agent.events import (
    AgentEvent,
    AssistantText,
    ModelDelta,
    Notice,
    RunEnd,
    ToolCallStarted,
    ToolExecuting,
    ToolResultReady,
    TurnStart,
    to_json,
)
from minipi.agent.result import RunResult
from minipi.cli.evidence import MARK, marked_text
from minipi.cli.status import Ticker
from minipi.cli.terminal import columns, safe, safe_json
from minipi.cli.words import Words

__all__ = [
    "FOLD_AFTER",
    "HumanLog",
    "JsonLines",
    "LiveText",
    "answer_shown",
    "colour_allowed",
    "fit",
    "fold",
    "one_line",
    "terminal_width",
]

FOLD_AFTER = 8
"""A tool output of more lines is folded in the log to its first ``FOLD_SHOWN`` (``-v``: whole)."""
FOLD_SHOWN = 5
FOLD_WIDTH = 300
"""The most characters of one line of a folded output."""


def _pretty_arguments(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False)
    except (ValueError, RecursionError):
        return arguments


def fold(text: str, words: Words) -> str:
    """``text`` cut to a few lines, each at most ``FOLD_WIDTH`` characters, and a last line
    saying how much was left out (``text`` itself when it is short)."""
    lines = text.split("\n")
    if len(lines) <= FOLD_AFTER and all(len(line) <= FOLD_WIDTH for line in lines):
        return text
    kept = lines[:FOLD_SHOWN] if len(lines) > FOLD_AFTER else lines
    shown = [line if len(line) <= FOLD_WIDTH else line[:FOLD_WIDTH] + "…" for line in kept]
    said = words("folded", lines=len(lines) - len(kept), chars=f"{len(text):,}")
    return "\n".join([*shown, said])


class LiveText:
    """The visible part of streamed text: ``<think>`` blocks hidden, nothing from a
    ``<tool_call>`` on (it is a call, shown as one), leading blank lines dropped. Tags may be
    split across pieces: a tail that could begin one waits for the next piece."""

    _TAGS = ("<think>", "</think>", "<tool_call>")

    def __init__(self) -> None:
        self.pending = ""
        self.headed = False  # the turn's heading was printed
        self.thinking = False
        self.stopped = False
        self.started = False

    def feed(self, piece: str) -> str:
        shown: list[str] = []
        rest = self.pending + piece
        self.pending = ""
        while rest and not self.stopped:
            rest = self._step(rest, shown)
        text = "".join(shown)
        if not self.started:
            text = text.lstrip()
            self.started = bool(text)
        return text

    def _step(self, rest: str, shown: list[str]) -> str:
        """Read ``rest`` up to its next tag, adding what is visible to ``shown``; what is left
        to read ("" when the rest waits in ``pending`` for the next piece)."""
        tag = "</think>" if self.thinking else "<"
        at = rest.find(tag)
        if at < 0:
            keep = _partial_tag(rest)
            if not self.thinking:
                shown.append(rest[: len(rest) - keep])
            self.pending = rest[len(rest) - keep :]
            return ""
        if self.thinking:
            self.thinking = False
            return rest[at + len(tag) :]
        shown.append(rest[:at])
        return self._tag(rest[at:], shown)

    def _tag(self, rest: str, shown: list[str]) -> str:
        """``rest`` begins with ``<``: a think block begins, a tool call stops the text, a tag
        that may be cut waits for the next piece, or the ``<`` is only text."""
        if rest.startswith("<think>"):
            self.thinking = True
            return rest[len("<think>") :]
        if rest.startswith("<tool_call>"):
            self.stopped = True
            return rest
        if any(t.startswith(rest) for t in self._TAGS):
            self.pending = rest
            return ""
        shown.append("<")
        return rest[1:]

    def flush(self) -> str:
        """What was held back as a possible tag when the text ended (it was not one)."""
        held, self.pending = self.pending, ""
        return "" if self.thinking or self.stopped else held


def _partial_tag(text: str) -> int:
    """How many characters at the end of ``text`` could be the start of a tag."""
    at = text.rfind("<")
    if at < 0 or len(text) - at >= len("<tool_call>"):
        return 0
    tail = text[at:]
    return len(tail) if any(t.startswith(tail) for t in LiveText._TAGS) else 0


class Rows:
    """Text laid out for a terminal ``width`` columns wide (0: not known, never cut): each line
    it begins starts with ``lead``, and each row a long line goes on to (where the terminal
    would wrap it to column 0) with ``more``, so that no character of the text can stand at
    the start of a row. Fed piece by piece as text streams; the text must be ``safe``
    already, so that each character takes the columns counted (a tab: to its tab stop; an
    escape, which only minipi's own colours can be then: none)."""

    def __init__(self, lead: str, width: int = 0, more: str | None = None) -> None:
        self.lead, self.width = lead, width
        self.more = lead if more is None else more
        self.column: int | None = None  # None: at a line's start, nothing of it written yet

    def feed(self, text: str) -> str:
        """``text`` laid out, after what was fed before; a line is begun (its ``lead``
        written) by its first character or by the newline that ends it empty."""
        out: list[str] = []
        parts = text.split("\n")
        for k, part in enumerate(parts):
            if k:
                out.append("\n")
                self.column = None
            if part or (k < len(parts) - 1 and self.column is None):
                self._put(part, out)
        return "".join(out)

    def end(self) -> str:
        """What ends the text: a newline, unless it ended with one."""
        begun, self.column = self.column is not None, None
        return "\n" if begun else ""

    def _put(self, part: str, out: list[str]) -> None:
        if self.column is None:
            out.append(self.lead)
            self.column = columns(self.lead)
        if not self.width:
            out.append(part)
            return
        start, escape = columns(self.more), False
        for char in part:
            if escape or char == "\x1b":  # a colour of minipi's, to its final letter
                escape = char == "\x1b" or not char.isalpha()
                out.append(char)
                continue
            wide = 8 - self.column % 8 if char == "\t" else columns(char)
            if self.column + wide > self.width and self.column > start:
                out.append("\n" + self.more)
                self.column = start
                wide = 8 - start % 8 if char == "\t" else wide
            out.append(char)
            self.column += wide


def fit(text: str, width: int, gutter: str = "") -> str:
    """``text`` with each line in rows of ``width`` columns (0: as it is), every row after a
    line's first indented: behind ``gutter`` for a line of quoted text (one that begins with
    it), else by four spaces."""
    return "\n".join(
        Rows("", width, gutter if gutter and line.startswith(gutter) else "    ").feed(line)
        for line in text.split("\n")
    )


def terminal_width(out: TextIO) -> int:
    """How many columns the terminal ``out`` writes to is wide (0: not a terminal, or one
    that says no size)."""
    try:
        return os.get_terminal_size(out.fileno()).columns if out.isatty() else 0
    except (AttributeError, ValueError, OSError):  # no file descriptor (a test's StringIO)
        return 0


def gutter_for(out: TextIO) -> str:
    """What stands before each line of quoted text: a bar where ``out`` writes UTF-8."""
    utf8 = (getattr(out, "encoding", "") or "").lower().replace("-", "") == "utf8"
    return "  │ " if utf8 else "  | "


def answer_shown(answer: str, words: Words, out: TextIO, *, marked: bool) -> str:
    """The answer as printed on ``out``: on a terminal under minipi's heading, every line
    and every row behind the gutter, so that none can pass for a line of minipi's; else the
    plain answer, the text a script reads (``MARK`` escaped when ``marked``: minipi's blocks
    share the terminal)."""
    shown = safe(marked_text(answer) if marked or out.isatty() else answer)
    if not out.isatty():
        return shown
    rows = Rows(gutter_for(out), terminal_width(out))
    return f"{MARK}{words('answer')}\n" + rows.feed(shown)


_STATUS_COLOURS = {"succeeded": "32", "failed": "31", "budget_exhausted": "33", "cancelled": "33"}


def _colour(result: RunResult) -> str | None:
    """The summary line's colour: a success the checks could not back is yellow, one with a
    claim no tool result holds (``unbacked``: exit 4) red."""
    if result.verdict is not None and not result.verdict.backed:
        return "31" if result.verdict.kind == "unbacked" else "33"
    return _STATUS_COLOURS.get(result.status)


def colour_allowed(out: TextIO) -> bool:
    """Colour only on a terminal, and never with ``NO_COLOR`` set (https://no-color.org)."""
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")


def one_line(text: str) -> str:
    """``text`` as one line: its line ends shown as ``\\n`` (a name, an id, a message)."""
    return text.replace("\r\n", "\\n").replace("\n", "\\n")


class HumanLog:
    """The seed's log: each call with its call_id, each result, the model's text, a summary.

    What a tool returned and what the model wrote is shown behind a gutter (``  │ ``), and
    names, ids and messages on one line, so that nothing a file or a model says can pass for
    a line of minipi's own (a call, an approval, the summary). On a terminal the summary
    begins with ``MARK``, as minipi's blocks there do (``minipi.cli.evidence``), and ``MARK``
    is escaped in everything else; a line too long for a row goes on behind an indent (the
    gutter, for quoted text), never from column 0, where the terminal's own wrap would put
    it. Streamed text is shown as it comes, under the turn's heading; the complete text is
    then not printed again (unless the stream was retried, when the heading starts over)."""

    def __init__(
        self,
        words: Words,
        out: TextIO | None = None,
        ticker: Ticker | None = None,
        *,
        verbose: bool = False,
    ) -> None:
        self.words = words
        self.verbose = verbose
        """Each tool output whole; else a long one is folded (``fold``)."""
        self.out = out or sys.stderr
        self.ticker = ticker
        self.colour = colour_allowed(self.out)
        isatty = getattr(self.out, "isatty", None)
        self.marked = bool(isatty and isatty())  # minipi's report there begins with MARK
        self.gutter = gutter_for(self.out)
        self.width = terminal_width(self.out) if self.marked else 0
        self.live: LiveText | None = None
        self.live_turn = 0
        self.streamed_turn = 0  # the last turn whose text was shown as it streamed
        self.rows = Rows(self.gutter, self.width)  # the streamed text's, from its heading on
        self.changes = 0  # tool results that changed something (a move made)
        self.results = [0, 0]  # tool results seen, and how many of them were errors
        self.read_only = False  # a change was asked for in a read-only run

    def __call__(self, event: AgentEvent) -> None:
        w, line = self.words, self._line
        self._status(event)
        if isinstance(event, ModelDelta):
            self._delta(event)
            return
        self._end_live()
        if isinstance(event, ToolCallStarted):
            self._call(event)
        elif isinstance(event, ToolResultReady):
            self._result(event)
        elif isinstance(event, AssistantText) and event.turn != self.streamed_turn:
            line(f"\n{w('text', turn=event.turn)}")
            line(self._quoted(event.text))
        elif isinstance(event, Notice):
            told = event.said.text(w.chinese) if event.said is not None else event.message
            line(f"{w('notice')} {one_line(told)}")
        elif isinstance(event, RunEnd):
            all_failed = self.results[0] > 0 and self.results[1] == self.results[0]
            result = event.result
            said = w.summary(result, self.changes, all_failed, self.read_only)
            line(said, _colour(result), own=True)

    def _call(self, event: ToolCallStarted) -> None:
        w, line = self.words, self._line
        shown = one_line(f"{event.name} {_pretty_arguments(event.arguments)}")
        said = w("call", turn=event.turn) if event.turn else w("opening_call")
        line(f"{said} {shown}", "36")
        line(f"  call_id={one_line(event.call_id)}")

    def _result(self, event: ToolResultReady) -> None:
        """A tool's result: counted for the summary, then shown (folded unless ``verbose``)."""
        w, line = self.words, self._line
        res = event.result
        self.changes += res.changed
        self.results[0] += 1
        self.results[1] += res.is_error
        self.read_only = self.read_only or res.code == "read_only"
        if res.denied:  # the user's decision, not a tool's failure
            line(w("denied_result"), "33")
        elif res.is_error:
            line(w("failed", code=one_line(str(res.code))), "33")
        else:
            line(w("ok"), "32")
        content = res.content.rstrip("\n")
        line(self._quoted(content if self.verbose else fold(content, w)))

    def _status(self, event: AgentEvent) -> None:
        """What the status line says: the model is thinking, a tool is running, or nothing."""
        ticker = self.ticker
        if ticker is None:
            return
        if isinstance(event, TurnStart):
            ticker.show(self.words("status_model", turn=event.turn))
        elif isinstance(event, ToolExecuting):
            ticker.show(self.words("status_tool", name=one_line(event.name)))
        elif not isinstance(event, ModelDelta):
            ticker.hide()  # a result came, a reply was read, the run ended

    def _quoted(self, text: str) -> str:
        """``text`` behind the gutter, every line of it."""
        return "\n".join(self.gutter + part for part in text.split("\n"))

    def _line(self, text: str, colour: str | None = None, *, own: bool = False) -> None:
        """Print ``text`` made safe (``MARK`` escaped on a terminal), cut to the terminal's
        rows, its first line in ``colour`` (an SGR code) where colour is allowed; on a
        terminal each line of ``own`` text (the summary) begins with ``MARK``."""
        lines = safe(marked_text(text) if self.marked else text).split("\n")
        if own and self.marked:
            lines = [MARK + one for one in lines]
        rows = [fit(one, self.width, self.gutter) for one in lines]
        if colour is not None and self.colour:
            rows[0] = "\n".join(f"\x1b[{colour}m{row}\x1b[0m" for row in rows[0].split("\n"))
        with self._writing():
            print("\n".join(rows), file=self.out, flush=True)

    def _writing(self) -> AbstractContextManager[None]:
        return self.ticker.writing() if self.ticker is not None else nullcontext()

    def _delta(self, event: ModelDelta) -> None:
        if event.delta.kind != "text":
            return
        if self.live is None or self.live_turn != event.turn:
            self._end_live()
            self.live, self.live_turn = LiveText(), event.turn
        shown = self.live.feed(event.delta.text)
        if not shown:
            return  # nothing visible yet (a <think> block): the status line stays
        if self.ticker is not None:
            self.ticker.hide()  # the text that streams is progress of its own
        with self._writing():
            if not self.live.headed:
                print(f"\n{self.words('text', turn=event.turn)}", file=self.out)
                self.live.headed, self.rows = True, Rows(self.gutter, self.width)
            print(self._streamed(shown), end="", file=self.out, flush=True)

    def _streamed(self, piece: str) -> str:
        """A streamed piece made safe, laid out behind the gutter after the pieces before."""
        return self.rows.feed(safe(marked_text(piece) if self.marked else piece))

    def _end_live(self) -> None:
        """End the streamed text's line, if some was shown."""
        live, self.live = self.live, None
        if live is not None and live.headed:
            with self._writing():
                shown = self._streamed(live.flush()) + self.rows.end()
                print(shown, end="", file=self.out, flush=True)
            self.streamed_turn = self.live_turn


class JsonLines:
    """One JSON object per event per line (``--json``); the last line is ``run_end``."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout

    def __call__(self, event: AgentEvent) -> None:
        print(safe_json(json.dumps(to_json(event), ensure_ascii=False)), file=self.out, flush=True)
