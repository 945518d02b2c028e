"""How a tool is declared to the model: one function for both wires (and for traces).

Chat Completions (``tools[]`` of ``/chat/completions``)::

    {"type": "function", "function": {"name", "description", "parameters", "strict"?: true}}

Responses (``tools[]`` of ``/responses``, the seed's format)::

    {"type": "function", "name", "description", "parameters", "strict": true | false}

``strict`` is true only where OpenAI's strict mode accepts the schema as it is
(``strict_schema``): the Responses API refuses a strict declaration with an optional property
(400 "Invalid schema … 'required' … Missing 'offset'"). The Responses API counts a missing
``strict`` as true, so that wire always says it; on the chat wire a missing ``strict`` is
false, so it is sent only when true.
"""

from __future__ import annotations

from minipi.ai.types import JsonObject, ToolSpec, Wire

__all__ = ["declare_tool", "strict_schema"]


def declare_tool(spec: ToolSpec, wire: Wire) -> JsonObject:
    """The declaration of ``spec`` in ``wire``'s ``tools`` list."""
    strict = strict_schema(spec.parameters)
    if wire == "chat":
        function: JsonObject = {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        }
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.parameters,
        "strict": strict,
    }


def strict_schema(schema: object) -> bool:
    """True when strict mode accepts ``schema`` unchanged: an object whose every object schema
    (itself and each nested one: properties, array items, ``anyOf`` branches, ``$defs``) lists
    all its properties in ``required`` and says ``"additionalProperties": false``."""
    return isinstance(schema, dict) and _is_object(schema) and _strict(schema)


def _strict(schema: object) -> bool:
    if not isinstance(schema, dict):
        return False
    if _is_object(schema):
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        if not isinstance(properties, dict) or not isinstance(required, list):
            return False
        if not all(isinstance(name, str) for name in required):
            return False
        if schema.get("additionalProperties") is not False or set(required) != set(properties):
            return False
    return all(_strict(child) for child in _children(schema))


def _is_object(schema: JsonObject) -> bool:
    kind = schema.get("type")
    return (
        kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in schema
    )


def _children(schema: JsonObject) -> list[object]:
    """The sub-schemas of ``schema`` (what strict mode checks recursively)."""
    children: list[object] = []
    for key in ("properties", "$defs", "definitions"):
        value = schema.get(key)
        if isinstance(value, dict):
            children.extend(value.values())
    items = schema.get("items")
    if items is not None:
        children.extend(items if isinstance(items, list) else [items])
    for key in ("anyOf", "allOf", "oneOf"):
        value = schema.get(key)
        if isinstance(value, list):
            children.extend(value)
    return children
