"""Terminal safety through the real CLI: file names, file contents and model text holding
terminal escapes (ANSI colours, OSC 8 links, OSC 52 clipboard writes), bidi controls,
zero-width and other invisible characters, carriage returns or lone surrogates are shown
escaped, never raw: in the human log (stderr), in approval prompts, and in the answer (stdout).
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from minipi.cli.terminal import UNSAFE_CATEGORIES, safe
from support.cli import tool_outputs
from support.fake import Call, RawReply, Reply, Turn
from support.rel import Tree, assert_confined, grep, ls, make_tree, mv, read

pytestmark = pytest.mark.reliability

ESC = "\x1b"
EVIL_NAMES = [
    f"red{ESC}[31mALERT{ESC}[0m.txt",
    f"link{ESC}]8;;https:evil.example\x07click{ESC}]8;;\x07.txt",  # no "/" or "\\" in it
    "bidi\u202etxt.exe",
    "zero\u200bwidth.txt",
    "cr\roverwrite.txt",
]
EVIL_TEXT = (
    f"clip{ESC}]52;c;cm0gLXJmIH4=\x07board {ESC}[2J{ESC}]0;title\x07 \x9b31m c1\n"
    "\u202eevil-bidi\u202c \u2066iso\u2069 \u061c alm \u200bzw\u200d \u2060wj \ufeffbom\n"
    "carriage\rreturn \x08backspace \x7fdel \u2028line-sep \U000e0041\U000e0042tags\n"
)
RAW = [
    ESC,
    "\x07",
    "\x08",
    "\x7f",
    "\x9b",
    "\r",
    "\u202e",
    "\u202c",
    "\u2066",
    "\u2069",
    "\u061c",
    "\u200b",
    "\u200d",
    "\u2060",
    "\ufeff",
    "\u2028",
    "\U000e0041",
]


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    for name in EVIL_NAMES:
        tree.write(f"evil/{name}", EVIL_TEXT)
    return tree


def assert_no_raw(text: str) -> None:
    """No character of ``RAW`` appears; each line is printable apart from tabs."""
    found = sorted({f"U+{ord(c):04X}" for c in RAW if c in text})
    assert not found, f"raw characters reached the terminal: {found}"
    for line in text.split("\n"):
        assert line.replace("\t", " ").isprintable(), repr(line)


def read_every_listed_name(body: dict[str, Any]) -> Turn:
    listing = tool_outputs(body)[-1].splitlines()
    paths = [json.loads(line) if line.startswith('"') else line for line in listing]
    return Turn(calls=[read(path) for path in paths])


def test_names_contents_and_model_text_are_shown_escaped(tree: Tree) -> None:
    answer = f"Done.{ESC}[2J{ESC}]52;c;ZXZpbA==\x07 \u202egnp.exe\u202c zero\u200bwidth\rX"
    script: list[Reply] = [
        Turn(text=f"Listing{ESC}[5m now\u202e", calls=[ls("evil")]),
        read_every_listed_name,
        Turn(calls=[grep("board"), Call("read_file", {"path": f"evil/{ESC}[1mnope\u202e"})]),
        Turn(text=answer),
    ]
    run = tree.ask(script, json=False)
    assert run.exit_code == 0, run.proc.stderr
    log, out = run.proc.stderr, run.proc.stdout
    assert_no_raw(log)
    assert_no_raw(out)
    # shown, escaped: the user can see that something odd is there
    assert "\\u001b[31mALERT" in log
    assert "\\u001b]52;c;cm0gLXJmIH4=\\u0007board" in log
    assert "\\u202eevil-bidi\\u202c" in log
    assert "carriage\\u000dreturn" in log
    assert "\\U000e0041\\U000e0042tags" in log
    assert out == safe(answer) + "\n"
    assert "\\u001b]52;c;ZXZpbA==\\u0007" in out
    assert_confined(run, tree)


def test_approval_prompts_show_odd_names_escaped(tree: Tree) -> None:
    before = tree.inv()
    moves = [mv(f"evil/{name}", "archive") for name in EVIL_NAMES]
    run = tree.ask([Turn(calls=moves), Turn(text="done")], "--approve", "ask", json=False)
    assert run.prompts() == len(EVIL_NAMES)
    assert_no_raw(run.proc.stderr)
    assert '  source       "evil/red\\u001b[31mALERT\\u001b[0m.txt"\n' in run.proc.stderr
    assert '  destination  "archive/bidi\\u202etxt.exe"\n' in run.proc.stderr
    tree.assert_only_changed(before)


def test_a_terminal_prompt_shows_odd_names_escaped(tree: Tree) -> None:
    before = tree.inv()
    run = tree.ask_tty(
        [Turn(calls=[mv(f"evil/{EVIL_NAMES[1]}", "archive")]), Turn(text="done")], [b"y\n"]
    )
    prompt = run.proc.stderr
    assert_no_raw(prompt)
    assert "link\\u001b]8;;https:evil.example\\u0007click" in prompt
    assert run.codes() == [None]
    tree.assert_only_changed(before, {f"evil/{EVIL_NAMES[1]}": f"archive/{EVIL_NAMES[1]}"})


def lone_surrogate_answer(body: dict[str, Any]) -> RawReply:
    """An answer holding U+D800: valid JSON can carry it (as an escape), UTF-8 cannot."""
    head = {"id": "c1", "created": 1, "model": "fake-model"}
    text = "odd \ud800 text"
    if not body.get("stream"):
        message = {"role": "assistant", "content": text}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return RawReply(200, json.dumps({**head, "choices": [choice]}).encode())
    frames = [
        {"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None},
        {"index": 0, "delta": {}, "finish_reason": "stop"},
    ]
    events = [f"data: {json.dumps({**head, 'choices': [f]})}\n\n" for f in frames]
    sse = "".join(events) + "data: [DONE]\n\n"
    return RawReply(200, sse.encode(), {"content-type": "text/event-stream"})


def test_a_lone_surrogate_from_the_model_does_not_crash_the_output(tree: Tree) -> None:
    # printed raw, it would raise UnicodeEncodeError on a UTF-8 stdout
    run = tree.ask([lone_surrogate_answer], json=False)
    assert run.exit_code == 0, run.proc.stderr
    assert run.proc.stdout == "odd \\ud800 text\n"
    assert "odd \\ud800 text" in run.proc.stderr


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain 猫 text\tand tab\nnext line", "plain 猫 text\tand tab\nnext line"),
        (f"{ESC}[31m", "\\u001b[31m"),
        ("a\rb", "a\\u000db"),
        ("\u202e\u2066\u061c", "\\u202e\\u2066\\u061c"),
        ("\u200b\u2060\ufeff\u00ad", "\\u200b\\u2060\\ufeff\\u00ad"),
        ("\u2028\u2029", "\\u2028\\u2029"),
        ("\x9b\x85", "\\u009b\\u0085"),
        ("\U000e0041", "\\U000e0041"),
        ("\ud800", "\\ud800"),
        ("emoji \U0001f431 stays", "emoji \U0001f431 stays"),
    ],
)
def test_safe_escapes_exactly_what_could_fool_a_terminal(text: str, shown: str) -> None:
    assert safe(text) == shown


def test_every_unsafe_character_is_escaped_and_nothing_else() -> None:
    """Checks the fast path of ``safe`` against the running Python's Unicode database."""
    for code in range(0x110000):
        char = chr(code)
        unsafe = char not in "\t\n" and unicodedata.category(char) in UNSAFE_CATEGORIES
        assert (safe(char) != char) == unsafe, f"U+{code:04X}"
