"""The embedded engine: llama-cpp-python's OpenAI-compatible server as minipi's child process.

    model = resolve_model(None, os.environ)
    with Engine.start(model) as engine:          # a free 127.0.0.1 port
        client = EngineClient(connect(Endpoint(engine.base_url, engine.model_name)), engine)
        ...                                      # EngineClient: minipi.local.client

The child is ``python -m minipi.local.engine_child``: llama-cpp-python's server (the ``local``
extra) with a faster greedy grammar sampler (that module says why), given the model, its alias,
127.0.0.1, the port, ``--n_ctx``, ``--n_threads`` and ``--n_threads_batch``, and ``--verbose
True``. It is started and stopped by ``minipi.children`` (its own session, so a terminal's
Ctrl-C reaches minipi, which stops it; SIGTERM when minipi dies), with an environment stripped
of the variables llama-cpp-python's server settings would read (``HOST``, ``PORT``, ``API_KEY``,
``MODEL``, ...), so only the flags decide. Its stdout/stderr go to a log file in a temporary
directory; the engine reads the ``Llama.generate: N prefix-match hit, remaining M prompt tokens
to eval`` records there (``prompt_stats``), because the server does not report cache use in its
responses.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import httpx

from minipi import children
from minipi.errors import ConfigError, ModelDeadlineError, ModelError
from minipi.local.models import ModelChoice, check_gguf
from minipi.local.ports import (
    DEFAULT_PORT,
    HOST,
    RunningServer,
    busy_port_error,
    check_port,
    find_running,
    free_port,
    model_ids,
)

__all__ = [
    "DEFAULT_PORT",
    "Engine",
    "PromptStats",
    "RunningServer",
    "describe_exit",
    "find_running",
]

MISSING_EXTRA = "the local engine needs the `local` extra: pip install 'minipi[local]'"
REBUILD_ADVICE = (
    "the engine's build uses CPU instructions this machine refuses: reinstall llama-cpp-python "
    'with CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --force-reinstall --no-cache-dir '
    "llama-cpp-python"
)
"""What to do when the engine dies of SIGILL (a build for another CPU, e.g. one with AMX)."""

_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")
_STOP_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL. The engine keeps nothing worth a graceful shutdown,
and uvicorn's waits for the reply being generated: with 5 s, Ctrl-C during a long reply
took 4-5 s to exit (measured); an idle engine is gone in about 0.2 s."""
_POLL = 0.1
_PREFIX_MATCH = re.compile(
    rb"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval"
)
_PARAMS = re.compile(rb"model params\s*=\s*([\d.]+)\s*([KMBT])")
_SCALE = {b"K": 1e3, b"M": 1e6, b"B": 1e9, b"T": 1e12}
# The fields of llama_cpp.server's Settings (0.3.x). pydantic-settings reads each from the
# environment, case-insensitively, so a stray PORT, API_KEY or CACHE would change or break
# the child; CONFIG_FILE, HOST and PORT are read by its __main__ directly.
_SERVER_ENV = frozenset(
    """api_key cache cache_size cache_type chat_format chat_template_kwargs clip_model_path
    config_file disable_ping_events draft_model draft_model_num_pred_tokens embedding flash_attn
    hf_model_repo_id hf_pretrained_model_name_or_path hf_tokenizer_config_path host
    interrupt_requests kv_overrides last_n_tokens_size logits_all lora_base lora_path main_gpu
    model model_alias mul_mat_q n_batch n_ctx n_gpu_layers n_threads n_threads_batch n_ubatch
    numa offload_kqv port root_path rope_freq_base rope_freq_scale rope_scaling_type
    rpc_servers seed split_mode ssl_certfile ssl_keyfile tensor_split type_k type_v use_mlock
    use_mmap verbose vocab_only yarn_attn_factor yarn_beta_fast yarn_beta_slow yarn_ext_factor
    yarn_orig_ctx""".split()  # noqa: SIM905 - 57 names; a list literal would be 57 lines
)


@dataclass(frozen=True)
class PromptStats:
    """How the engine processed one request's prompt (one ``prefix-match hit`` log record)."""

    cached: int
    """Prompt tokens reused from the KV cache (the prefix shared with the previous request)."""
    evaluated: int
    """Prompt tokens that still had to be evaluated."""


