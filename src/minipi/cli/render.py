"""Event sinks of the CLI: the seed's round-by-round log, JSON lines, and terminal-safe text."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from minipi.agent.events import (
    AgentEvent,
    AssistantText,
    Notice,
    RunEnd,
    ToolCallStarted,
    ToolResultReady,
    to_json,
)
from minipi.agent.result import RunResult
from minipi.cli.terminal import safe

__all__ = ["HumanLog", "JsonLines", "Words", "safe", "words_for"]  # safe: re-exported


class Words:
    """Headings in one language (the question's)."""

    def __init__(self, chinese: bool) -> None:
        self.chinese = chinese

    def call(self, turn: int) -> str:
        return f"[第 {turn} 轮调用]" if self.chinese else f"[turn {turn} call]"

    def text(self, turn: int) -> str:
        return f"[第 {turn} 轮模型文本]" if self.chinese else f"[turn {turn} model text]"

    def ok(self) -> str:
        return "[工具成功]" if self.chinese else "[tool ok]"

    def failed(self, code: str | None) -> str:
        return f"[工具失败] {code}" if self.chinese else f"[tool error] {code}"

    def notice(self) -> str:
        return "[提示]" if self.chinese else "[notice]"

    def summary(self, result: RunResult) -> str:
        usage = result.usage
        if self.chinese:
            status = {
                "succeeded": "成功",
                "failed": "失败",
                "budget_exhausted": "预算耗尽",
                "cancelled": "已取消",
            }[result.status]
            line = (
                f"[{status}] {result.turns} 次模型请求，{result.tool_calls} 次工具调用，"
                f"tokens 输入 {usage.input_tokens} / 输出 {usage.output_tokens}"
            )
        else:
            line = (
                f"[{result.status}] {result.turns} model requests, {result.tool_calls} tool "
                f"calls, tokens in {usage.input_tokens} / out {usage.output_tokens}"
            )
        if usage.cached_tokens:
            line += f" (cached {usage.cached_tokens})"
        if result.status != "succeeded":
            line += f"\n{result.code}: {result.error}"
        return line


def words_for(question: str) -> Words:
    return Words(any("\u4e00" <= ch <= "\u9fff" for ch in question))


def _pretty_arguments(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False)
    except (ValueError, RecursionError):
        return arguments


class HumanLog:
    """The seed's log: each call with its call_id, each result, the model's text, a summary."""

    def __init__(self, words: Words, out: TextIO | None = None) -> None:
        self.words = words
        self.out = out or sys.stderr

    def __call__(self, event: AgentEvent) -> None:
        w, line = self.words, self._line
        if isinstance(event, ToolCallStarted):
            line(f"{w.call(event.turn)} {event.name} {_pretty_arguments(event.arguments)}")
            line(f"  call_id={event.call_id}")
        elif isinstance(event, ToolResultReady):
            res = event.result
            line(w.failed(res.code) if res.is_error else w.ok())
            line(res.content.rstrip("\n"))
        elif isinstance(event, AssistantText):
            line(f"\n{w.text(event.turn)}")
            line(event.text)
        elif isinstance(event, Notice):
            line(f"{w.notice()} {event.message}")
        elif isinstance(event, RunEnd):
            line(w.summary(event.result))

    def _line(self, text: str) -> None:
        print(safe(text), file=self.out, flush=True)


class JsonLines:
    """One JSON object per event per line (``--json``); the last line is ``run_end``."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout

    def __call__(self, event: AgentEvent) -> None:
        print(json.dumps(to_json(event), ensure_ascii=False), file=self.out, flush=True)
