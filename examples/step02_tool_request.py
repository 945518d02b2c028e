"""Stage 2: declare list_files and read_file. The model asks for a call; nothing runs yet."""

from __future__ import annotations

from examples.common import connect, options
from minipi.ai.types import Message, ModelRequest, output_text, parse_function_calls
from minipi.files import ProjectFiles, create_project_tools


def main() -> None:
    args = options(__doc__ or "")
    stage = connect(args)
    with ProjectFiles(args.project) as files:
        tools = [t for t in create_project_tools(files) if t.name in ("list_files", "read_file")]
    stage.start_trace(tools)
    config = stage.config
    request = ModelRequest(
        items=[Message("user", args.question)],
        instructions=config.instructions,
        tools=[t.spec() for t in tools],
        parallel_tool_calls=False,
        options=config.request_options,
    )
    try:
        response = stage.ask(1, request)
    finally:
        stage.close()
    calls = parse_function_calls(response.items)
    for call in calls:
        print(f"模型请求调用：{call.name} {call.arguments}  call_id={call.call_id}")
    if not calls:
        print(f"模型没有请求工具，直接回答：{output_text(response.items)}")
    print("（这一步只展示请求，还没有执行工具。）")


if __name__ == "__main__":
    main()
