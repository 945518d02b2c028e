"""Neutral items as plain JSON objects (traces, sessions), and back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, JsonObject, Message, Reasoning

__all__ = ["item_from_json", "item_to_json", "items_from_json", "items_to_json"]


def items_to_json(items: Sequence[Item]) -> list[JsonObject]:
    """``items`` as JSON objects, each ``raw`` written once: the items of one chat message
    share its raw dict (a reply of 2,000 calls would otherwise be written 2,000 times, which
    is quadratic); a later item that shares it says ``"raw_of": K``, the index of the item
    that carries it."""
    records: list[JsonObject] = []
    first: dict[int, int] = {}  # id(raw) -> index of the record that carries it
    for index, item in enumerate(items):
        raw = None if isinstance(item, FunctionCallOutput) else item.raw
        earlier = first.get(id(raw)) if raw is not None else None
        if earlier is None:
            if raw is not None:
                first[id(raw)] = index
            records.append(item_to_json(item))
            continue
        record = item_to_json(item)
        del record["raw"]
        record["raw_of"] = earlier
        records.append(record)
    return records


def items_from_json(records: Sequence[JsonObject]) -> list[Item]:
    """The items ``items_to_json`` wrote, a shared ``raw`` shared again; ValueError for
    anything else."""
    items: list[Item] = []
    for record in records:
        if "raw_of" in record:
            at = record["raw_of"]
            source = items[at] if isinstance(at, int) and 0 <= at < len(items) else None
            raw = getattr(source, "raw", None)
            if raw is None:
                raise ValueError("an item refers to a raw copy that is not there")
            record = {**record, "raw": raw}
        items.append(item_from_json(record))
    return items


def item_to_json(item: Item) -> JsonObject:
    """A JSON object holding every field of ``item`` (``raw`` included when present)."""
    if isinstance(item, FunctionCallOutput):
        return _output_to_json(item)
    record: JsonObject = {"type": item.type}
    if isinstance(item, Message):
        record.update(role=item.role, text=item.text)
        if item.cited:
            record["cited"] = list(item.cited)
        if item.by_minipi:
            record["by_minipi"] = True
    elif isinstance(item, FunctionCall):
        record.update(call_id=item.call_id, name=item.name, arguments=item.arguments)
    else:
        record.update(text=item.text)
    if item.raw is not None:
        record.update(raw=item.raw, wire=item.wire)
    return record


def _output_to_json(item: FunctionCallOutput) -> JsonObject:
    """A tool result's record: ``is_error`` and ``details`` only when set (older records
    never have ``details``)."""
    record: JsonObject = {"type": item.type, "call_id": item.call_id, "output": item.output}
    if item.is_error:
        record["is_error"] = True
    if item.details:
        record["details"] = dict(item.details)
    return record


def item_from_json(record: JsonObject) -> Item:
    """The item ``item_to_json`` wrote; ValueError for anything else (a missing or mistyped
    field, an unknown role, type or wire): stored data is checked, never trusted."""
    kind: Any = record.get("type")
    if not isinstance(kind, str) or kind not in _DECODERS:
        raise ValueError(f"unknown item type {str(kind)[:20]!r}")
    raw, wire = record.get("raw"), record.get("wire")
    if not (raw is None or isinstance(raw, dict)) or wire not in (None, "chat", "responses"):
        raise ValueError(f"{kind} item with a malformed raw copy")
    try:
        return _DECODERS[kind](record, raw, wire)
    except KeyError as missing:
        raise ValueError(f"{kind} item without {missing}") from None
    except TypeError:  # stored data of a shape not foreseen above
        raise ValueError(f"{kind} item with a malformed field") from None


def _message(record: JsonObject, raw: JsonObject | None, wire: Any) -> Message:
    role = record["role"]
    if role not in ("user", "assistant", "system"):
        raise ValueError(f"message with the role {str(role)[:20]!r}")
    cited = record.get("cited", ())
    if not isinstance(cited, list | tuple):
        raise ValueError("a message's cited lines are not a list")
    by_minipi = record.get("by_minipi", False)
    if not isinstance(by_minipi, bool):
        raise ValueError("a message's by_minipi is not true or false")
    cited_lines = tuple(_text(c) for c in cited)
    return Message(role, _text(record["text"]), raw, wire, cited=cited_lines, by_minipi=by_minipi)


def _call(record: JsonObject, raw: JsonObject | None, wire: Any) -> FunctionCall:
    call_id, name = _text(record["call_id"]), _text(record["name"])
    return FunctionCall(call_id, name, _text(record["arguments"]), raw, wire)


def _reasoning(record: JsonObject, raw: JsonObject | None, wire: Any) -> Reasoning:
    return Reasoning(_text(record["text"]), raw, wire)


def _output(record: JsonObject, raw: JsonObject | None, wire: Any) -> FunctionCallOutput:
    details = record.get("details") or {}
    if not isinstance(details, dict):
        raise ValueError("function_call_output with malformed details")
    return FunctionCallOutput(
        _text(record["call_id"]),
        _text(record["output"]),
        is_error=record.get("is_error") is True,
        details={**_older_details(record), **details},
    )


_OLDER_DETAILS = ("choices", "gone")
"""Keys of records written before ``details``: the file tools' details of the same names."""


def _older_details(record: JsonObject) -> JsonObject:
    """An older record's ``choices`` and ``gone`` (kind -> values) as the details the file
    tools now write; ValueError unless each is an object of lists."""
    older: JsonObject = {}
    for name in _OLDER_DETAILS:
        values = record.get(name)
        if not values:
            continue
        if not isinstance(values, dict) or not all(isinstance(v, list) for v in values.values()):
            raise ValueError(f"function_call_output with malformed {name}")
        older[name] = {str(k): [str(x) for x in v] for k, v in values.items()}
    return older


_DECODERS: dict[str, Callable[[JsonObject, JsonObject | None, Any], Item]] = {
    "message": _message,
    "function_call": _call,
    "function_call_output": _output,
    "reasoning": _reasoning,
}


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"a text field holds {type(value).__name__}")
    return value
