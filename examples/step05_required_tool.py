"""Stage 5: the same task, with a policy: list_files must succeed before the model chooses."""

from __future__ import annotations

from examples.step04_agent_loop import main

if __name__ == "__main__":
    main(required=("list_files",))
