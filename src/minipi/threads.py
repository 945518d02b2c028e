"""Our background threads leave Ctrl-C to the main thread.

Python runs signal handlers in the main thread only. When the kernel hands a process's SIGINT
to another thread, the main thread is not woken from a blocking read, so Ctrl-C at a prompt
(the approval's ``Allow? [y/N]``) did nothing until a key was pressed: seen in CI, with the
status line's thread alive (its stack and the main thread's, in ``test_session_kill``). A
thread that blocks SIGINT is never chosen, so the main thread always gets it.

Only for threads that start no process: a child inherits the signal mask, and a tool's child
with SIGINT blocked would survive Ctrl-C.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["leave_sigint_to_main", "sigint_deferred"]


def leave_sigint_to_main() -> None:
    """Block SIGINT in the calling thread (where the platform has per-thread masks)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


@contextmanager
def sigint_deferred() -> Iterator[None]:
    """Hold a Ctrl-C that comes during the block until the block is done, then raise it (as
    the handler in place would). For a short step that hangs if interrupted: anyio's
    ``start_blocking_portal`` joins its thread for ever when ``KeyboardInterrupt`` hits its
    wait for the portal, so Ctrl-C while an MCP server started hung minipi (test_cli_sessions).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: caught.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught and callable(previous):  # not where the shell ignores SIGINT (SIG_IGN)
        previous(signal.SIGINT, None)
