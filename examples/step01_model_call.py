"""Stage 1: the question alone, no tools. The model can only say what it is missing."""

from __future__ import annotations

from examples.common import connect, options
from minipi.ai.types import Message, ModelRequest, output_text


def main() -> None:
    args = options(__doc__ or "")
    stage = connect(args)
    stage.start_trace([])
    request = ModelRequest(
        items=[Message("user", args.question)],
        instructions="你还没有获得本地日报的内容。请说明回答问题还需要什么信息，不要猜测日报数据。",
        tool_choice="none",
        parallel_tool_calls=False,
        options=stage.config.request_options,
    )
    try:
        response = stage.ask(1, request)
    finally:
        stage.close()
    print(output_text(response.items))


if __name__ == "__main__":
    main()
