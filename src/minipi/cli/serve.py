"""What ``minipi serve`` does: resolve a GGUF model, serve it on 127.0.0.1 until stopped.

The server is llama-cpp-python's OpenAI-compatible one (``minipi.local.engine``), so
``minipi ask --base-url http://127.0.0.1:8021/v1`` can use it, and so can plain ``minipi ask``
of the same user, which looks on the default port for a server the kernel says is this user's
minipi engine (``minipi.local.trust``). Ctrl-C stops it with exit code 130, SIGTERM with 0;
either way the child process is terminated first.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, TypeAlias

from minipi.local.engine import Engine, require_local_extra
from minipi.local.models import ModelChoice, explicit_model, resolve_model
from minipi.local.ports import check_port

__all__ = ["serve"]

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_Handler: TypeAlias = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


class _Terminated(BaseException):
    """SIGTERM arrived. A BaseException, like KeyboardInterrupt, so nothing swallows it."""


def serve(model_file: str | None, port: int, n_ctx: int, threads: int | None) -> int:
    """Serve the resolved model on 127.0.0.1:``port`` until Ctrl-C (130) or SIGTERM (0).
    The model file: ``model_file`` (``--model-file``), else ``MINIPI_MODEL_FILE``, else the
    config file's ``model_file``, else the default model.

    Prints to stderr: any notice of the model resolution (a tiny demo model, a failed
    download), then one line with the model, its file and the URL once ``/v1/models``
    answers. Raises ``ConfigError`` (exit 2), checked in this order, for a busy port, a bad
    model file, a missing ``local`` extra, an engine that does not start; ``ModelError``
    (exit 1) if the engine dies while serving.
    """
    from minipi.cli.settings import resolve_one

    if port:
        check_port(port)
    named, source = resolve_one("model_file", model_file, os.environ)
    choice = explicit_model(named, os.environ, source.removeprefix("env "))
    require_local_extra()  # before a download that would be of no use
    with _sigterm_raises():
        try:
            choice = choice or resolve_model(None, os.environ, report=_say)
        except (KeyboardInterrupt, _Terminated) as stop:
            return _stopped(stop)
        for line in (choice.notice or "").splitlines():
            _say(line)
        return _serve(choice, port, n_ctx, threads)


def _serve(choice: ModelChoice, port: int, n_ctx: int, threads: int | None) -> int:
    started = time.monotonic()
    try:
        engine = Engine.start(choice, port=port, n_ctx=n_ctx, threads=threads)
    except (KeyboardInterrupt, _Terminated) as stop:  # start() has stopped the child
        return _stopped(stop)
    try:
        _say(
            f"serving {choice.name} from {choice.path} at {engine.base_url} "
            f"(ready in {time.monotonic() - started:.1f} s; Ctrl-C to stop)"
        )
        engine.wait()
    except (KeyboardInterrupt, _Terminated) as stop:
        with _signals_ignored():  # a second Ctrl-C must not interrupt the shutdown
            engine.stop()
        return _stopped(stop)
    died = engine.exit_error()  # read before stop() removes the log
    engine.stop()
    assert died is not None  # wait() returned: the child has exited
    raise died


def _stopped(stop: BaseException) -> int:
    _say("stopped")
    return 0 if isinstance(stop, _Terminated) else 130


def _say(message: str) -> None:
    print(f"minipi: {message}", file=sys.stderr, flush=True)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises ``_Terminated`` in the main thread inside the block (no-op elsewhere)."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread: signals cannot be handled here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    """Ctrl-C and SIGTERM are ignored inside the block (main thread only)."""
    previous: dict[signal.Signals, _Handler] = {}
    with contextlib.suppress(ValueError):
        for number in _STOP_SIGNALS:
            previous[number] = signal.signal(number, signal.SIG_IGN)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
