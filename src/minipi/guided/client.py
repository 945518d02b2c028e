"""Guided tool calling for small local models: each reply is valid calls or an answer.

``GuidedClient`` wraps a chat-wire ``ModelClient`` (a llama.cpp-compatible server) and
constrains every reply with a JSON-Schema grammar sent as ``response_format``. The loop does
not know: it sends ordinary neutral requests and gets ordinary neutral items back.

What the server sees instead of the neutral request:

- no native tools; the tool declarations and the reply protocol are appended to the system
  instructions, which therefore never change during a run (the engine's prefix cache holds);
- the history as plain messages (tiny models' chat templates do not know the tool role): an
  earlier call as the assistant's ``{"tool": NAME, "arguments": {...}}`` (a reply's calls as
  a list of those when the run has tools that do not explore the project: with them, a reply
  lists its calls, one or several), an earlier answer as
  ``{"answer": TEXT}``, a tool result as a user message
  ``Result of list_files {"path": "reports"}:\\n<output>``; reasoning is left out. Each item is
  rendered once and the same ``Message`` object is reused on later turns, so the inner
  client's fragment cache and the server's prefix cache both hit;
- the constraint, rebuilt every turn from the history, only in ``response_format``
  (``guided_schema``): one branch per tool that can still be called usefully, plus the
  answer branch when it is allowed.

The rules of the schema are in ``minipi.guided.schema``, the system message in
``minipi.guided.prompt``.

The answer's form (``answer``, an ``AnswerForm`` of ``minipi.guided.grammar``):
``"facts"`` (the default) asks for ``{"facts": [F, ...], "answer": TEXT}``, where the facts are
verbatim pieces of this run's tool results (``guided_facts``), chosen before the text, each at
most once, in order; ``"digits"`` for ``{"answer": TEXT}`` whose digits can only be copied
from the results; ``"facts_digits"`` both; ``"plain"`` a free ``{"answer": TEXT}``. Every form
but ``plain`` is a GBNF grammar sent as the request's ``grammar`` (llama-cpp-python's server
and llama-server read it; ``style`` then does not matter); ``plain`` is the JSON Schema sent
as ``response_format``, for servers without GBNF (vLLM, OpenAI). In every form the answer is
offered only once a content fact (a file read, not only listed) shares a word with the
question, or when no tool is left to call.

The answer the loop sees is the model's text alone; the chosen facts ride on the answer
``Message`` as ``cited`` (``cited_lines``: each with the file it was read from), which no wire
sends: the CLI shows them in minipi's own block, marked as minipi's, and they are never fed
back to the model as its own text (a later request renders the answer as ``{"answer": TEXT}``,
or within the client's life as the reply the model wrote). The evidence check reads the text
only, so an answer whose own sentence states none of the figures is not backed by the facts
it cites (``minipi.evidence.verdict``: ``facts_only``). A fact the client did not offer (a server
that ignored the grammar) is dropped, never shown.

Styles of ``response_format``: ``"json_object"`` (``{"type": "json_object", "schema": S}``,
what llama-cpp-python's server accepts; its 0.3.x refuses ``json_schema`` with an error) and
``"json_schema"`` (``{"type": "json_schema", "json_schema": {"name", "schema": S}}``, what
llama.cpp's llama-server, vLLM and OpenAI accept).

A reply that is not JSON despite the grammar, or that is neither shape, raises
``ModelProtocolError`` (the server probably ignores ``response_format``). A well-formed call
the schema did not allow is passed on and the loop's own checks answer it (llama-cpp-python
silently falls back to a plain-JSON grammar for a schema it cannot convert). An answer whose
text is a call (``guided_reply.translate``) is that call when the schema offered its tool,
and a ``ModelProtocolError`` when it did not: text never gets round what the grammar
withholds (a second change, the last turn's answer). A blank answer
is an empty reply (the loop asks once more); a reply cut at the token limit passes through
with finish ``length``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from minipi.ai.think import strip_think
from minipi.ai.types import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    JsonObject,
    Message,
    ModelClient,
    ModelRequest,
    ModelResponse,
    ToolSpec,
    last_question,
    result_follows_question,
)
from minipi.errors import ConfigError
from minipi.guided.grammar import AnswerForm, Facts, guided_facts, guided_grammar
from minipi.guided.prompt import guided_instructions
from minipi.guided.reply import (
    Cited,
    ResponseFormatStyle,
    cited_lines,
    dumps_json,
    translate,
)
from minipi.guided.schema import (
    ANSWER_BRANCH,
    ReplyOffer,
    explores,
    guided_offer,
    guided_schema,
    loads_or_none,
    searches_only,
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

ANSWER_FORMS: tuple[AnswerForm, ...] = ("facts", "digits", "facts_digits", "plain")


class GuidedClient:
    """A ``ModelClient`` that makes the inner (chat-wire) client's replies grammar-guided.

    ``style`` picks the ``response_format`` shape the server understands. Which tools change
    things is read from each request's tools (``ToolSpec.mutating``), never from their names:
    after a successful call of one, identical calls made before it become allowed again;
    ``answer_needs_evidence`` withholds the answer until a tool result follows the question;
    ``free_text`` lets ``search_files``' query be any text, not only the question's words;
    ``offer_mutating=False`` leaves the tools flagged ``mutating`` out of the grammar (when no
    approval can be given, a tiny model's stray change could only be refused); ``answer`` is
    the form of the answer (module docstring). For a ``small`` model (``assemble.open_model``
    decides by size: ``FULL_OFFER_FROM``) a tool that does not explore the project is
    declared and offered with its required parameters only, its free strings are runs of the
    question's words, and a reply makes one call; otherwise a reply's calls are a list, one
    or several, in runs with such tools and requests that allow parallel calls (``lists``,
    ``optional`` and ``spans`` say which of these hold).
    """

    def __init__(
        self,
        inner: ModelClient,
        *,
        style: ResponseFormatStyle = "json_object",
        answer_needs_evidence: bool = True,
        free_text: bool = False,
        offer_mutating: bool = True,
        answer: AnswerForm = "facts",
        small: bool = False,
    ) -> None:
        if answer not in ANSWER_FORMS:
            raise ConfigError(
                f"guided answer form must be one of {', '.join(ANSWER_FORMS)}, not {answer!r}",
                code="invalid_answer_form",
            )
        self.inner = inner
        self.style = style
        self.answer_needs_evidence = answer_needs_evidence
        self.free_text = free_text
        self.offer_mutating = offer_mutating
        self.answer = answer
        self.small = small
        self._rendered: dict[int, tuple[Item, Message | None]] = {}

    @property
    def lists(self) -> bool:
        """Whether a reply's calls may be a list (not for a ``small`` model)."""
        return not self.small

    @property
    def optional(self) -> bool:
        """Whether optional parameters are offered (not to a ``small`` model)."""
        return not self.small

    @property
    def spans(self) -> bool:
        """Whether free strings are runs of the question's words (for a ``small`` model)."""
        return self.small

    def create(self, request: ModelRequest) -> ModelResponse:
        """Rewrite ``request`` for the grammar, ask the inner client, translate the reply."""
        if request.output_schema is not None:
            return self._structured(request, request.output_schema)
        _refuse_reserved(request.options)
        tools = self._offerable(request.tools)
        listing = self._listing(request, tools)
        offer = self._offer(request, tools, listing)
        constraint, facts = self._constraint(offer, request.items, tools)
        guided = self._guided(request, constraint, listing)
        cited = Cited(facts, last_question(request.items))
        declared = [t.name for t in request.tools]
        reply = self.inner.create(guided)
        response = translate(reply, self.style, cited, offer.tools, declared, request.items)
        if cited.composed is not None:  # later turns show the model its reply as it wrote it
            self._rendered[id(cited.composed)] = (cited.composed, cited.reply)
        return response

    def _structured(self, request: ModelRequest, schema: JsonObject) -> ModelResponse:
        """The reply to a request for JSON of ``schema`` (``ModelRequest.output_schema``, a
        structured answer): the history rendered and the instructions as every turn has them
        (the engine's prefix cache holds), the schema as the grammar, in the server's
        ``style``, the reply passed on as the server wrote it."""
        _refuse_reserved(request.options)
        constraint = {"response_format": response_format(schema, self.style)}
        guided = self._guided(replace(request, output_schema=None), constraint, listing=False)
        return self.inner.create(guided)

    def _offerable(self, tools: Sequence[ToolSpec]) -> Sequence[ToolSpec]:
        """The request's tools the grammar may offer (not the mutating ones without
        ``offer_mutating``)."""
        return tools if self.offer_mutating else [t for t in tools if not t.mutating]

    def _listing(self, request: ModelRequest, tools: Sequence[ToolSpec]) -> bool:
        """Whether the reply's calls are a list: the model ``lists``, the request allows
        parallel calls, and some tool does not explore the project."""
        listing = self.lists and request.parallel_tool_calls
        return listing and not all(explores(t) for t in tools)

    def _offer(self, request: ModelRequest, tools: Sequence[ToolSpec], listing: bool) -> ReplyOffer:
        return guided_offer(
            tools,
            request.items,
            request.tool_choice,
            mutating=frozenset(t.name for t in request.tools if t.mutating),
            answer_needs_evidence=self.answer_needs_evidence,
            free_text=self.free_text,
            parallel=listing,
            optional=self.optional,
            spans=self.spans,
        )

    def _guided(self, request: ModelRequest, constraint: JsonObject, listing: bool) -> ModelRequest:
        """The request the inner client sends: the history rendered, the tools declared in
        the instructions, the constraint in the options; the rest of ``request`` as it is
        (its ``deadline`` and ``cancel`` bound this request too). No delta sink: a guided
        reply is a JSON document, not text to show as it comes."""
        return replace(
            request,
            items=self._render(request.items, listing),
            instructions=guided_instructions(
                request.instructions,
                request.tools,
                self.answer,
                lists=self.lists,
                optional=self.optional,
            ),
            tools=(),
            tool_choice="auto",
            options={**request.options, **constraint},
            on_delta=None,
        )

    def _constraint(
        self, offer: ReplyOffer, items: Sequence[Item], tools: Sequence[ToolSpec]
    ) -> tuple[JsonObject, Facts]:
        """The request's constraint (``response_format`` or ``grammar``) and the facts offered.

        In every form, while a tool can still be called, the answer needs a content fact (a
        file read, not only a listing) that shares a word with the question (``Facts.leading``),
        unless ``answer_needs_evidence`` is off: a model let answer before it has read what
        the question is about answers from whatever it saw first (a listing, cited as if it
        were content, or the first file read, asked about or not). When no tool is left (every
        listed file read) the answer is offered whatever the facts: a Chinese question about
        an English JSON file shares no word with it; a search for the question's words does
        not count as a tool left (``searches_only``)."""
        facts = guided_facts(items) if offer.answer else Facts()
        held = self.answer_needs_evidence and result_follows_question(items)
        if held and not facts.leading and not searches_only(offer, tools):
            offer = offer.without_answer()
        schema = offer.schema()
        if self.answer == "plain":
            return {"response_format": response_format(schema, self.style)}, Facts()
        return {"grammar": guided_grammar(schema, facts, self.answer).gbnf()}, facts

    @property
    def model(self) -> str:
        return self.inner.model

    def close(self) -> None:
        self.inner.close()

    def _render(self, items: Sequence[Item], listing: bool = False) -> list[Item]:
        """The history as plain messages, reusing each item's rendering from earlier turns
        (a result the request already holds comes as the loop's pointer to it:
        ``minipi.agent.same``).

        The cache is keyed by item identity (checked, so a reused id is never confused) and
        keeps only the current history; a client shared by threads stays correct."""
        calls = {i.call_id: i for i in items if isinstance(i, FunctionCall)}
        previous, current = self._rendered, {}
        rendered: list[Item] = []
        for index, item in enumerate(items):
            hit = previous.get(id(item))
            if hit is not None and hit[0] is item:
                message = hit[1]
            else:
                alone = [item] if isinstance(item, FunctionCall) else []
                reply = _reply_calls(items, index) if listing else alone
                message = _render(item, calls, reply, listing)
            current[id(item)] = (item, message)
            if message is not None:
                rendered.append(message)
        self._rendered = current
        return rendered


def _refuse_reserved(options: Mapping[str, Any]) -> None:
    """A ``ConfigError`` for request options that set what guided mode builds each turn."""
    reserved = sorted({"response_format", "grammar"}.intersection(options))
    if reserved:
        raise ConfigError(
            f"request options may not set {', '.join(reserved)} in guided mode: "
            "GuidedClient builds it every turn",
            code="reserved_option",
        )


def response_format(schema: JsonObject, style: ResponseFormatStyle) -> JsonObject:
    """The ``response_format`` request value for ``schema`` in the server's ``style``."""
    if style == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "guided_reply", "strict": True, "schema": schema},
        }
    return {"type": "json_object", "schema": schema}


