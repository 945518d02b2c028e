"""Helpers the tests share: fake model servers, project trees, the real CLI in a subprocess.

- ``fake``: a scripted OpenAI-compatible server on 127.0.0.1 (both wires, plain and SSE);
- ``faults``: the same server with faults injected (RELIABILITY groups D and E);
- ``files``: project trees, snapshots and spies for the file tools;
- ``cli``: ``minipi`` run as a subprocess, and what the fake server saw;
- ``rel``: the reliability harness (trees with ``outside/``, INV, ``minipi ask`` runs).
"""
