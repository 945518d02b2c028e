"""A process that claims to be an MCP server and never answers: it reads stdin and says nothing.

    python tests/mcp_servers/silent.py [--ignore-eof] [--ignore-term]

``--ignore-eof`` keeps it running after its stdin closes; ``--ignore-term`` makes it ignore
SIGTERM (only SIGKILL stops it). It writes one line to stderr first, so that logs can be read.
"""

from __future__ import annotations

import signal
import sys
import time


def main() -> None:
    if "--ignore-term" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.stderr.write("silent: listening, answering nothing\n")
    sys.stderr.flush()
    while sys.stdin.buffer.read(1):
        pass
    while "--ignore-eof" in sys.argv:
        time.sleep(1)


if __name__ == "__main__":
    main()
