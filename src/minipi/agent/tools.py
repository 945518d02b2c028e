"""Tools: what the model is told (name, description, JSON Schema) plus the handler that runs.

A tool failure is data: ``execute`` never raises for a refused or failed call; it returns a
``ToolResult`` with ``is_error=True`` and a stable ``code`` that goes back to the model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from minipi.ai.types import JsonObject, ToolSpec
from minipi.errors import ToolError

if TYPE_CHECKING:
    from fastjsonschema import JsonSchemaValueException

__all__ = [
    "AgentTool",
    "ApprovalRequest",
    "Approver",
    "ToolHandler",
    "ToolResult",
    "compile_schema",
    "needs_approval",
    "parse_arguments",
]

MAX_ARGUMENTS_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What one call produced. ``code`` is a stable error code when ``is_error`` is true.

    ``changed`` says the call changed state (a file moved), so earlier reads may be stale.
    ``details`` is a JSON object about the result for other code, never sent to the model:
    the loop carries it to the ``FunctionCallOutput`` and sessions save it as it is. Its keys
    are the tool's to document (the file tools: ``minipi.files.tools``).
    ``denied``: a person said no at the call's approval prompt (set only by the approval
    path, ``denial``: unlike the code ``user_denied``, no tool can claim it by its text).
    """

    content: str
    _: KW_ONLY
    is_error: bool = False
    code: str | None = None
    denied: bool = False
    changed: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def error(cls, code: str, message: str) -> ToolResult:
        return cls(f"error [{code}]: {message}", is_error=True, code=code)

    @classmethod
    def denial(cls, message: str) -> ToolResult:
        """The answer to a call a person refused at its approval prompt (``user_denied``)."""
        return cls(
            f"error [user_denied]: {message}", is_error=True, code="user_denied", denied=True
        )


ToolHandler = Callable[[Mapping[str, Any]], "str | ToolResult"]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What a tool asks a human to approve, in the canonical form it will execute.

    ``details`` are shown as ``key: value`` lines (e.g. ``source``/``destination`` as
    root-relative canonical paths).
    """

    tool: str
    summary: str
    details: Mapping[str, str] = field(default_factory=dict)


Approver = Callable[[ApprovalRequest], bool]
"""Returns True to allow. Must treat a closed or non-interactive input as a denial."""


@dataclass(frozen=True)
class AgentTool:
    """One tool: the declaration the model sees, plus the handler our code runs.

    ``mutating`` tools change things (a file moved, a post published): they run alone and in
    the model's order, never in parallel with other calls; a successful one makes earlier
    identical reads re-runnable; the CLI asks before them and guided mode offers them only
    when an approval can be given. ``details`` is a JSON object about the tool for other
    code, never sent to the model (it travels in ``ToolSpec.details``).
    """

    name: str
    description: str
    parameters: JsonObject
    handler: ToolHandler
    mutating: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)
    offered: bool = True
    """False: the model is not told of this tool, but a call of it still gets the handler's
    answer (a read-only run answers that changes are off, rather than "unknown tool")."""

    def spec(self) -> ToolSpec:
        """What the model is told (``minipi.ai.declare.declare_tool`` makes the wire's JSON)."""
        return ToolSpec(
            self.name,
            self.description,
            self.parameters,
            mutating=self.mutating,
            details=self.details,
        )

    def validate(self, arguments: Mapping[str, Any]) -> str | None:
        """A short description of what is wrong with ``arguments``, or None when valid."""
        from fastjsonschema import JsonSchemaValueException

        check = self._check
        if isinstance(check, str):
            return check
        try:
            check(arguments)
        except JsonSchemaValueException as error:
            return _describe(error)
        return None

    @cached_property
    def _check(self) -> Callable[[Any], Any] | str:
        """The compiled validator of ``parameters``, made on first use and kept as long as
        the tool; or why the schema cannot be checked."""
        return compile_schema(self.parameters)

    def execute(self, arguments: Mapping[str, Any], *, validated: bool = False) -> ToolResult:
        """Validate ``arguments`` against the schema (unless the caller just did), then run the
        handler. Never raises."""
        problem = None if validated else self.validate(arguments)
        if problem is not None:
            return ToolResult.error("invalid_arguments", f"{self.name}: {problem}")
        try:
            result = self.handler(arguments)
        except ToolError as error:
            return ToolResult.error(error.code, error.message)
        except Exception as error:  # a handler bug must not end the run: report it as data
            return ToolResult.error("tool_failure", f"{self.name} failed: {type(error).__name__}")
        return result if isinstance(result, ToolResult) else ToolResult(result)


def compile_schema(schema: JsonObject) -> Callable[[Any], Any] | str:
    """A validator of ``schema`` (fastjsonschema: ~0.8 ms to compile, ~2 µs a call, where
    jsonschema takes ~50 µs a call and ~340 ms to import), or why it cannot be one (an
    unknown type, a bad pattern...). The same schema is compiled once per process (the
    tools of each chat question or batch task are new objects, their schemas the same):
    the 256 most recent, so a process that meets endless schemas does not grow."""
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError) as error:
        return f"its parameters are not JSON ({str(error)[:100]})"
    return _compiled(text)


