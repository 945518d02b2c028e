"""``minipi ask`` end to end: the real command, over real HTTP, on real files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.cli import EXAMPLES, QUESTION, copy_example, json_lines, minipi, tool_outputs
from support.fake import Call, FakeServer, Turn


def _read_listed_report(body: dict[str, Any]) -> Turn:
    """Turn 2 of a model that reads the path the directory listing returned (not a guess)."""
    listing = tool_outputs(body)[-1]
    path = next(line for line in listing.splitlines() if line.endswith(".json"))
    return Turn(calls=[Call("read_file", {"path": path})])


def _answer_from_report(body: dict[str, Any]) -> Turn:
    report = json.loads(tool_outputs(body)[-1])
    return Turn(
        text=f"这份日报的日期是{report['date']}，订单数为{report['orders']}，"
        f"营收为{report['revenue_yuan']}元。"
    )


def daily_report_script(server: FakeServer) -> None:
    server.add(
        Turn(calls=[Call("list_files", {"path": "reports"})]),
        _read_listed_report,
        _answer_from_report,
    )


def ask(
    server: FakeServer,
    *extra: str,
    project: Path = EXAMPLES / "sample_project",
    question: str = QUESTION,
    stdin: str = "",
) -> Any:
    return minipi(
        "ask",
        question,
        "--project",
        str(project),
        "--base-url",
        server.base_url,
        "--model",
        "fake-model",
        *extra,
        stdin=stdin,
    )


@pytest.mark.parametrize("wire", ["chat", "responses"])
def test_daily_report_three_requests_seed_log(fake_server: FakeServer, wire: str) -> None:
    daily_report_script(fake_server)
    proc = ask(fake_server, "--wire", wire)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "这份日报的日期是2026-09-06，订单数为128，营收为9600元。"
    log = proc.stderr
    assert '[第 1 轮调用] list_files {"path": "reports"}' in log
    assert '[第 2 轮调用] read_file {"path": "reports/daily-2026-09-06.json"}' in log
    assert log.count("call_id=") == 2
    assert log.count("[工具成功]") == 2
    assert "[第 3 轮模型文本]" in log
    requests = [r for r in fake_server.requests if r.path.endswith(("/responses", "/completions"))]
    assert len(requests) == 3
    # the directory result reaches request 2; both results reach request 3
    assert tool_outputs(requests[1].body) == ["reports/daily-2026-09-06.json"]
    second = tool_outputs(requests[2].body)
    assert second[0] == "reports/daily-2026-09-06.json"
    assert '"revenue_yuan": 9600' in second[1]


def test_english_question_gets_english_headings(fake_server: FakeServer) -> None:
    daily_report_script(fake_server)
    proc = ask(fake_server, question="What do the daily reports say?")
    assert proc.returncode == 0, proc.stderr
    assert "[turn 1 call] list_files" in proc.stderr
    assert "[tool ok]" in proc.stderr


def test_json_lines_events_and_run_end(fake_server: FakeServer) -> None:
    daily_report_script(fake_server)
    proc = ask(fake_server, "--json")
    assert proc.returncode == 0, proc.stderr
    events = json_lines(proc.stdout)
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "run_end"
    calls = [e for e in events if e["type"] == "tool_call"]
    results = [e for e in events if e["type"] == "tool_result"]
    assert [c["name"] for c in calls] == ["list_files", "read_file"]
    assert [r["call_id"] for r in results] == [c["call_id"] for c in calls]
    assert all(r["is_error"] is False and r["code"] is None for r in results)
    assert [c["turn"] for c in calls] == [1, 2]
    end = events[-1]
    assert end["status"] == "succeeded"
    assert end["turns"] == 3
    assert end["tool_calls"] == 2
    assert "9600" in end["answer"]
    texts = [e for e in events if e["type"] == "assistant_text"]
    assert texts[-1]["turn"] == 3


def test_trace_records_every_request_and_result(fake_server: FakeServer, tmp_path: Path) -> None:
    daily_report_script(fake_server)
    trace = tmp_path / "evidence.json"
    proc = ask(fake_server, "--trace", str(trace), "--api-key", "sk-secret-value")
    assert proc.returncode == 0, proc.stderr
    text = trace.read_text(encoding="utf-8")
    assert "sk-secret-value" not in text
    record = json.loads(text)
    events = record["events"]
    # the shapes --json writes, without the streamed pieces
    json_events = json_lines(ask(fake_server_again(fake_server), "--json").stdout)
    assert [e["type"] for e in events] == [e["type"] for e in json_events if e["type"] != "delta"]
    assert [e["turn"] for e in events if e["type"] == "turn_start"] == [1, 2, 3]
    responses = [e for e in events if e["type"] == "model_response"]
    assert all("seconds" in r and r["response"]["choices"] for r in responses)
    items = [i for e in events if e["type"] == "items" for i in e["items"]]
    assert [i["type"] for i in items[:2]] == ["function_call", "function_call_output"]
    assert items[1]["output"] == "reports/daily-2026-09-06.json"
    calls = [e["name"] for e in events if e["type"] == "tool_call"]
    assert calls == ["list_files", "read_file"]
    assert record["result"] == events[-1]
    assert record["result"]["status"] == "succeeded"
    names = ["list_files", "read_file", "search_files", "move_file"]
    assert [
        t["function"]["name"] for t in record["tools"]
    ] == names  # as the chat wire declares them


def fake_server_again(server: FakeServer) -> FakeServer:
    """``server`` with the daily-report script queued once more."""
    daily_report_script(server)
    return server


def test_max_turns_two_runs_both_tools_then_exhausts(fake_server: FakeServer) -> None:
    daily_report_script(fake_server)
    proc = ask(fake_server, "--max-turns", "2")
    assert proc.returncode == 3
    assert proc.stdout == ""  # half-done work is never shown as an answer
    assert proc.stderr.count("[工具成功]") == 2
    assert "max_turns" in proc.stderr
    assert "（可用 --max-turns 调高）" in proc.stderr  # the flag that raises it
    assert fake_server.remaining == 1


def test_require_tool_forces_tool_choice(fake_server: FakeServer) -> None:
    daily_report_script(fake_server)
    proc = ask(fake_server, "--require-tool", "list_files")
    assert proc.returncode == 0, proc.stderr
    bodies = [r.body or {} for r in fake_server.requests]
    assert bodies[0]["tool_choice"] == {"type": "function", "function": {"name": "list_files"}}
    assert bodies[1]["tool_choice"] == "auto"


def test_unknown_required_tool_is_a_usage_error(fake_server: FakeServer) -> None:
    proc = ask(fake_server, "--require-tool", "delete_everything")
    assert proc.returncode == 2
    assert "delete_everything" in proc.stderr
    assert fake_server.requests == []


def test_tool_error_is_fed_back_and_run_continues(fake_server: FakeServer) -> None:
    fake_server.add(
        Turn(calls=[Call("read_file", {"path": "../outside/secret.txt"})]),
        Turn(calls=[Call("read_fle", {"path": "reports"})]),
        Turn(text="我无法读取那个文件。"),
    )
    proc = ask(fake_server, "--json")
    assert proc.returncode == 0, proc.stderr
    results = [e for e in json_lines(proc.stdout) if e["type"] == "tool_result"]
    assert [r["code"] for r in results] == ["parent_ref", "unknown_tool"]
    assert "read_file" in results[1]["content"]  # the valid names are listed
    last = fake_server.requests[-1].body
    assert len(tool_outputs(last)) == 2


def test_bad_model_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "fake.gguf").write_bytes(b"not a model")
    proc = minipi(
        "ask", "hi", "--project", str(tmp_path), "--model-file", str(tmp_path / "fake.gguf")
    )
    assert proc.returncode == 2
    assert "fake.gguf" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_project_is_a_usage_error(fake_server: FakeServer, tmp_path: Path) -> None:
    proc = ask(fake_server, project=tmp_path / "nope")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert fake_server.requests == []


def test_server_down_fails_with_a_hint(tmp_path: Path) -> None:
    proc = minipi(
        "ask",
        "hi",
        "--project",
        str(tmp_path),
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
    )
    assert proc.returncode == 1
    assert "is the server running" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_model_is_actionable(fake_server: FakeServer, tmp_path: Path) -> None:
    proc = minipi(
        "ask",
        "hi",
        "--project",
        str(tmp_path),
        "--model",
        "qwen3-9b",
        "--base-url",
        fake_server.base_url,
    )
    assert proc.returncode == 1
    assert "qwen3-9b" in proc.stderr
    assert "not found" in proc.stderr


def test_env_settings_are_used_and_flags_win(fake_server: FakeServer) -> None:
    from support.cli import clean_env

    fake_server.add(Turn(text="ok"))
    env = clean_env(
        QWEN_BASE_URL=fake_server.base_url,
        QWEN_MODEL="fake-model",
        OPENAI_MODEL="other-model",
        QWEN_MAX_OUTPUT_TOKENS="256",
    )
    proc = minipi("ask", "hi", "--project", str(EXAMPLES / "sample_project"), env=env)
    assert proc.returncode == 0, proc.stderr
    body = fake_server.requests[0].body or {}
    assert body["model"] == "fake-model"
    assert body["max_tokens"] == 256


def test_treasure_hunt_follows_the_chain(fake_server: FakeServer) -> None:
    def next_step(body: dict[str, Any]) -> Turn:
        clue = tool_outputs(body)[-1]
        for name in ("step2.txt", "step3.txt"):
            if name in clue:
                return Turn(calls=[Call("read_file", {"path": name})])
        first, second = (o.split("'")[1] for o in tool_outputs(body)[1:3])
        return Turn(text=f"最终的完整密码是 {first}{second}。")

    fake_server.add(
        Turn(calls=[Call("read_file", {"path": "step1.txt"})]), next_step, next_step, next_step
    )
    proc = ask(
        fake_server,
        project=EXAMPLES / "treasure_hunt",
        question="请帮我读取 step1.txt 文件，并严格按照文件中的线索一步步寻找，"
        "直到拼凑出最终的完整密码告诉我。",
    )
    assert proc.returncode == 0, proc.stderr
    assert "AgentLoop" in proc.stdout


def shelter_script(server: FakeServer) -> None:
    server.add(
        Turn(calls=[Call("list_files", {"path": "inbox"})]),
        Turn(
            text="我来领养猫咪小花。",
            calls=[Call("move_file", {"source": "inbox/猫咪小花.txt", "target": "archive/"})],
        ),
        Turn(calls=[Call("list_files", {"path": "inbox"})]),
        Turn(text="已完成领养：猫咪小花已移到 archive/。"),
    )


def test_shelter_adoption_with_approval(fake_server: FakeServer, tmp_path: Path) -> None:
    project = copy_example("shelter", tmp_path)
    shelter_script(fake_server)
    proc = ask(fake_server, "--approve", "all", project=project, question="请领养猫咪小花。")
    assert proc.returncode == 0, proc.stderr
    assert (project / "archive" / "猫咪小花.txt").exists()
    assert not (project / "inbox" / "猫咪小花.txt").exists()
    assert "inbox/猫咪小花.txt" in proc.stderr
    assert "archive/猫咪小花.txt" in proc.stderr
    # the second listing ran again (the move changed the directory) and no longer shows the cat
    final = tool_outputs(fake_server.requests[-1].body)
    assert "猫咪小花" not in final[-1]
    assert "狗狗旺财" in final[-1]


def test_shelter_denied_loses_nothing(fake_server: FakeServer, tmp_path: Path) -> None:
    project = copy_example("shelter", tmp_path)
    shelter_script(fake_server)
    # stdin is a pipe here: "ask" must treat it as a denial
    proc = ask(
        fake_server,
        "--approve",
        "ask",
        "--json",
        project=project,
        stdin="y\n",
        question="请领养猫咪小花。",
    )
    assert proc.returncode == 1  # the change the task needed did not happen: not a success
    assert proc.stdout.splitlines()[-1].startswith('{"type": "run_end", "status": "failed"')
    assert (project / "inbox" / "猫咪小花.txt").exists()
    assert not (project / "archive" / "猫咪小花.txt").exists()
    moves = [
        e
        for e in json_lines(proc.stdout)
        if e["type"] == "tool_result" and e["name"] == "move_file"
    ]
    assert moves[0]["code"] == "user_denied"
    assert "source" in proc.stderr  # asked (the plan shown), and the pipe said no
    assert "archive/猫咪小花.txt" in proc.stderr


def test_shelter_in_a_read_only_run_changes_nothing_and_says_so(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    project = copy_example("shelter", tmp_path)
    shelter_script(fake_server)
    proc = ask(fake_server, project=project, question="请领养猫咪小花。")  # no --approve
    assert (project / "inbox" / "猫咪小花.txt").exists()
    assert not (project / "archive" / "猫咪小花.txt").exists()
    first = fake_server.requests[0].body or {}
    assert "move_file" not in [t["function"]["name"] for t in first["tools"]]  # not offered
    assert "[工具失败] read_only" in proc.stderr  # the call the model made anyway: refused
    assert "[需要确认]" not in proc.stderr  # nobody was asked
    # the answer claims the adoption that never happened: not a success (issue 21)
    assert proc.returncode == 1
    summary = next(line for line in proc.stderr.splitlines() if line.startswith("[失败"))
    assert "未做改动：本次运行只读（加 --approve ask 才能改动）" in summary
    assert "1 处改动" not in summary
    assert "\nchange_not_made：答案说做了改动，但没有任何工具做过" in proc.stderr


@pytest.mark.parametrize(("approve", "offered"), [("all", True), ("deny", False)])
def test_guided_flag_constrains_replies_and_leaves_out_unapprovable_moves(
    fake_server: FakeServer, tmp_path: Path, approve: str, offered: bool
) -> None:
    project = copy_example("shelter", tmp_path)
    schemas: list[str] = []

    def guided(reply: str) -> Any:
        def answer(body: dict[str, Any]) -> Turn:
            assert "tools" not in body  # the grammar replaces native tool calling
            assert "grammar" not in body  # not our engine: a JSON Schema, the plain answer
            schemas.append(json.dumps(body["response_format"]["schema"], ensure_ascii=False))
            return Turn(text=reply)

        return answer

    fake_server.add(  # the run opens with list_files "." (tests/test_agent_opening.py)
        guided('{"tool": "list_files", "arguments": {"path": "inbox"}}'),
        guided('{"answer": "收容所里有 inbox 和 archive。"}'),
    )
    proc = ask(fake_server, "--guided", "--approve", approve, project=project, question="看看")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "收容所里有 inbox 和 archive。"
    assert '"inbox"' in schemas[0]  # a directory the opening listing showed
    assert '"answer"' not in schemas[0]  # no answer before evidence
    assert '"move_file"' not in schemas[0]  # no file is known yet
    assert ('"move_file"' in schemas[1]) is offered  # files are known now; approvable?


def _move_project(tmp_path: Path) -> Path:
    project = tmp_path / "p"
    (project / "inbox").mkdir(parents=True)
    (project / "notes.txt").write_text("notes\n", encoding="utf-8")
    (project / "inbox" / "dog.txt").write_text("a dog\n", encoding="utf-8")
    return project


def test_a_claimed_move_that_failed_fails_the_run(fake_server: FakeServer, tmp_path: Path) -> None:
    """G8: the model's "all moved" is not success; what ran decides, and the log says so."""
    project = _move_project(tmp_path)
    fake_server.add(
        Turn(calls=[Call("move_file", {"source": "notes.txt", "target": "inbox/dog.txt"})]),
        Turn("All files moved successfully."),
    )
    proc = ask(fake_server, "--approve", "all", project=project, question="Tidy up.")
    assert proc.returncode == 1
    assert proc.stdout == ""  # the claim is not printed as the answer
    assert "change_failed: a change the model asked for did not happen" in proc.stderr
    assert "destination_exists" in proc.stderr
    assert (project / "notes.txt").exists()


def test_a_move_that_failed_then_succeeded_is_a_success(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    project = _move_project(tmp_path)
    fake_server.add(
        Turn(calls=[Call("move_file", {"source": "note.txt", "target": "inbox"})]),
        Turn(calls=[Call("move_file", {"source": "notes.txt", "target": "inbox"})]),
        Turn("Moved notes.txt into inbox/."),
    )
    proc = ask(fake_server, "--approve", "all", project=project, question="Tidy up.")
    assert proc.returncode == 0, proc.stderr
    # backed: the move it claims is the one the tool made, the paths it names were shown
    assert "[succeeded] 3 model requests, 2 tool calls" in proc.stderr
    assert "1 change made" in proc.stderr
    assert (project / "inbox" / "notes.txt").exists()
