"""Stage 3: run the first batch of calls, feed the results back, ask once more, then stop.

With the daily-report task the model now asks for read_file: the program stops there and says
the task is not done (exit 1), as in the seed.
"""

from __future__ import annotations

import sys
from argparse import Namespace

from examples.common import Stage, connect, options
from minipi.agent import ToolCallStarted, ToolResult, ToolResultReady
from minipi.agent.tools import parse_arguments
from minipi.ai.types import (
    FunctionCallOutput,
    Item,
    Message,
    ModelRequest,
    output_text,
    parse_function_calls,
)
from minipi.files import ProjectFiles, create_project_tools


def main() -> None:
    args = options(__doc__ or "")
    stage = connect(args)
    try:
        one_round(stage, args)
    finally:
        stage.close()


def one_round(stage: Stage, args: Namespace) -> None:
    """Run the first calls, feed them back, and stop when the model asks for more."""
    config, report = stage.config, stage.report
    history: list[Item] = [Message("user", args.question)]
    with ProjectFiles(args.project) as files:
        tools = {t.name: t for t in create_project_tools(files)}
        stage.start_trace(list(tools.values()))
        for turn in (1, 2):
            request = ModelRequest(
                history,
                config.instructions,
                [t.spec() for t in tools.values()],
                parallel_tool_calls=False,
                options=config.request_options,
            )
            response = stage.ask(turn, request)
            calls = parse_function_calls(response.items)
            history.extend(response.items)  # the model's own output first, verbatim
            if not calls:
                print(output_text(response.items))
                return
            if turn == 2:
                names = ", ".join(c.name for c in calls)
                print(f"模型还需要工具（{names}），任务尚未完成。", file=sys.stderr)
                sys.exit(1)
            for call in calls:
                report(ToolCallStarted(turn, call.call_id, call.name, call.arguments))
                tool = tools.get(call.name)
                arguments = parse_arguments(call.arguments, allow_empty=False)
                if tool is None:
                    result = ToolResult.error("unknown_tool", f"未知工具：{call.name}")
                elif isinstance(arguments, dict):
                    result = tool.execute(arguments)
                else:
                    result = arguments
                report(ToolResultReady(turn, call.call_id, call.name, result, 0.0))
                history.append(FunctionCallOutput(call.call_id, result.content))


if __name__ == "__main__":
    main()
