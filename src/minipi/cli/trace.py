"""``--trace FILE``: the seed's evidence record of one run, as one JSON document.

Per turn it keeps what the request added to the conversation (the items new since the
previous request: request k is the instructions, the tools and the items of turns 1..k), the
raw response, timings and token usage, each call with its result. The API key is never written.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from minipi.agent.events import (
    AgentEvent,
    ModelResponded,
    Notice,
    RunEnd,
    RunStart,
    ToolCallStarted,
    ToolResultReady,
    TurnStart,
    to_json,
)
from minipi.ai.serialize import item_to_json

__all__ = ["TraceRecorder"]


class TraceRecorder:
    """A sink that collects the run and writes ``path`` when the run ends."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        self.record: dict[str, Any] = {"minipi_trace": 1, **header, "turns": []}
        self.sent = 0  # items of the history already written into an earlier turn

    def __call__(self, event: AgentEvent) -> None:
        turns: list[dict[str, Any]] = self.record["turns"]
        if isinstance(event, RunStart):
            self.record["started"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            self.record["question"] = event.question
        elif isinstance(event, TurnStart):
            turns.append(
                {
                    "turn": event.turn,
                    "tool_choice": event.tool_choice,
                    "new_input": self._new_items(event),
                    "calls": [],
                }
            )
        elif isinstance(event, ModelResponded) and turns:
            r = event.response
            turns[-1].update(
                response=r.raw,
                finish_reason=r.finish_reason,
                seconds=round(event.seconds, 4),
                request_bytes=r.request_bytes,
                usage=to_json(event)["usage"],
            )
        elif isinstance(event, ToolCallStarted | ToolResultReady) and turns:
            turns[-1]["calls"].append(to_json(event))
        elif isinstance(event, Notice):  # retries, refusals, shortened outputs
            self.record.setdefault("notices", []).append(to_json(event))
        elif isinstance(event, RunEnd):
            self.record["result"] = to_json(event)
            self.record["items"] = [item_to_json(i) for i in event.result.items]
            self.write()

    def _new_items(self, event: TurnStart) -> list[dict[str, Any]]:
        items = event.items
        new = [item_to_json(i) for i in items[self.sent :]]
        self.sent = len(items)
        return new

    def write(self) -> None:
        """Write atomically: a temp file next to the target, fsync, replace."""
        temp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(temp, "w", encoding="utf-8") as handle:
            json.dump(self.record, handle, ensure_ascii=False, indent=2)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, self.path)
