"""Assembling a run from its settings: the model client, the loop's config, the project tools.

    settings = Settings(base_url="http://127.0.0.1:8021/v1", model="my-model")
    model = open_model(settings, os.environ)          # an endpoint, `minipi serve`, or an engine
    try:
        with ProjectFiles("examples/sample_project") as files:
            tools = run_tools(settings, files, approver)
            config = agent_config(settings, model, tools)
            result = run_agent(model.client, tools, config, question)
    finally:
        model.close()

``minipi ask``/``chat`` (``minipi.cli``) and batch runs (``minipi.batch``) both build their
runs here. Nothing here reads the environment for settings: callers resolve flags, variables
and the config file into ``Settings`` (``env`` is passed only to find a local model file).
Guided tool calling wraps the client here, outside the loop: the loop never knows.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, TypeAlias

from minipi.agent import AgentConfig, AgentTool, Approver, ToolResult
from minipi.agent.config import EvidenceMode
from minipi.ai import ClientConfig, Endpoint, connect
from minipi.ai.endpoint import Pacer
from minipi.ai.types import ModelClient, Wire
from minipi.errors import ConfigError
from minipi.files import ProjectFiles, create_project_tools
from minipi.files.named import folders_said, named_in_project
from minipi.files.sandbox import ReadCache
from minipi.files.survey import survey

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "GUIDED_OPENING",
    "ApproveMode",
    "ModelHandle",
    "Settings",
    "agent_config",
    "open_model",
    "run_tools",
]

DEFAULT_INSTRUCTIONS = (
    "You answer questions about the files of one project, using the tools. "
    'Paths are relative to the project root; use "." for the root. '
    "Find files with list_files (or search_files), then read_file a path that a tool returned. "
    "Never guess file contents: every figure in your answer must come from a file you read. "
    "Finish the task before you answer; do not ask the user to open files. "
    "Answer in the language of the question."
)

ApproveMode: TypeAlias = Literal["deny", "ask", "all"]
"""Tools that change things: not offered (``deny``, read-only), asked before each run
(``ask``), or allowed (``all``)."""


_LOOP = AgentConfig()
_CLIENT = ClientConfig()


@dataclass(frozen=True, kw_only=True)
class Settings:
    """How to run: where the model is, the loop's budgets, what the tools may do. The loop's
    fields have ``AgentConfig``'s names and defaults, and become its fields as they are
    (``agent_config``); the HTTP ones become ``ClientConfig``'s (``client_config``)."""

    base_url: str | None = None
    """OpenAI-compatible base URL (``…/v1``); None: the local engine."""
    model: str | None = None
    """Model name (required with ``base_url``)."""
    api_key: str | None = field(default=None, repr=False)
    """Bearer token, if the endpoint needs one. Never printed or written to traces."""
    wire: Wire = "chat"
    """``chat`` (/chat/completions) or ``responses`` (/responses)."""
    request_options: Mapping[str, Any] = field(default_factory=dict)
    """Extra request keys (temperature, max_output_tokens, reasoning...)."""
    stream: bool = True
    """Stream replies (servers that cannot: False)."""
    timeout: float | None = None
    """Seconds to wait for an answer, and the longest silence in a stream (None:
    ``ClientConfig``'s)."""
    max_response_mb: int = _CLIENT.max_response_bytes // (1024 * 1024)
    """The most of one reply minipi reads (after decompression), in MiB."""
    model_file: str | None = None
    """A GGUF for the local engine (then there is no ``base_url``)."""
    model_file_origin: str = "--model-file"
    """Where ``model_file`` came from, for messages (``config file PATH``...)."""
    guided: bool | None = None
    """Guided tool calling; None: on for the local engine, off for other endpoints."""
    instructions: str = DEFAULT_INSTRUCTIONS
    max_turns: int = _LOOP.max_turns
    max_tool_calls: int | None = _LOOP.max_tool_calls
    max_calls_per_reply: int = _LOOP.max_calls_per_reply
    max_seconds: float | None = _LOOP.max_seconds
    required_tools: tuple[str, ...] = _LOOP.required_tools
    context_tokens: int | None = _LOOP.context_tokens
    """The model's context window (None: the local engine's, else unknown)."""
    evidence: EvidenceMode = _LOOP.evidence
    approve: ApproveMode = "deny"
    allow: tuple[str, ...] = ()
    """Sensitive paths (``.env``...) the file tools may read after all."""

    def client_config(self, *, stream: bool = True) -> ClientConfig:
        """The HTTP client settings (``stream=False``: never stream)."""
        config = replace(
            _CLIENT, stream=self.stream and stream, max_response_bytes=self.max_response_mb << 20
        )
        if self.timeout is None:
            return config
        return replace(config, read_timeout=self.timeout, stream_idle_timeout=self.timeout)