def _reply_calls(items: Sequence[Item], index: int) -> list[FunctionCall]:
    """The calls of one reply, when ``items[index]`` is the first of them (consecutive
    calls); none for a call that follows another (its reply is rendered with the first)."""
    if index and isinstance(items[index - 1], FunctionCall):
        return []
    reply: list[FunctionCall] = []
    for item in items[index:]:
        if not isinstance(item, FunctionCall):
            break
        reply.append(item)
    return reply


def _head(item: FunctionCallOutput, calls: Mapping[str, FunctionCall]) -> str:
    call = calls.get(item.call_id)
    return f"Result of {call.name} {dumps_json(_shown(call))}" if call else "Result"


def _render(
    item: Item,
    calls: Mapping[str, FunctionCall],
    reply: Sequence[FunctionCall] = (),
    listing: bool = False,
) -> Message | None:
    """One history item as a plain message (None for reasoning and empty messages); the
    calls of one reply as one message (``reply``: a JSON list when there are several)."""
    if isinstance(item, Message):
        return _rendered_message(item)
    if isinstance(item, FunctionCall):
        return _rendered_calls(reply, listing)
    if isinstance(item, FunctionCallOutput):
        return Message("user", f"{_head(item, calls)}:\n{item.output}")
    return None


def _rendered_message(message: Message) -> Message | None:
    """A message as it is, an assistant's as ``{"answer": TEXT}`` (None when empty)."""
    if message.role != "assistant":
        return message
    text = strip_think(message.text).strip()
    return Message("assistant", dumps_json({"answer": text})) if text else None


def _rendered_calls(reply: Sequence[FunctionCall], listing: bool) -> Message | None:
    """A reply's calls as one message: a JSON list when ``listing`` or when there are
    several; None for a call rendered with its reply's first."""
    shown = [{"tool": call.name, "arguments": _shown(call)} for call in reply]
    if not shown:
        return None  # rendered with the reply's first call
    listed = listing or len(shown) > 1
    return Message("assistant", dumps_json(shown if listed else shown[0]))


def _shown(call: FunctionCall) -> Any:
    """A call's arguments as a JSON value: the parsed object, or the text as sent."""
    arguments = loads_or_none(call.arguments)
    return arguments if isinstance(arguments, dict) else call.arguments
