"""Sessions through the real command over real HTTP: --session, --continue, ask appending to
a session, sessions list/show/delete, one process per session, Ctrl-C, and the store's
faults (H2, H3, H6, H10)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from minipi.cli.settings import data_dir
from support.cli import clean_env, copy_example, minipi, tool_outputs
from support.fake import Call, FakeServer, RawReply, Turn

pytestmark = pytest.mark.reliability


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_example("shelter", tmp_path)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def env(data: Path) -> dict[str, str]:
    return clean_env(MINIPI_DATA_DIR=str(data))


def endpoint(server: FakeServer, project: Path) -> tuple[str, ...]:
    return ("--project", str(project), "--base-url", server.base_url, "--model", "fake-model")


def run(
    server: FakeServer, data: Path, project: Path, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return minipi(*args, *endpoint(server, project), stdin=stdin, env=env(data))


def sessions(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return minipi("sessions", *args, env=env(data))


def shown(data: Path, name: str) -> Any:
    proc = sessions(data, "show", name, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def saved_items(run_record: Any) -> list[dict[str, Any]]:
    """The history items a run of ``sessions show --json`` saved, in order."""
    return [i for e in run_record["events"] if e["type"] == "items" for i in e["items"]]


def end_of(run_record: Any) -> Any:
    """The ``run_end`` event that closes a run of ``sessions show --json``."""
    end = run_record["events"][-1]
    assert end["type"] == "run_end"
    assert end["status"] == run_record["status"]
    return end


def start(server: FakeServer, data: Path, project: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "minipi", *args, *endpoint(server, project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(data),
    )


def wait_for(condition: Any, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
@pytest.mark.parametrize("wire", ["chat", "responses"])
def test_ask_appends_to_a_session_and_the_model_sees_it(
    fake_server: FakeServer, data: Path, project: Path, wire: str, stream: str
) -> None:
    fake_server.add(
        Turn(calls=[Call("list_files", {"path": "inbox"}, call_id="c1")], reasoning="look"),
        Turn("three animals are waiting"),
        Turn("the cat is 猫咪小花"),
    )
    first = run(
        fake_server,
        data,
        project,
        "ask",
        "who is waiting?",
        "--session",
        "s",
        "--wire",
        wire,
        stream,
    )
    assert first.returncode == 0, first.stderr
    second = run(
        fake_server, data, project, "ask", "and the cat?", "--session", "s", "--wire", wire, stream
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "the cat is 猫咪小花"
    body = fake_server.requests[-1].body
    assert body is not None
    text = json.dumps(body, ensure_ascii=False)
    order = ["who is waiting?", '"c1"', "inbox/猫咪小花.txt", "three animals", "and the cat?"]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    assert len(tool_outputs(body)) == 1
    assert fake_server.requests[0].body is not None
    sent_first = (
        fake_server.requests[0].body.get("messages") or fake_server.requests[0].body["input"]
    )
    sent_last = body.get("messages") or body["input"]
    assert sent_last[: len(sent_first)] == sent_first  # replayed verbatim from the store
    assert all(
        r.body.get("stream", False) is (stream == "--stream")
        for r in fake_server.requests
        if r.body
    )


def test_chat_session_resumes_and_continue_takes_the_latest(
    fake_server: FakeServer, data: Path, project: Path, tmp_path: Path
) -> None:
    fake_server.add(Turn("one"), Turn("two"), Turn("three"))
    assert (
        run(fake_server, data, project, "chat", "--session", "a", stdin="first\n").returncode == 0
    )
    assert (
        run(fake_server, data, project, "chat", "--session", "b", stdin="second\n").returncode == 0
    )
    resumed = run(fake_server, data, project, "chat", "--continue", stdin="third\nexit\n")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "three"
    text = json.dumps(fake_server.requests[-1].body, ensure_ascii=False)
    assert "second" in text
    assert "first" not in text
    assert [s["name"] for s in json.loads(sessions(data, "list", "--json").stdout)] == ["b", "a"]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    none = run(fake_server, data, elsewhere, "ask", "hi", "--continue")
    assert none.returncode == 1
    assert "no saved session for the project" in none.stderr
    both = run(fake_server, data, project, "ask", "hi", "--continue", "--session", "a")
    assert both.returncode == 2
    other = run(fake_server, data, elsewhere, "ask", "hi", "--session", "a")
    assert other.returncode == 2
    assert f"belongs to the project {project}" in other.stderr
    assert len(fake_server.requests) == 3


def test_sessions_list_show_delete(fake_server: FakeServer, data: Path, project: Path) -> None:
    assert sessions(data, "list").returncode == 0
    assert not data.exists()  # listing creates nothing
    fake_server.add(
        Turn(calls=[Call("read_file", {"path": "inbox/猫咪小花.txt"}, call_id="c1")]),
        Turn(calls=[Call("read_file", {"path": "nope.txt"}, call_id="c2")]),
        Turn("小花 is a cat\x1b[31m"),
    )
    proc = run(fake_server, data, project, "ask", "who is \x1b]0;x\x07小花?", "--session", "s")
    assert proc.returncode == 4, proc.stderr  # unbacked: "31m" of the escape is in no read

    listing = sessions(data, "list")
    assert listing.returncode == 0
    line = listing.stdout.splitlines()[1]
    row = line.split()
    assert (row[0], row[1], row[2]) == ("s", str(project), "1")
    assert line.endswith("  succeeded · unbacked (unsupported)")  # never a plain success

    show = sessions(data, "show", "s")
    assert show.returncode == 0, show.stderr
    out = show.stdout
    assert "\x1b" not in out
    assert "\x07" not in out
    # the question is Chinese (its live log was): so is every label of its run
    assert "问题  who is \\u001b]0;x\\u0007小花?" in out
    assert '调用 read_file {"path":"inbox/猫咪小花.txt"}  (c1)' in out
    assert re.search(r"^    成功  .*  \d[\d.e-]* s$", out, re.MULTILINE)  # with its seconds
    assert "    error [not_found]" in out
    assert "答案  小花 is a cat\\u001b[31m" in out
    for turn, request in enumerate(fake_server.requests, start=1):
        assert request.body is not None
        assert f"第 {turn} 次请求  tokens 输入 " in out
    assert "成功 · 无依据" in out
    assert "合计  3 次模型请求，2 次工具调用" in out

    record = shown(data, "s")
    (run_record,) = record["runs"]
    assert run_record["status"] == "succeeded"
    end = end_of(run_record)
    responses = [e for e in run_record["events"] if e["type"] == "model_response"]
    assert [r["turn"] for r in responses] == [1, 2, 3]
    usages = [r["usage"] for r in responses]
    assert sum(u["input_tokens"] for u in usages) == end["usage"]["input_tokens"]
    assert all(u["input_tokens"] > 0 and u["output_tokens"] > 0 for u in usages)
    assert all("cached_tokens" in u for u in usages)
    assert all(r["seconds"] >= 0 for r in responses)

    deleted = sessions(data, "delete", "s")
    assert deleted.returncode == 0, deleted.stderr
    assert json.loads(sessions(data, "list", "--json").stdout) == []
    missing = sessions(data, "show", "s")
    assert missing.returncode == 1
    assert "no session named 's'" in missing.stderr


SAVED_AS_WRITTEN = {"items", "tool_executing", "tool_result", "model_response", "notice", "run_end"}


def test_show_json_gives_each_step_as_ask_json_wrote_it(
    fake_server: FakeServer, data: Path, project: Path
) -> None:
    move = Call("move_file", {"source": "inbox/猫咪小花.txt", "target": "archive"}, call_id="m")
    fake_server.add(
        Turn(calls=[Call("list_files", {"path": "inbox"}, call_id="c1"), move], reasoning="go"),
        Turn("adopted"),
    )
    proc = run(
        fake_server,
        data,
        project,
        "ask",
        "adopt the cat",
        "--session",
        "s",
        "--json",
        "--approve",
        "all",
    )
    assert proc.returncode == 0, proc.stderr
    written = [json.loads(line) for line in proc.stdout.splitlines()]
    (run_record,) = shown(data, "s")["runs"]
    saved = run_record["events"]
    question = {"type": "message", "role": "user", "text": "adopt the cat"}
    assert saved[0] == {"type": "items", "turn": 0, "items": [question]}
    approvals = [e for e in saved if e["type"].startswith("approval_")]
    assert approvals == [
        {
            "type": "approval_asked",
            "turn": 1,
            "call_id": "m",
            "tool": "move_file",
            "summary": "move inbox/猫咪小花.txt -> archive/猫咪小花.txt",
            "details": {"source": "inbox/猫咪小花.txt", "destination": "archive/猫咪小花.txt"},
        },
        {"type": "approval_answered", "turn": 1, "call_id": "m", "allowed": True},
    ]
    steps = [e for e in saved[1:] if e not in approvals]
    assert steps == [e for e in written if e["type"] in SAVED_AS_WRITTEN]
    moving = [e["type"] for e in saved if e.get("call_id") == "m"]
    assert moving == ["tool_executing", "approval_asked", "approval_answered", "tool_result"]
    assert (run_record["question"], run_record["status"]) == ("adopt the cat", "succeeded")
    assert end_of(run_record)["answer"] == "adopted"


def test_a_second_process_on_a_session_fails_fast(
    fake_server: FakeServer, data: Path, project: Path
) -> None:
    fake_server.add(Turn("later"))
    holder = start(fake_server, data, project, "chat", "--session", "s")
    try:
        wait_for(lambda: sessions(data, "list", "--json").stdout.count('"s"') == 1)
        started = time.monotonic()
        second = run(fake_server, data, project, "ask", "hi", "--session", "s")
        assert time.monotonic() - started < 10
        assert second.returncode == 1
        assert f"session 's' is in use by another minipi process (pid {holder.pid})" in (
            second.stderr
        )
        assert "Traceback" not in second.stderr
        refused = sessions(data, "delete", "s")
        assert refused.returncode == 1
        assert "in use" in refused.stderr
        assert fake_server.requests == []
    finally:
        _, err = holder.communicate("", timeout=20)
    assert holder.returncode == 0, err
    after = run(fake_server, data, project, "ask", "hi", "--session", "s")
    assert after.returncode == 0, after.stderr


def test_ctrl_c_in_ask_ends_the_run_cancelled_and_saved(
    fake_server: FakeServer, data: Path, project: Path
) -> None:
    fake_server.add(
        Turn(calls=[Call("list_files", {"path": "inbox"}, call_id="c1")]),
        RawReply(body=b"{}", delay=30),
    )
    proc = start(fake_server, data, project, "ask", "what is there?", "--session", "s")
    wait_for(lambda: len(fake_server.requests) == 2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    (record,) = shown(data, "s")["runs"]
    assert (record["status"], end_of(record)["code"]) == ("cancelled", "cancelled")
    items = saved_items(record)
    calls = [i["call_id"] for i in items if i["type"] == "function_call"]
    results = [i["call_id"] for i in items if i["type"] == "function_call_output"]
    assert calls == results == ["c1"]
    fake_server.add(Turn("fine"))
    again = run(fake_server, data, project, "ask", "go on", "--session", "s")
    assert again.returncode == 0, again.stderr
    assert "left open" not in again.stderr  # closed when cancelled: nothing to repair


@pytest.mark.parametrize(
    ("question", "said"),
    [("现在有什么？", "minipi：已取消"), ("what is there?", "minipi: cancelled")],
)
def test_ctrl_c_before_the_run_began_is_said_in_the_questions_language(
    fake_server: FakeServer, data: Path, project: Path, question: str, said: str
) -> None:
    """Ctrl-C while an MCP server starts (or the engine loads): the one line it prints is in
    the question's language, and nothing was asked of the model."""
    mark = data / "started"
    server = f"{sys.executable} -c \"open('{mark}', 'w'); import time; time.sleep(60)\""
    proc = start(fake_server, data, project, "ask", question, "--mcp", server)
    try:
        wait_for(mark.exists)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)  # it hung for ever inside anyio's portal start
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.rstrip("\n").splitlines()[-1] == said
    assert "Traceback" not in err
    assert fake_server.requests == []