_SHARED = tuple(f.name for f in fields(AgentConfig) if f.name in {g.name for g in fields(Settings)})
"""The settings that are the loop's own, under the same names."""


@dataclass
class ModelHandle:
    """An open model client (``client.model`` is the model's name), where it is, and what to
    stop when the run or command ends."""

    client: ModelClient
    base_url: str
    embedded: bool
    stops: list[Callable[[], None]] = field(default_factory=list)
    context_tokens: int | None = None
    """The model's context window, when the engine tells (our own engine's ``n_ctx``)."""
    model_file: str | None = None
    """The GGUF file the embedded engine serves (for the trace: a run can be reproduced)."""
    guided: bool = False
    """Replies are grammar-guided (``minipi.guided.GuidedClient``)."""
    parameters: float | None = None
    """How many weights the embedded engine's model has (its log says), else None."""

    def close(self) -> None:
        self.client.close()
        for stop in reversed(self.stops):
            stop()


Report: TypeAlias = Callable[[str], None]


def _say(message: str) -> None:
    print(f"minipi: {message}", file=sys.stderr, flush=True)


def open_model(
    settings: Settings,
    env: Mapping[str, str],
    *,
    can_approve: bool = True,
    report: Report = _say,
    pacer: Pacer | None = None,
    deadline: float | None = None,
) -> ModelHandle:
    """Connect to the configured endpoint, or to the local engine when none is configured
    (a running ``minipi serve``, else an engine started now; ``report`` says which).

    Without ``can_approve``, guided replies cannot name the mutating tools at all; a
    ``pacer`` is shared by the clients of concurrent runs (a 429 slows them all). An engine
    started now must be ready by ``deadline`` (``time.monotonic()``; the run's
    ``--max-seconds`` counts its start), else ``ModelDeadlineError``.
    """
    configured = settings.base_url is not None and settings.model_file is None
    guided = settings.guided if settings.guided is not None else not configured
    # A guided reply is a JSON document, not text to show as it comes: not streamed.
    config = replace(settings.client_config(stream=not guided), pacer=pacer)
    if configured:
        if settings.model is None:
            raise ConfigError("no model name: pass --model NAME (or set QWEN_MODEL / OPENAI_MODEL)")
        assert settings.base_url is not None
        endpoint = Endpoint(settings.base_url, settings.model, settings.api_key, settings.wire)
        handle = ModelHandle(connect(endpoint, config), endpoint.base_url, embedded=False)
    else:
        handle = _local(settings, env, config, report, deadline)
    if guided:
        from minipi.guided import AnswerForm, GuidedClient

        # Our engine reads a GBNF grammar, so answers cite facts; other servers (vLLM,
        # OpenAI) take a JSON Schema as response_format only: the plain answer form.
        form: AnswerForm = "facts" if handle.embedded else "plain"
        small = handle.parameters is not None and handle.parameters < FULL_OFFER_FROM
        handle.client = GuidedClient(
            handle.client, offer_mutating=can_approve, answer=form, small=small
        )
        handle.guided = True
    return handle


