"""Shared helpers of the ``test_rel_*`` modules: RELIABILITY.md cases against the real CLI.

- ``make_tree(tmp_path)``: ``support.files.make_project``'s ``proj/`` + ``outside/secret.txt``,
  plus the prefix sibling ``proj-secrets/key`` (both hold ``SECRET``) and a private ``work/``
  directory for the run's logs.
- ``Tree.inv()`` / ``Tree.assert_only_changed(before, moves)``: the INV snapshot
  ``(type, size, sha256 or link target, nlink, inode)`` of the whole tree.
- ``Tree.ask(script, *flags)``: runs the real ``minipi ask --json`` against a ``FakeServer``
  playing ``script``; returns an ``AskRun`` with the JSON events, the exit code, every request
  the server received, and the real path of every file the minipi process opened (recorded by a
  ``sitecustomize`` put on its ``PYTHONPATH``, which can also make ``os.link`` fail).
- ``Tree.ask_tty(script, answers)``: the same with a real terminal (a pty, the controlling
  tty) as stdin, typing ``answers`` at each approval prompt (``y``, ``n``, Ctrl-D, Ctrl-C).
- ``ask_cli(server, wire, project, *flags)``: a plain ``minipi ask`` against a server of the
  test (or a URL), for the runs that need no tree and no open log.
- ``assert_confined(run)``: ``SECRET`` never reached the server, stdout or stderr, and nothing
  under ``outside/`` or ``proj-secrets/`` (nor ``/etc/passwd``) was opened.
- ``run_calls(tree, calls, codes, *flags, moved=...)``: ``calls`` in one response; checks each
  call's code, that the tree changed by exactly ``moved``, and ``assert_confined``.
- ``one_turn(*calls)`` with ``read``/``ls``/``grep``/``mv``: a model that sends the calls in one
  response, then answers ``done``.

Imported explicitly (``from support.rel import ...``); pytest does not load it by itself.
"""

from __future__ import annotations

import hashlib
import os
import pty
import selectors
import stat
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.cli import clean_env, json_lines, minipi
from support.fake import Call, FakeServer, RecordedRequest, Reply, Turn
from support.files import SECRET, Project, make_project, walk

__all__ = [
    "QUESTION",
    "SECRET",
    "AskRun",
    "Inv",
    "Tree",
    "ask_cli",
    "assert_confined",
    "calls_in",
    "grep",
    "inv",
    "ls",
    "make_tree",
    "mv",
    "one_turn",
    "read",
    "run_calls",
    "tool_contents",
]

QUESTION = "Look at the project files and do what they say."

Inv = dict[str, tuple[str, int, str, int, int]]
"""``relpath -> (type, size, sha256 | link target, nlink, inode)``, relative to the base."""

_HASH_LIMIT = 16 * 1024 * 1024  # a sparse 10 GiB file is described, not read

_SITE = '''\
"""Test hook of tests/support/rel.py: record what this process opens; optional os.link fault."""
import builtins
import os


def _install():
    log = os.environ.get("RELHELP_OPEN_LOG")
    if log:
        real_open, real_builtin_open = os.open, builtins.open
        out = real_open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

        def record(fd, fallback):
            try:
                where = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                where = os.fsdecode(fallback) if isinstance(fallback, (str, bytes)) else "?"
            os.write(out, os.fsencode(where) + b"\\0")

        def spy_open(path, flags, mode=0o777, *, dir_fd=None):
            fd = real_open(path, flags, mode, dir_fd=dir_fd)
            record(fd, path)
            return fd

        def spy_builtin_open(file, *args, **kwargs):
            handle = real_builtin_open(file, *args, **kwargs)
            record(handle.fileno(), file)
            return handle

        os.open, builtins.open = spy_open, spy_builtin_open
    fault = os.environ.get("RELHELP_LINK_ERRNO")
    if fault:
        def failing_link(*args, **kwargs):
            raise OSError(int(fault), os.strerror(int(fault)))

        os.link = failing_link


_install()
'''


