"""Helpers the tests share: one fake model server, project trees, the real CLI in a subprocess.

- ``render``: a model reply (``Turn``, ``Call``) in each wire's format, plain JSON and SSE;
- ``fake``: ``FakeServer``, a scripted OpenAI-compatible server on 127.0.0.1 (both wires,
  plain and streamed) playing ``Turn``, ``RawReply``, faults or callables;
- ``faults``: the faults it can play (RELIABILITY groups D and E: stalls, cut streams, resets);
- ``httpd``: its HTTP side (what it recorded, what a step can do to a connection);
- ``files``: project trees, snapshots and spies for the file tools;
- ``cli``: ``minipi`` run as a subprocess, and what the fake server saw;
- ``rel``: the reliability harness (trees with ``outside/``, INV, ``minipi ask`` runs).
"""
