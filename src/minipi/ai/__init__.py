"""The model layer ("pi_ai"): neutral items, endpoint config, one client per wire API.

    from minipi.ai import Endpoint, Message, ModelRequest, connect

    client = connect(Endpoint("http://127.0.0.1:8021/v1", "qwen3-0.6b", wire="responses"))
    try:
        response = client.create(ModelRequest("qwen3-0.6b", [Message("user", "hi")]))
    finally:
        client.close()

Importing this package stays cheap: httpx and the wire modules load on the first ``connect``.
``minipi.ai.testing`` has ``ScriptedModel`` for tests without HTTP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minipi.ai.endpoint import ClientConfig, Endpoint
from minipi.ai.types import (
    Delta,
    DeltaSink,
    FinishReason,
    FunctionCall,
    FunctionCallOutput,
    Item,
    JsonObject,
    Message,
    ModelClient,
    ModelRequest,
    ModelResponse,
    Reasoning,
    ToolSpec,
    Usage,
    Wire,
    output_text,
    parse_function_calls,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ClientConfig",
    "Delta",
    "DeltaSink",
    "Endpoint",
    "FinishReason",
    "FunctionCall",
    "FunctionCallOutput",
    "Item",
    "JsonObject",
    "Message",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "Reasoning",
    "ToolSpec",
    "Usage",
    "Wire",
    "connect",
    "output_text",
    "parse_function_calls",
]


def connect(
    endpoint: Endpoint,
    config: ClientConfig | None = None,
    *,
    transport: httpx.BaseTransport | None = None,
) -> ModelClient:
    """A client for ``endpoint`` speaking its ``wire``; close it when done.

    ``config`` defaults to ``ClientConfig()``; on the Responses wire,
    ``ClientConfig(previous_response_id=True)`` sends each request only the items added since
    the previous response, chained by its id (the server must store responses; see
    ``ClientConfig.previous_response_id``). ``transport`` replaces httpx's network transport
    (tests pass ``httpx.MockTransport``). Nothing is sent until the first ``create``.
    """
    if endpoint.wire == "responses":
        from minipi.ai.responses import ResponsesClient

        return ResponsesClient(endpoint, config, transport=transport)
    from minipi.ai.chat import ChatClient

    return ChatClient(endpoint, config, transport=transport)