def test_ctrl_c_in_chat_cancels_the_question_not_the_session(
    fake_server: FakeServer, data: Path, project: Path
) -> None:
    fake_server.add(RawReply(body=b"{}", delay=30), Turn("answer two"))
    proc = start(fake_server, data, project, "chat", "--session", "s")
    assert proc.stdin is not None
    proc.stdin.write("question one\n")
    proc.stdin.flush()
    wait_for(lambda: len(fake_server.requests) == 1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate("question two\nexit\n", timeout=20)
    assert proc.returncode == 0, err
    assert out.strip() == "answer two"
    runs = shown(data, "s")["runs"]
    assert [r["status"] for r in runs] == ["cancelled", "succeeded"]
    text = json.dumps(fake_server.requests[-1].body, ensure_ascii=False)
    assert text.index("question one") < text.index("question two")


def test_a_store_inside_the_project_is_refused(fake_server: FakeServer, project: Path) -> None:
    proc = run(fake_server, project / ".minipi", project, "ask", "hi", "--session", "s")
    assert proc.returncode == 2
    assert "inside the project root" in proc.stderr
    assert "MINIPI_DATA_DIR" in proc.stderr
    assert not (project / ".minipi").exists()
    assert fake_server.requests == []


def test_a_store_that_is_not_a_database_is_kept(
    fake_server: FakeServer, data: Path, project: Path
) -> None:
    data.mkdir(mode=0o700)
    garbage = b'{"sessions": [{"name": "s", "items": [\x1b[31m'
    (data / "sessions.db").write_bytes(garbage)
    proc = run(fake_server, data, project, "ask", "hi", "--session", "s")
    assert proc.returncode == 1
    assert "cannot be read" in proc.stderr
    assert "left as is" in proc.stderr
    assert "\x1b" not in proc.stderr
    assert (data / "sessions.db").read_bytes() == garbage
    assert sorted(p.name for p in data.iterdir()) == ["sessions.db"]
    assert sessions(data, "list").returncode == 1
    fake_server.add(Turn("without a session it works"))
    assert run(fake_server, data, project, "ask", "hi").returncode == 0


def test_no_secret_is_saved(fake_server: FakeServer, data: Path, project: Path) -> None:
    fake_server.add(Turn(calls=[Call("list_files", {})]), Turn("ok"))
    secret_url = fake_server.base_url.replace("http://", "http://user:pw-SECRET-1@")
    proc = minipi(
        "ask",
        "hi",
        "--session",
        "s",
        "--project",
        str(project),
        "--base-url",
        secret_url,
        "--model",
        "fake-model",
        env=clean_env(MINIPI_DATA_DIR=str(data), OPENAI_API_KEY="sk-SECRET-2"),
    )
    assert proc.returncode == 0, proc.stderr
    saved = b"".join(p.read_bytes() for p in data.rglob("*") if p.is_file())
    assert b"ok" in saved
    assert b"SECRET" not in saved
    assert b"pw-" not in saved


def test_a_full_disk_stops_the_run_with_a_message_and_it_resumes(
    fake_server: FakeServer, data: Path, project: Path
) -> None:
    """H3 for real: the file size limit (RLIMIT_FSIZE) makes SQLite's writes fail mid-run."""
    fake_server.add(Turn("first"))
    assert run(fake_server, data, project, "ask", "one", "--session", "s").returncode == 0
    paths = ["inbox", "archive", ".", "inbox/", "archive/", "./inbox", "./archive", "./"]
    fake_server.add(*[Turn(calls=[Call("list_files", {"path": p})]) for p in paths])
    limited = (
        "import os, resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, 40_000)); "
        "os.execv(sys.executable, [sys.executable, '-m', 'minipi', *sys.argv[1:]])"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            limited,
            "ask",
            "two",
            "--session",
            "s",
            "--max-turns",
            "8",
            *endpoint(fake_server, project),
        ],
        capture_output=True,
        text=True,
        env=env(data),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "session 's' was not saved" in proc.stderr
    assert "resume with --session s" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert fake_server.remaining > 0  # it stopped before the script ran out

    with FakeServer([Turn("three")]) as fresh:
        resumed = run(fresh, data, project, "ask", "three?", "--session", "s")
    assert resumed.returncode == 0, resumed.stderr
    assert "[session s] an earlier run did not finish: two" in resumed.stderr
    body = fresh.requests[-1].body
    assert body is not None
    messages = body["messages"]
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert calls == answered
    assert [r["status"] for r in shown(data, "s")["runs"]] == [
        "succeeded",
        "cancelled",
        "succeeded",
    ]


def test_where_sessions_live() -> None:
    home = Path.home()
    assert data_dir({"MINIPI_DATA_DIR": "/x/y", "XDG_DATA_HOME": "/d"}) == Path("/x/y")
    assert data_dir({"XDG_DATA_HOME": "/d"}) == Path("/d/minipi")
    assert data_dir({"XDG_DATA_HOME": "relative"}) == home / ".local/share/minipi"
    assert data_dir({}) == home / ".local/share/minipi"


def test_sessions_show_and_list_cannot_be_imitated(
    fake_server: FakeServer, data: Path, tmp_path: Path
) -> None:
    """A question, an answer, a call's name and a project name holding line breaks cannot
    print a line that passes for minipi's own (a fake result, a fake run, a fake row)."""
    project = copy_example("shelter", tmp_path / "two\nlines")
    fake_server.add(
        Turn(calls=[Call("read_file", {"path": "inbox/猫咪小花.txt"}, call_id="c1\n    ok  x")]),
        Turn("小花 is a cat\n    ok  inbox/a.txt -> archive/a.txt\nrun 2  2026  succeeded"),
    )
    question = "who?\nrun 9  2026-01-01 00:00:00  succeeded"
    proc = run(fake_server, data, project, "ask", question, "--session", "s")
    assert proc.returncode == 4, proc.stderr  # unbacked: the forged figures are in no read

    out = sessions(data, "show", "s").stdout
    lines = out.splitlines()
    assert [line for line in lines if line.startswith("run ")] == [lines[5]]
    assert not [line for line in lines if line.startswith("    ok  inbox/a.txt")]
    assert "  question  who?" in lines
    assert "  │ run 9  2026-01-01 00:00:00  succeeded" in lines
    assert "  │     ok  inbox/a.txt -> archive/a.txt" in lines
    assert "(c1\\n    ok  x)" in out

    listing = sessions(data, "list").stdout.splitlines()
    assert len(listing) == 2
    assert "two\\nlines" in listing[1]


def test_python_m_minipi_keeps_its_exit_code_after_a_caught_interrupt(tmp_path: Path) -> None:
    """A Ctrl-C that lands while a dataclass is being made leaves CPython's "unhandled
    KeyboardInterrupt" flag set even though minipi caught it; under ``python -m`` the process
    then died of SIGINT after printing its own "cancelled" (exit -2, not 130). Here the flag is
    left set just before exit, as such a Ctrl-C leaves it: the exit code must still be minipi's."""
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "_exit = sys.exit\n"
        "def exit_after_a_caught_interrupt(code=None):\n"
        "    try:\n"
        "        exec('raise KeyboardInterrupt')\n"
        "    except KeyboardInterrupt:\n"
        "        pass\n"
        "    _exit(code)\n"
        "sys.exit = exit_after_a_caught_interrupt\n"
    )
    proc = minipi("--version", env=clean_env(PYTHONPATH=str(tmp_path)))
    assert proc.returncode == 0, proc.stderr
