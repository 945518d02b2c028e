"""The two transports, as async context managers yielding the SDK's stream pair.

``pipe_transport`` speaks newline-delimited JSON-RPC over the pipes of a process that
``process.start_process`` already started. It is ours rather than the SDK's ``stdio_client``
because that one starts the process itself, only once the SDK is imported, and without the
launcher (measured reason in ``process``); it keeps the SDK's rules: one message per line,
a line that is not JSON-RPC is skipped (noted in the server's log, not on the screen), and the
process is stopped on exit while its stdout is drained. ``http_transport`` is the SDK's
streamable-HTTP client with the server's headers and our connect timeout.

Runs on the event-loop thread only; imports the SDK, so it is imported only when a server is
configured.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager

import anyio
import anyio.to_thread
import httpx2
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter
from pydantic import ValidationError

from minipi.mcp.config import McpServer
from minipi.mcp.process import ServerLog, stop_process

__all__ = ["MAX_MESSAGE_BYTES", "Streams", "http_transport", "pipe_transport"]

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""A longer line means a broken or hostile server: it is treated as gone."""

_CHUNK = 1 << 16
_POLL = 0.5  # how often a silent pipe is checked for a server that exited behind it

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


@asynccontextmanager
async def pipe_transport(
    process: subprocess.Popen[bytes], log: ServerLog | None
) -> AsyncIterator[Streams]:
    """The session's streams over ``process``'s stdin/stdout; on exit the process is stopped
    (``stop_process``) and its pipes closed, even when the caller is cancelled."""
    assert process.stdin is not None
    assert process.stdout is not None
    os.set_blocking(process.stdin.fileno(), False)
    os.set_blocking(process.stdout.fileno(), False)
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    reader, writer = _Task(), _Task()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader.run, _read(process, read_send, log))
        tasks.start_soon(writer.run, _write(process, write_receive))
        try:
            yield read_receive, write_send
        finally:
            with anyio.CancelScope(shield=True):
                await writer.stop()  # nothing may write to stdin once it is closed
                await anyio.to_thread.run_sync(stop_process, process)  # the reader drains
                await reader.stop()
            for stream in (read_send, read_receive, write_send, write_receive):
                stream.close()
            with contextlib.suppress(OSError):
                process.stdout.close()


@asynccontextmanager
async def http_transport(
    server: McpServer, connect_timeout: float, refusals: list[int]
) -> AsyncIterator[Streams]:
    """The SDK's streamable-HTTP transport to ``server.url`` with ``server.headers``; the
    status of each answer >= 400 is appended to ``refusals`` (the SDK's errors omit it).

    The read timeout is long: a call's own limit is enforced above the transport, and a
    server may keep its event stream open and quiet between messages."""
    timeout = httpx2.Timeout(connect_timeout, read=300.0)

    async def note(response: httpx2.Response) -> None:
        if response.status_code >= 400:
            refusals.append(response.status_code)

    hooks = {"response": [note]}
    async with (
        httpx2.AsyncClient(
            headers=dict(server.headers), timeout=timeout, event_hooks=hooks
        ) as http,
        streamable_http_client(server.url or "", http_client=http) as (read, write),
    ):
        yield read, write  # type: ignore[misc]  # the SDK's context-aware memory streams


class _Task:
    """A task of the transport that can be stopped on its own, and awaited."""

    def __init__(self) -> None:
        self._scope = anyio.CancelScope()
        self._done = anyio.Event()

    async def run(self, work: Awaitable[None]) -> None:
        try:
            with self._scope:
                await work
        finally:
            self._done.set()

    async def stop(self) -> None:
        self._scope.cancel()
        await self._done.wait()


async def _read(
    process: subprocess.Popen[bytes],
    send: MemoryObjectSendStream[SessionMessage | Exception],
    log: ServerLog | None,
) -> None:
    """Deliver each JSON-RPC line of stdout; at end-of-file, or when the process is gone,
    close ``send`` (the session then answers its pending requests "connection closed")."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    buffer, scanned, delivering = bytearray(), 0, True
    async with send:
        while chunk := await _chunk(process, fd):
            buffer += chunk
            while (end := buffer.find(b"\n", scanned)) >= 0:
                line, scanned = bytes(buffer[:end]), 0
                del buffer[: end + 1]
                message = _parse(line, log)
                if message is not None and delivering:
                    delivering = await _deliver(send, message)
            scanned = len(buffer)
            if scanned > MAX_MESSAGE_BYTES:
                _note(log, f"a message over {MAX_MESSAGE_BYTES} bytes; treating the server as gone")
                return


async def _chunk(process: subprocess.Popen[bytes], fd: int) -> bytes:
    """The next bytes of stdout; b"" at end-of-file or once the process has exited (a child
    of the server may hold the pipe open after the server is gone)."""
    while True:
        try:
            return os.read(fd, _CHUNK)
        except BlockingIOError:
            pass
        except OSError:
            return b""
        with anyio.move_on_after(_POLL) as waited:
            await anyio.wait_readable(fd)
        if waited.cancelled_caught and process.poll() is not None:
            return b""


async def _deliver(
    send: MemoryObjectSendStream[SessionMessage | Exception], message: SessionMessage
) -> bool:
    """False once the session has gone (the rest of stdout is then drained unread)."""
    try:
        await send.send(message)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        return False
    return True


def _parse(line: bytes, log: ServerLog | None) -> SessionMessage | None:
    if not line.strip():
        return None
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except (ValidationError, ValueError):
        text = line[:200].decode("utf-8", "replace")
        _note(log, f"skipped a line of stdout that is not JSON-RPC: {text!r}")
        return None


async def _write(
    process: subprocess.Popen[bytes], receive: MemoryObjectReceiveStream[SessionMessage]
) -> None:
    """Write each outgoing message as one line; stop at the first failed write (the server
    closed its stdin: the reader sees it go)."""
    assert process.stdin is not None
    fd = process.stdin.fileno()
    async with receive:
        async for message in receive:
            text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
            data = memoryview((text + "\n").encode("utf-8"))
            while data:
                try:
                    data = data[os.write(fd, data) :]
                except BlockingIOError:
                    await anyio.wait_writable(fd)
                except OSError:
                    return


def _note(log: ServerLog | None, text: str) -> None:
    """A line of minipi's own in the server's log."""
    if log is None:
        return
    with contextlib.suppress(OSError), log.path.open("a", encoding="utf-8") as file:
        file.write(f"[minipi] {text}\n")