def _local(
    settings: Settings,
    env: Mapping[str, str],
    config: ClientConfig,
    report: Report,
    deadline: float | None = None,
) -> ModelHandle:
    """A running ``minipi serve`` of this user on 127.0.0.1:8021 (``_served``), else a fresh
    engine on a free port.

    Usage errors (exit 2), in this order: ``--wire responses``; a bad ``--model-file`` or
    ``MINIPI_MODEL_FILE``, whatever is installed; the missing ``local`` extra, which only
    starting an engine needs (a running ``minipi serve`` is used without it)."""
    from minipi.local.client import EngineClient
    from minipi.local.engine import Engine, require_local_extra
    from minipi.local.models import explicit_model, resolve_model

    if settings.wire == "responses":
        raise ConfigError("the local engine speaks /chat/completions only: drop --wire responses")
    served = _served(config, report) if settings.model_file is None else None
    if served is not None:
        return served
    choice = explicit_model(settings.model_file, env, settings.model_file_origin)
    require_local_extra()  # before a download that would be of no use
    choice = choice or resolve_model(None, env, report=report)
    for line in (choice.notice or "").splitlines():
        report(line)
    report(f"starting the local engine: {choice.name} ({choice.path}, {choice.source})")
    engine = Engine.start(choice, deadline=deadline)
    endpoint = Endpoint(engine.base_url, engine.model_name, wire="chat")
    return ModelHandle(
        EngineClient(connect(endpoint, config), engine),
        engine.base_url,
        embedded=True,
        stops=[engine.stop],
        context_tokens=engine.n_ctx,
        model_file=str(choice.path),
        parameters=engine.parameters,
    )


def _served(config: ClientConfig, report: Report) -> ModelHandle | None:
    """The ``minipi serve`` answering on 127.0.0.1:8021, if it is minipi's own engine run by
    this user (``minipi.local.trust``): any other server there (another user's, another
    program's) would get the question and the files, so it is not used and ``report`` says
    why (a server named with ``--base-url`` is used whoever runs it)."""
    from minipi.local.ports import DEFAULT_PORT, find_running
    from minipi.local.trust import not_ours

    running = find_running(DEFAULT_PORT)
    if running is None:
        return None
    why = not_ours(DEFAULT_PORT)
    if why is not None:
        report(
            f"not using the server at {running.base_url}: {why}; starting an engine of "
            f"minipi's own (pass --base-url {running.base_url} to use that server)"
        )
        return None
    report(f"using the engine already running at {running.base_url} (model {running.model})")
    endpoint = Endpoint(running.base_url, running.model, wire="chat")
    return ModelHandle(connect(endpoint, config), running.base_url, embedded=True)


def agent_config(
    settings: Settings,
    model: ModelHandle,
    tools: Sequence[AgentTool] = (),
    *,
    question: str | None = None,
    files: ProjectFiles | None = None,
) -> AgentConfig:
    """The loop's configuration for ``settings`` on ``model`` with ``tools``: the settings of
    the loop's own (same names), the engine's context window when none is set, and for a
    guided run the opening calls (``guided_opening``) of the offered ``tools`` (so a caller
    with other tools, or none named, gets no call it never asked for)."""
    request_options = dict(settings.request_options)
    if model.embedded:
        request_options.setdefault("temperature", 0)  # a local demo should be repeatable
        # bounded: llama-cpp-python's server writes until the context is full otherwise, and
        # a small model can keep one guided answer's string open that long (minutes, on CPU)
        request_options.setdefault("max_output_tokens", EMBEDDED_MAX_OUTPUT[model.guided])
    offered = {tool.name for tool in tools if tool.offered}
    context_tokens = settings.context_tokens or model.context_tokens
    budget = int((context_tokens or 0) * OPENING_BYTES_PER_TOKEN)
    opening = guided_opening(offered, question, files, budget) if model.guided else ()
    shared = {name: getattr(settings, name) for name in _SHARED}
    return AgentConfig(
        **{
            **shared,
            "request_options": request_options,
            "context_tokens": context_tokens,
            "opening_calls": opening,
            "answer_on_last_turn": model.guided,
        }
    )


