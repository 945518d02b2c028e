"""``minipi batch --ray`` on a local Ray instance: the driver writes results and traces, so
resume and the summary behave as on threads. One short run (a local instance takes ~5 s to
start on 2 cores); skipped where Ray is not installed (the extra ``minipi[ray]``)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from batch_tasks.scripted import (
    ByQuestion,
    batch_cli,
    endpoint_args,
    read_results,
    serve,
    task_rows,
    write_tasks,
)
from support.cli import EXAMPLES, clean_env

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="Ray is not installed (pip install 'minipi[ray]')",
)


@pytest.mark.timeout(240)
def test_a_batch_on_a_local_ray_instance_records_and_resumes_like_threads(
    tmp_path: Path,
) -> None:
    project = tmp_path / "sample_project"
    shutil.copytree(EXAMPLES / "sample_project", project)
    rows = task_rows(5, project)
    rows[4] = {**rows[4], "project": str(tmp_path / "missing")}
    tasks = write_tasks(tmp_path / "tasks.jsonl", rows)
    out = tmp_path / "out"
    server = serve(ByQuestion(latency=0.02))
    env = clean_env(RAY_USAGE_STATS_ENABLED="0")
    try:
        args = [str(tasks), "--out", str(out), *endpoint_args(server), "-w", "2"]
        proc = batch_cli(*args, "--ray", env=env, timeout=200)
        posts = server.posts
        again = batch_cli(*args, env=env, timeout=60)  # resumed on threads: nothing to do
    finally:
        server.stop()
    assert proc.returncode == 1, proc.stderr  # the missing project
    assert "running on a new local Ray instance with 2 workers" in proc.stderr
    results = {r["id"]: r for r in read_results(out)}
    assert sorted(results) == ["t000", "t001", "t002", "t003", "t004"]
    assert all(results[f"t00{n}"]["status"] == "succeeded" for n in range(4))
    assert results["t004"]["code"] == "bad_project"
    trace = json.loads((out / "traces" / "t000.json").read_text(encoding="utf-8"))
    assert trace["result"]["status"] == "succeeded"  # written by the driver
    assert posts == 4 * 3
    assert again.returncode == 1
    assert "5 of 5 tasks already finished" in again.stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert (summary["finished"], summary["succeeded"], summary["correct"]) == (5, 4, 4)
