"""Neutral items as plain JSON objects (traces, sessions), and back."""

from __future__ import annotations

from collections.abc import Sequence
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
        if item.gone:  # written only when there is some: older records never have it
            record["gone"] = {k: list(v) for k, v in item.gone.items()}
    else:
        record.update(text=item.text)
    if not isinstance(item, FunctionCallOutput) and item.raw is not None:
        record.update(raw=item.raw, wire=item.wire)
    return record


def item_from_json(record: JsonObject) -> Item:
    """The item ``item_to_json`` wrote; ValueError for anything else (a missing or mistyped
    field, an unknown role, type or wire): stored data is checked, never trusted."""
    kind: Any = record.get("type")
    raw, wire = record.get("raw"), record.get("wire")
    if not (raw is None or isinstance(raw, dict)) or wire not in (None, "chat", "responses"):
        raise ValueError(f"{kind} item with a malformed raw copy")
    try:
        if kind == "message":
            role = record["role"]
            if role not in ("user", "assistant", "system"):
                raise ValueError(f"message with the role {str(role)[:20]!r}")
            return Message(role, _text(record["text"]), raw, wire)
        if kind == "function_call":
            call_id, name = _text(record["call_id"]), _text(record["name"])
            return FunctionCall(call_id, name, _text(record["arguments"]), raw, wire)
        if kind == "function_call_output":
            return FunctionCallOutput(
                _text(record["call_id"]),
                _text(record["output"]),
                _by_kind(record, "choices"),
                record.get("is_error") is True,
                _by_kind(record, "gone"),
            )
        if kind == "reasoning":
            return Reasoning(_text(record["text"]), raw, wire)
    except KeyError as missing:
        raise ValueError(f"{kind} item without {missing}") from None
    except TypeError:  # stored data of a shape not foreseen above
        raise ValueError(f"{kind} item with a malformed field") from None
    raise ValueError(f"unknown item type {str(kind)[:20]!r}")


def _by_kind(record: JsonObject, name: str) -> dict[str, tuple[str, ...]]:
    """``record[name]`` (kind -> values, as ``item_to_json`` writes ``choices`` and
    ``gone``); empty when absent; ValueError unless it is an object of lists (whatever
    ``item_to_json`` wrote loads again)."""
    values = record.get(name) or {}
    if not isinstance(values, dict) or not all(isinstance(v, list) for v in values.values()):
        raise ValueError(f"function_call_output with malformed {name}")
    return {str(k): tuple(str(x) for x in v) for k, v in values.items()}


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"a text field holds {type(value).__name__}")
    return value
