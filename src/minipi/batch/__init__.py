"""Many tasks at once: ``minipi batch`` as a library, on the same loop, sandbox and evidence
as ``minipi ask``.

    from minipi.assemble import Settings
    from minipi.batch import BatchOptions, Plan, run_batch

    plan = Plan(Settings(base_url="http://127.0.0.1:8021/v1", model="my-model"))
    outcome = run_batch(BatchOptions(Path("tasks.jsonl"), Path("out"), workers=8), plan)
    outcome.summary["success_rate"]

Modules, from the bottom: ``checked`` (JSON read back, checked), ``tasks`` (the task file),
``records`` (a results line), ``store`` (the directory: lock, batch.json, results.jsonl,
traces), ``journal`` and ``moves`` (a task that changes things, resumed after a kill: a
move the journal and the disk prove made), ``gate`` (the shared bound on model requests,
rate-limit backoff and stop), ``run`` (one task: a pure function of the task, the settings
and the model), ``pool`` (the bounded thread pool), ``local``
(threads on one model) and ``ray_backend`` (Ray actors, the extra ``minipi[ray]``),
``fingerprint``, ``summary``, ``progress``, and ``runner`` (``run_batch``: all of it).
Nothing here reads the environment or imports ``minipi.cli``.
"""

from __future__ import annotations

from minipi.batch.gate import Cancelled, Gate, GatedClient
from minipi.batch.records import Record
from minipi.batch.run import Plan, TraceFactory, run_task, task_settings
from minipi.batch.runner import BatchOptions, BatchOutcome, run_batch
from minipi.batch.summary import summarize, summary_lines
from minipi.batch.tasks import LineProblem, Task, load_tasks

__all__ = [
    "BatchOptions",
    "BatchOutcome",
    "Cancelled",
    "Gate",
    "GatedClient",
    "LineProblem",
    "Plan",
    "Record",
    "Task",
    "TraceFactory",
    "load_tasks",
    "run_batch",
    "run_task",
    "summarize",
    "summary_lines",
    "task_settings",
]
