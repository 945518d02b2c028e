"""The model layer ("pi_ai"): neutral items, endpoint config, one HTTP client per endpoint.

    from minipi.ai import Endpoint, Message, ModelRequest, connect

    client = connect(Endpoint("http://127.0.0.1:8021/v1", "my-model", wire="responses"))
    try:
        response = client.create(ModelRequest([Message("user", "hi")]))
    finally:
        client.close()

The modules: ``types`` (neutral items, ``ModelRequest``/``ModelResponse``, ``ModelClient``,
``RESERVED_OPTIONS``), ``endpoint`` (``Endpoint``, ``ClientConfig``; ``baseurl`` checks what
they would send), ``declare`` (a tool's declaration), one module per wire API (``chat``,
``responses``: ``encode`` -> dict, ``decode``), ``stream`` + ``sse`` (streamed answers),
``client`` (``HttpModelClient``: a wire over ``http.HttpCore``; ``bounds``, ``body``,
``depth``, ``answers`` and ``failures`` bound and word what a server sends), ``chain``
(Responses chaining as a wrapper client), ``testing`` (``ScriptedModel``). Importing this
package stays cheap: httpx and the wire modules load on the first ``connect``.
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
    from minipi.ai.client import HttpModelClient

    config = config or ClientConfig()
    if endpoint.wire == "chat":
        from minipi.ai import chat

        return HttpModelClient(endpoint, config, chat.WIRE, transport=transport)
    from minipi.ai import responses

    client = HttpModelClient(endpoint, config, responses.WIRE, transport=transport)
    if not config.previous_response_id:
        return client
    from minipi.ai.chain import ChainedClient

    return ChainedClient(client)
