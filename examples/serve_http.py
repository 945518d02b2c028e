"""Questions about one project over HTTP: ``POST /ask {"question": ...}``, one ``arun_agent``
each, served by uvicorn.

    python -m examples.serve_http --project examples/sample_project --port 8000
    curl -s 127.0.0.1:8000/ask -d '{"question": "日报里的订单数是多少？"}'
    {"status": "succeeded", "answer": "…", "verdict": {"kind": "backed", …}, "sources": […]}

The endpoint as for ``minipi ask``: ``--base-url``/``--model``, else ``QWEN_BASE_URL`` /
``QWEN_MODEL``, else ``OPENAI_BASE_URL``…, else the local engine. The project: ``--project``,
else ``$MINIPI_PROJECT``, else ``examples/sample_project``; the tools are read-only.

Every run is answered ``200`` with its status (``succeeded``, ``failed``,
``budget_exhausted``), the answer (empty unless it succeeded), the verdict (what the answer
rests on; null unless it succeeded) and the sources of its figures (``Source.to_json()``
with the claim's text). A client that hangs up before its answer cancels its run: the run
ends ``cancelled``, every call answered, and nothing is sent. A bare ASGI app: no framework.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from pathlib import Path
from typing import Any

from minipi.agent import AgentEvent, ApprovalRequest, AsyncEventSink, RunEnd, arun_agent
from minipi.agent.result import RunResult
from minipi.assemble import ModelHandle, Settings, agent_config, open_model, run_tools
from minipi.cli.settings import RunOptions, resolve_settings
from minipi.errors import MiniPiError
from minipi.files import ProjectFiles

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_BODY = 64 * 1024
"""The longest request body read (bytes); a longer one is refused."""
USAGE = {"error": 'POST /ask with a JSON body {"question": "..."}'}
HERE = Path(__file__).resolve().parent


class AskApp:
    """The ASGI app: ``POST /ask`` runs the question on ``project`` with ``model``; each run's
    events go to ``on_event`` too (a log, a tally), when given."""

    def __init__(
        self,
        model: ModelHandle,
        settings: Settings,
        project: Path,
        on_event: AsyncEventSink | None = None,
    ) -> None:
        self.model = model
        self.settings = settings
        self.project = project
        self.on_event = on_event

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # served with lifespan="off"; no websockets
            return
        if (scope["method"], scope["path"]) != ("POST", "/ask"):
            await _reply(send, 404, USAGE)
            return
        body = await _read_body(receive)
        if body is None:  # the client left before its question arrived
            return
        question = _question(body)
        if question is None:
            await _reply(send, 400, USAGE)
            return
        try:
            result = await _unless_gone(self.ask(question), receive)
        except MiniPiError as error:  # the run could not start (a misconfigured run)
            await _reply(send, 500, {"error": str(error)})
            return
        if result is not None:
            await _reply(send, 200, answer_json(result))

    async def ask(self, question: str) -> RunResult:
        """One run of ``question``, on the project's files (opened for this run alone)."""
        with ProjectFiles(self.project, allow=self.settings.allow) as files:
            tools = run_tools(self.settings, files, _deny)
            config = agent_config(self.settings, self.model, tools, question=question, files=files)
            return await arun_agent(self.model.client, tools, config, question, self.on_event)


def answer_json(result: RunResult) -> dict[str, Any]:
    """What ``POST /ask`` answers for a run that ended."""
    evidence = result.evidence.claims if result.evidence is not None else ()
    return {
        "status": result.status,
        "answer": result.answer,
        "verdict": result.verdict.to_json() if result.verdict is not None else None,
        "sources": [
            {"claim": checked.claim.text, **source.to_json()}
            for checked in evidence
            for source in checked.sources
        ],
    }


async def _unless_gone(
    asking: Coroutine[Any, Any, RunResult], receive: Receive
) -> RunResult | None:
    """The run's result, or None when the client hangs up first: the run is then cancelled,
    and waited for (it ends ``cancelled``, every call answered)."""
    run = asyncio.create_task(asking)
    gone = asyncio.create_task(_disconnected(receive))
    try:
        await asyncio.wait({run, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not run.done():  # the client left (or this request is being cancelled itself)
            run.cancel()
            await asyncio.wait({run})
    return None if run.cancelled() else run.result()


async def _disconnected(receive: Receive) -> None:
    """Returns when the client hangs up (once the body is read, ``receive`` waits for that)."""
    while (await receive())["type"] != "http.disconnect":
        continue


async def _read_body(receive: Receive) -> bytes | None:
    """The request's body (``b""`` past ``MAX_BODY``), or None when the client left first."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks) if size <= MAX_BODY else b""


def _question(body: bytes) -> str | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    question = data.get("question") if isinstance(data, dict) else None
    return question if isinstance(question, str) and question.strip() else None


async def _reply(send: Send, status: int, data: dict[str, Any]) -> None:
    body = json.dumps(data, ensure_ascii=False).encode()
    headers = [(b"content-type", b"application/json; charset=utf-8")]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _deny(request: ApprovalRequest) -> bool:
    """Nobody is asked (the tools are read-only: nothing asks)."""
    return False


async def log_end(event: AgentEvent) -> None:
    """The server's log: one line as each run ends."""
    if isinstance(event, RunEnd):
        result = event.result
        said = result.code or (result.verdict.kind if result.verdict is not None else "")
        print(f"ask: {result.status} {said} ({result.turns} turns)", file=sys.stderr)


def _options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="POST /ask: questions about a project")
    default = os.environ.get("MINIPI_PROJECT") or str(HERE / "sample_project")
    parser.add_argument("--project", type=Path, default=Path(default))
    parser.add_argument("--base-url")
    parser.add_argument("--model")
    parser.add_argument("--api-key")
    parser.add_argument("--wire", choices=["chat", "responses"])
    parser.add_argument("--max-seconds", type=float, default=300.0, help="each run's budget")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    return parser.parse_args()


def main() -> None:
    import uvicorn  # a dev dependency: pip install uvicorn

    args = _options()
    given = {
        "base_url": args.base_url,
        "model": args.model,
        "api_key": args.api_key,
        "wire": args.wire,
        "max_seconds": args.max_seconds,
    }
    flags = {key: value for key, value in given.items() if value is not None}
    try:
        settings = resolve_settings(RunOptions(args.project, flags=flags))
        model = open_model(settings, os.environ)
    except MiniPiError as error:
        sys.exit(f"error: {error}")
    app = AskApp(model, settings, args.project, log_end)
    try:
        uvicorn.run(app, host=args.host, port=args.port, lifespan="off")
    finally:
        model.close()


if __name__ == "__main__":
    main()
