"""Approval of the tools that change things (``AgentTool.mutating``): ask a human, or a
fixed policy."""

from __future__ import annotations

import sys
from typing import TextIO

from minipi.agent.tools import ApprovalRequest, Approver
from minipi.cli.status import Ticker
from minipi.cli.terminal import safe
from minipi.cli.words import Words

__all__ = ["make_approver"]


def make_approver(
    mode: str,
    words: Words,
    stdin: TextIO | None = None,
    out: TextIO | None = None,
    ticker: Ticker | None = None,
) -> Approver:
    """``all`` allows, ``deny`` denies, ``ask`` prompts on a terminal.

    A stdin that is not a terminal, or that is closed, is a denial: nobody can have approved.
    Approval never widens what a tool may touch; the tool checks its paths either way.
    """
    source = stdin or sys.stdin
    err = out or sys.stderr

    def approve(request: ApprovalRequest) -> bool:
        if ticker is not None:
            ticker.hide()  # a person decides now: nothing ticks over the prompt
        _show(request, words, err)
        if mode in ("all", "deny"):
            allowed = mode == "all"
            print(words("allowed_all" if allowed else "denied_flag"), file=err, flush=True)
            return allowed
        if not source.isatty():
            print(words("denied_tty"), file=err, flush=True)
            return False
        print(words("allow_prompt"), end="", file=err, flush=True)
        answer = source.readline()
        if not answer:  # Ctrl-D: the terminal echoed nothing, so end the prompt's line here
            print("\n" + words("denied_eof"), file=err)
            return False
        if answer.strip().lower() in ("y", "yes", "是", "好"):
            return True
        # the person's decision, said as one (the run then ends user_denied)
        moving = {"source", "destination"} <= request.details.keys()  # a move, by what it shows
        said = "said_no_move" if moving else "said_no"
        print(words(said), file=err, flush=True)
        return False

    return approve


def _show(request: ApprovalRequest, words: Words, err: TextIO) -> None:
    print(f"{words('approval')} {safe(request.summary)}", file=err)
    width = max((len(k) for k in request.details), default=0)
    for key, value in request.details.items():
        print(f"  {key.ljust(width)}  {safe(value)}", file=err)
