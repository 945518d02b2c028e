"""A guided run opens with the files and folders the question names (``files.named``,
``assemble.guided_opening``): found as written or by name, through the sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from minipi.assemble import guided_opening
from minipi.files import ProjectFiles
from minipi.files.named import MAX_NAMED, named_in_project
from support.cli import minipi
from support.fake import FakeServer, Turn

TOOLS = {"list_files", "read_file", "search_files"}


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_a_named_file_is_read_and_a_named_folder_listed(tmp_path: Path) -> None:
    root = project(tmp_path, {"config/app.toml": "port = 1\n", "inbox/a.txt": "a\n"})
    with ProjectFiles(root) as files:
        opening = guided_opening(TOOLS, "In inbox/, and config/app.toml: what port?", files)
    assert opening == (
        ("list_files", {"path": "."}),
        ("list_files", {"path": "inbox"}),
        ("read_file", {"path": "config/app.toml"}),
    )


def test_a_top_level_folder_said_by_its_bare_name_is_listed(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "reports/daily.json": "{}",
            "inbox/a.txt": "a",
            "config/app.toml": "port = 1\n",
            ".cache/x": "x",
            "人事/名单.txt": "王伟",
            "data/deep/reports/x.txt": "x",
        },
    )
    with ProjectFiles(root) as files:
        zh = guided_opening(TOOLS, "帮我看看 reports 目录里的日报", files)
        en = guided_opening(TOOLS, "What is in the Inbox folder? And .cache?", files)
        han = guided_opening(TOOLS, "人事部的名单里有谁？", files)
        path = guided_opening(TOOLS, "What port does config/app.toml set?", files)
    assert zh == (("list_files", {"path": "."}), ("list_files", {"path": "reports"}))
    assert en == (("list_files", {"path": "."}), ("list_files", {"path": "inbox"}))  # not hidden
    assert han == (("list_files", {"path": "."}), ("list_files", {"path": "人事"}))
    # a path's folder is not said alone: the file is read, the folder not listed
    assert path == (("list_files", {"path": "."}), ("read_file", {"path": "config/app.toml"}))


def test_a_bare_file_name_is_found_anywhere_once(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "archive/2023/05/invoice-4821.json": '{"total": 7}',
            "archive/2021/01/invoice-1111.json": '{"total": 1}',
            "a/twin.txt": "1\n",
            "b/twin.txt": "2\n",
        },
    )
    with ProjectFiles(root) as files:
        assert named_in_project(files, ["invoice-4821.json"]) == (
            ("read_file", "archive/2023/05/invoice-4821.json"),
        )
        assert named_in_project(files, ["twin.txt"]) == ()  # two of that name: the model picks
        assert named_in_project(files, ["invoice-9999.json", "missing/x.txt"]) == ()
        # a name with a folder is taken as written, not looked for elsewhere
        assert named_in_project(files, ["wrong/invoice-4821.json"]) == ()


def test_what_read_file_would_refuse_is_not_opened(tmp_path: Path) -> None:
    root = project(tmp_path, {".env": "KEY=secret\n", "ok.txt": "ok\n"})
    (root / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    (root / "big.txt").write_text("x" * 64, encoding="utf-8")
    with ProjectFiles(root, max_bytes=32) as files:
        assert named_in_project(files, [".env", "blob.bin", "ok.txt"]) == (("read_file", "ok.txt"),)
        assert named_in_project(files, ["big.txt"]) == ()


def test_at_most_max_named_files_are_opened(tmp_path: Path) -> None:
    names = [f"f{n}.txt" for n in range(MAX_NAMED + 2)]
    root = project(tmp_path, dict.fromkeys(names, "x\n"))
    with ProjectFiles(root) as files:
        assert len(named_in_project(files, names)) == MAX_NAMED


def test_only_offered_tools_open_and_none_without_a_question(tmp_path: Path) -> None:
    root = project(tmp_path, {"notes.txt": "n\n"})
    with ProjectFiles(root) as files:
        assert guided_opening({"list_files"}, "What does notes.txt say?", files) == (
            ("list_files", {"path": "."}),
        )
        assert guided_opening({"read_file"}, "What does notes.txt say?", files) == (
            ("read_file", {"path": "notes.txt"}),
        )
        assert guided_opening(TOOLS) == (("list_files", {"path": "."}),)


def test_ask_reads_the_file_the_question_names_before_the_first_reply(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    """Through the CLI: the first request already holds the invoice's text, found by name
    in a tree no listing showed; the model answers at once (one request)."""
    files = {f"archive/{y}/invoice-{y}.json": '{"total_yuan": 1}' for y in range(2020, 2026)}
    files["archive/2023/07/invoice-4821.json"] = '{"total_yuan": 73250}'
    root = project(tmp_path, files)
    bodies: list[dict[str, Any]] = []

    def reply(body: dict[str, Any]) -> Turn:
        bodies.append(body)
        return Turn(text='{"answer": "The total is 73250 yuan."}')

    fake_server.add(reply)
    question = "Find the invoice file invoice-4821.json: what is its total?"
    proc = minipi(
        "ask", question, "--project", str(root), "--base-url", fake_server.base_url,
        "--model", "fake-model", "--guided", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(bodies) == 1
    sent = json.dumps(bodies[0]["messages"], ensure_ascii=False)
    assert "archive/2023/07/invoice-4821.json" in sent
    assert "73250" in sent
    end = json.loads(proc.stdout.splitlines()[-1])
    assert end["status"] == "succeeded"
    assert end["verdict"]["kind"] == "backed"