@dataclass
class AskRun:
    """One ``minipi ask`` run: its process, JSON events, requests, and opened paths."""

    proc: subprocess.CompletedProcess[str]
    events: list[dict[str, Any]]
    requests: list[RecordedRequest]
    opened: list[str]

    @property
    def exit_code(self) -> int:
        return self.proc.returncode

    @property
    def end(self) -> dict[str, Any]:
        """The ``run_end`` event (always the last line with ``--json``)."""
        assert self.events, f"no JSON events; stderr:\n{self.proc.stderr}"
        last = self.events[-1]
        assert last["type"] == "run_end", last
        return last

    def results(self, name: str | None = None) -> list[dict[str, Any]]:
        """The ``tool_result`` events (of tool ``name``), in the model's call order."""
        return [
            e
            for e in self.events
            if e["type"] == "tool_result" and (name is None or e["name"] == name)
        ]

    def codes(self, name: str | None = None) -> list[str | None]:
        """The error ``code`` of each result (None for a success)."""
        return [r["code"] for r in self.results(name)]

    def contents(self, name: str | None = None) -> list[str]:
        """The ``content`` of each result, as the model got it."""
        return [r["content"] for r in self.results(name)]

    def prompts(self) -> int:
        """How many approval prompts the run printed."""
        return self.proc.stderr.count("[approval needed]") + self.proc.stderr.count("[需要确认]")


@dataclass
class Tree(Project):
    """``base/proj`` (the root), ``base/outside``, ``base/proj-secrets``; ``work`` for logs."""

    work: Path

    @property
    def secrets(self) -> Path:
        return self.base / "proj-secrets"

    def inv(self) -> Inv:
        return inv(self.base)

    def assert_only_changed(self, before: Inv, moves: Mapping[str, str] | None = None) -> None:
        """The tree equals ``before`` except for ``moves`` (root-relative ``source: dest``):
        the same inode, content and link count under the new name, nothing else touched."""
        expected = dict(before)
        prefix = self.root.name + "/"
        for source, destination in (moves or {}).items():
            expected[prefix + destination] = expected.pop(prefix + source)
        after = self.inv()
        changed = sorted(
            k for k in expected.keys() | after.keys() if expected.get(k) != after.get(k)
        )
        assert after == expected, f"unexpected changes: {changed}"

    def ask_tty(
        self, script: Sequence[Reply], answers: Sequence[bytes], *flags: str, timeout: float = 30
    ) -> AskRun:
        """``minipi ask --json FLAGS`` with a real terminal as stdin (its controlling tty).

        Each time an approval prompt (``[y/N]``) appears on stderr, the next of ``answers`` is
        typed: ``b"y\\n"``, ``b"\\x04"`` (Ctrl-D), ``b"\\x03"`` (Ctrl-C, a real SIGINT from the
        terminal). Prompts beyond ``answers`` fail the test.
        """
        if "--approve" not in flags:  # a terminal is for approval prompts: changes are asked
            flags = ("--approve", "ask", *flags)
        with FakeServer(script) as server:
            args = _ask_args(server.base_url, self.root, "--json", *flags)
            env = clean_env(**self._hook_env(None))
            stdout, stderr, code = _run_on_tty(args, answers, env, timeout)
        proc = subprocess.CompletedProcess(args, code, stdout, stderr)
        assert "Traceback" not in stderr, stderr
        return AskRun(proc, json_lines(stdout), list(server.requests), self._opened())

    def _hook_env(self, link_errno: int | None) -> dict[str, str]:
        site = self.work / "site"
        site.mkdir(parents=True, exist_ok=True)
        (site / "sitecustomize.py").write_text(_SITE, encoding="utf-8")
        log = self.work / "opened.log"
        log.unlink(missing_ok=True)
        env = {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
            "RELHELP_OPEN_LOG": str(log),
        }
        if link_errno is not None:
            env["RELHELP_LINK_ERRNO"] = str(link_errno)
        return env

    def _opened(self) -> list[str]:
        log = self.work / "opened.log"
        opened = log.read_bytes().split(b"\0") if log.exists() else []
        assert opened, "the open log is empty: the sitecustomize hook did not load"
        return [os.fsdecode(p) for p in opened if p]

    def ask(
        self,
        script: Sequence[Reply],
        *flags: str,
        project: Path | None = None,
        json: bool = True,
        stdin: str = "",
        link_errno: int | None = None,
        timeout: float = 50,
    ) -> AskRun:
        """``minipi ask QUESTION --project ROOT --json FLAGS`` against a fake server."""
        env = clean_env(**self._hook_env(link_errno))
        with FakeServer(script) as server:
            output = ["--json"] if json else []
            args = _ask_args(server.base_url, project or self.root, *output, *flags)
            proc = minipi(*args, stdin=stdin, env=env, timeout=timeout)
        events = json_lines(proc.stdout) if json else []
        assert "Traceback" not in proc.stderr, proc.stderr
        return AskRun(proc, events, list(server.requests), self._opened())


