"""Streaming cost per chunk: minipi's SSE parser + stream reader + delta events, against the
least any client must do (split lines, ``json.loads`` each ``data:`` frame), in one run.

    python bench/perf_stream.py [--chunks 4000] [--reps 7]

A streamed reply of N tokens is about N chunks; the figure that matters is microseconds per
chunk next to the model's tens of milliseconds per token. Three rows, each the median of
``--reps`` runs over the same recorded body (fed in 1 KiB network reads):

* ``baseline``: ``bytes.split(b"\\n")`` + ``json.loads`` per frame (no state, no deltas);
* ``reader``: ``SSEParser`` + ``ChatStream`` (deltas to a no-op sink) + ``result()``;
* ``cli``: the same through ``run_agent``-style events into the CLI's ``HumanLog`` (text
  written to /dev/null), i.e. what ``minipi ask`` does per chunk.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from minipi.agent.events import ModelDelta
from minipi.ai.sse import SSEParser
from minipi.ai.stream import ChatStream
from minipi.ai.types import Delta
from minipi.cli.render import HumanLog
from minipi.cli.words import Words
from support.fake import chat_sse


def recorded(chunks: int) -> bytes:
    """A chat stream of ``chunks`` text pieces of 4 characters (about one token each)."""
    text = "word" * chunks
    completion = {
        "id": "c",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
    }
    return _resplit(chat_sse(completion), chunks)


def _resplit(body: bytes, chunks: int) -> bytes:
    """``chat_sse`` cuts text into 3 pieces; re-render it as ``chunks`` pieces."""
    frames = [f for f in body.split(b"\n\n") if f]
    first, last = frames[0], frames[-3:]  # role chunk; finish, usage, [DONE]
    piece = frames[1].decode()
    data = json.loads(piece.removeprefix("data: "))
    out = [first]
    for _ in range(chunks):
        data["choices"][0]["delta"] = {"content": "word"}
        out.append(b"data: " + json.dumps(data).encode())
    return b"\n\n".join([*out, *last]) + b"\n\n"


def reads(body: bytes, size: int = 1024) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def baseline(pieces: list[bytes]) -> None:
    buffer = b"".join(pieces)  # the least work: one split, one json.loads per frame
    for line in buffer.split(b"\n"):
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            json.loads(line[6:])


def reader(pieces: list[bytes], on_delta: Callable[[Delta], None] | None = None) -> None:
    parser, stream = SSEParser(), ChatStream(on_delta or (lambda d: None))
    for piece in pieces:
        for name, data in parser.feed(piece):
            stream.event(name, data)
    stream.result()


def cli(pieces: list[bytes]) -> None:
    log = HumanLog(Words(False), io.StringIO())
    reader(pieces, lambda d: log(ModelDelta(1, d)))


def timed(function: Callable[[list[bytes]], None], pieces: list[bytes], reps: int) -> float:
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        function(pieces)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=4000)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    pieces = reads(recorded(args.chunks))
    rows = [
        (name, timed(f, pieces, args.reps))
        for name, f in (("baseline", baseline), ("reader", reader), ("cli", cli))
    ]
    base = rows[0][1]
    print(f"| path ({args.chunks} chunks) | µs per chunk | ratio to baseline |")
    print("| --- | --- | --- |")
    for name, seconds in rows:
        print(f"| {name} | {seconds / args.chunks * 1e6:.2f} | {seconds / base:.2f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
