"""``--trace FILE``: the seed's evidence record of one run, as one JSON document.

``events`` are the run's events in the shapes ``--json`` writes (``minipi.agent.events.
to_json``), without the streamed pieces (each reply is whole in its ``model_response``, which
here also carries the raw response and the request's size). The ``items`` events hold every
item the history gained, in order: with the header's instructions and tools, request k is
the items of the events before its ``turn_start`` (as the history holds them: a request
sends an output shortened to fit the context, or a result it already holds, shorter).
``result`` is the ``run_end`` event.
The API key is never written, nor any secret an endpoint was sent (``minipi.ai.secrets``).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from minipi.agent.events import AgentEvent, ModelDelta, ModelResponded, RunEnd, to_json
from minipi.agent.tools import AgentTool
from minipi.ai.declare import declare_tool
from minipi.ai.secrets import redact
from minipi.assemble import ModelHandle, Settings

__all__ = ["TraceRecorder", "trace_header"]


def trace_header(
    settings: Settings, model: ModelHandle, tools: Sequence[AgentTool], project: Path
) -> dict[str, Any]:
    """What a trace says before its events: the endpoint, the model file the embedded engine
    served and its sha256 (the seed's runtime record: a run can be reproduced), the
    project, the instructions and the tools as the wire declared them."""
    model_file = None
    if model.model_file is not None:
        from minipi.local.models import sha256_of

        model_file = {"path": model.model_file, "sha256": sha256_of(model.model_file)}
    return {
        "endpoint": {
            "base_url": model.base_url,
            "model": model.client.model,
            "wire": settings.wire,
        },
        "model_file": model_file,
        "project": str(project),
        "instructions": settings.instructions,
        "tools": [declare_tool(t.spec(), settings.wire) for t in tools],
    }


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
            self.flush()

    def flush(self) -> None:
        """Write what was recorded so far (``RunEnd`` does; a caller without a run can)."""
        result = self.events[-1] if self.events and self.events[-1]["type"] == "run_end" else None
        self.write({**self.record, "events": self.events, "result": result})

    def write(self, record: dict[str, Any]) -> None:
        """Write atomically: a temp file next to the target, fsync, replace. The trace holds
        the files' contents and the questions, so it is the user's alone (0600, like the
        session store), and its temporary file is a new one (``mkstemp``: ``O_EXCL``, a
        random name), never a file or link someone else placed there."""
        text = redact(json.dumps(record, ensure_ascii=False, indent=2))  # whatever echoed a key
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (a "\\ud800" from a server): escaped
            data = redact(json.dumps(record, indent=2)).encode("ascii")
        fd, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