def _ask_args(base_url: str, project: Path, *flags: str, model: str = "fake-model") -> list[str]:
    """``ask QUESTION --project PROJECT --base-url URL --model MODEL FLAGS``."""
    args = ["ask", QUESTION, "--project", str(project), "--base-url", base_url]
    return [*args, "--model", model, *flags]


_TTY_WRAPPER = """\
import fcntl, os, sys, termios
fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # the terminal on stdin becomes the controlling tty
os.execv(sys.executable, [sys.executable, "-m", "minipi", *sys.argv[1:]])
"""
PROMPT = b"[y/N] "


def _run_on_tty(
    args: Sequence[str], answers: Sequence[bytes], env: dict[str, str], timeout: float
) -> tuple[str, str, int]:
    """Run minipi in a new session whose controlling terminal is a pty; type ``answers``."""
    master, slave = pty.openpty()
    try:
        with subprocess.Popen(
            [sys.executable, "-c", _TTY_WRAPPER, *args],
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        ) as proc:
            os.close(slave)
            slave = -1
            try:
                out, err = _converse(proc, master, list(answers), timeout)
            finally:
                if proc.poll() is None:
                    proc.kill()
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    return out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), proc.returncode


def _converse(
    proc: subprocess.Popen[bytes], master: int, answers: list[bytes], timeout: float
) -> tuple[bytes, bytes]:
    assert proc.stdout is not None
    assert proc.stderr is not None
    streams = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    err = streams[proc.stderr.fileno()]
    deadline = time.monotonic() + timeout
    typed = 0
    with selectors.DefaultSelector() as selector:
        for fd in streams:
            selector.register(fd, selectors.EVENT_READ)
        selector.register(master, selectors.EVENT_READ)  # the echo of what is typed
        while any(fd in selector.get_map() for fd in streams):
            assert time.monotonic() < deadline, f"minipi did not finish; stderr:\n{err.decode()}"
            for key, _ in selector.select(0.1):
                fd = key.fd
                chunk = _read(fd)
                if not chunk:
                    selector.unregister(fd)
                elif fd != master:
                    streams[fd] += chunk
            if err.count(PROMPT) > typed:
                assert typed < len(answers), f"unexpected prompt:\n{err.decode()}"
                os.write(master, answers[typed])
                typed += 1
    assert typed == len(answers), f"{len(answers) - typed} answers not asked for:\n{err.decode()}"
    return bytes(streams[proc.stdout.fileno()]), bytes(err)


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the terminal's other side is gone
        return b""


