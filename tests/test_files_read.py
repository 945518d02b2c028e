"""Group B for read_file: file types, sizes, encodings, line ranges."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from minipi.files import ProjectFiles
from minipi.files.tools import format_text
from support.files import DAILY, OpenSpy, Project, ReadSpy, make_project, refused

pytestmark = pytest.mark.reliability


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path)


def test_reads_the_daily_report_exactly(project: Project) -> None:
    with project.open() as files:
        text = files.read_text("reports/daily-2026-09-06.json")
    assert text.text == DAILY
    assert text.path == "reports/daily-2026-09-06.json"
    assert (text.size, text.nlink, text.bom, text.total_lines) == (len(DAILY), 1, False, 1)
    assert format_text(text) == DAILY


# B1, B2, B3 -------------------------------------------------------------------------------


@pytest.mark.timeout(5)
def test_a_fifo_without_writer_is_refused_without_opening(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.mkfifo(project.root / "pipe")
    start = time.monotonic()
    with project.open() as files:
        spy = OpenSpy(monkeypatch)
        error = refused("not_regular_file", lambda: files.read_text("pipe"))
        assert "fifo" in error.message
        result = files.search("x")
        assert result.skipped["not_regular_file"] == 1
        assert "pipe" not in spy.names
    assert time.monotonic() - start < 1.0


@pytest.fixture
def busy_fifo(project: Project) -> Iterator[Path]:
    """A FIFO that a writer thread holds open and keeps writing to."""
    path = project.root / "pipe"
    os.mkfifo(path)
    keep = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer open without blocking
    stop = threading.Event()

    def write_forever() -> None:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        try:
            while not stop.is_set():
                try:
                    os.write(fd, b"x" * 4096)
                except BlockingIOError:
                    time.sleep(0.001)
        finally:
            os.close(fd)

    writer = threading.Thread(target=write_forever, daemon=True)
    writer.start()
    time.sleep(0.05)
    try:
        yield path
    finally:
        stop.set()
        writer.join(2)
        os.close(keep)


@pytest.mark.timeout(5)
def test_a_fifo_with_a_writer_is_refused_and_nothing_is_read(
    project: Project, busy_fifo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with project.open() as files:
        reads = ReadSpy(monkeypatch)
        refused("not_regular_file", lambda: files.read_text("pipe"))
        assert reads.asked == []
        assert files.search("x").skipped["not_regular_file"] == 1
        assert sum(reads.got) == sum(len(p.read_bytes()) for p in _regular_files(project))


@pytest.mark.timeout(5)
def test_sockets_and_directories_are_refused(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project.root)  # a short relative name: AF_UNIX paths are limited
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind("sock")
        with project.open() as files:
            error = refused("not_regular_file", lambda: files.read_text("sock"))
            assert "socket" in error.message
            refused("is_directory", lambda: files.read_text("reports"))
            refused("is_directory", lambda: files.read_text("."))
            refused("not_a_directory", lambda: files.read_text("notes.txt/x"))
            refused("not_a_directory", lambda: files.list_dir("notes.txt"))
    finally:
        server.close()


def _regular_files(project: Project) -> list[Path]:
    return [p for p in project.root.rglob("*") if p.is_file() and not p.is_symlink()]


# B4, B6 -----------------------------------------------------------------------------------


def test_a_file_of_exactly_the_limit_is_read(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write("exact.txt", "a" * 100)
    with project.open(max_bytes=100) as files:
        reads = ReadSpy(monkeypatch)
        assert files.read_text("exact.txt").text == "a" * 100
    assert sum(reads.got) == 100
    assert sum(reads.asked[:1]) <= 101


def test_one_byte_over_the_limit_is_refused_with_size_and_limit(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write("over.txt", "a" * 101)
    with project.open(max_bytes=100) as files:
        reads = ReadSpy(monkeypatch)
        error = refused("too_large", lambda: files.read_text("over.txt"))
    assert "101 bytes" in error.message
    assert "100 bytes" in error.message
    assert reads.got == []  # fstat already said too large


def test_a_file_larger_than_fstat_says_is_cut_at_limit_plus_one(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write("grows.txt", "a" * 1_000_000)
    real_fstat = os.fstat

    def stale_fstat(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        fields = list(info[:10])
        fields[6] = 10  # st_size as it was before the file grew
        return os.stat_result(fields)

    with project.open(max_bytes=100) as files:
        monkeypatch.setattr(os, "fstat", stale_fstat)
        reads = ReadSpy(monkeypatch)
        error = refused("too_large", lambda: files.read_text("grows.txt"))
    assert "grew" in error.message
    assert sum(reads.got) == 101
    assert sum(reads.asked) == 101


@pytest.mark.timeout(5)
def test_a_sparse_ten_gigabyte_file_is_refused_instantly(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = project.write("huge.bin", b"")
    os.truncate(path, 10 * 1024**3)
    start = time.monotonic()
    with project.open() as files:
        reads = ReadSpy(monkeypatch)
        error = refused("too_large", lambda: files.read_text("huge.bin"))
        assert reads.asked == []
        assert files.search("x").skipped["too_large"] == 1
    assert str(10 * 1024**3) in error.message
    assert sum(reads.got) < 1000  # only the small files of the project
    assert time.monotonic() - start < 1.0


# B7, B8, B9 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "offset"),
    [
        (b"caf\xe9", 3),
        ("\ufeffhi".encode("utf-16-le"), 0),
        (b"\x89PNG\r\n\x1a\n\x00\x00", 0),
        (b"\xed\xa0\x80", 0),  # a CESU-8 surrogate
        (b"ok \xe7\x8c", 3),  # ends in the middle of a code point
        (b"\xef\xbb\xbfcaf\xe9", 6),  # the offset counts the BOM
    ],
)
def test_non_utf8_is_refused_with_the_byte_offset(
    project: Project, data: bytes, offset: int
) -> None:
    project.write("bad.txt", data)
    with project.open() as files:
        error = refused("not_utf8", lambda: files.read_text("bad.txt"))
        assert f"byte offset {offset}" in error.message
        assert "\ufffd" not in error.message
        assert files.search("ok").matches == ()
        assert files.search("ok").skipped == {"not_utf8": 1}


def test_a_bom_is_stripped_and_crlf_is_kept(project: Project) -> None:
    project.write("bom.txt", b"\xef\xbb\xbfline 1\r\nline 2\r\n")
    with project.open() as files:
        text = files.read_text("bom.txt")
        assert text.text == "line 1\r\nline 2\r\n"
        assert text.bom
        assert text.size == 19
        assert files.read_text("bom.txt", offset=2).text == "line 2\r\n"
        assert [m.text for m in files.search("line").matches] == ["line 1", "line 2"]


def test_an_empty_file_says_so(project: Project) -> None:
    project.write("empty.txt", b"")
    with project.open() as files:
        text = files.read_text("empty.txt")
        assert format_text(text) == "(empty file, 0 bytes)"
        assert format_text(files.read_text("empty.txt", offset=1, limit=5)) == (
            "(empty file, 0 bytes)"
        )


def test_valid_replacement_characters_in_the_file_are_kept(project: Project) -> None:
    project.write("fffd.txt", "a\ufffdb\n")
    with project.open() as files:
        assert files.read_text("fffd.txt").text == "a\ufffdb\n"


# B10 --------------------------------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file_is_refused(project: Project) -> None:
    path = project.write("locked.txt", "x\n")
    path.chmod(0)
    try:
        with project.open() as files:
            refused("permission_denied", lambda: files.read_text("locked.txt"))
            assert files.search("x").skipped == {"permission_denied": 1}
    finally:
        path.chmod(0o644)


# Line ranges ------------------------------------------------------------------------------


@pytest.fixture
def lines(project: Project) -> ProjectFiles:
    project.write("lines.txt", "".join(f"line {n}\n" for n in range(1, 11)))
    return project.open()


def test_a_range_says_how_to_read_on(lines: ProjectFiles) -> None:
    with lines as files:
        text = files.read_text("lines.txt", offset=3, limit=2)
    assert text.text == "line 3\nline 4\n"
    assert (text.first_line, text.last_line, text.total_lines) == (3, 4, 10)
    assert format_text(text) == (
        "line 3\nline 4\n[truncated: 6 more lines; call read_file again with offset=5]"
    )


def test_a_range_to_the_end_has_no_notice(lines: ProjectFiles) -> None:
    with lines as files:
        assert format_text(files.read_text("lines.txt", offset=9)) == "line 9\nline 10\n"
        assert format_text(files.read_text("lines.txt", offset=9, limit=50)) == (
            "line 9\nline 10\n"
        )
        first = files.read_text("lines.txt", limit=1)
    assert format_text(first).startswith("line 1\n[truncated: 9 more lines;")


@pytest.mark.parametrize(
    ("offset", "limit"), [(11, None), (0, None), (None, 0), (-1, 2), (True, None), ("2", None)]
)
def test_bad_ranges_are_refused(lines: ProjectFiles, offset: object, limit: object) -> None:
    with lines as files:
        refused("invalid_range", lambda: files.read_text("lines.txt", offset, limit))  # type: ignore[arg-type]


def test_a_last_line_without_newline_gets_the_notice_on_its_own_line(project: Project) -> None:
    project.write("nonl.txt", "a\nb\nc")
    with project.open() as files:
        assert format_text(files.read_text("nonl.txt", limit=2)).endswith(
            "a\nb\n[truncated: 1 more lines; call read_file again with offset=3]"
        )
        assert format_text(files.read_text("nonl.txt", offset=3)) == "c"
        text = files.read_text("nonl.txt", offset=2, limit=1)
    assert text.text == "b\n"
    assert text.next_offset == 3


def test_only_newlines_count_as_line_breaks(project: Project) -> None:
    project.write("seps.txt", "a\u2028b\x0cc\rd\ne\n")
    with project.open() as files:
        text = files.read_text("seps.txt", limit=1)
    assert text.text == "a\u2028b\x0cc\rd\n"
    assert text.total_lines == 2
