"""Approval of tools that change things (``move_file``): ask a human, or a fixed policy."""

from __future__ import annotations

import sys
from typing import TextIO

from minipi.agent.tools import ApprovalRequest, Approver
from minipi.cli.render import Words
from minipi.cli.terminal import safe

__all__ = ["make_approver"]


def make_approver(
    mode: str, words: Words, stdin: TextIO | None = None, out: TextIO | None = None
) -> Approver:
    """``all`` allows, ``deny`` denies, ``ask`` prompts on a terminal.

    A stdin that is not a terminal, or that is closed, is a denial: nobody can have approved.
    Approval never widens what a tool may touch; the tool checks its paths either way.
    """
    source = stdin or sys.stdin
    err = out or sys.stderr

    def approve(request: ApprovalRequest) -> bool:
        _show(request, words, err)
        if mode in ("all", "deny"):
            allowed = mode == "all"
            print(
                ("已自动允许" if words.chinese else "allowed by --approve all")
                if allowed
                else ("已拒绝（--approve deny）" if words.chinese else "denied by --approve deny"),
                file=err,
                flush=True,
            )
            return allowed
        if not source.isatty():
            print(
                "已拒绝：标准输入不是终端"
                if words.chinese
                else "denied: stdin is not a terminal (use --approve all to allow)",
                file=err,
                flush=True,
            )
            return False
        print("允许吗？[y/N] " if words.chinese else "Allow? [y/N] ", end="", file=err, flush=True)
        answer = source.readline()
        if not answer:  # Ctrl-D: the terminal echoed nothing, so end the prompt's line here
            print(
                "\n" + ("已拒绝：输入已结束" if words.chinese else "denied: end of input"), file=err
            )
            return False
        return answer.strip().lower() in ("y", "yes", "是", "好")

    return approve


def _show(request: ApprovalRequest, words: Words, err: TextIO) -> None:
    title = "[需要确认]" if words.chinese else "[approval needed]"
    print(f"{title} {safe(request.summary)}", file=err)
    width = max((len(k) for k in request.details), default=0)
    for key, value in request.details.items():
        print(f"  {key.ljust(width)}  {safe(value)}", file=err)