def ask_cli(
    server: FakeServer | str, wire: str, project: Path, *flags: str, model: str = "fake-model"
) -> subprocess.CompletedProcess[str]:
    """``minipi ask QUESTION --project PROJECT --wire WIRE FLAGS`` against ``server`` (or a
    base URL); a traceback fails the test."""
    base_url = server if isinstance(server, str) else server.base_url
    proc = minipi(*_ask_args(base_url, project, "--wire", wire, *flags, model=model))
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def make_tree(tmp_path: Path, name: str = "tree") -> Tree:
    """The sample project of ``support.files`` plus ``proj-secrets/key``, under ``name``."""
    project = make_project(tmp_path / name)
    tree = Tree(project.base, project.root, project.outside, tmp_path / "work")
    tree.secrets.mkdir()
    (tree.secrets / "key").write_text(f"{SECRET}-key\n", encoding="utf-8")
    tree.work.mkdir(exist_ok=True)
    return tree


def inv(base: Path) -> Inv:
    """The INV snapshot of everything under ``base``; links are described, never followed."""
    return {relpath: _describe(path) for relpath, path in walk(base)}


def _describe(path: Path) -> tuple[str, int, str, int, int]:
    info = path.lstat()
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        return "symlink", 0, os.readlink(path), info.st_nlink, info.st_ino
    if stat.S_ISDIR(mode):
        return "dir", 0, "", info.st_nlink, info.st_ino
    if not stat.S_ISREG(mode):
        return "special", 0, "", info.st_nlink, info.st_ino
    digest = f"mtime:{info.st_mtime_ns}"
    if info.st_size <= _HASH_LIMIT and info.st_mode & stat.S_IRUSR:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return "file", info.st_size, digest, info.st_nlink, info.st_ino


def assert_confined(
    run: AskRun, tree: Tree, secrets: Iterable[str] = (SECRET,), *, opened_ok: bool = False
) -> None:
    """No secret reached the server (any request body), stdout or stderr; nothing outside
    the root (``outside/``, ``proj-secrets/``, ``/etc/passwd``) was opened by minipi."""
    for secret in secrets:
        for request in run.requests:
            assert secret.encode() not in request.raw, f"{secret} was sent to the model"
        assert secret not in run.proc.stdout
        assert secret not in run.proc.stderr
    if opened_ok:
        return
    fenced = [tree.outside.resolve(), tree.secrets.resolve()]
    for opened in run.opened:
        path = Path(opened)
        escaped = path == Path("/etc/passwd") or any(path.is_relative_to(f) for f in fenced)
        assert not escaped, f"minipi opened {opened}"


def run_calls(
    tree: Tree,
    calls: Sequence[Call],
    codes: Sequence[str | None],
    *flags: str,
    moved: Mapping[str, str] | None = None,
    timeout: float = 50,
) -> AskRun:
    """Run ``calls`` in one response (``ask`` with ``flags``); check each call's error code,
    that only the ``moved`` files changed (``Tree.assert_only_changed``), and confinement."""
    before = tree.inv()
    run = tree.ask(one_turn(*calls), *flags, timeout=timeout)
    assert run.codes() == list(codes), tool_contents(run)
    tree.assert_only_changed(before, moved)
    assert_confined(run, tree)
    return run


def one_turn(*calls: Call, answer: str = "done") -> list[Reply]:
    """A model that asks for ``calls`` (in parallel, one response), then answers."""
    return [Turn(calls=list(calls)), Turn(text=answer)]


def read(path: object) -> Call:
    return Call("read_file", {"path": path})


def ls(path: object) -> Call:
    return Call("list_files", {"path": path})


def grep(query: object, path: object = ".") -> Call:
    return Call("search_files", {"query": query, "path": path})


def mv(source: object, target: object) -> Call:
    return Call("move_file", {"source": source, "target": target})


def tool_contents(run: AskRun) -> str:
    """Everything the tools answered, joined (for 'not in output' checks)."""
    return "\n".join(run.contents())


def calls_in(body: Mapping[str, Any] | None) -> list[str]:
    """The names of the tools a request declared (either wire)."""
    tools = (body or {}).get("tools", [])
    return [t.get("name") or t.get("function", {}).get("name") for t in tools]
