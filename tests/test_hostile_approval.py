"""Issue 23, the approval prompt tried as a new user would: a "no" is the person's decision,
shown as one, and the run ends ``user_denied`` at once (the README's table)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli import clean_env, copy_example
from support.fake import Call, FakeServer, Turn
from support.terminal import Terminal

CAT = "inbox/猫咪小花.txt"


@pytest.mark.parametrize(
    ("question", "said"),
    [("adopt the cat", "not moved: you said no"), ("把猫咪小花归档", "未移动：你拒绝了")],
)
def test_no_at_the_prompt_is_the_users_decision_and_ends_the_run_at_once(
    fake_server: FakeServer,
    tmp_path: Path,
    terminals: list[Terminal],
    question: str,
    said: str,
) -> None:
    shelter = copy_example("shelter", tmp_path)
    move = {"source": CAT, "target": "archive/猫咪小花.txt"}
    # a model that would go on after the "no" (list again, then claim success)
    fake_server.add(
        Turn(calls=[Call("move_file", move)]),
        Turn(calls=[Call("list_files", {"path": "."})]),
        Turn("已移好 / moved"),
    )
    args = ["ask", question, "-p", str(shelter), "--base-url", fake_server.base_url]
    args += ["--model", "fake-model", "--approve", "ask", "--no-stream"]
    terminal = Terminal(args, clean_env())
    terminals.append(terminal)
    terminal.expect("[y/N] ")
    terminal.send(b"n\r")
    terminal.expect(said)
    terminal.expect("[you said no]" if said.startswith("not") else "[你已拒绝]")  # not "tool error"
    # the summary's code line (marked: minipi's), once the reply is answered, in the
    # question's language
    terminal.expect("\n▌user_denied: " if said.startswith("not") else "\n▌user_denied：你拒绝了")
    assert terminal.close() == 1
    assert len(fake_server.requests) == 1  # the model was not asked to work around the "no"
    assert (shelter / CAT).exists()
    assert not (shelter / "archive" / "猫咪小花.txt").exists()
