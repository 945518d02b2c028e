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
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["sigint_held"]


@contextmanager
def sigint_held() -> Iterator[None]:
    """Block SIGINT in the calling thread for the block: the threads started in it inherit the
    mask, so they are never chosen for SIGINT, from their first instruction on, and a Ctrl-C
    that comes meanwhile waits and reaches the calling thread when the block ends.

    A thread that blocked SIGINT itself, once running, left a window in which the kernel
    could hand it a Ctrl-C that woke nobody (Python runs handlers in the main thread, which
    may sleep on a lock). Holding the signal also keeps it out of a start that hangs if
    interrupted (anyio's ``start_blocking_portal`` joins its thread for ever when
    ``KeyboardInterrupt`` hits its wait for the portal).
    """
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
