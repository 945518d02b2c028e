"""RELIABILITY group B through the real CLI: special files, sizes, encodings, huge trees, odd
names and regex-looking queries get a specific tool error or a bounded answer, never a hang,
a partial read, or replacement characters sent to the model."""

from __future__ import annotations

import json
import os
import resource
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.cli import tool_outputs
from support.fake import Call, Turn
from support.rel import (
    AskRun,
    Tree,
    assert_confined,
    grep,
    ls,
    make_tree,
    one_turn,
    read,
    run_calls,
    tool_contents,
)

pytestmark = pytest.mark.reliability

LIMIT = 32 * 1024  # ProjectFiles' default max_bytes, what the CLI uses


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return make_tree(tmp_path)


def checked(tree: Tree, calls: list[Call], codes: list[str | None]) -> AskRun:
    """``run_calls`` (nothing may change), and the run succeeded."""
    run = run_calls(tree, calls, codes, timeout=20)
    assert run.exit_code == 0, run.proc.stderr
    return run


@pytest.mark.timeout(30)
def test_b1_a_fifo_without_writer_is_never_opened(tree: Tree) -> None:
    os.mkfifo(tree.root / "pipe")
    start = time.monotonic()
    run = checked(tree, [read("pipe"), ls("."), grep("x")], ["not_regular_file", None, None])
    assert time.monotonic() - start < 10
    refusal, listing, search = run.contents()
    assert "'pipe': it is a fifo, not a regular file" in refusal
    assert "pipe (fifo)" in listing.splitlines()
    assert search.endswith("[not searched: fifo/socket/device: 1]")
    assert str(tree.root / "pipe") not in run.opened


@pytest.fixture
def held_fifo(tree: Tree) -> Iterator[tuple[Path, int]]:
    """A FIFO held open by a writer with 1000 bytes waiting in it; yields (path, fd)."""
    path = tree.root / "pipe"
    os.mkfifo(path)
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)  # a writer (and reader) that never blocks
    os.write(fd, b"x" * 1000)
    try:
        yield path, fd
    finally:
        os.close(fd)


@pytest.mark.timeout(30)
def test_b2_a_fifo_with_a_writer_is_refused_and_nothing_is_read(
    tree: Tree, held_fifo: tuple[Path, int]
) -> None:
    path, fd = held_fifo
    run = checked(
        tree,
        [read("pipe"), grep("x"), grep("x", "pipe")],
        ["not_regular_file", None, "not_regular_file"],
    )
    assert run.contents()[1].endswith("[not searched: fifo/socket/device: 1]")
    assert str(path) not in run.opened
    assert os.read(fd, 4096) == b"x" * 1000  # every byte is still there


def test_b2_searching_a_fifo_path_directly_is_refused(tree: Tree) -> None:
    os.mkfifo(tree.root / "pipe")
    run = checked(tree, [grep("x", "pipe"), ls("pipe")], ["not_regular_file", "not_a_directory"])
    assert "fifo" in run.contents()[0]


@pytest.mark.timeout(30)
def test_b3_sockets_and_directories_are_refused(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree.root)  # a short relative name: AF_UNIX paths are limited
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind("sock")
        server.listen(1)
        run = checked(
            tree,
            [read("sock"), read("reports"), read("."), read("notes.txt/x"), ls(".")],
            ["not_regular_file", "is_directory", "is_directory", "not_a_directory", None],
        )
    finally:
        server.close()
    assert "'sock': it is a socket, not a regular file" in run.contents()[0]
    assert "sock (socket)" in run.contents()[-1].splitlines()


