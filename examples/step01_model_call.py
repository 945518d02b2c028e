"""Stage 1: the question alone, no tools. The model can only say what it is missing."""

from __future__ import annotations

from examples.common import connect, options
from minipi.ai.types import Message, ModelRequest, output_text


def main() -> None:
    args = options(__doc__ or "")
    model, config = connect(args)
    request = ModelRequest(
        items=[Message("user", args.question)],
        instructions="你还没有获得本地日报的内容。请说明回答问题还需要什么信息，不要猜测日报数据。",
        tool_choice="none",
        parallel_tool_calls=False,
        options=config.request_options,
    )
    try:
        response = model.client.create(request)
    finally:
        model.close()
    print(output_text(response.items))


if __name__ == "__main__":
    main()
