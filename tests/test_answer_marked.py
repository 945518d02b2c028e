"""Issue 37 item 7: on a terminal the answer stands under minipi's own heading, every line of it
behind the gutter, and each line minipi prints about the run (the summary, the sources block)
begins with minipi's mark; nothing the model writes can print a line that passes for one of
minipi's, with colour or without (``NO_COLOR``), with escapes, carriage returns or a line long
enough that the terminal would wrap it. Off a terminal, stdout is the plain answer.

Each run is the real ``minipi`` on a pseudo-terminal (the fake model over HTTP); what the
terminal shows is worked out from what was written: ``\\r`` starts the row again, a row
wraps at the window's width, and minipi's own colours are dropped."""

from __future__ import annotations

import fcntl
import itertools
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
import unicodedata
from pathlib import Path

import pytest

from minipi.cli.terminal import safe
from support.cli import QUESTION, clean_env, minipi
from support.fake import Call, FakeServer, Turn

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample_project"
REPORT = "reports/daily-2026-09-06.json"
MARK = "▌"
GUTTER = "  │ "

FORGED = (
    "这份日报的日期是2026-09-06，订单数为128，营收为9600元。\n"
    "[成功] 2 次模型请求，1 次工具调用，依据 3/3\n"
    "[succeeded] 2 model requests, 1 tool call, 3/3 figures traced\n"
    "[依据] 9/9 个数字可追溯\n"
    "  128  reports/daily-2026-09-06.json:3  /orders"
)
FORGED_LINES = (
    "[成功] 2 次模型请求，1 次工具调用，依据",
    "[succeeded] 2 model requests, 1 tool call, 3/3",
    "[依据] 9/9",
    "[evidence] 9/9",
)
"""How the answer's imitations of minipi's lines begin."""

ESCAPES = (
    "The report has 128 orders.\n"
    "\r[succeeded] 2 model requests, 1 tool call, 3/3 figures traced\n"
    "x\x1b[2K\x1b[1G[evidence] 9/9 figures traced\n"
    "\x1b[4D\x08\x08\x08\x08[成功] 2 次模型请求\x1b]0;title\x07\n"
    + "." * 70
    + "[succeeded] 2 model requests, 1 tool call, wrapped to the row's start"
)
"""Carriage returns, cursor moves, an erase, backspaces, and a line that a terminal 80 columns
wide would wrap so that its tail begins a row."""

SUMMARY = re.compile(rf"^{MARK}?\[(成功|失败|无依据|succeeded|failed|unbacked)")


def on_tty(args: list[str], env: dict[str, str], *, width: int = 0, keys: bytes = b"") -> str:
    """``python -m minipi ARGS`` on a pseudo-terminal ``width`` columns wide (0: a size not
    set); ``keys`` typed once a chat prompt shows. All it wrote, as written."""
    master, slave = os.openpty()
    if width:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "minipi", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
        start_new_session=True,
    )
    os.close(slave)
    seen, deadline, typed = b"", time.monotonic() + 60, False
    try:
        while time.monotonic() < deadline:
            if keys and not typed and b"> " in seen:
                os.write(master, keys)
                typed = True
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    finally:
        process.kill()
        process.wait()
        os.close(master)
    return seen.decode("utf-8", "replace")


def _columns(text: str) -> int:
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def screen(written: str, width: int = 0) -> list[str]:
    """The rows a terminal shows for ``written``: SGR colours and erases (minipi's own, the
    status line's) dropped, ``\\r`` starting the row again, rows wrapped at ``width``."""
    assert "\x1b]" not in written  # nothing else reached it raw
    assert "\x08" not in written
    plain = re.sub(r"\x1b\[[0-9;]*[mK]", "", written.replace("\r\n", "\n"))
    assert "\x1b" not in plain, repr(plain)  # no other escape was written as such
    rows: list[str] = []
    for line in plain.split("\n"):
        line = line.rsplit("\r", 1)[-1]
        while width and _columns(line) > width:
            cut = 0
            while _columns(line[: cut + 1]) <= width:
                cut += 1
            rows.append(line[:cut])
            line = line[cut:]
        rows.append(line)
    return rows


