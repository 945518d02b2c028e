"""Guided mode: every reply of a model is valid calls of the offered tools, or an answer.

``GuidedClient`` (``minipi.guided.client``) wraps a chat-wire client of a llama.cpp-compatible
server; the loop does not know. What a reply may be is an ``Offer`` (``minipi.guided.schema``),
written for the server as a JSON Schema or a GBNF grammar (``minipi.guided.grammar``); the
run's state is read from the request's items (``minipi.guided.state``).
"""

from __future__ import annotations

from minipi.guided.client import (
    ANSWER_BRANCH,
    ANSWER_FORMS,
    AnswerForm,
    GuidedClient,
    ResponseFormatStyle,
    cited_lines,
    guided_instructions,
    guided_schema,
    response_format,
)

__all__ = [
    "ANSWER_BRANCH",
    "ANSWER_FORMS",
    "AnswerForm",
    "GuidedClient",
    "ResponseFormatStyle",
    "cited_lines",
    "guided_instructions",
    "guided_schema",
    "response_format",
]
