"""Stage 4: the whole loop. ``--max-turns 2`` fails: two requests ask for tools, none answers."""

from __future__ import annotations

import sys

from examples.common import connect, options
from minipi.agent import run_agent
from minipi.assemble import agent_config
from minipi.files import ProjectFiles, create_project_tools


def main(required: tuple[str, ...] = ()) -> None:
    args = options(__doc__ or "")
    stage = connect(args, required)
    with ProjectFiles(args.project, 32 * 1024) as files:
        tools = create_project_tools(files)
        stage.start_trace(tools)
        try:
            config = agent_config(stage.settings, stage.model, tools)
            result = run_agent(stage.model.client, tools, config, args.question, stage.report)
        finally:
            stage.close()
    if not result.succeeded:
        sys.exit(f"{result.status}: {result.error}")
    print(result.answer)


if __name__ == "__main__":
    main()
