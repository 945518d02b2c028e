"""Issue 37, item 3: with no endpoint configured, ``minipi ask`` sends the question and the
project's files to the server on 127.0.0.1:8021 only when it is ``minipi serve`` of this user.
Before, whatever answered ``GET /v1/models`` there got them: another user's server, or any
other program.

Through the real CLI (each needs 127.0.0.1:8021 free, else it is skipped): a server there of
another program, or (run as root) of another user, gets no request, and ``minipi ask`` says why
and starts an engine of its own; ``minipi serve`` of this user is still used. The engine is a
stand-in for llama-cpp-python's server (``python -m minipi.local.engine_child`` runs it), so no
model is loaded. The decision itself (``minipi.local.trust.not_ours``) is also tested on a
made-up ``/proc``: the cases a test cannot set up for real.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from minipi.local.ports import DEFAULT_PORT
from minipi.local.trust import ENGINE_MODULE, not_ours
from support.cli import clean_env, minipi
from support.engine import fake_extra

pytestmark = pytest.mark.reliability

IMPLICIT = f"http://127.0.0.1:{DEFAULT_PORT}/v1"

FOREIGN = """# Another program's OpenAI-compatible server: lists a model, says what it was sent.
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.reply(200, {"object": "list", "data": [{"id": "foreign-model"}]})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        print("POST " + self.path, flush=True)
        self.reply(500, {"error": {"message": "the foreign server got it"}})

    def reply(self, status, data):
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print("listening", flush=True)
server.serve_forever()
"""

ENGINE = """# A stand-in for llama_cpp.server: lists its alias, answers every POST with a 500.
import argparse, json
from http.server import BaseHTTPRequestHandler, HTTPServer

parser = argparse.ArgumentParser()
for flag in ("--model", "--model_alias", "--host", "--port", "--n_ctx", "--n_threads",
             "--n_threads_batch", "--verbose"):
    parser.add_argument(flag)
args = parser.parse_args()

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": args.model_alias}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

