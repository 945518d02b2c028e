#!/usr/bin/env python3
"""BFCL (the Berkeley Function Calling Leaderboard) through minipi's own loop and engine.

    pip download --no-deps bfcl-eval==2026.3.23 -d /tmp/BFCL
    python -m zipfile -e /tmp/BFCL/bfcl_eval-2026.3.23-py3-none-any.whl /tmp/BFCL/x
    python bench/bfcl.py --bfcl-root /tmp/BFCL/x [--split heldout|dev] [--model-file GGUF]
        [--modes default,guided,unguided] [--option KEY=VALUE ...] [--out results.jsonl]
    python bench/bfcl.py --report --out results.jsonl

The method of ``../shared/bench/bfcl/run_bfcl.py`` (its README), with the CLI's default
mode as a mode of its own. BFCL's wheel is only unpacked: its data and AST checker are used
from there (the checker's ``model_config`` import, which pulls in every model handler, is
stubbed with the one flag the checker reads). For each entry its functions become minipi
tools (BFCL's own conversion for OpenAI-style function calling: ``dict`` -> ``object``,
``float`` -> ``number``, dots in names -> ``_``), whose handlers record the arguments and
return "ok"; the question runs through ``run_agent`` with the client ``assemble.open_model``
builds and the loop config of ``assemble.agent_config`` (temperature 0, one model request,
no instructions: minipi's are about project files; an entry's system prompt is used); the
calls of the first reply are scored by BFCL's ``ast_checker``. Irrelevance: right when the
reply makes no call.

Modes: ``default`` (what ``minipi ask`` picks for this model), ``guided``, ``unguided``
(``--no-guided``: the model's own chat template with the tools, calls read from its text).

Splits: ``heldout`` is the fixed sample of the 2026-12-01 measurement (``random.Random(
f"20260323-{category}")``, simple 40, multiple 40, parallel 15, irrelevance 30); ``dev`` is
drawn from the other entries of each category (seed 1, the same counts). Tune on dev,
report held-out. A rerun appends and skips rows already in ``--out``.

``--option KEY=VALUE`` adds a request option to every request (VALUE read as JSON, else as
text), for a decoding experiment: ``--option repeat_penalty=1.0`` turns off the repeat
penalty llama-cpp-python's server applies by default (1.1). Without ``--label`` such a
run is labelled with its options too, so its rows stay apart from a plain run's.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import re
import statistics
import sys
import time
import types
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

CATEGORIES = {  # our name -> BFCL file stem, checker category
    "simple": ("BFCL_v4_simple_python", "simple_python"),
    "multiple": ("BFCL_v4_multiple", "multiple"),
    "parallel": ("BFCL_v4_parallel", "parallel"),
    "irrelevance": ("BFCL_v4_irrelevance", "irrelevance"),
}
COUNTS = {"simple": 40, "multiple": 40, "parallel": 15, "irrelevance": 30}
HELDOUT_SEED, DEV_SEED = 20260323, 1
MODES = ("default", "guided", "unguided")


def bfcl_import(root: Path) -> Any:
    """BFCL's AST checker from the unpacked wheel at ``root``, ``model_config`` stubbed: the
    checker reads only ``MODEL_CONFIG_MAPPING[name].underscore_to_dot`` (True: names are
    sent with ``_`` for ``.``, as BFCL does for OpenAI-style function-calling models)."""
    sys.path.insert(0, str(root))
    stub = types.ModuleType("bfcl_eval.constants.model_config")

    class _Config:
        underscore_to_dot = True

    class _Mapping(dict[str, Any]):
        def __missing__(self, key: str) -> _Config:
            return _Config()

    stub.MODEL_CONFIG_MAPPING = _Mapping()  # type: ignore[attr-defined]
    sys.modules["bfcl_eval.constants.model_config"] = stub
    from bfcl_eval.constants.enums import Language  # type: ignore[import-not-found]
    from bfcl_eval.constants.type_mappings import (  # type: ignore[import-not-found]
        GORILLA_TO_OPENAPI,
    )
    from bfcl_eval.eval_checker.ast_eval import ast_checker  # type: ignore[import-not-found]

    return types.SimpleNamespace(
        check=ast_checker.ast_checker, python=Language.PYTHON, mapping=GORILLA_TO_OPENAPI
    )


def load(root: Path, category: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    stem, _ = CATEGORIES[category]
    data = root / "bfcl_eval" / "data"
    entries = [json.loads(line) for line in (data / f"{stem}.json").open() if line.strip()]
    answers: dict[str, Any] = {}
    answer_file = data / "possible_answer" / f"{stem}.json"
    if answer_file.exists():
        for line in answer_file.open():
            if line.strip():
                row = json.loads(line)
                answers[row["id"]] = row["ground_truth"]
    return entries, answers


def split(entries: list[dict[str, Any]], category: str, which: str) -> list[dict[str, Any]]:
    """The held-out sample (the 2026-12-01 one), or a dev sample of the other entries."""
    count = COUNTS[category]
    indexes = range(len(entries))
    held = set(random.Random(f"{HELDOUT_SEED}-{category}").sample(indexes, count))
    if which == "heldout":
        return [e for i, e in enumerate(entries) if i in held]
    rest = [i for i in indexes if i not in held]
    chosen = set(random.Random(f"{DEV_SEED}-{category}").sample(rest, min(count, len(rest))))
    return [e for i, e in enumerate(entries) if i in chosen]


def to_schema(function: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    """BFCL's ``_cast_to_openai_type`` (``model_handler/utils.py``), as BFCL sends tools."""
    parameters: dict[str, Any] = copy.deepcopy(function["parameters"])
    parameters["type"] = "object"
    parameters["properties"] = _cast(parameters.get("properties", {}), mapping)
    return parameters