def test_b4_the_limit_is_read_and_one_byte_more_is_too_large(tree: Tree) -> None:
    tree.write("limit.txt", "a" * (LIMIT - 1) + "\n")
    tree.write("over.txt", "a" * LIMIT + "\n")
    run = tree.ask(one_turn(read("limit.txt"), read("over.txt")))
    assert run.codes() == [None, "too_large"]
    exact, over = run.contents()
    assert exact == "a" * (LIMIT - 1) + "\n"
    assert f"is {LIMIT + 1} bytes" in over
    assert f"at most {LIMIT} bytes" in over
    # the model saw the whole first file and nothing of the second
    sent = tool_outputs(run.requests[-1].body)
    assert sent == [exact, over]


@pytest.mark.timeout(30)
def test_b6_a_sparse_ten_gigabyte_file_is_refused_at_once(tree: Tree) -> None:
    with open(tree.root / "huge.bin", "wb") as handle:
        handle.truncate(10 * 1024**3)
    start = time.monotonic()
    run = checked(tree, [read("huge.bin"), grep("x")], ["too_large", None])
    assert time.monotonic() - start < 10
    refusal, search = run.contents()
    assert f"is {10 * 1024**3} bytes" in refusal
    assert search.endswith("[not searched: too large: 1]")
    # no minipi child ever grew anywhere near the file's size (ru_maxrss is in KiB)
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 1024 * 1024


NOT_UTF8 = {
    "latin1.txt": (b"caf\xe9\n", 3),
    "utf16.txt": (b"\xff\xfeh\x00i\x00\n\x00", 0),
    "image.png": (b"\x89PNG\r\n\x1a\n" + bytes(16), 0),
    "cesu.txt": (b"ok \xed\xa0\x80\n", 3),
}


def test_b7_non_utf8_is_refused_with_the_offset_and_no_replacement_text(tree: Tree) -> None:
    for name, (data, _) in NOT_UTF8.items():
        tree.write(name, data)
    before = tree.inv()
    run = tree.ask(one_turn(*(read(name) for name in NOT_UTF8), grep("a")))
    assert run.codes() == ["not_utf8"] * 4 + [None]
    for result, (name, (data, offset)) in zip(run.results(), NOT_UTF8.items(), strict=False):
        assert f"'{name}' is not UTF-8 text" in result["content"]
        assert f"0x{data[offset]:02x} at byte offset {offset}" in result["content"]
    assert "[not searched: not UTF-8: 4]" in run.results()[-1]["content"]
    for request in run.requests:
        assert b"\xef\xbf\xbd" not in request.raw
        assert b"\\ufffd" not in request.raw.lower()
    tree.assert_only_changed(before)
    assert_confined(run, tree)


def test_b8_bom_and_crlf_are_handled_consistently(tree: Tree) -> None:
    tree.write("bom.txt", b"\xef\xbb\xbfhello\r\nworld \xe7\x8c\xab\r\n")
    tree.write("lines.txt", "猫\r\n" * 5)
    run = checked(
        tree,
        [
            read("bom.txt"),
            grep("hello", "bom.txt"),
            grep("world", "bom.txt"),
            Call("read_file", {"path": "lines.txt", "offset": 2, "limit": 2}),
        ],
        [None, None, None, None],
    )
    read_bom, first, second, lines = run.contents()
    assert read_bom == "hello\r\nworld 猫\r\n"  # BOM removed, CRLF kept
    assert first == "bom.txt:1: hello"  # the BOM is not part of line 1 for search either
    assert second == "bom.txt:2: world 猫"
    assert lines == "猫\r\n猫\r\n[truncated: 2 more lines; call read_file again with offset=4]"