class Engine:
    """A running llama-cpp-python server child. Build it with ``Engine.start``.

    ``stop()`` (also on leaving a ``with`` block) stops the child's process group (SIGTERM,
    SIGKILL after a few seconds: ``children.stop``) and removes the log directory; it is
    idempotent.
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        model: ModelChoice,
        *,
        port: int,
        n_ctx: int,
        log_path: Path,
    ) -> None:
        self.model = model
        """The model served."""
        self.model_name = model.name
        """The alias requests must name (``ModelChoice.name``)."""
        self.port = port
        self.base_url = f"http://{HOST}:{port}/v1"
        """Root of the OpenAI-compatible API."""
        self.n_ctx = n_ctx
        """The context window in tokens."""
        self.log_path = log_path
        """The child's combined stdout/stderr (removed by ``stop``)."""
        self.parameters: float | None = None
        """How many weights the model has, as llama.cpp's log says (``model params =
        134.52 M``) once the engine is ready; None when it does not say."""
        self._process = process
        self._offset = 0
        self._lock = threading.Lock()

    @classmethod
    def start(
        cls,
        model: ModelChoice,
        *,
        port: int = 0,
        n_ctx: int = 4096,
        threads: int | None = None,
        startup_timeout: float = 120.0,
        deadline: float | None = None,
    ) -> Engine:
        """Start the server for ``model`` and return once ``GET /v1/models`` answers.

        ``port`` 0 picks a free loopback port. ``threads`` sets the threads that generate and
        that evaluate prompts; by default half the CPUs this process may use generate and all
        of them evaluate. Raises ``ConfigError``: with one line, before anything starts, when
        the ``local`` extra is missing, the file is not a GGUF or the port is busy; with the
        last lines of the child's log when the child exits or ``startup_timeout`` seconds pass
        before it answers (a child killed by SIGILL: ``REBUILD_ADVICE`` instead). Raises
        ``ModelDeadlineError`` (code ``max_seconds``) when ``deadline`` (a ``time.monotonic()``:
        the run's ``--max-seconds``) comes first. Nothing is left running after an error.
        """
        require_local_extra()
        check_gguf(model.path, model.source)
        if n_ctx < 1 or (threads is not None and threads < 1) or startup_timeout <= 0:
            raise ConfigError("the context size, threads and startup timeout must be positive")
        port = free_port() if port == 0 else check_port(port)
        log_dir = Path(tempfile.mkdtemp(prefix="minipi-engine-"))
        log_path = log_dir / "engine.log"
        command = _command(model, port, n_ctx, threads)
        with log_path.open("wb") as log:
            process = children.spawn(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_child_env(),
                death=signal.SIGKILL,  # nothing to save; SIGTERM waits for the reply
            )
        engine = cls(process, model, port=port, n_ctx=n_ctx, log_path=log_path)
        try:
            engine._wait_ready(startup_timeout, deadline)
        except ConfigError as error:
            if error.code == "port_busy" or engine.poll() == -signal.SIGILL:
                engine.stop()  # the message names no log
            else:
                engine._terminate()  # keep the log: the message points to it
            raise
        except BaseException:
            engine.stop()
            raise
        return engine

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._process.pid

    def poll(self) -> int | None:
        """The child's exit code, or None while it runs."""
        return self._process.poll()

    def wait(self, timeout: float | None = None) -> int | None:
        """Block until the child exits (its exit code) or ``timeout`` passes (None)."""
        try:
            return self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def prompt_stats(self) -> list[PromptStats]:
        """The prefix-match records the child logged since the previous call, oldest first.

        A request whose prompt shares no prefix with the previous one logs no record.
        Thread-safe; records of concurrent requests cannot be told apart.
        """
        with self._lock:
            try:
                with self.log_path.open("rb") as log:
                    log.seek(self._offset)
                    chunk = log.read()
            except OSError:
                return []
            complete = chunk[: chunk.rfind(b"\n") + 1]  # a half-written line waits
            self._offset += len(complete)
        return [PromptStats(int(m[1]), int(m[2])) for m in _PREFIX_MATCH.finditer(complete)]

    def log_tail(self, lines: int = 8) -> str:
        """The last non-blank ``lines`` of the child's log (for error messages)."""
        try:
            text = self.log_path.read_bytes()[-16384:].decode("utf-8", "replace")
        except OSError:
            return ""
        kept = [line.rstrip()[:300] for line in text.splitlines() if line.strip()]
        return "\n".join(kept[-lines:])

    def exit_error(self, grace: float = 0.0) -> ModelError | None:
        """The error to raise for a child that has exited, waiting up to ``grace`` seconds for
        it to exit; None while it runs. Code ``engine_died``; the message names the exit (a
        signal by name) and says what to do: for SIGILL, ``REBUILD_ADVICE``; otherwise it
        quotes the last lines of the log (which ``stop`` removes)."""
        code = self.wait(grace) if grace > 0 else self.poll()
        if code is None:
            return None
        return ModelError(self._exit_message(code, "stopped unexpectedly"), code="engine_died")

    def stop(self) -> None:
        """Terminate the child (kill it after a few seconds) and remove its log. Idempotent."""
        self._terminate()
        shutil.rmtree(self.log_path.parent, ignore_errors=True)

    def __enter__(self) -> Engine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"Engine(model={self.model_name!r}, base_url={self.base_url!r}, pid={self.pid})"

    def _terminate(self) -> None:
        children.stop(self._process, _STOP_GRACE)

    def _wait_ready(self, timeout: float, deadline: float | None = None) -> None:
        """Poll ``/v1/models`` until it lists our model; ConfigError if the child dies or
        ``timeout`` runs out first, ``ModelDeadlineError`` if ``deadline`` passes first."""
        began = time.monotonic()
        limit = began + timeout
        if deadline is not None and deadline < limit:
            limit = deadline
        with httpx.Client(trust_env=False, timeout=httpx.Timeout(2.0, connect=0.5)) as client:
            while True:
                code = self._process.poll()
                if code is not None:
                    raise self._startup_error("exited during startup", code)
                with contextlib.suppress(httpx.HTTPError, ValueError):
                    # Our alias, not just any answer: another program may have taken the port.
                    if self.model_name in model_ids(client.get(self.base_url + "/models")):
                        break
                if time.monotonic() > limit:
                    if limit == deadline:
                        raise self._late_error(deadline - began)
                    raise self._startup_error(f"did not answer within {timeout:g} s")
                time.sleep(_POLL)
        with contextlib.suppress(OSError):
            head = self.log_path.read_bytes()
            self._offset = len(head)
            found = _PARAMS.search(head)
            if found is not None:
                self.parameters = float(found[1]) * _SCALE[found[2]]

    def _late_error(self, left: float) -> ModelDeadlineError:
        """The error for a child not ready when the run's deadline passed (``left`` seconds
        after the wait for it began)."""
        return ModelDeadlineError(
            f"the local engine ({self.model_name}, {self.model.path}) was not ready when the "
            f"run's time ran out ({max(left, 0.0):.1f} s of --max-seconds were left for it to "
            "load the model); raise --max-seconds, or keep an engine running with `minipi "
            "serve` (runs without an endpoint use it)",
            url=self.base_url,
        )

    def _startup_error(self, what: str, code: int | None = None) -> ConfigError:
        """The error for a child that did not start: ``what`` happened (it exited: ``code``)."""
        if code == -signal.SIGILL:
            return ConfigError(self._exit_message(code, what), code="engine_failed")
        tail = self.log_tail()
        if "address already in use" in tail.lower():
            return busy_port_error(self.port)
        if code is not None:
            what = f"{what} ({describe_exit(code)})"
        return ConfigError(
            f"the local engine ({self.model_name}, {self.model.path}) {what} — see the log "
            f"{self.log_path}; a smaller --ctx or another --model-file may help. Last lines:\n"
            + _indented(tail),
            code="engine_failed",
        )

    def _exit_message(self, code: int, what: str) -> str:
        engine = f"the local engine ({self.model_name}, {self.model.path})"
        head = f"{engine} {what} ({describe_exit(code)})"
        if code == -signal.SIGILL:
            return f"{head}: {REBUILD_ADVICE}"
        return f"{head}; last lines of its log:\n" + _indented(self.log_tail())


