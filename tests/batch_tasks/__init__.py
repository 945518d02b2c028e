"""Fixtures of the ``test_batch*`` modules: a scripted model that answers by question, task
files, and the real ``minipi batch`` command in a subprocess.

- ``ByQuestion(latency)``: a ``FakeServer`` reply function; each request is answered from
  its question (the first user message) and how many tool results it carries, so that any
  number of concurrent runs are served correctly in any order. Markers in the question pick
  the behaviour: ``[move]`` seed 003's move of the cat, ``[400]`` a refused request,
  ``[429]`` rate limited, ``[wrong]`` a wrong figure, ``[slow]`` ten times the latency;
  anything else the daily-report run (list_files, read_file, the answer with 2026-09-06 /
  128 / 9600).
- ``serve(script)``: a started ``FakeServer`` playing ``script`` for every request.
- ``write_tasks(path, rows)``, ``read_results(out)``: the files of a batch.
- ``batch_cli(*args)`` / ``start_batch(*args)``: ``minipi batch`` through a test-local entry
  (``minipi.cli.batch.batch``; the command's registration in ``minipi.cli.main`` is the CLI's).
- ``runs_started(server)``: how many runs each question began (requests with no tool result).
"""
