"""Responses chaining (``ClientConfig(previous_response_id=True)``) over real HTTP.

Against ``FakeServer``: what each request carries (``previous_response_id``, only the new
items, ``store``), the fall-backs to the full history, the one retry when the server lost the
previous response. Against ``bench/fake_responses_server.py`` (a subprocess that really
stores responses): a whole ``run_agent`` chain, on and off.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from minipi.ai import (
    ClientConfig,
    Endpoint,
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    ModelClient,
    ModelRequest,
    ModelResponse,
    ToolSpec,
    connect,
    parse_function_calls,
)
from minipi.errors import ConfigError, ModelHTTPError
from support.fake import Call, FakeServer, RawReply, Turn

TOOLS = [ToolSpec("read_file", "read", {"type": "object", "properties": {}})]
CHAINED = ClientConfig(previous_response_id=True, backoff_base=0.01, read_timeout=10.0)
BENCH_SERVER = Path(__file__).resolve().parents[1] / "bench" / "fake_responses_server.py"


@pytest.fixture
def chained(fake_server: FakeServer) -> Iterator[ModelClient]:
    """A Responses client of ``fake_server`` with chaining on."""
    endpoint = Endpoint(fake_server.base_url, "fake-model", wire="responses")
    with closing(connect(endpoint, CHAINED)) as client:
        yield client


def ask(client: ModelClient, history: list[Item]) -> ModelResponse:
    return client.create(ModelRequest(history, "be careful", TOOLS))


def answer_calls(history: list[Item], response: ModelResponse) -> list[FunctionCallOutput]:
    """What the loop does: replay the output, then one result per call; the results."""
    results = [
        FunctionCallOutput(c.call_id, f"result of {c.call_id}")
        for c in parse_function_calls(response.items)
    ]
    history.extend(response.items)
    history.extend(results)
    return results


def body(server: FakeServer, index: int) -> dict[str, Any]:
    data = server.requests[index].body
    assert data is not None
    return data


def result_json(result: FunctionCallOutput) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": result.call_id, "output": result.output}


def first_turn(server: FakeServer, client: ModelClient) -> tuple[list[Item], ModelResponse]:
    """A question answered with one call, and the history the loop then holds."""
    server.add(Turn(calls=[Call("read_file", {"path": "a.txt"})]))
    history: list[Item] = [Message("user", "q")]
    response = ask(client, history)
    answer_calls(history, response)
    return history, response


def test_second_request_sends_only_the_new_items(
    fake_server: FakeServer, chained: ModelClient
) -> None:
    history, first = first_turn(fake_server, chained)
    fake_server.add(Turn(calls=[Call("read_file", {"path": "b.txt"})]), Turn("done"))
    second = ask(chained, history)
    results = answer_calls(history, second)
    history.append(Message("user", "and now?"))
    ask(chained, history)
    sent = [body(fake_server, i) for i in range(3)]
    assert "previous_response_id" not in sent[0]
    assert [s["store"] for s in sent] == [True, True, True]
    assert len(sent[0]["input"]) == 1
    assert sent[1]["previous_response_id"] == first.id == "resp_1"
    assert isinstance(history[2], FunctionCallOutput)
    assert sent[1]["input"] == [result_json(history[2])]
    assert sent[2]["previous_response_id"] == second.id
    assert sent[2]["input"] == [
        result_json(results[0]),
        {"role": "user", "content": [{"type": "input_text", "text": "and now?"}]},
    ]
    for data in sent:  # never carried over by the server: sent every time
        assert data["instructions"] == "be careful"
        assert [t["name"] for t in data["tools"]] == ["read_file"]
    assert second.request_bytes == len(fake_server.requests[1].raw)


def test_off_by_default_sends_the_whole_history(fake_server: FakeServer) -> None:
    endpoint = Endpoint(fake_server.base_url, "fake-model", wire="responses")
    with closing(connect(endpoint)) as client:
        history, _ = first_turn(fake_server, client)
        fake_server.add(Turn("done"))
        ask(client, history)
    sent = body(fake_server, 1)
    assert "previous_response_id" not in sent
    assert sent["store"] is False
    assert len(sent["input"]) == 3  # question, call, result


def edit_question(history: list[Item]) -> list[Item]:
    return [Message("user", "another question"), *history[1:]]


def drop_output(history: list[Item]) -> list[Item]:
    return [history[0], *history[2:], Message("user", "more")]


def new_conversation(history: list[Item]) -> list[Item]:
    return [Message("user", "hello")]


def shortened(history: list[Item]) -> list[Item]:
    return history[:1]


@pytest.mark.parametrize("edit", [edit_question, drop_output, new_conversation, shortened])
def test_an_edited_history_falls_back_to_the_full_history(
    fake_server: FakeServer, chained: ModelClient, edit: Callable[[list[Item]], list[Item]]
) -> None:
    history, _ = first_turn(fake_server, chained)
    edited = edit(history)
    fake_server.add(Turn("done"), Turn("again"))
    response = ask(chained, edited)
    sent = body(fake_server, 1)
    assert "previous_response_id" not in sent
    assert sent["store"] is True
    assert len(sent["input"]) == len(edited)
    edited.extend([*response.items, Message("user", "more")])
    ask(chained, edited)  # and the full request starts a new chain
    assert body(fake_server, 2)["previous_response_id"] == response.id
    assert len(body(fake_server, 2)["input"]) == 1


def test_equal_but_not_identical_items_still_chain(
    fake_server: FakeServer, chained: ModelClient
) -> None:
    history, first = first_turn(fake_server, chained)
    copied: list[Item] = [Message("user", "q"), *history[1:]]  # a new, equal question
    fake_server.add(Turn("done"))
    ask(chained, copied)
    assert body(fake_server, 1)["previous_response_id"] == first.id


@pytest.mark.parametrize(
    "reply",
    [
        RawReply.json({"id": None, "status": "completed", "output": []}),  # no id
        RawReply.json(  # <tool_call> text: minipi rewrites the output, the server has the text
            {
                "id": "resp_text",
                "status": "completed",
                "output": [
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [
                            {
                                "type": "output_text",
                                "text": '<tool_call>{"name": "read_file", "arguments": {}}'
                                "</tool_call>",
                            }
                        ],
                    }
                ],
            }
        ),
        Turn(calls=[Call("read_file", {}, call_id=None)]),  # a call id made up by minipi
    ],
    ids=["no-id", "text-calls", "made-up-call-id"],
)
def test_no_chain_from_a_response_the_server_does_not_hold_as_we_do(
    fake_server: FakeServer, chained: ModelClient, reply: Turn | RawReply
) -> None:
    fake_server.add(reply, Turn("done"))
    history: list[Item] = [Message("user", "q")]
    response = ask(chained, history)
    answer_calls(history, response)
    history.append(Message("user", "go on"))
    ask(chained, history)
    sent = body(fake_server, 1)
    assert "previous_response_id" not in sent
    assert len(sent["input"]) == len(history)


def lost_chain(status: int, message: str) -> Callable[[dict[str, Any]], RawReply]:
    def reply(request: dict[str, Any]) -> RawReply:
        assert "previous_response_id" in request
        error = {"message": message, "type": "invalid_request_error", "code": "x"}
        return RawReply.json({"error": error}, status)

    return reply


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "Previous response with id 'resp_1' not found."),
        (400, "previous_response_id: unknown id"),
        (404, "Response with id 'resp_1' not found."),
    ],
)
def test_an_unknown_previous_response_is_retried_once_in_full(
    fake_server: FakeServer, chained: ModelClient, status: int, message: str
) -> None:
    history, _ = first_turn(fake_server, chained)
    fake_server.add(lost_chain(status, message), Turn(calls=[Call("read_file", {})]))
    response = ask(chained, history)
    assert parse_function_calls(response.items)
    assert body(fake_server, 1)["previous_response_id"] == "resp_1"
    retried = body(fake_server, 2)
    assert "previous_response_id" not in retried
    assert len(retried["input"]) == 3
    assert response.request_bytes == len(fake_server.requests[2].raw)
    answer_calls(history, response)
    fake_server.add(Turn("done"))
    ask(chained, history)  # chains from the retried response
    assert body(fake_server, 3)["previous_response_id"] == response.id
    assert len(fake_server.requests) == 4


def test_a_second_lost_chain_error_is_not_retried_again(
    fake_server: FakeServer, chained: ModelClient
) -> None:
    history, _ = first_turn(fake_server, chained)
    gone = RawReply.json({"error": {"message": "Previous response with id 'x' not found."}}, 400)
    fake_server.add(lost_chain(400, "Previous response with id 'resp_1' not found."), gone)
    with pytest.raises(ModelHTTPError, match="Previous response"):
        ask(chained, history)
    assert len(fake_server.requests) == 3


def test_other_client_errors_are_not_retried(fake_server: FakeServer, chained: ModelClient) -> None:
    history, _ = first_turn(fake_server, chained)
    fake_server.add(RawReply.json({"error": {"message": "context length exceeded"}}, 400))
    with pytest.raises(ModelHTTPError, match="context length"):
        ask(chained, history)
    assert len(fake_server.requests) == 2


def test_previous_response_id_is_a_reserved_option(
    fake_server: FakeServer, chained: ModelClient
) -> None:
    for key in ("previous_response_id", "store"):
        request = ModelRequest([Message("user", "q")], options={key: "x"})
        with pytest.raises(ConfigError, match=f"may not set {key}"):
            chained.create(request)
    assert fake_server.requests == []


def test_each_thread_chains_its_own_conversation(
    fake_server: FakeServer, chained: ModelClient
) -> None:
    fake_server.add(*(Turn(calls=[Call("read_file", {})]) for _ in range(2)))
    fake_server.add(*(Turn("done") for _ in range(2)))
    firsts: dict[str, str | None] = {}  # call id -> id of the response that made the call
    both_answered = threading.Barrier(2, timeout=10)

    def converse(question: str) -> None:
        history: list[Item] = [Message("user", question)]
        response = ask(chained, history)
        call: FunctionCall = parse_function_calls(response.items)[0]
        firsts[call.call_id] = response.id
        answer_calls(history, response)
        both_answered.wait()  # the other thread's request came last: chain from ours anyway
        ask(chained, history)

    threads = [threading.Thread(target=converse, args=(q,)) for q in ("q1", "q2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    later = [body(fake_server, i) for i in (2, 3)]
    chained_from = {b["input"][0]["call_id"]: b["previous_response_id"] for b in later}
    assert chained_from == firsts
    assert len(set(firsts.values())) == 2


# --- a whole run against the bench server, which really stores responses -------------------


@pytest.fixture(scope="module")
def bench_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``bench/fake_responses_server.py`` on a free port: its root URL."""
    port_file = tmp_path_factory.mktemp("server") / "port"
    command = [sys.executable, str(BENCH_SERVER), "--port", "0", "--port-file", str(port_file)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while not port_file.exists():
            assert process.poll() is None, "the bench server exited"
            assert time.monotonic() < deadline, "the bench server did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{int(port_file.read_text())}"
    finally:
        process.terminate()
        process.wait(10)


def call(root: str, path: str, method: str = "GET") -> dict[str, Any]:
    request = urllib.request.Request(
        root + path, method=method, data=b"" if method == "POST" else None
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        data: dict[str, Any] = json.loads(response.read())
        return data


def run_chain(root: str, workdir: Path, n: int, on: bool) -> dict[str, Any]:
    from minipi import AgentConfig, ProjectFiles, run_agent
    from minipi.files import make_read_file_tool

    call(root, "/reset", "POST")
    config = AgentConfig(instructions="careful", max_turns=n + 5)
    endpoint = Endpoint(root + "/v1", "fake-model", wire="responses")
    question = f"Follow the tool-call chain [[chain:{n}]] and then answer."
    with (
        closing(connect(endpoint, ClientConfig(previous_response_id=on))) as client,
        ProjectFiles(workdir) as files,
    ):
        result = run_agent(client, [make_read_file_tool(files)], config, question)
    assert (result.status, result.answer) == ("succeeded", "done")
    return call(root, "/stats")


def test_a_run_against_a_storing_server_chains_every_turn(
    bench_server: str, tmp_path: Path
) -> None:
    n = 6
    for i in range(1, n + 1):
        (tmp_path / f"step{i}.txt").write_text(f"STEPTOKEN-{i}- contents of step {i}\n")
    off = run_chain(bench_server, tmp_path, n, on=False)
    on = run_chain(bench_server, tmp_path, n, on=True)
    for stats in (off, on):
        assert (stats["requests"], stats["max_k_tok"], stats["lost"]) == (n + 1, n, 0)
    assert (off["chained"], on["chained"]) == (0, n)
    assert on["max_bytes"] < on["first_bytes"] + 100 < off["last_bytes"]  # no growth
    assert on["total_bytes"] < off["total_bytes"]


def test_the_bench_server_refuses_an_unknown_previous_response(bench_server: str) -> None:
    data = json.dumps({"model": "fake-model", "input": [], "previous_response_id": "resp_x"})
    request = urllib.request.Request(bench_server + "/v1/responses", data=data.encode())
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    error = json.loads(caught.value.read())["error"]
    caught.value.close()
    assert caught.value.code == 400
    assert error["code"] == "previous_response_not_found"