def guided_opening(
    offered: Collection[str],
    question: str | None = None,
    files: ProjectFiles | None = None,
    budget: int = 0,
) -> tuple[tuple[str, Mapping[str, Any]], ...]:
    """A guided run's first calls, of the ``offered`` tools: the project's top level
    (``GUIDED_OPENING``), then, given the ``question`` and its ``files``, each folder the
    question names listed (as a path, or a top-level folder by its bare name) and each file
    it names read (``files.named``: found as written or by name). A question that names no
    file is given the files it bears on, up to ``budget`` bytes, in the folders it names or
    else the whole project (``files.survey``: every file that fits, else those sharing the
    most words with the question), and beside the folders it names, the files it names by
    their bare name wherever they are (``files.survey``: "猫咪小花" for
    ``inbox/猫咪小花.txt`` in "move 猫咪小花's file to archive/"); one that names a file has
    said where to look, found or not. What the question names, or describes, is what its
    answer needs, and finding it costs a small model turns it may not have."""
    opening = [(name, arguments) for name, arguments in GUIDED_OPENING if name in offered]
    if question is not None and files is not None:
        from minipi.guided.rank import Question

        asked = Question.of(question)
        dirs = tuple(dict.fromkeys((*asked.named_dirs, *folders_said(files, question))))
        named = named_in_project(files, asked.named_files, dirs)
        opening += [(tool, {"path": path}) for tool, path in named if tool in offered]
        if "read_file" in offered and not asked.named_files:
            folders = tuple(path for tool, path in named if tool == "list_files")
            more = survey(files, question, budget, under=folders or (".",))
            opening += [("read_file", {"path": path}) for path in more]
    return tuple(opening)


OPENING_BYTES_PER_TOKEN = 1.2
"""The bytes of files a guided opening reads per token of the model's context window: at
about 3 bytes a token (English and code; Chinese in UTF-8 is 2-3), 40 % of the window, so
that the system prompt, the tool offer, the model's replies and a few more reads still fit
(4,096 tokens: about 4.9 KB of files)."""


FULL_OFFER_FROM = 400e6
"""A guided model this large or larger writes its calls as a list, one or several a reply,
and is offered the optional parameters of tools that do not explore the project, strings as
bounded free text; a smaller one (``GuidedClient(small=True)``), one call a reply, required
parameters only, strings as runs of the question's words. The fewer choices a grammar leaves
a model, the fewer it can get wrong, and the fewer it can get right: a very small model
repeats a call that a list lets it repeat and fills optional parameters with values nobody
asked for, while a larger one uses the list for calls the question needs together and writes
values in forms the question does not (the measurements: bench/TUNING.md)."""

EMBEDDED_MAX_OUTPUT = {True: 512, False: 2048}
"""The longest reply asked of the local engine unless the settings say (a guided reply is
JSON: calls, or facts and a sentence; an unguided one may think first)."""

GUIDED_OPENING = (("list_files", {"path": "."}),)
"""A guided run opens with the project's top level: a question about a project's files
starts from which files there are, and a guided reply is one call, so making that call for
the model saves it a request of its turn budget."""


def run_tools(
    settings: Settings,
    files: ProjectFiles,
    approver: Approver,
    extra: Sequence[AgentTool] = (),
    *,
    reads: ReadCache | None = None,
) -> list[AgentTool]:
    """The project's file tools and ``extra`` ones (MCP's); ``read_file`` answers a read of a
    file unchanged since ``reads`` (a conversation's) holds it without reading it again. In a
    read-only run (``approve="deny"``) the tools that change things are not offered, and a
    call of one anyway is answered ``read_only`` (nothing is asked, nothing changes): a
    question in a read-only run is not failed by a change it could not have asked for, and
    the log says that nothing was changed."""
    tools = [*create_project_tools(files, approver, reads=reads), *extra]
    if settings.approve != "deny":
        return tools
    return [_read_only(tool) if tool.mutating else tool for tool in tools]


def _read_only(tool: AgentTool) -> AgentTool:
    def refuse(arguments: Mapping[str, Any]) -> ToolResult:
        return ToolResult.error(
            "read_only",
            f"not run: {tool.name} changes things and this run is read-only (the user can "
            "allow changes with --approve ask or --approve all); nothing was changed",
        )

    return replace(tool, handler=refuse, offered=False)