def describe_exit(code: int) -> str:
    """A child's exit as ``Popen.returncode`` gives it, in words: ``exit code 3``,
    ``killed by SIGILL`` (a negative code is the signal that ended it)."""
    if code >= 0:
        return f"exit code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"killed by {name}"


def require_local_extra() -> None:
    """Raise ``ConfigError`` unless llama-cpp-python and its server dependencies are
    installed (located, not imported: importing llama_cpp loads the native library)."""
    for name in _SERVER_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise ConfigError(f"{MISSING_EXTRA} ({name} is not installed)", code="missing_extra")


def _command(model: ModelChoice, port: int, n_ctx: int, threads: int | None) -> list[str]:
    # Without ``threads``: one generating thread per physical core, every CPU for prompts
    # (llama-cpp-python's Llama default, half the CPUs, assumes two threads a core: on 2
    # cores without them, the README's question took 7.0 s of model time with 1 generating
    # thread, 6.1 s with 2; its server's default of 1 thread is slower still).
    cpus = _cpus()
    flags = {
        "--model": str(model.path),
        "--model_alias": model.name,
        "--host": HOST,
        "--port": str(port),
        "--n_ctx": str(n_ctx),
        "--n_threads": str(threads or _cores(cpus)),
        "--n_threads_batch": str(threads or cpus),
        "--verbose": "True",  # prompt_stats reads the prefix-match records it prints
    }
    child = "minipi.local.engine_child"  # llama_cpp.server, with a faster grammar sampler
    return [sys.executable, "-m", child, *(x for kv in flags.items() for x in kv)]


def _indented(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.lower() not in _SERVER_ENV}
    env["PYTHONUNBUFFERED"] = "1"  # log records arrive before the response does
    return env


def _cores(cpus: int) -> int:
    """The physical cores among the CPUs this process may use (their ``core_id`` and
    ``physical_package_id`` in sysfs), else half of ``cpus``."""
    try:
        allowed = os.sched_getaffinity(0)
        cores = set()
        for cpu in allowed:
            topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
            package = (topology / "physical_package_id").read_text().strip()
            cores.add((package, (topology / "core_id").read_text().strip()))
    except (AttributeError, OSError):
        return max(cpus // 2, 1)
    return max(1, min(len(cores), cpus))


def _cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)
