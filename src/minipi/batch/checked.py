"""JSON that minipi wrote and reads back, checked as data: a file in a batch directory may be
cut short, edited by hand or written by another program.

``load_json`` parses it as the standard says (no ``NaN``/``Infinity``) and never lets the
parser's own stack run out: a document nested deeper than the parser can go is refused with a
``ValueError``, not a ``RecursionError``. ``Schema`` then checks its shape (fastjsonschema,
compiled once) and says what is wrong by the field's name (``seconds must be number``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

__all__ = ["Schema", "load_json"]


def load_json(text: str | bytes) -> Any:
    """The JSON value of ``text``; ``ValueError`` saying why when it is not one."""
    import json

    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deep") from None
    except ValueError as error:  # bad UTF-8 and a number too long to read are ValueErrors
        raise ValueError(f"not JSON: {shown(str(error))}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number in JSON")


class Schema:
    """A JSON Schema, compiled the first time it checks something."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document

    @cached_property
    def _validate(self) -> Callable[[Any], Any]:
        import fastjsonschema  # deferred: `import minipi` does not pay for it

        validate: Callable[[Any], Any] = fastjsonschema.compile(self.document)
        return validate

    def check(self, data: Any) -> None:
        """Nothing when ``data`` fits; else ``ValueError`` naming the first field that does
        not (``verdict.kind must be string``)."""
        from fastjsonschema import JsonSchemaValueException

        try:
            self._validate(data)
        except JsonSchemaValueException as error:
            name = error.name or "data"
            where = name.removeprefix("data").lstrip(".")
            said = error.message.removeprefix(name).strip()
            raise ValueError(shown(f"{where} {said}" if where else f"the line {said}")) from None


def shown(text: str, limit: int = 200) -> str:
    """``text`` on one printable line of at most ``limit`` characters (a field name read
    from a file is data: it may hold anything)."""
    text = "".join(c if c.isprintable() else "?" for c in text[: limit + 1])
    return text if len(text) <= limit else text[: limit - 1] + "…"
