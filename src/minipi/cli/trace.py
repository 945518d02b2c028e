"""``--trace FILE``: the seed's evidence record of one run, as one JSON document.

``events`` are the run's events in the shapes ``--json`` writes (``minipi.agent.events.
to_json``), without the streamed pieces (each reply is whole in its ``model_response``, which
here also carries the raw response and the request's size). The ``items`` events hold every
item the history gained, in order: with the header's instructions and tools, request k is
the items of the events before its ``turn_start``. ``result`` is the ``run_end`` event.
The API key is never written.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from minipi.agent.events import AgentEvent, ModelDelta, ModelResponded, RunEnd, to_json

__all__ = ["TraceRecorder"]


class TraceRecorder:
    """A sink that collects the run and writes ``path`` when the run ends."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.record: dict[str, Any] = {"minipi_trace": 2, "started": started, **header}
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, ModelDelta):
            return
        shown = to_json(event)
        if isinstance(event, ModelResponded):
            shown.update(response=event.response.raw, request_bytes=event.response.request_bytes)
        self.events.append(shown)
        if isinstance(event, RunEnd):
            self.write({**self.record, "events": self.events, "result": shown})

    def write(self, record: dict[str, Any]) -> None:
        """Write atomically: a temp file next to the target, fsync, replace."""
        temp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(temp, "w", encoding="utf-8") as handle:
            json.dump(record, handle, ensure_ascii=False, indent=2)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, self.path)
