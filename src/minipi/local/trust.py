"""Whose server listens on a loopback port: plain ``minipi ask`` uses the one already on
127.0.0.1:8021 only when it is minipi's own.

That server gets the question and the project's files, and any program of any user of the
machine may listen there. So the kernel is asked (Linux's ``/proc``): every socket listening
where a connection to 127.0.0.1:PORT can land (``/proc/net/tcp`` and ``tcp6``: 127.0.0.1,
0.0.0.0, ``::``, ``::ffff:127.0.0.1``) must be owned by this user, and held by a process of
this user that runs minipi's engine (``python -m minipi.local.engine_child``, as ``minipi
serve`` starts it: ``/proc/PID/cmdline`` and ``/proc/PID/fd``). Another user cannot make a
socket of this user's, nor share a port this user listens on. A program of the same user
could pretend, but it can read all of this user's files anyway. Where there is no ``/proc``
nothing can be told, and the server is not used.
"""

from __future__ import annotations

import itertools
import os
import socket
import struct
from pathlib import Path

__all__ = ["ENGINE_MODULE", "not_ours"]

ENGINE_MODULE = "minipi.local.engine_child"
"""What the engine's process runs (``python -m ENGINE_MODULE``: ``minipi.local.engine``)."""
_LISTEN = "0A"
"""``TCP_LISTEN`` as ``/proc/net/tcp`` writes a socket's state."""


def _hex(packed: bytes) -> str:
    """An address as ``/proc/net/tcp*`` writes it: each 32-bit word in host order, in hex."""
    return "".join(f"{word:08X}" for (word,) in struct.iter_unpack("=I", packed))


_REACHED = frozenset(
    [_hex(socket.inet_pton(socket.AF_INET, a)) for a in ("127.0.0.1", "0.0.0.0")]
    + [_hex(socket.inet_pton(socket.AF_INET6, a)) for a in ("::", "::ffff:127.0.0.1")]
)
"""Where a listening socket takes connections to 127.0.0.1."""


def not_ours(port: int, proc: Path = Path("/proc")) -> str | None:
    """None when the server on 127.0.0.1:``port`` is minipi's engine, run by this user; else
    why it is not used, in words (``it belongs to another user (uid 1001)``)."""
    try:
        listening = _listening(port, proc)
    except OSError:
        return f"minipi cannot tell whose it is ({proc}/net/tcp cannot be read)"
    if not listening:
        return "minipi cannot tell whose it is (the system lists no socket listening there)"
    me = os.geteuid()
    others = sorted({uid for uid, _ in listening if uid != me})
    if others:
        return f"it belongs to another user (uid {others[0]})"
    if not {inode for _, inode in listening} <= _engine_sockets(proc, me):
        return "it is another program of yours, not minipi's engine"
    return None


def _listening(port: int, proc: Path) -> set[tuple[int, int]]:
    """The (uid, inode) of each socket listening where 127.0.0.1:``port`` lands. OSError when
    ``proc/net/tcp`` cannot be read (``tcp6`` is missing where IPv6 is off)."""
    lines = (proc / "net" / "tcp").read_text(encoding="ascii", errors="replace").splitlines()
    try:
        six = (proc / "net" / "tcp6").read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        six = ""
    found = set()
    for line in lines[1:] + six.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != _LISTEN:
            continue
        address, _, port_hex = fields[1].partition(":")
        try:
            if address in _REACHED and int(port_hex, 16) == port:
                found.add((int(fields[7]), int(fields[9])))
        except ValueError:
            continue
    return found


def _engine_sockets(proc: Path, uid: int) -> set[int]:
    """The inodes of the sockets held by this user's processes that run minipi's engine."""
    held: set[int] = set()
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid or not _runs_engine(Path(entry.path) / "cmdline"):
                continue
            for fd in os.scandir(Path(entry.path) / "fd"):
                target = os.readlink(fd.path)
                if target.startswith("socket:[") and target.endswith("]"):
                    held.add(int(target[8:-1]))
        except (OSError, ValueError):  # it ended meanwhile, or is not ours to read
            continue
    return held


def _runs_engine(cmdline: Path) -> bool:
    argv = cmdline.read_bytes().split(b"\0")
    module = ENGINE_MODULE.encode()
    return any(a == b"-m" and b == module for a, b in itertools.pairwise(argv))