def assert_only_minipi_at_column_0(rows: list[str], answer: str) -> None:
    """No row the answer begins; one summary, minipi's, marked; the answer under minipi's
    heading, every line behind the gutter."""
    left = [row for row in rows if row and not row[0].isspace()]
    for row in left:
        assert not row.lstrip(MARK).startswith(FORGED_LINES), (row, rows)
        assert "wrapped to the row's start" not in row, (row, rows)
    summaries = [k for k, row in enumerate(rows) if SUMMARY.match(row)]
    assert len(summaries) == 1, rows
    summary = rows[summaries[0]]
    assert summary.startswith(MARK), summary
    wrapped = itertools.takewhile(lambda row: row.startswith("    "), rows[summaries[0] + 1 :])
    assert "tokens" in "".join([summary, *wrapped])  # the real one
    heading = [k for k, row in enumerate(rows) if row.lstrip(MARK) in ("[答案]", "[answer]")]
    assert len(heading) == 1, rows
    assert rows[heading[0]].startswith(MARK)
    after = rows[heading[0] + 1 :]
    shown = [row for row in after if row.startswith(GUTTER)]
    assert shown, rows
    assert "".join(row[len(GUTTER) :] for row in shown) == safe(answer).replace("\n", "")
    assert after[len(shown)].startswith(MARK), after  # the sources block follows, minipi's


def endpoint(server: FakeServer) -> list[str]:
    return ["--project", str(SAMPLE), "--base-url", server.base_url, "--model", "fake-model"]


def read_then(server: FakeServer, answer: str) -> None:
    server.add(Turn(calls=[Call("read_file", {"path": REPORT})]), Turn(answer))


@pytest.mark.parametrize("colour", ["NO_COLOR", "colour"])
def test_a_forged_summary_and_sources_block_in_the_answer_stay_behind_the_gutter(
    fake_server: FakeServer, colour: str
) -> None:
    read_then(fake_server, FORGED)
    env = clean_env(**({"NO_COLOR": "1"} if colour == "NO_COLOR" else {}))
    written = on_tty(["ask", QUESTION, *endpoint(fake_server), "--no-stream"], env)
    rows = screen(written)
    assert_only_minipi_at_column_0(rows, FORGED)
    assert f"{MARK}[成功" in written  # marked, coloured or not
    evidence = [row for row in rows if row.lstrip(MARK).startswith("[依据]")]
    assert len(evidence) == 1, rows
    assert evidence[0].startswith(MARK)


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_escapes_carriage_returns_and_wrapped_rows_cannot_reach_column_0(
    fake_server: FakeServer, stream: str
) -> None:
    read_then(fake_server, ESCAPES)
    args = ["ask", "How many orders does the report say?", *endpoint(fake_server), stream]
    written = on_tty(args, clean_env(NO_COLOR="1"), width=80)
    rows = screen(written, 80)
    assert_only_minipi_at_column_0(rows, ESCAPES)
    for row in rows:  # the log's model text is wrapped behind the gutter too
        assert "wrapped to the row's start" not in row or row.startswith(GUTTER), rows
    assert "\\u001b[2K\\u001b[1G[evidence]" in written  # shown, escaped


def test_a_chat_answer_is_behind_the_gutter_and_its_summary_marked(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    fake_server.add(Turn(FORGED))
    env = clean_env(NO_COLOR="1", MINIPI_DATA_DIR=str(tmp_path / "data"))
    written = on_tty(["chat", *endpoint(fake_server), "--no-stream"], env, keys=b"hi\r\x04")
    rows = screen(written)
    left = [row for row in rows if row and not row[0].isspace()]
    assert not [row for row in left if row.lstrip(MARK).startswith(FORGED_LINES)], rows
    summaries = [row for row in left if SUMMARY.match(row)]
    assert len(summaries) == 1, rows
    assert summaries[0].startswith(MARK)
    assert f"{GUTTER}[成功] 2 次模型请求，1 次工具调用，依据 3/3" in rows


def test_off_a_terminal_stdout_is_the_plain_answer(fake_server: FakeServer) -> None:
    for answer, code in ((FORGED, 0), (ESCAPES, 4)):  # ESCAPES: unbacked (exit 4)
        read_then(fake_server, answer)
        proc = minipi("ask", QUESTION, *endpoint(fake_server), "--no-stream")
        assert proc.returncode == code, proc.stderr
        assert proc.stdout == safe(answer) + "\n"
        assert MARK not in proc.stderr  # nothing marked for a file
        assert "[答案]" not in proc.stderr + proc.stdout
