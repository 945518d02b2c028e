"""What minipi says when a request or a run fails, in each language, from one table.

A message made here is a ``Said``: a key of ``_TEXT`` and the facts filled into it (a URL, a
count, a server's words, another ``Said``). Its English text is what the exception or the
run's end says, as it always did; a run in Chinese shows the Chinese text of the same key
with the same facts, so no translation drops the URL, the path or the hint (a test compares
the placeholders, flags and names of each key's two texts). A count named in ``_NOUNS``
takes its noun in English (``3 attempts``); the Chinese text words it itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

__all__ = ["Said", "SaidValue"]

SaidValue: TypeAlias = "str | int | float | Said | tuple[Said, ...]"

_TEXT: dict[str, tuple[str, str]] = {
    # the endpoint (minipi.ai.failures, minipi.ai.answers)
    "cannot_connect": (
        "连不上 {base_url}——服务端在运行吗？（用 `minipi serve` 启动一个，或设置 --base-url / "
        "QWEN_BASE_URL）[尝试 {tries} 次：{detail}]",
        "cannot connect to {base_url} — is the server running? (start one with `minipi "
        "serve`, or set --base-url / QWEN_BASE_URL) [{tries}: {detail}]",
    ),
    "connection_dropped": (
        "与 {base_url} 的连接在回复完整之前断开了（尝试 {tries} 次：{detail}）——服务端可能崩溃"
        "或重启了，也可能是代理切断了连接",
        "the connection to {base_url} dropped before the answer was complete ({tries}: "
        "{detail}) — the server may have crashed or restarted, or a proxy cut the connection",
    ),
    "timeout": (
        "{url} 在 {limit}超时内没有回复（尝试 {tries} 次）——服务端可能过载，或提示太长；"
        "请调高超时，或换一个更小的模型",
        "no answer from {url} within the {limit} timeout ({tries}) — the server may be "
        "overloaded or the prompt too long; raise the timeout or use a smaller model",
    ),
    "limit_connect": ("{seconds} 秒的连接", "{seconds} s connect"),
    "limit_stream_idle": ("{seconds} 秒的流式空闲", "{seconds} s stream idle"),
    "limit_read": ("{seconds} 秒的读取", "{seconds} s read"),
    "deadline": (
        "本次运行的时限（--max-seconds）已用完：{doing}（{url}）；这次回复的内容都没有使用——"
        "模型需要更久的话，请调高 --max-seconds",
        "the run's time limit (--max-seconds) ran out {doing} ({url}); nothing of this "
        "reply was used — raise --max-seconds if the model needs longer",
    ),
    "doing_before_sending": ("在发出请求之前", "before the request was sent"),
    "doing_waiting": ("在等待回复时", "while waiting for the answer"),
    "doing_streaming": ("在流式接收回复时", "while the reply was streaming"),
    "doing_before_retry": (
        "在重试请求之前，上一次：{after}",
        "before the request could be retried, after: {after}",
    ),
    "too_large": (
        "来自 {url} 的{what}（解码后）超过 {size}，这是 minipi 读取一次回复的上限；已停止读取，"
        "其中的内容都没有使用。如果回复本来就这么大，请用 --max-response-mb"
        "（ClientConfig.max_response_bytes）调高上限",
        "the {what} from {url} is larger than {size} (decoded), the most minipi reads of one "
        "reply; reading stopped and nothing of it was used. If a reply this large is "
        "expected, raise the limit with --max-response-mb (ClientConfig.max_response_bytes)",
    ),
    "what_answer": ("回复", "answer"),
    "what_stream_line": ("流式回复中的一行", "stream line"),
    "what_streamed_reply": ("流式回复", "streamed reply"),
    "size_mib": ("{n} MiB", "{n} MiB"),
    "size_bytes": ("{n} 字节", "{n} bytes"),
    "server_html": (
        "{url} 回复 {status}，内容是 HTML 网页，不是模型 API 的 JSON——--base-url 是网页或代理吗？"
        "（请检查 --base-url / QWEN_BASE_URL，以及 HTTP_PROXY / NO_PROXY）",
        "{url} answered {status} with an HTML page, not the model API's JSON — is "
        "--base-url a web page or proxy? (check --base-url / QWEN_BASE_URL, and "
        "HTTP_PROXY / NO_PROXY)",
    ),
    "server_refuses": (
        "{url} 回复 {status}（{name}）：{detail}——这个服务端不处理这种请求，重试也没用；"
        "请检查 --base-url 和 --wire",
        "{url} answered {status} ({name}): {detail} — this server does not handle this "
        "request and retrying will not help; check --base-url and --wire",
    ),
    "redirected": (
        "{url} 要求重定向（{status}）到 {target}——请把 --base-url 设为 API 的真实地址"
        "（常常是 https:// 而不是 http://）",
        "{url} redirected ({status}) to {target} — set --base-url to the address the API "
        "really has (often https:// instead of http://)",
    ),
    "another_address": ("别的地址", "another address"),
    "unauthorized": (
        "{url} 回复 {status}（{sent}）：{detail}——请检查 --api-key / OPENAI_API_KEY",
        "{url} answered {status} ({sent}): {detail} — check --api-key / OPENAI_API_KEY",
    ),
    "key_refused": ("API 密钥被拒绝", "the API key was refused"),
    "no_key_sent": ("没有发送 API 密钥", "no API key was sent"),
    "bad_request": (
        "{url} 拒绝了请求（400）：{detail}",
        "{url} rejected the request (400): {detail}",
    ),
    "bad_request_context": (
        "{url} 拒绝了请求（400）：{detail}——对话可能超出了模型的上下文窗口",
        "{url} rejected the request (400): {detail} — the conversation may be longer than "
        "the model's context window",
    ),
    "answered": ("{url} 回复 {status}：{detail}", "{url} answered {status}: {detail}"),
    "model_not_found": (
        "{base_url} 上没有模型 '{model}'——请检查 --model / QWEN_MODEL",
        "model '{model}' not found at {base_url} — check --model / QWEN_MODEL",
    ),
    "model_not_found_listed": (
        "{base_url} 上没有模型 '{model}'（可用的有：{models}）——请检查 --model / QWEN_MODEL",
        "model '{model}' not found at {base_url} (available: {models}) — check --model / "
        "QWEN_MODEL",
    ),
    "not_found": (
        "{url} 不存在（404）——请检查 --base-url（通常以 /v1 结尾）",
        "{url} not found (404) — check --base-url (it usually ends in /v1)",
    ),
    "not_found_responses": (
        "{url} 不存在（404）——请检查 --base-url（通常以 /v1 结尾），或者这个服务端不支持 "
        "Responses API：试试 --wire chat",
        "{url} not found (404) — check --base-url (it usually ends in /v1), or this server "
        "does not speak the Responses API: try --wire chat",
    ),
    "rate_limited": (
        "{url} 限流（尝试 {tries} 次）：{detail}——请稍后再试，或检查服务端",
        "rate limited by {url} ({tries}): {detail} — try again later or check the server",
    ),
    "unavailable": (
        "{url} 回复 {status}（尝试 {tries} 次）：{detail}——请稍后再试，或检查服务端",
        "{status} from {url} ({tries}): {detail} — try again later or check the server",
    ),
    "rate_limited_wait": (
        "{url} 限流：{detail}——服务端要求等待 {wait} 秒（Retry-After），超过了 minipi 最多等待"
        "的 {most} 秒；请稍后再试",
        "rate limited by {url}: {detail} — the server asks to wait {wait} s (Retry-After), "
        "more than the {most} s minipi waits; try again later",
    ),
    "unavailable_wait": (
        "{url} 回复 {status}：{detail}——服务端要求等待 {wait} 秒（Retry-After），超过了 minipi "
        "最多等待的 {most} 秒；请稍后再试",
        "{status} from {url}: {detail} — the server asks to wait {wait} s (Retry-After), "
        "more than the {most} s minipi waits; try again later",
    ),
    "unreadable": (
        "{url} 发来的回复无法读取：{reason}",
        "{url} sent an unreadable answer: {reason}",
    ),
    "stream_stalled": (
        "来自 {url} 的流式回复 {seconds} 秒没有进展（流式空闲超时；保活帧和空的增量不算进展）："
        "已收到的部分没有使用",
        "the stream from {url} made no progress for {seconds} s (stream idle timeout; "
        "keep-alives and empty deltas do not count): the partial reply was not used",
    ),
    "stream_broke": (
        "来自 {url} 的流式回复中断了：{reason}；已收到的部分没有使用",
        "the stream from {url} broke off: {reason}; the partial reply was not used",
    ),
    "from_url": ("{said}（来自 {url}）", "{said} (from {url})"),
    # the run (minipi.agent)
    "max_turns": ("{turns} 次模型请求后仍未作答", "no final answer after {turns} model requests"),
    "max_seconds": ("{seconds} 秒内仍未作答", "no final answer within {seconds} s"),
    "max_tool_calls": (
        "工具调用预算（{limit}）已用完",
        "the tool-call budget ({limit}) is used up",
    ),
    "stuck_loop": (
        "模型重复了 {times} 次 {name} {arguments}",
        "the model repeated {name} {arguments} {times} times",
    ),
    "repeated_tool_error": (
        "同一个工具错误接连出现 {count} 次：{content}",
        "the same tool error {count} times: {content}",
    ),
    "user_denied": (
        "你拒绝了模型要求的改动，未做任何改动：{refused}",
        "a change the model asked for was denied, nothing was changed: {refused}",
    ),
    "change_failed": (
        "模型要求的改动没有完成：{failed}",
        "a change the model asked for did not happen: {failed}",
    ),
    "change_not_made": (
        "答案说做了改动，但没有任何工具做过：{claims}",
        "nothing was changed, but the answer says: {claims}",
    ),
    "answer_unexamined": (
        "--evidence require：答案太长，从第 {at} 个字符起无法检查",
        "--evidence require: the answer is too long to check from character {at}",
    ),
    "unsupported_figures": (
        "--evidence require：答案仍有内容没有任何工具结果支持：{claims}",
        "--evidence require: the answer still has claims no tool result backs: {claims}",
    ),
    "told_unmade": (
        "答案说做了改动，但没有任何工具做过：{claims}；已请模型去做，或如实作答",
        "the answer says a change no tool made: {claims}; the model is asked to make it or "
        "answer without it",
    ),
    "told_restated": (
        "答案只是重复了问题；已请模型用工具去做，或根据工具结果作答",
        "the answer only repeats the question; the model is asked to do it with the tools or "
        "answer from their results",
    ),
    "told_unbacked": (
        "答案有内容没有任何工具结果支持：{claims}；已请模型只根据工具结果重新作答",
        "the answer has claims no tool result backs: {claims}; the model is asked to answer "
        "again from the results",
    ),
    "invalid_output": (
        "模型给出的 JSON 两次都不符合 --schema：{problem}",
        "the model's JSON did not fit --schema, twice: {problem}",
    ),
    "unsupported_fields": (
        "--evidence require：这些字段没有任何工具结果支持：{fields}",
        "--evidence require: no tool result backs these fields: {fields}",
    ),
    "claim_unsupported": ("{claim}（不在任何工具结果中）", "{claim} (in no tool result)"),
    "claim_from_question": ("{claim}（只在问题中）", "{claim} (only in the question)"),
    "claim_path": ("{claim}（只在文件名中）", "{claim} (only in a file name)"),
    "context_exhausted": (
        "即使缩短了较早的工具输出，对话也放不进模型的上下文（{limit} tokens，其中 {reserve} "
        "留给回复）",
        "the conversation no longer fits the model's context ({limit} tokens, {reserve} kept "
        "for the reply) even with older tool outputs shortened",
    ),
    "content_filter": ("服务端过滤了模型的回复", "the endpoint filtered the model's reply"),
    "twice": (
        "{what}，连续两次；其中的内容都没有执行",
        "{what}, twice in a row; nothing in it was executed",
    ),
    "stream_no_finish": (
        "流结束了，却没有结束原因：回复不完整，没有采用",
        "the stream ended without a finish reason: the reply is incomplete and was not used",
    ),
    "stream_no_done": (
        "流结束了，却没有 [DONE] 标记：回复不完整，没有采用",
        "the stream ended without its [DONE] marker: the reply is incomplete and was not used",
    ),
    "stream_no_completed": (
        "流结束了，却没有 response.completed：回复不完整，没有采用",
        "the stream ended without response.completed: the reply is incomplete and was not used",
    ),
    "once_more": (
        "{what}；其中的内容都没有采用，再问一次",
        "{what}; nothing in it was used, asking once more",
    ),
    "calls_not_run": (
        "这次回复另有 {count} 个调用没有执行（每次回复最多 {limit} 个）",
        "{count} more calls of this reply were not run (at most {limit} a reply)",
    ),
    "outputs_shortened": (
        "为放进模型的上下文，缩短了 {count} 个较早的工具输出：{call_ids}",
        "shortened {count} earlier tool output(s) to fit the model's context: {call_ids}",
    ),
    "truncated": (
        "模型的回复在输出 token 上限处被截断（请调高 max_output_tokens）",
        "the model's reply was cut off at its output-token limit (raise max_output_tokens)",
    ),
    "unfinished": (
        "模型的回复没有说明已结束（没有已知的结束原因）",
        "the model's reply did not say it was finished (no known finish reason)",
    ),
    "calls_missing": (
        "回复说有工具调用，却一个也没有收到（服务端的工具调用解析器可能把它们丢了）",
        "the reply said it held tool calls but none arrived (the server's tool-call parser "
        "may have dropped them)",
    ),
    "empty_output": (
        "模型既没有返回文本，也没有返回工具调用",
        "the model returned neither text nor a tool call",
    ),
    # a session that could not be saved (minipi.session.recorder)
    "session_disk_full": (
        "会话 '{name}' 没有保存：{error}。运行在下一步之前停下了；请腾出一些空间，然后用 "
        "--session {name} 恢复（没有保存的部分标为 interrupted）",
        "session '{name}' was not saved: {error}. The run stopped before its next step; "
        "free some space, then resume with --session {name} (what was not saved is marked "
        "interrupted)",
    ),
    "session_not_saved": (
        "会话 '{name}' 没有保存：{error}。运行在下一步之前停下了；请用 --session {name} 恢复"
        "（没有保存的部分标为 interrupted）",
        "session '{name}' was not saved: {error}. The run stopped before its next step; "
        "resume with --session {name} (what was not saved is marked interrupted)",
    ),
    # a batch's closing lines (minipi.batch.summary)
    "batch_head": (
        "{tasks} 个任务：完成 {finished} 个（本次 {now} 个）",
        "{tasks} tasks: {finished} finished ({now} now)",
    ),
    "batch_pending": ("，{count} 个未完成", ", {count} not finished"),
    "batch_cancelled": ("（{count} 个已取消）", " ({count} cancelled)"),
    "batch_malformed": ("；跳过了 {malformed} 行格式错误的内容", "; {malformed} skipped"),
    "batch_rates": (
        "成功 {succeeded}  有依据 {backed}  正确 {correct}  可追溯 {traced}",
        "succeeded {succeeded}  backed {backed}  correct {correct}  traced {traced}",
    ),
    "batch_statuses": ("状态：{statuses}", "statuses: {statuses}"),
    "batch_tokens": (
        "token：输入 {input}，输出 {output}，缓存 {cached}",
        "tokens: input {input}, output {output}, cached {cached}",
    ),
    "batch_no_timing": ("每个任务的秒数：-", "seconds per task: -"),
    "batch_timing": (
        "每个任务的秒数：p50 {p50}，p95 {p95}",
        "seconds per task: p50 {p50}, p95 {p95}",
    ),
    "batch_wall": ("；总耗时 {wall} 秒", "; wall {wall} s"),
    # minipi as an MCP server's tools (minipi.mcp.server)
    "serve_question_empty": (
        "question 必须是非空的文本：说明你想从项目的文件中了解什么",
        "question must be a non-empty string: say what you want to know from the project's files",
    ),
    "serve_schema_object": (
        "schema 必须是一个 JSON 对象（JSON Schema），而不是 {value}",
        "schema must be a JSON object (a JSON Schema), not {value}",
    ),
    "serve_unknown_arguments": (
        "未知的参数：{names}（可用：{known}）",
        "unknown arguments: {names} (there are: {known})",
    ),
    "serve_unknown_tool": ("没有工具 {name}；可用：{names}", "no tool {name}; there are: {names}"),
    "serve_line": (
        "line 必须是从 1 起的整数，而不是 {value}",
        "line must be a whole number from 1, not {value}",
    ),
    "serve_context": (
        "context 必须是 0 到 {most} 的整数，而不是 {value}",
        "context must be a whole number from 0 to {most}, not {value}",
    ),
    "serve_past_end": (
        "第 {line} 行超出了 {path} 的末尾（共 {total} 行）",
        "line {line} is past the end of {path}, which has {total} lines",
    ),
}

_NOUNS = {"tries": "attempt", "malformed": "malformed line"}
"""Counts whose English takes a noun: ``tries=3`` is ``3 attempts``."""

_JOINS = ("；", "; ")
"""How a tuple of ``Said`` values is joined, in each language."""


@dataclass(frozen=True, slots=True)
class Said:
    """One message of the table: its key and the facts filled into both of its texts."""

    key: str
    values: tuple[tuple[str, SaidValue], ...] = ()

    @classmethod
    def of(cls, key: str, **values: SaidValue) -> Said:
        if key not in _TEXT:
            raise KeyError(f"no message {key!r} in minipi.said")
        return cls(key, tuple(values.items()))

    def text(self, chinese: bool = False) -> str:
        """The message in Chinese or (by default) English, every fact filled in."""
        column = 0 if chinese else 1
        filled = {name: _shown(name, value, column) for name, value in self.values}
        return _TEXT[self.key][column].format(**filled)

    def __str__(self) -> str:
        return self.text()


def _shown(name: str, value: SaidValue, column: int) -> str:
    if isinstance(value, Said):
        return value.text(chinese=column == 0)
    if isinstance(value, tuple):
        return _JOINS[column].join(_shown(name, one, column) for one in value)
    noun = _NOUNS.get(name)
    if column == 1 and noun is not None and isinstance(value, int):
        return f"{value} {noun}" if value == 1 else f"{value} {noun}s"
    return str(value)
