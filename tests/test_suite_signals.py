"""The suite passes when the shell that starts it ignores SIGINT (``cmd &`` in a script, some
CI runners): real Ctrl-C tests of the suite, run by a child pytest that starts as such a shell
would start it (SIGINT ignored, inherited across exec)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support.cli import clean_env

REPO = Path(__file__).resolve().parents[1]

IGNORING_SHELL = """\
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)  # what `cmd &` in a script does
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
"""

CTRL_C_TESTS = [
    # a Ctrl-C sent to a ``minipi`` child: the child must have inherited a working SIGINT
    "tests/test_cli_chat.py::test_ctrl_c_during_a_model_request_cancels",
    # a Ctrl-C sent to the pytest process itself: KeyboardInterrupt must reach the loop
    "tests/test_session_repair.py::test_ctrl_c_during_a_save_lands_after_the_commit",
]


def started_ignoring_sigint(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` started with SIGINT ignored, as a non-interactive shell starts ``cmd &``."""
    return subprocess.run(
        [sys.executable, "-c", IGNORING_SHELL, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=REPO,
        env=clean_env(),
        timeout=timeout,
        check=False,
    )


def test_the_child_really_starts_with_sigint_ignored() -> None:
    """Without this the test below could pass for the wrong reason."""
    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"
    proc = started_ignoring_sigint("-c", probe, timeout=30)
    assert (proc.returncode, proc.stdout.strip()) == (0, "True"), proc.stderr


@pytest.mark.timeout(150)
def test_ctrl_c_tests_pass_under_a_shell_that_ignores_sigint() -> None:
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", *CTRL_C_TESTS]
    proc = started_ignoring_sigint(*args, timeout=120)
    summary = proc.stdout.strip().splitlines()[-1:] or [""]
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert f"{len(CTRL_C_TESTS)} passed" in summary[0], proc.stdout[-2000:]