@lru_cache(maxsize=256)
def _compiled(text: str) -> Callable[[Any], Any] | str:
    import fastjsonschema  # deferred: `import minipi` does not pay for it

    try:
        return fastjsonschema.compile(json.loads(text))
    except Exception as error:  # the compiler's own errors, and re.error for a bad pattern
        return f"its parameters are not a JSON Schema minipi can check ({str(error)[:100]})"


def needs_approval(
    tool: AgentTool,
    approver: Approver,
    describe: Callable[[Mapping[str, Any]], Mapping[str, str]] | None = None,
) -> AgentTool:
    """``tool``, asking ``approver`` before each run of its handler (after its arguments
    passed the schema). A refusal, or an approver that fails (closed input, a timeout), is
    ``user_denied`` and nothing runs. ``describe`` gives the lines to show (default: each
    argument as JSON); show what will really run. The tool becomes ``mutating``: one
    approval at a time, in the model's order. (The file tools' move asks inside its handler instead,
    to show the canonical paths it holds open.)"""

    def handler(arguments: Mapping[str, Any]) -> str | ToolResult:
        details = (
            dict(describe(arguments))
            if describe is not None
            else {k: json.dumps(v, ensure_ascii=False) for k, v in arguments.items()}
        )
        request = ApprovalRequest(tool.name, f"run {tool.name}", details)
        try:
            allowed = approver(request)
        except (EOFError, OSError, TimeoutError):
            allowed = False
        if not allowed:
            return ToolResult.denial(f"the user did not approve this {tool.name}")
        return tool.handler(arguments)

    return replace(tool, handler=handler, mutating=True)


def parse_arguments(text: str, *, allow_empty: bool) -> JsonObject | ToolResult:
    """Decode a call's JSON arguments, or an error result (``invalid_json`` and friends).

    ``""`` counts as ``{}`` only for tools that take no parameters (``allow_empty``). NaN and
    Infinity are refused: they are not JSON. A key given twice in one object is refused
    (``invalid_arguments``): parsers disagree on which value wins, so what is checked or shown
    might not be what runs.
    """
    if len(text) > MAX_ARGUMENTS_BYTES:
        return ToolResult.error(
            "arguments_too_large",
            f"arguments are {len(text)} characters; the limit is {MAX_ARGUMENTS_BYTES}",
        )
    if not text.strip() and allow_empty:
        return {}
    try:
        value = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique)
    except _DuplicateKey as error:
        return ToolResult.error("invalid_arguments", f"{error}; give each key once")
    except (ValueError, RecursionError) as error:
        return ToolResult.error("invalid_json", f"arguments are not valid JSON: {_short(error)}")
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        return ToolResult.error("invalid_arguments", f"arguments must be a JSON object, got {kind}")
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class _DuplicateKey(ValueError):
    """A JSON object names the same key twice."""


def _unique(pairs: list[tuple[str, Any]]) -> JsonObject:
    """``json.loads``'s object hook: the object, unless a key repeats."""
    value = dict(pairs)
    if len(value) != len(pairs):
        keys = [key for key, _ in pairs]
        twice = next(key for key in keys if keys.count(key) > 1)
        raise _DuplicateKey(f"arguments give the key {twice!r} twice")
    return value


def _short(error: BaseException) -> str:
    if isinstance(error, RecursionError):
        return "nested too deeply"
    return str(error).split("\n")[0][:120]


def _describe(error: JsonSchemaValueException) -> str:
    """fastjsonschema's message, in the words the model sees for every tool."""
    where = ".".join(str(p) for p in (error.path or [])[1:])
    value = error.value
    if error.rule == "required" and isinstance(value, dict):
        return _missing(error, value, where)
    if error.rule == "additionalProperties" and isinstance(value, dict):
        return _unexpected(error, value, where)
    return _invalid(error, value, where)


def _missing(error: JsonSchemaValueException, value: dict[Any, Any], where: str) -> str:
    """The required fields ``value`` lacks, one clause each."""
    missing = [n for n in error.rule_definition or () if n not in value]
    return "; ".join(f"{where + '.' if where else ''}{n!r} is required" for n in missing)


def _unexpected(error: JsonSchemaValueException, value: dict[Any, Any], where: str) -> str:
    """The fields of ``value`` its schema does not know."""
    known = (error.definition or {}).get("properties", {})
    extra = ", ".join(repr(k) for k in value if k not in known)
    return f"{where + ': ' if where else ''}unexpected field(s) {extra}"


def _invalid(error: JsonSchemaValueException, value: Any, where: str) -> str:
    """Any other broken rule: the value (cut short) and what the rule wanted."""
    message = (error.message or "").split(" ", 1)[-1]  # drop the "data.path" subject
    shown = json.dumps(value, ensure_ascii=False, default=str)
    shown = shown if len(shown) <= 40 else shown[:40] + "…"
    return f"{where}: {shown} {message[:100]}" if where else f"arguments {message[:100]}"