def test_b9_an_empty_file_says_so(tree: Tree) -> None:
    tree.write("empty.txt", b"")
    run = checked(tree, [read("empty.txt")], [None])
    assert run.contents() == ["(empty file, 0 bytes)"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_b10_an_unreadable_file_is_refused_and_the_loop_goes_on(tree: Tree) -> None:
    locked = tree.write("locked.txt", "private\n")
    locked.chmod(0)
    try:
        run = checked(tree, [read("locked.txt"), read("notes.txt")], ["permission_denied", None])
    finally:
        locked.chmod(0o644)
    assert "private" not in tool_contents(run)


@pytest.mark.timeout(30)
def test_b13_a_big_tree_is_cut_with_exact_counts(tree: Tree) -> None:
    # the 20 000-entry visit limit of search is tested on the files layer (configurable there)
    big = tree.root / "big"
    big.mkdir()
    for n in range(1200):
        (big / f"f{n:04d}.txt").write_bytes(b"hit\n" if n % 10 == 0 else b"")
    run = checked(tree, [ls("big"), grep("hit", "big")], [None, None])
    listing, search = (line.splitlines() for line in run.contents())
    assert len(listing) == 201
    assert listing[-1] == "[truncated: 1000 more entries; list a subdirectory]"
    assert len(search) == 51
    assert search[0] == "big/f0000.txt:1: hit"
    assert search[-1] == "[truncated: 70 more matches; use a longer query or a narrower path]"


@pytest.mark.timeout(30)
def test_b13_deep_nesting_works_without_recursion(tree: Tree) -> None:
    deep = "/".join(["d"] * 300)
    (tree.root / deep).mkdir(parents=True)
    tree.write(f"{deep}/bottom.txt", "treasure\n")
    run = checked(
        tree, [grep("treasure"), read(f"{deep}/bottom.txt"), ls(deep)], [None, None, None]
    )
    assert run.contents() == [f"{deep}/bottom.txt:1: treasure", "treasure\n", f"{deep}/bottom.txt"]


@pytest.mark.timeout(30)
def test_b14_a_redos_pattern_is_searched_literally_and_fast(tree: Tree) -> None:
    tree.write("long.txt", "a" * 30_000 + "!\n")
    tree.write("literal.txt", "the regex (a+)+$ itself\n")
    start = time.monotonic()
    run = checked(
        tree, [grep("(a+)+$"), grep("(a+)+$", "long.txt"), grep("a*!")], [None, None, None]
    )
    assert time.monotonic() - start < 10
    assert run.contents() == [
        "literal.txt:1: the regex (a+)+$ itself",
        "no matches for '(a+)+$' in long.txt",
        "no matches for 'a*!'",
    ]


ODD_NAMES = [
    "evil\x1b[31mred\x1b[0m.txt",
    "two\nlines.txt",
    "cr\rreturn.txt",
    "[truncated: 5 more entries; list a subdirectory]",
    " lead.txt",
    'quote".txt',
]


def test_odd_names_are_listed_as_json_literals_the_model_can_use(tree: Tree) -> None:
    odd = tree.root / "odd"
    odd.mkdir()
    for n, name in enumerate(ODD_NAMES):
        (odd / name).write_text(f"content {n}\n", encoding="utf-8")

    def read_every_listed_name(body: dict[str, Any]) -> Turn:
        listing = tool_outputs(body)[-1].splitlines()
        paths = [json.loads(line) if line.startswith('"') else line for line in listing]
        return Turn(calls=[read(path) for path in paths])

    before = tree.inv()
    run = tree.ask([Turn(calls=[ls("odd")]), read_every_listed_name, Turn(text="done")])
    listing = run.results()[0]["content"].splitlines()
    assert len(listing) == len(ODD_NAMES)  # one line per name, whatever the name holds
    assert all(line.isprintable() for line in listing)
    names = [json.loads(line) if line.startswith('"') else line for line in listing]
    assert sorted(names) == sorted(f"odd/{n}" for n in ODD_NAMES)
    quoted = [name for name, line in zip(names, listing, strict=True) if line.startswith('"')]
    assert sorted(quoted) == sorted(f"odd/{n}" for n in ODD_NAMES[:3] + ODD_NAMES[5:])
    assert run.codes("read_file") == [None] * len(ODD_NAMES)
    assert sorted(run.contents("read_file")) == [f"content {n}\n" for n in range(len(ODD_NAMES))]
    tree.assert_only_changed(before)
    assert_confined(run, tree)
