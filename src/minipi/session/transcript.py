"""A session's history rebuilt from its entries, and checked before it is sent again (H8).

Valid means: every tool result answers an earlier call that had none yet, and no question
follows a call that is still unanswered. A session that is not valid is refused (never sent,
never "fixed" by dropping items); calls left open by a killed process are answered by
``repair`` before the next question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from minipi.ai.serialize import item_from_json
from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message
from minipi.errors import SessionStoreError
from minipi.session.records import Entry

__all__ = ["OpenCall", "replay"]


@dataclass(frozen=True, slots=True)
class OpenCall:
    """A call without a saved result: the run and entry it was saved in."""

    call: FunctionCall
    run: int
    seq: int


def replay(session: str, entries: Sequence[Entry]) -> tuple[list[Item], list[OpenCall]]:
    """The history items in order, and the calls still waiting for a result."""
    items: list[Item] = []
    waiting: list[OpenCall] = []
    for entry in entries:
        if entry.kind != "item":
            continue
        item = _item(session, entry)
        if isinstance(item, FunctionCall):
            waiting.append(OpenCall(item, entry.run, entry.seq))
        elif isinstance(item, FunctionCallOutput):
            match = next((c for c in waiting if c.call.call_id == item.call_id), None)
            if match is None:
                raise _invalid(session, entry, "a tool result without a call waiting for it")
            waiting.remove(match)
        elif isinstance(item, Message) and item.role == "user" and waiting:
            raise _invalid(session, entry, "a question before every call was answered")
        items.append(item)
    return items, waiting


def _item(session: str, entry: Entry) -> Item:
    try:
        return item_from_json(entry.data)
    except ValueError:
        raise _invalid(session, entry, "a malformed item") from None


def _invalid(session: str, entry: Entry, what: str) -> SessionStoreError:
    return SessionStoreError(
        f"session '{session}' cannot be resumed: entry #{entry.seq} is {what}; it was left "
        "as is (minipi sessions show lists it; start a new session with another name)",
        code="session_store_malformed",
    )
