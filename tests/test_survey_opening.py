"""A guided run reads the files a question bears on before the first reply
(``files.survey``, ``assemble.guided_opening``): every file of a project that fits the
budget, else those sharing the most words with the question; through the sandbox, so what
read_file refuses is never read; and end to end, the CLI's opening reads the file a question
only describes ("the staging settings") over real HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from minipi.assemble import guided_opening
from minipi.files import ProjectFiles
from minipi.files.survey import MAX_SURVEYED, survey
from support.cli import minipi
from support.fake import FakeServer, Turn

TOOLS = {"list_files", "read_file", "search_files"}


def _write(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def _deploy(root: Path, filler: int = 0) -> Path:
    """Three environments' settings, a described one among them, and unrelated files."""
    pad = "# " + "x" * filler + "\n" if filler else ""
    return _write(
        root,
        {
            "conf/staging.ini": f"{pad}[db]\nhost = db-stage.internal\nport = 5433\n",
            "conf/production.ini": f"{pad}[db]\nhost = db-prod.internal\nport = 5432\n",
            "conf/local.ini": f"{pad}[db]\nhost = localhost\nport = 5432\n",
            "docs/CONTRIBUTING.md": f"{pad}Open a pull request; a maintainer reviews it.\n",
            "src/app.py": f"{pad}import os\nprint(os.environ.get('APP'))\n",
        },
    )


def test_a_project_that_fits_is_read_whole_the_files_sharing_words_first(
    tmp_path: Path,
) -> None:
    project = _deploy(tmp_path)
    with ProjectFiles(project) as files:
        chosen = survey(files, "Which database port does staging use?", 10_000)
    assert set(chosen) == {
        "conf/staging.ini",
        "conf/production.ini",
        "conf/local.ini",
        "docs/CONTRIBUTING.md",
        "src/app.py",
    }
    assert chosen[0] == "conf/staging.ini"  # "staging" names it; "port" is in three


def test_a_project_too_large_for_the_budget_reads_what_the_question_describes(
    tmp_path: Path,
) -> None:
    project = _deploy(tmp_path, filler=600)
    with ProjectFiles(project) as files:
        chosen = survey(files, "Which database port does staging use?", 1_400)
        zh = survey(files, "帮我看看预发环境 staging 的数据库端口", 1_400)
    assert chosen[0] == "conf/staging.ini"
    assert len(chosen) == 2  # the budget: two files, both of the other settings sharing "port"
    assert chosen[1] in {"conf/production.ini", "conf/local.ini"}
    assert zh[0] == "conf/staging.ini"


def test_no_file_sharing_a_word_is_read_when_not_all_fit(tmp_path: Path) -> None:
    project = _deploy(tmp_path, filler=600)
    with ProjectFiles(project) as files:
        assert survey(files, "Who reviews a pull request?", 1_400) == ("docs/CONTRIBUTING.md",)
        assert survey(files, "Qu'est-ce que c'est ?", 1_400) == ()
        assert survey(files, "Which database port does staging use?", 0) == ()


def test_a_number_the_question_states_tells_dated_files_apart(tmp_path: Path) -> None:
    day = '{"path": "/v1/pay", "status": 503}\n' * 30
    project = _write(
        tmp_path,
        {f"logs/api-2026-04-{d}.jsonl": day for d in ("19", "20", "21", "22")},
    )
    with ProjectFiles(project) as files:
        chosen = survey(files, "How many 503s were logged on April 21, 2026?", len(day) + 10)
    assert chosen == ("logs/api-2026-04-21.jsonl",)


def test_what_read_file_refuses_is_never_read_and_at_most_a_handful_are(tmp_path: Path) -> None:
    project = _write(
        tmp_path,
        {
            ".env": "DB_PASSWORD=hunter2\n",
            "logo.png": b"\x89PNG\r\n\x1a\n\x00\xff",
            "empty.txt": "",
            ".git/config": "[core]\n",
            **{f"notes/n{i:02}.txt": f"note {i} about the port\n" for i in range(12)},
        },
    )
    with ProjectFiles(project) as files:
        chosen = survey(files, "which port?", 100_000)
    assert len(chosen) == MAX_SURVEYED
    assert all(path.startswith("notes/") for path in chosen)


def test_a_question_naming_a_file_has_said_where_to_look_one_naming_a_folder_is_surveyed_there(
    tmp_path: Path,
) -> None:
    project = _deploy(tmp_path)
    with ProjectFiles(project) as files:
        named = guided_opening(TOOLS, "In conf/local.ini, which port for staging?", files, 9_000)
        absent = guided_opening(TOOLS, "Which port does conf/qa.ini set?", files, 9_000)
        folder = guided_opening(TOOLS, "What is in the docs folder?", files, 9_000)
        no_reads = guided_opening(TOOLS - {"read_file"}, "staging port?", files, 9_000)
    assert named == (
        ("list_files", {"path": "."}),
        ("read_file", {"path": "conf/local.ini"}),
    )
    assert absent == (("list_files", {"path": "."}),)  # not found: not replaced by a guess
    assert folder == (
        ("list_files", {"path": "."}),
        ("list_files", {"path": "docs"}),
        ("read_file", {"path": "docs/CONTRIBUTING.md"}),
    )
    assert no_reads == (("list_files", {"path": "."}),)


def test_a_guided_cli_run_reads_the_file_the_question_describes(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    project = _deploy(tmp_path / "p", filler=600)
    sent: list[str] = []

    def answer(body: dict[str, Any]) -> Turn:
        sent.append(json.dumps(body["messages"], ensure_ascii=False))
        return Turn(text='{"answer": "Staging uses port 5433."}')

    fake_server.add(answer)
    endpoint = ("--base-url", fake_server.base_url, "--model", "fake-model")
    proc = minipi(
        "ask",
        "Which database port does staging use?",
        "--project",
        str(project),
        *endpoint,
        "--guided",
        "--context-tokens",
        "2400",  # 2,880 bytes of files: not all five, and two share no word
    )
    assert proc.returncode == 0, proc.stderr
    assert fake_server.posts == 1  # the answer came from the opening's reads
    assert "db-stage.internal" in sent[0]
    assert "pull request" not in sent[0]  # shares no word with the question
    assert "read_file" in proc.stderr
    assert "conf/staging.ini" in proc.stderr


def test_a_file_named_by_its_bare_name_is_read_beside_the_folder_named(tmp_path: Path) -> None:
    """ "Move the parrot Kiwi's card to adopted/": the folder named is where the card goes;
    the card is wherever its name is. Files the question does not name stay unread, and a
    word the folder's own files already hold names nothing elsewhere."""
    project = _write(
        tmp_path,
        {
            "adopted/README.md": "Cards of adopted animals go here.\n",
            "waiting/parrot-kiwi.md": "Kiwi, a grey parrot, 4 years old.\n",
            "waiting/rabbit-momo.md": "Momo, a rabbit, 2 years old.\n",
            "waiting/animals-cards.md": "How to write cards.\n",
        },
    )
    offered = {"list_files", "read_file", "move_file"}
    with ProjectFiles(project) as files:
        opening = guided_opening(offered, "Move the parrot Kiwi's card to adopted/", files, 4000)
    reads = [arguments["path"] for tool, arguments in opening if tool == "read_file"]
    assert reads == ["adopted/README.md", "waiting/parrot-kiwi.md"]