def _cast(properties: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    for value in properties.values():
        kind = value.get("type")
        if kind == "float":
            value["format"] = "float"
            value["description"] = value.get("description", "") + " This is a float type value."
        value["type"] = mapping.get(kind, "string") if kind else "string"
        if value["type"] in ("array", "object"):
            if "properties" in value:
                value["properties"] = _cast(value["properties"], mapping)
            elif "items" in value:
                items = value["items"]
                items["type"] = mapping[items["type"]]
                if items["type"] == "array" and "items" in items:
                    items["items"]["type"] = mapping[items["items"]["type"]]
                elif items["type"] == "object" and "properties" in items:
                    items["properties"] = _cast(items["properties"], mapping)
    return properties


def make_tools(functions: list[dict[str, Any]], mapping: dict[str, str]) -> list[Any]:
    from minipi import AgentTool

    return [
        AgentTool(
            re.sub(r"\.", "_", f["name"]),
            f.get("description", ""),
            to_schema(f, mapping),
            lambda arguments: "ok",
        )
        for f in functions
    ]


class Harness:
    """One model: one engine, and each mode's client as ``assemble.open_model`` builds it."""

    def __init__(
        self,
        model_file: str | None,
        max_output_tokens: int,
        small: bool | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        from minipi.local.engine import Engine
        from minipi.local.models import explicit_model, resolve_model

        self.env = dict(os.environ, MINIPI_OFFLINE="1")
        self.choice = explicit_model(model_file, self.env) or resolve_model(
            None, self.env, download=False
        )
        started = time.monotonic()
        self.engine = Engine.start(self.choice)
        print(
            f"[engine] {self.choice.name} ready in {time.monotonic() - started:.1f} s", flush=True
        )
        self.max_output_tokens = max_output_tokens
        self.options = options or {}
        self.small = small
        self.handles: dict[str, Any] = {}

    def handle(self, mode: str) -> tuple[Any, Any]:
        if mode in self.handles:
            return self.handles[mode]  # type: ignore[no-any-return]
        from minipi import assemble
        from minipi.local import engine as engine_module

        settings = assemble.Settings(
            model_file=str(self.choice.path),
            guided={"default": None, "guided": True, "unguided": False}[mode],
            instructions="",
            request_options={"max_output_tokens": self.max_output_tokens, **self.options},
            max_turns=1,
        )
        real_start = engine_module.Engine.start
        engine_module.Engine.start = lambda *a, **k: self.engine  # type: ignore[method-assign]
        try:
            handle = assemble.open_model(settings, self.env, report=lambda m: None)
        finally:
            engine_module.Engine.start = real_start  # type: ignore[method-assign]
        handle.stops.clear()  # the engine is ours: stopped once, at the end
        if self.small is not None and handle.guided:  # an experiment: --small on|off
            handle.client.small = self.small  # type: ignore[attr-defined]
        self.handles[mode] = (handle, assemble.agent_config(settings, handle))
        return self.handles[mode]  # type: ignore[no-any-return]

    def run(self, mode: str, entry: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
        from minipi import run_agent
        from minipi.agent.events import ModelResponded
        from minipi.ai.types import FunctionCall, output_text

        handle, config = self.handle(mode)
        messages = entry["question"][0]
        system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        question = "\n".join(m["content"] for m in messages if m["role"] == "user")
        if system:
            config = replace(config, instructions=system)
        first: list[Any] = []

        def on_event(event: Any) -> None:
            if isinstance(event, ModelResponded) and not first:
                first.append(event)

        started = time.monotonic()
        tools = make_tools(entry["function"], mapping)
        result = run_agent(handle.client, tools, config, question, on_event=on_event)
        row: dict[str, Any] = {
            "seconds": round(time.monotonic() - started, 2),
            "status": result.status,
            "code": result.code,
            "guided": bool(handle.guided),
        }
        if not first:
            return {**row, "calls": None, "error": (result.error or "")[:300]}
        response = first[0].response
        calls = [
            {"name": i.name, "arguments": _loads(i.arguments)}
            for i in response.items
            if isinstance(i, FunctionCall)
        ]
        text = output_text(response.items)[:400]
        return {**row, "finish": response.finish_reason, "text": text, "calls": calls}


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _starts_call(text: str) -> bool:
    """Whether a reply cut at the token limit was cut inside a call (a guided reply's call,
    or a list of them; the unguided forms are ``invalid_tool_call`` already)."""
    return re.match(r'\s*(\[\s*)?\{\s*"tool"', text) is not None


def score(
    checker: Any, category: str, entry: dict[str, Any], answer: Any, row: dict[str, Any]
) -> tuple[bool, str]:
    """(right, failure kind): ok, no call, call on irrelevance, malformed, wrong function,
    wrong call count, type error, wrong/missing argument value. A reply cut inside a call is
    malformed in every category (the method's rule: in irrelevance, it was a call)."""
    calls = row.get("calls")
    if calls is None:
        return category == "irrelevance", "no reply"
    cut = row.get("finish") == "length" and _starts_call(row.get("text") or "")
    if cut or any(
        c["name"] == "invalid_tool_call" or not isinstance(c["arguments"], dict) for c in calls
    ):
        return False, "call on irrelevance" if category == "irrelevance" else "malformed"
    if category == "irrelevance":
        return (not calls), ("ok" if not calls else "call on irrelevance")
    if not calls:
        return False, "no call"
    output = [{c["name"]: c["arguments"]} for c in calls]
    try:
        verdict = checker.check(
            entry["function"], output, answer, checker.python, CATEGORIES[category][1], "minipi"
        )
    except Exception as error:  # the checker failed on this output
        return False, f"malformed ({type(error).__name__})"
    if verdict["valid"]:
        return True, "ok"
    kind = str(verdict.get("error_type", ""))
    if "cannot_find_match" in kind:
        subs = [e for e in verdict.get("error", []) if isinstance(e, dict)]
        kind = next(iter(subs[0].values())).get("sub_error_type", kind) if subs else kind
    for marker, name in (
        ("wrong_count", "wrong call count"),
        ("wrong_func_name", "wrong function"),
        ("type_error", "type error"),
    ):
        if marker in kind:
            return False, name
    return False, "wrong/missing argument value"


def lenient(text: str) -> list[dict[str, Any]]:
    """Calls written as JSON anywhere in a reply's text (a fence, bare): the 2026-12-01
    diagnostic of what a lenient parser would read (not minipi's behaviour)."""
    pieces = re.findall(r"```[a-zA-Z]*\n?(.*?)```", text, re.DOTALL) or [text]
    decoder = json.JSONDecoder()
    calls: list[dict[str, Any]] = []
    for piece in pieces:
        index = 0
        while index < len(piece):
            if piece[index] not in "{[":
                index += 1
                continue
            try:
                value, index = decoder.raw_decode(piece, index)
            except ValueError:
                index += 1
                continue
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict) and isinstance(item.get("name"), str):
                    arguments = item.get("arguments", item.get("parameters"))
                    if isinstance(arguments, dict):
                        calls.append({"name": item["name"], "arguments": arguments})
    return calls


def run(args: argparse.Namespace) -> None:
    root = Path(args.bfcl_root)
    checker = bfcl_import(root)
    plan: list[tuple[str, dict[str, Any], Any]] = []
    groups = []
    for category in args.categories.split(","):
        entries, answers = load(root, category)
        groups.append(
            [(category, e, answers.get(e["id"])) for e in split(entries, category, args.split)]
        )
    for index in range(max(len(g) for g in groups)):  # interleaved: a cut run stays balanced
        plan.extend(g[index] for g in groups if index < len(g))
    out = Path(args.out)
    done = set()
    if out.exists():
        done = {(r["model"], r["mode"], r["split"], r["id"]) for r in map(json.loads, out.open())}
    small = {"on": True, "off": False}.get(args.small or "")
    extra = options(args.option)
    harness = Harness(args.model_file, args.max_output_tokens, small, extra)
    # a run with options is labelled apart: a rerun skips the rows its label already has
    label = args.label or " ".join([harness.choice.name, *args.option])
    deadline = time.monotonic() + args.max_minutes * 60 if args.max_minutes else None
    try:
        with out.open("a") as sink:
            for number, (category, entry, answer) in enumerate(plan, 1):
                if deadline is not None and time.monotonic() > deadline:
                    print(f"[cut] after {number - 1}/{len(plan)} entries", flush=True)
                    break
                for mode in args.modes.split(","):
                    if (label, mode, args.split, entry["id"]) in done:
                        continue
                    row = harness.run(mode, entry, checker.mapping)
                    row.update(
                        model=label, mode=mode, split=args.split, category=category, id=entry["id"]
                    )
                    row["correct"], row["kind"] = score(checker, category, entry, answer, row)
                    if not row.get("calls") and row.get("text"):
                        found = lenient(row["text"])
                        row["lenient"] = score(
                            checker, category, entry, answer, {**row, "calls": found}
                        )[0]
                    sink.write(json.dumps(row, ensure_ascii=False) + "\n")
                    sink.flush()
                    print(
                        f"[{label} {number}/{len(plan)} {mode:8s}] {entry['id']:18s} "
                        f"{'OK ' if row['correct'] else 'BAD'} {row['kind']:28s} "
                        f"{row['seconds']:5.1f} s "
                        f"{json.dumps(row.get('calls'), ensure_ascii=False)[:100]}",
                        flush=True,
                    )
    finally:
        harness.engine.stop()


def options(pairs: list[str]) -> dict[str, Any]:
    """``--option KEY=VALUE`` pairs as request options (VALUE as JSON, else as text)."""
    found: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--option takes KEY=VALUE, not {pair!r}")
        found[key] = _loads(text)
    return found


def report(path: Path) -> None:
    rows = [json.loads(line) for line in path.open() if line.strip()]
    cells: dict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        cells[(row["model"], row["split"], row["mode"], row["category"])].append(row)
    keys = sorted({k[:3] for k in cells})
    print(
        "| model | split | mode | "
        + " | ".join(CATEGORIES)
        + " | all (micro) | all (macro) | s/entry |"
    )
    print("|---|---|---|" + "---|" * (len(CATEGORIES) + 3))
    for model, part, mode in keys:
        line, right, total, rates, seconds = [], 0, 0, [], []
        for category in CATEGORIES:
            cell = cells.get((model, part, mode, category), [])
            if not cell:
                line.append("-")
                continue
            good = sum(r["correct"] for r in cell)
            right, total = right + good, total + len(cell)
            rates.append(good / len(cell))
            seconds += [r["seconds"] for r in cell]
            line.append(f"{100 * good / len(cell):.0f}% ({good}/{len(cell)})")
        micro = f"{100 * right / total:.0f}%" if total else "-"
        macro = f"{100 * sum(rates) / len(rates):.0f}%" if rates else "-"
        median = f"{statistics.median(seconds):.1f}" if seconds else "-"
        print(
            f"| {model} | {part} | {mode} | "
            + " | ".join(line)
            + f" | {micro} | {macro} | {median} |"
        )
    print("\nfailure kinds:")
    for model, part, mode in keys:
        mine = [r for r in rows if (r["model"], r["split"], r["mode"]) == (model, part, mode)]
        kinds = Counter(r["kind"] for r in mine if not r["correct"])
        print(f"  {model} {part} {mode}: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bfcl-root", help="the folder holding the unpacked wheel's bfcl_eval/")
    parser.add_argument("--model-file", help="a GGUF (default: minipi's own offline choice)")
    parser.add_argument("--label", help="the model's name in the results (default: its alias)")
    parser.add_argument("--split", choices=("heldout", "dev"), default="heldout")
    parser.add_argument("--modes", default="default")
    parser.add_argument("--categories", default=",".join(CATEGORIES))
    parser.add_argument("--max-output-tokens", type=int, default=256)
    parser.add_argument("--max-minutes", type=float, default=0)
    parser.add_argument(
        "--small",
        choices=("on", "off"),
        help="guided as for a model under 400M weights (one call, question's words) or not "
        "(default: by the model's size, as the CLI)",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a request option for every request (VALUE as JSON, else text): an experiment",
    )
    parser.add_argument("--out", default="bfcl-results.jsonl")
    parser.add_argument("--report", action="store_true", help="print the tables of --out")
    args = parser.parse_args()
    if args.report:
        report(Path(args.out))
    elif not args.bfcl_root:
        parser.error("--bfcl-root is required to run (see the module docstring)")
    else:
        run(args)


if __name__ == "__main__":
    main()
