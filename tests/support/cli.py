"""Running the real ``minipi`` command in a subprocess, and reading what the fake server saw."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
QUESTION = "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。"


_DATA = tempfile.mkdtemp(prefix="minipi-test-data-")


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any endpoint settings of the developer's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QWEN_", "OPENAI_", "MINIPI_"))}
    env["PYTHONIOENCODING"] = "utf-8"
    env["MINIPI_CONFIG"] = os.devnull  # the developer's own config file must not change a test
    env["MINIPI_DATA_DIR"] = _DATA  # a chat saved by default lands here, not in the user's home
    env.update(extra)
    return env


def minipi(
    *args: str, stdin: str = "", env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m minipi ARGS`` and capture its output (stdin is a pipe, not a tty)."""
    return subprocess.run(
        [sys.executable, "-m", "minipi", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env if env is not None else clean_env(),
        timeout=timeout,
        check=False,
    )


def copy_example(name: str, tmp_path: Path) -> Path:
    """A private copy of an example project (runs may move files)."""
    target = tmp_path / name
    shutil.copytree(EXAMPLES / name, target)
    return target


def json_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def tool_outputs(body: dict[str, Any] | None) -> list[str]:
    """The tool results a request carried, on either wire."""
    if body is None:
        return []
    if "messages" in body:
        return [m["content"] for m in body["messages"] if m.get("role") == "tool"]
    return [i["output"] for i in body.get("input", []) if i.get("type") == "function_call_output"]


def on_terminal(
    command: list[str], *, stream: str = "stderr", env: dict[str, str] | None = None
) -> tuple[str, subprocess.CompletedProcess[bytes]]:
    """``command`` with its ``stream`` (``stderr`` or ``stdout``) a 120-column terminal:
    what it showed there, and the process (the other stream captured)."""
    import fcntl
    import pty
    import struct
    import termios

    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    on_tty = stream == "stdout"
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=terminal if on_tty else subprocess.PIPE,
        stderr=subprocess.PIPE if on_tty else terminal,
        env=env if env is not None else clean_env(),
    )
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    out, err = proc.communicate(timeout=60)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out or b"", err or b"")
    return shown.decode("utf-8", "replace"), done