HTTPServer((args.host, int(args.port)), Handler).serve_forever()
"""


@pytest.fixture
def implicit_port() -> int:
    """127.0.0.1:8021, free now (a developer's own ``minipi serve`` there skips the test)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", DEFAULT_PORT))
        except OSError:
            pytest.skip(f"127.0.0.1:{DEFAULT_PORT} is busy")
    return DEFAULT_PORT


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment in which the local engine is ``ENGINE`` (the ``local`` extra shadowed),
    with no model download and nothing cached."""
    shadow = fake_extra(tmp_path / "fake-extra", ENGINE)
    return clean_env(
        PYTHONPATH=os.pathsep.join(p for p in (str(shadow), os.environ.get("PYTHONPATH")) if p),
        HF_HUB_CACHE=str(tmp_path / "hub"),
        MINIPI_OFFLINE="1",
        MINIPI_DATA_DIR=str(tmp_path / "data"),
    )


def _lines(stream: IO[str], into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)
    into.put("")


@contextlib.contextmanager
def _started(
    command: list[str], marker: str, env: dict[str, str] | None = None, **popen: object
) -> Iterator[queue.Queue[str]]:
    """``command`` running inside the block, once it printed ``marker`` (the test is skipped
    when it ends before); the block gets the lines it prints next (stdout and stderr)."""
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        **popen,  # type: ignore[call-overload]
    )
    lines: queue.Queue[str] = queue.Queue()
    readers = [
        threading.Thread(target=_lines, args=(stream, lines), daemon=True)
        for stream in (process.stdout, process.stderr)
    ]
    for reader in readers:
        reader.start()
    try:
        seen: list[str] = []
        while not any(marker in line for line in seen):
            try:
                line = lines.get(timeout=30)
            except queue.Empty:
                pytest.fail(f"{command[:3]} printed no {marker!r} within 30 s: {seen}")
            if not line and process.poll() is not None:
                pytest.skip(f"{command[:3]} could not start: {''.join(seen)[-300:]}")
            seen.append(line)
        yield lines
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for reader in readers:
            reader.join(timeout=5)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def _foreign(user: str) -> contextlib.AbstractContextManager[queue.Queue[str]]:
    """``FOREIGN`` on the implicit port, run by this user or (root only) by nobody."""
    python = os.path.realpath(sys.executable)
    popen: dict[str, object] = {"cwd": "/"}
    if user == "another user":
        if os.geteuid() != 0:
            pytest.skip("only root can start a server as another user")
        popen["user"] = 65534  # nobody: the interpreter must be one it may run
        python = shutil.which("python3", path="/usr/bin:/usr/local/bin:/bin") or python
    command = [python, "-I", "-c", FOREIGN, str(DEFAULT_PORT)]
    return _started(command, "listening", {"PATH": "/usr/bin:/bin"}, **popen)


@pytest.mark.parametrize("user", ["another program", "another user"])
def test_a_server_not_minipis_own_on_the_implicit_port_gets_nothing(
    user: str, implicit_port: int, env: dict[str, str], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "secret-plan.txt").write_text("the plan\n", encoding="utf-8")
    with _foreign(user) as said:
        proc = minipi("ask", "what is the plan?", "--project", str(project), env=env)
    seen = "".join(said.queue)
    assert "POST" not in seen, seen  # neither the question nor the files reached it
    assert f"using the engine already running at {IMPLICIT}" not in proc.stderr
    why = "belongs to another user (uid 65534)" if user == "another user" else "another program"
    assert f"minipi: not using the server at {IMPLICIT}: it " in proc.stderr
    assert why in proc.stderr
    assert f"pass --base-url {IMPLICIT} to use that server" in proc.stderr
    assert "starting the local engine" in proc.stderr  # an engine of its own, on a free port
    assert "Traceback" not in proc.stderr


def test_minipi_serve_of_this_user_is_used(
    implicit_port: int, env: dict[str, str], tmp_path: Path
) -> None:
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF" + bytes(64))
    project = tmp_path / "project"
    project.mkdir()
    serve = [sys.executable, "-m", "minipi", "serve", "--model-file", str(gguf)]
    with _started(serve, "serving", env):
        proc = minipi("ask", "hi", "--project", str(project), env=env)
    assert f"using the engine already running at {IMPLICIT} (model fake)" in proc.stderr
    assert "not using" not in proc.stderr


# --- the decision, on a made-up /proc ----------------------------------------------------------

HEAD = (
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode"
)


def _hex(packed: bytes) -> str:
    """An address as the kernel writes it in ``/proc/net/tcp``: 32-bit words in host order."""
    return "".join(f"{word:08X}" for (word,) in struct.iter_unpack("=I", packed))


def _socket_line(address: str, port: int, uid: int, inode: int, state: str = "0A") -> str:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    local = f"{_hex(socket.inet_pton(family, address))}:{port:04X}"
    timers = "00000000:00000000 00:00000000 00000000"
    return (
        f"   0: {local} 00000000:0000 {state} {timers} {uid:5d}        0 {inode} 1 0 100 0 0 10 0"
    )


def _proc(
    tmp_path: Path,
    sockets: list[str],
    processes: dict[int, tuple[list[str], list[int]]],
    six: list[str] | None = None,
) -> Path:
    """A /proc with these ``net/tcp`` (and ``tcp6``) lines and processes (argv, socket inodes)."""
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "net" / "tcp").write_text("\n".join([HEAD, *sockets]) + "\n")
    if six is not None:
        (proc / "net" / "tcp6").write_text("\n".join([HEAD, *six]) + "\n")
    for pid, (argv, inodes) in processes.items():
        (proc / str(pid) / "fd").mkdir(parents=True)
        (proc / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
        (proc / str(pid) / "fd" / "0").symlink_to("/dev/null")
        for fd, inode in enumerate(inodes, start=3):
            (proc / str(pid) / "fd" / str(fd)).symlink_to(f"socket:[{inode}]")
    (proc / "self").mkdir()
    return proc


ME = os.geteuid()
SERVE = ["/usr/bin/python3", "-m", ENGINE_MODULE, "--port", "8021"]


def test_minipis_engine_of_this_user_is_ours(tmp_path: Path) -> None:
    proc = _proc(tmp_path, [_socket_line("127.0.0.1", 8021, ME, 77)], {41: (SERVE, [77])})
    assert not_ours(8021, proc) is None


@pytest.mark.parametrize(
    ("address", "six"), [("127.0.0.1", False), ("0.0.0.0", False), ("::", True)]
)
def test_a_socket_of_another_user_where_127_0_0_1_lands_is_not_ours(
    tmp_path: Path, address: str, six: bool
) -> None:
    line = _socket_line(address, 8021, ME + 1, 77)
    proc = _proc(tmp_path, [] if six else [line], {41: (SERVE, [77])}, [line] if six else [])
    assert not_ours(8021, proc) == f"it belongs to another user (uid {ME + 1})"


@pytest.mark.parametrize(
    "argv",
    [
        ["python3", "-m", "http.server", "8021"],
        ["python3", "-c", "print('-m minipi.local.engine_child')"],
        ["/tmp/minipi.local.engine_child"],
    ],
)
def test_a_socket_of_this_user_held_by_another_program_is_not_ours(
    tmp_path: Path, argv: list[str]
) -> None:
    proc = _proc(tmp_path, [_socket_line("127.0.0.1", 8021, ME, 77)], {41: (argv, [77])})
    assert not_ours(8021, proc) == "it is another program of yours, not minipi's engine"


def test_one_foreign_socket_among_ours_is_enough_to_refuse(tmp_path: Path) -> None:
    sockets = [_socket_line("127.0.0.1", 8021, ME, 77), _socket_line("0.0.0.0", 8021, ME, 78)]
    proc = _proc(tmp_path, sockets, {41: (SERVE, [77]), 42: (["nc", "-l", "8021"], [78])})
    assert not_ours(8021, proc) == "it is another program of yours, not minipi's engine"


def test_sockets_elsewhere_do_not_count(tmp_path: Path) -> None:
    sockets = [
        _socket_line("127.0.0.1", 8022, ME + 1, 70),  # another port
        _socket_line("10.0.0.5", 8021, ME + 1, 71),  # an address 127.0.0.1 does not reach
        _socket_line("127.0.0.1", 8021, ME + 1, 72, state="01"),  # a connection, not listening
    ]
    proc = _proc(tmp_path, sockets, {41: (SERVE, [70, 71, 72])})
    assert not_ours(8021, proc) == (
        "minipi cannot tell whose it is (the system lists no socket listening there)"
    )


def test_without_proc_nothing_is_trusted(tmp_path: Path) -> None:
    why = not_ours(8021, tmp_path / "no-proc")
    assert why is not None
    assert why.startswith("minipi cannot tell whose it is")
