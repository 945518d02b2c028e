"""A ``CallToolResult`` as the text the model reads: every block kept, the whole bounded.

Text blocks are kept as they are; an embedded text resource is kept with its URI; images,
audio, binary resources and resource links become one short line each, saying their kind,
type and size (the model cannot use the bytes, and they would fill its context). With no
content blocks, the structured content is shown as JSON. ``isError`` makes the result a tool
error (code ``tool_error``) carrying the server's text.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator

from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)

from minipi.agent.tools import ToolResult

__all__ = ["to_tool_result"]


def to_tool_result(result: CallToolResult, server: str, tool: str, limit: int) -> ToolResult:
    """The model's view of ``result`` of ``server``'s ``tool``, at most ``limit`` characters
    plus a notice of what was cut."""
    text = _bounded(_pieces(result), limit, server)
    if result.is_error:
        message = text or "(the server gave no details)"
        return ToolResult.error("tool_error", f"{tool} on MCP server {server!r} failed: {message}")
    return ToolResult(text or "(no output)")


def _pieces(result: CallToolResult) -> Iterator[str]:
    if not result.content and result.structured_content is not None:
        yield json.dumps(result.structured_content, ensure_ascii=False)
        return
    for block in result.content:
        yield _block_text(block)


def _block_text(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return f"[{kind}: {block.mime_type}, {_decoded_size(block.data):,} bytes, not shown]"
    if isinstance(block, ResourceLink):
        size = f", {block.size:,} bytes" if block.size is not None else ""
        mime = f", {block.mime_type}" if block.mime_type else ""
        return f"[resource link: {block.uri}{mime}{size}]"
    if isinstance(block, EmbeddedResource):
        content = block.resource
        mime = content.mime_type or "unknown type"
        if isinstance(content, BlobResourceContents):
            blob_size = _decoded_size(content.blob)
            return f"[resource {content.uri}: {mime}, {blob_size:,} bytes, not shown]"
        return f"[resource {content.uri}]\n{content.text}"
    return f"[{getattr(block, 'type', 'unknown')} content, not shown]"


def _decoded_size(data: str) -> int:
    """Bytes of base64 ``data`` (its length when it is not valid base64)."""
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return len(data)


def _bounded(pieces: Iterator[str], limit: int, server: str) -> str:
    """The pieces joined by newlines, cut at ``limit`` characters with a notice; pieces past
    the limit are only counted (a 10 MB result is never copied whole)."""
    kept: list[str] = []
    used = total = 0
    for piece in pieces:
        total += len(piece) + (1 if total else 0)
        if used < limit:
            part = piece[: limit - used]
            kept.append(part)
            used += len(part) + 1
    text = "\n".join(kept)
    if total <= limit:
        return text
    return (
        f"{text[:limit]}\n[truncated: showing {limit:,} of {total:,} characters that MCP "
        f"server {server!r} returned; ask the tool for less (a narrower query, a page, a limit)]"
    )
