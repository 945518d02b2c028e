"""Neutral items as plain JSON objects (traces, sessions), and back."""

from __future__ import annotations

from typing import Any

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, JsonObject, Message, Reasoning

__all__ = ["item_from_json", "item_to_json"]


def item_to_json(item: Item) -> JsonObject:
    """A JSON object holding every field of ``item`` (``raw`` included when present)."""
    record: JsonObject = {"type": item.type}
    if isinstance(item, Message):
        record.update(role=item.role, text=item.text)
    elif isinstance(item, FunctionCall):
        record.update(call_id=item.call_id, name=item.name, arguments=item.arguments)
    elif isinstance(item, FunctionCallOutput):
        record.update(call_id=item.call_id, output=item.output)
        if item.choices:
            record["choices"] = {k: list(v) for k, v in item.choices.items()}
        if item.is_error:
            record["is_error"] = True
    else:
        record.update(text=item.text)
    if not isinstance(item, FunctionCallOutput) and item.raw is not None:
        record.update(raw=item.raw, wire=item.wire)
    return record


def item_from_json(record: JsonObject) -> Item:
    """The item ``item_to_json`` wrote; ValueError for anything else."""
    kind: Any = record.get("type")
    raw, wire = record.get("raw"), record.get("wire")
    try:
        if kind == "message":
            return Message(record["role"], str(record["text"]), raw, wire)
        if kind == "function_call":
            return FunctionCall(
                str(record["call_id"]), str(record["name"]), str(record["arguments"]), raw, wire
            )
        if kind == "function_call_output":
            choices = record.get("choices") or {}
            return FunctionCallOutput(
                str(record["call_id"]),
                str(record["output"]),
                {str(k): tuple(str(x) for x in v) for k, v in choices.items()},
                record.get("is_error") is True,
            )
        if kind == "reasoning":
            return Reasoning(str(record["text"]), raw, wire)
    except KeyError as missing:
        raise ValueError(f"{kind} item without {missing}") from None
    raise ValueError(f"unknown item type {kind!r}")
