"""Every string the CLI shows while a run happens, in one table, in the question's language.

``Words(chinese)`` picks a column for a whole run; ``words_for(question)`` decides which from
the question's own words (a Chinese file name in an English question keeps English). Both
texts of a key take the same placeholders and say the same flags (a test compares them); why
a run failed is worded by ``minipi.said`` in the same way, and a detail worded elsewhere (a
server's, a guided reply's) is shown as made after the code's meaning, never dropped.
"""

from __future__ import annotations

from minipi.agent.result import RunResult
from minipi.language import written_in_chinese
from minipi.said import Said

__all__ = ["Words", "plural", "words_for"]

_TEXT: dict[str, tuple[str, str]] = {
    # the run's setting
    "project": ("[项目] {root}", "[project] {root}"),
    "project_cwd": ("（当前目录）", " (the current directory)"),
    # the status line (a terminal only)
    "status_start": ("正在启动模型", "starting the model"),
    "status_model": ("等待模型回复（第 {turn} 轮）", "waiting for the model (turn {turn})"),
    "status_tool": ("正在运行 {name}", "running {name}"),
    # the round-by-round log
    "call": ("[第 {turn} 轮调用]", "[turn {turn} call]"),
    "opening_call": ("[开场调用]", "[opening call]"),
    "text": ("[第 {turn} 轮模型文本]", "[turn {turn} model text]"),
    "ok": ("[工具成功]", "[tool ok]"),
    "failed": ("[工具失败] {code}", "[tool error] {code}"),
    "notice": ("[提示]", "[notice]"),
    # the summary line
    "succeeded": ("成功", "succeeded"),
    "succeeded_weak": ("成功·依据不足：{why}", "succeeded, weak: {why}"),
    "succeeded_unbacked": ("无依据：{why}", "unbacked: {why}"),  # not a plain success: exit 4
    "why_no_claims": ("答案中没有可核对的内容", "the answer states nothing that can be checked"),
    "why_weak_claims": ("答案只有太常见的数字", "the answer holds only too-common figures"),
    "why_from_question": ("有内容只出现在问题中", "a figure is only in the question"),
    "why_path_only": ("有内容只出现在文件名中", "a figure is only in a file name"),
    "why_facts_only": ("数字只在引用的事实中", "the figures are only in the cited facts"),
    "why_outside_question": (
        "数字来自问题未提到的文件",
        "the figures come from files the question did not name",
    ),
    "why_copied": (
        "答案只是照抄工具结果中的行",
        "the answer only repeats lines of the tool results",
    ),
    "why_computed": (
        "问题要的是计算出的数（计数、差值、合计），答案中没有 minipi 能从读到的内容算出的数",
        "the question asks for a computed figure (a count, a difference, a sum), and the "
        "answer states none that minipi could recompute from the reads",
    ),
    "why_conflicting": (
        "读到的文件对同一字段给出了不同的值，问题没有说明以哪个文件为准",
        "the files read give the same field different values, and the question does not "
        "say which file counts",
    ),
    "why_not_in_reads": (
        "问题提到的数字或编号在读到的内容里都没有，读到的不是问题问的对象",
        "a figure or code the question names is in nothing read: what was read is not about "
        "what was asked",
    ),
    "why_not_read": (
        "问题点名的文件（按文件名）列出过但没有读，答案来自别的文件",
        "a file the question names by its name was listed and never read: the answer comes "
        "from other files",
    ),
    "why_restates_question": (
        "答案核对得上的内容只是问题本身说过的",
        "what the answer states that can be checked only repeats the question",
    ),
    "why_mislabeled": (
        "有数字在来源中属于另一个字段或另一行，与答案的说法不符",
        "a figure belongs to another field or line of its source than the answer says",
    ),
    "why_left_out": (
        "问题问到的字段，答案没有给出其值",
        "the answer leaves out a field the question asks for",
    ),
    "why_says_absent": (
        "答案说文件里没有某项内容，读到的文件无法证明这一点",
        "the answer says something is not in the files, which no read can show",
    ),
    "why_no_reads": ("本次对话没有读到任何内容", "nothing was read in this conversation"),
    "why_not_checked": ("未检查（--evidence off）", "not checked (--evidence off)"),
    "why_unsupported": ("有内容未在任何工具结果中找到", "a claim is in no tool result"),
    "why_unexamined": ("答案太长，未能全部检查", "the answer is too long to check whole"),
    "nothing_changed": ("，未做任何改动", ", nothing was changed"),
    "failed_run": ("失败", "failed"),
    "budget_exhausted": ("预算耗尽", "budget_exhausted"),
    "cancelled": ("已取消", "cancelled"),
    "summary": (
        "[{status}] {turns} 次模型请求，{calls} 次工具调用，{tokens}",
        "[{status}] {turns}, {calls}, {tokens}",
    ),
    "tokens": ("tokens 输入 {input} / 输出 {output}", "tokens in {input} / out {output}"),
    "no_tokens": ("服务器未报告 tokens", "tokens not reported by the server"),
    "cached": (" (cached {n})", " (cached {n})"),
    "changes": ("，{changes} 处改动", ", {changes} made"),
    "read_only_refused": (
        "，未做改动：本次运行只读（加 --approve ask 才能改动）",
        ", nothing changed: the run is read-only (--approve ask allows changes)",
    ),
    "all_failed": (
        "，但每次工具调用都失败了：答案没有依据工具读到的内容",
        ", but every tool call failed: the answer rests on nothing a tool read",
    ),
    # the answer, on a terminal
    "answer": ("[答案]", "[answer]"),
    # the sources block (the evidence of an answer's figures)
    "evidence": (
        "[依据] {done}/{wanted} 个数字可追溯",
        "[evidence] {done}/{wanted} figures traced",
    ),
    "evidence_none": ("[依据] 答案中没有需要追溯的数字", "[evidence] the answer holds no figures"),
    "evidence_no_results": ("（本次运行没有成功的工具结果）", " (this run has no tool result)"),
    "evidence_unsupported": ("未在任何工具结果中找到", "not found in any tool result"),
    "evidence_nearest": ("（最接近的是 {value}，在 {where}）", " (nearest: {value} in {where})"),
    "evidence_path": ("只出现在文件名中：{path}", "only in a file name: {path}"),
    "evidence_from_question": ("出自问题本身", "from the question itself"),
    "evidence_weak": ("（太常见，不计入）", "(too common to count)"),
    "evidence_unchecked": (
        "  （答案从第 {at} 个字符起太长，未再检查）",
        "  (the answer is too long: not checked from character {at} on)",
    ),
    "evidence_more": ("，另有 {n} 处", ", and {n} more"),
    "evidence_uncounted": ("，另有 {n} 个列出但不计入", ", {n} more listed, not counted"),
    "evidence_all_uncounted": (
        "[依据] 答案的数字都不计入追溯：{n} 个，列在下面",
        "[evidence] no figure of the answer counts as traced: {n} listed below",
    ),
    "cited": (
        "[摘自工具结果] {n} 条（由 minipi 引用）",
        "[cited by minipi] {n} from the tool results",
    ),
    "line": ("第 {n} 行", "line {n}"),
    "line_column": ("第 {n} 行第 {column} 列", "line {n}, column {column}"),
    "status_normalized": ("（写法不同，值相同）", "(same value, other form)"),
    "status_rounded": ("（约数）", "(rounded)"),
    "status_derived": ("（由几处拼成）", "(put together from several places)"),
    "status_ambiguous": ("（多处都有）", "(found in several places)"),
    "traced": ("，依据 {done}/{wanted}", ", {done}/{wanted} figures traced"),
    "raise_budget": ("（可用 {flag} 调高）", " (raise it with {flag})"),
    "end": ("{code}：{detail}", "{code}: {detail}"),
    "cancelled_start": ("minipi：已取消", "minipi: cancelled"),
    # the tools a run's MCP servers offer, said at its start
    "mcp_offers": (
        "minipi：MCP 服务器 {name} 向本次运行提供 {offered}/{total} 个工具：{names}",
        "minipi: MCP server {name} offers {offered} of {total} tools to this run: {names}",
    ),
    "mcp_none": ("无", "none"),
    "mcp_not_offered": ("  未提供：{names}（{why}）", "  not offered: {names} ({why})"),
    "mcp_mutating": (
        "可能改动内容，而本次运行只读；--approve ask 会先询问再提供",
        "may change things, and this run is read-only; --approve ask offers them, asking first",
    ),
    "mcp_untrusted": (
        "标为只读，但此服务器不受信任；--mcp-trust {server} 会提供",
        "marked read-only, but the server is not trusted; --mcp-trust {server} offers them",
    ),
    "mcp_left_out": ("  未采用：{name}：{why}", "  left out: {name}: {why}"),
    # minipi mcp serve: its start line, and what ask_project says to hosts that read text
    "serving": (
        "minipi：MCP 服务器（{transport}）为项目 {root} 提供 ask_project 和 read_sources，{mode}",
        "minipi: MCP server ({transport}) serving ask_project and read_sources for {root}, {mode}",
    ),
    "serving_read_only": (
        "只读（--approve all 允许改动）",
        "read-only (--approve all allows changes)",
    ),
    "serving_changes": (
        "允许改动，不会询问（--approve all）",
        "changes allowed without asking (--approve all)",
    ),
    "serving_token": (
        "需要 bearer token（MINIPI_MCP_TOKEN）",
        "a bearer token is required (MINIPI_MCP_TOKEN)",
    ),
    "serving_open": (
        "本机任何进程都可以调用它（设置 MINIPI_MCP_TOKEN 则要求 bearer token）",
        "any process on this machine may call it (set MINIPI_MCP_TOKEN to require a bearer token)",
    ),
    "serving_session": (
        "每个问题都保存在会话 {name} 中",
        "each question is saved in session {name}",
    ),
    "served_verdict": ("[结论] {kind}：{why}", "[verdict] {kind}: {why}"),
    "served_backed": (
        "答案中的数字都在读到的文件中找到",
        "the answer's figures were found in the files read",
    ),
    "tools_withheld": (
        "tools_withheld：问题只与本次运行未提供的工具相符，没有向模型发送任何内容：",
        "tools_withheld: the question fits only tools this run does not offer; nothing was sent "
        "to the model:",
    ),
    # minipi batch: its start line, its closing lines, the task pages of its report
    "batch_start": (
        "minipi batch：同时运行 {workers} 个任务（--workers）",
        "minipi batch: {workers} at a time (--workers)",
    ),
    "batch_start_local": (
        "minipi batch：一次运行 1 个任务（--workers 1，使用本地引擎时的默认值）：本地引擎一次只回答"
        "一个请求，多开 worker 只会排队等它；用 --workers N 更改",
        "minipi batch: 1 at a time (--workers 1, the default with the local engine): it answers "
        "one request at a time, so more workers would only wait in its queue; --workers N "
        "changes it",
    ),
    "batch_results": (
        "  结果：{results}；汇总：{summary}",
        "  results: {results}; summary: {summary}",
    ),
    "batch_fix_lines": (
        "  修正上面指出的行，再运行同一命令即可运行它们",
        "  fix the lines named above and run the same command to run them",
    ),
    "batch_again": (
        "  再运行同一命令即可完成其余任务",
        "  run the same command again to finish the rest",
    ),
    "batch_show": ("  终端上的表格：{command}", "  a table on the terminal: {command}"),
    "batch_report": (
        "  网页报告（每个任务一页记录）：{command}",
        "  a page, each task's transcript a click away: {command}",
    ),
    "batch_status": ("状态", "status"),
    # approvals
    "approval": ("[需要确认]", "[approval needed]"),
    "allowed_all": ("已自动允许（--approve all）", "allowed by --approve all"),
    "denied_flag": ("已拒绝（--approve deny）", "denied by --approve deny"),
    "denied_tty": (
        "已拒绝：标准输入不是终端（加 --approve all 才能允许）",
        "denied: stdin is not a terminal (use --approve all to allow)",
    ),
    "allow_prompt": ("允许吗？[y/N] ", "Allow? [y/N] "),
    "denied_eof": ("已拒绝：输入已结束", "denied: end of input"),
    "said_no_move": ("未移动：你拒绝了", "not moved: you said no"),
    "said_no": ("未运行：你拒绝了", "not run: you said no"),
    "denied_result": ("[你已拒绝]", "[you said no]"),
    # minipi chat: its greeting and its commands (a line that starts with /word)
    "chat_greeting": (
        "minipi chat：项目 {root}{where}，模型 {model}。直接提问；/help 列出命令，"
        "exit 或 Ctrl-D 退出",
        "minipi chat: project {root}{where}, model {model}. Ask a question; /help lists the "
        "commands, exit or Ctrl-D leaves",
    ),
    "chat_help": (
        "命令：\n  /help   列出这些命令\n  /clear  清空对话上下文，下一个问题重新开始"
        "（仍在同一会话中）\n  /model  显示所用的模型\n  exit、quit、退出 或 Ctrl-D 离开；"
        "Ctrl-C 取消正在回答的问题",
        "commands:\n  /help   lists these commands\n  /clear  clears the conversation: the next "
        "question starts afresh (in the same session)\n  /model  shows the model in use\n  exit, "
        "quit or Ctrl-D leaves; Ctrl-C cancels the question being answered",
    ),
    "chat_cleared": (
        "[会话 {name}] 对话上下文已清空：下一个问题重新开始，不带之前的问答；"
        "之前的问题仍保存在这个会话中（minipi chat --session {name} 恢复时会全部带回）",
        "[session {name}] context cleared: the next question starts a new conversation, "
        "without the earlier ones; they stay saved in this session (minipi chat --session "
        "{name} resumes them all)",
    ),
    "chat_cleared_unsaved": (
        "对话上下文已清空：下一个问题重新开始，不带之前的问答",
        "context cleared: the next question starts a new conversation, without the earlier ones",
    ),
    "chat_model": ("[模型] {model}，服务端 {url}", "[model] {model} at {url}"),
    "chat_model_file": (
        "[模型] {model}（{file}），本地引擎 {url}",
        "[model] {model} ({file}), the local engine at {url}",
    ),
    "chat_unknown": (
        "未知命令 {command}，/help 列出所有命令；没有发送给模型",
        "unknown command {command}, /help lists them; nothing was sent to the model",
    ),
    # a long tool output in the log
    "folded": (
        "  … 另有 {lines} 行未显示（共 {chars} 个字符；-v 显示全部）",
        "  … {lines} more lines not shown ({chars} characters in all; -v shows all)",
    ),
    # a saved run and its verdict (minipi sessions show, a session's page)
    "verdict_backed": ("有依据", "backed"),
    "verdict_weak": ("依据不足", "weak"),
    "verdict_unbacked": ("无依据", "unbacked"),
    "verdict_why": ("{verdict}：{why}", "{verdict}: {why}"),
    "saved_session": ("会话 {name}", "session {name}"),
    "saved_project": ("  项目  {project}", "  project  {project}"),
    "saved_model": ("  模型  {model}", "  model    {model}"),
    "saved_dates": (
        "  创建于 {created}   更新于 {updated}",
        "  created  {created}   updated {updated}",
    ),
    "saved_run": ("第 {n} 次运行  {when}  {status}", "run {n}  {when}  {status}"),
    "saved_unfinished": (
        "未结束（仍在运行，或已中断：下次打开时修复）",
        "unfinished (running, or interrupted: repaired when next opened)",
    ),
    "saved_question": ("问题", "question"),
    "saved_answer": ("答案", "answer"),
    "saved_said": ("模型", "model"),
    "saved_verdict": ("判定", "verdict"),
    "saved_request": (
        "  第 {turn} 次请求  tokens 输入 {input} / 输出 {output} / 缓存 {cached}  {took}",
        "  request {turn}  tokens in {input} / out {output} / cached {cached}  {took}",
    ),
    "saved_call": (
        "  调用 {name} {arguments}  ({call_id})",
        "  call {name} {arguments}  ({call_id})",
    ),
    "saved_ok": ("    成功  {output}", "    ok  {output}"),
    "saved_reasoning": ("  推理  （{n} 个字符）", "  reasoning  ({n} characters)"),
    "saved_asked": ("    请求确认：{summary}", "    approval asked: {summary}"),
    "saved_granted": ("    已允许", "    approval granted"),
    "saved_refused": ("    已拒绝", "    approval refused"),
    "saved_notice": ("  提示  {message}", "  notice  {message}"),
    "saved_total": (
        "  合计  {turns} 次模型请求，{calls} 次工具调用，"
        "tokens 输入 {input} / 输出 {output} / 缓存 {cached}{took}",
        "  total  {turns}, {calls}, tokens in {input} / out {output} / cached {cached}{took}",
    ),
    "saved_took": ("，用时 {seconds}", ", {seconds}"),
    "saved_more": ("[另有 {n} 行]", "[+{n} lines]"),
}

_END_ZH: dict[str, str] = {
    "max_turns": "模型请求次数已用完，仍未作答",
    "max_tool_calls": "工具调用次数已用完，模型还要调用",
    "max_seconds": "时间已用完，仍未作答",
    "interrupted": "进程在运行中结束；会话恢复时已修复",
    "user_denied": "你拒绝了模型要求的改动，未做任何改动",
    "change_failed": "模型要求的改动没有完成",
    "change_not_made": "答案说做了改动，但没有任何工具做过",
    "stuck_loop": "模型在被提醒后仍重复同一个调用",
    "repeated_tool_error": "同一个工具错误接连出现",
    "context_exhausted": "对话已超出模型的上下文长度",
    "truncated": "回复连续两次在输出上限处被截断",
    "unfinished": "回复连续两次没有说明已结束",
    "empty_output": "回复连续两次既无文本也无调用",
    "calls_missing": "回复连续两次说有工具调用，却没有调用",
    "stream_stalled": "流式回复连续两次在 --timeout 秒内没有动静",
    "stream_incomplete": "流式回复连续两次在结束前中断",
    "content_filter": "服务端过滤了回复",
    "unsupported_figures": "--evidence require：答案有内容不在任何工具结果中",
    "answer_unexamined": "--evidence require：答案太长，无法全部检查",
    "invalid_output": "--schema：模型给出的 JSON 两次都不符合结构",
    "unsupported_fields": "--evidence require：--schema 有字段没有任何读取支持",
    "malformed_call": "有工具调用没有名称，无法执行",
    "endpoint_unreachable": "连不上服务端，或连接中断（已重试）",
    "timeout": "在 --timeout 内没有回复（已重试）",
    "rate_limited": "服务端限流（429，已重试）",
    "endpoint_unavailable": "服务端不可用（5xx，已重试）",
    "unauthorized": "API 密钥被拒绝或缺失（401/403）",
    "model_not_found": "服务端没有这个模型（404）",
    "not_found": "这个地址不是 OpenAI 兼容的 API（404）",
    "bad_request": "服务端拒绝了请求（400）",
    "redirected": "服务端要求重定向，minipi 不跟随",
    "protocol_error": "服务端的回复无法使用",
    "malformed_stream": "流式回复中有一帧不是 JSON",
    "response_too_large": "回复超过 --max-response-mb",
    "model_error": "服务端在回复中报告了错误",
    "guided_invalid_json": "引导模式：回复不是 JSON",
    "guided_invalid_reply": "引导模式：回复既不是调用也不是答案",
    "session_write_failed": "有一步无法保存（磁盘已满？）；稍后可恢复会话",
    "session_unsavable": "有一步无法存为 JSON；可恢复会话",
}
"""What each end code means (``END_CODES``, in Chinese), shown before a detail that
``minipi.said`` did not word (``cancelled`` says nothing more than its status). A test keeps
it equal to ``END_CODES``."""

_BUDGET_FLAGS = {
    "max_turns": "--max-turns",
    "max_tool_calls": "--max-tool-calls",
    "max_seconds": "--max-seconds",
}
"""The flag that raises the budget a run ran out of (its config-file key is the code)."""

_PLURAL_NOUNS = {"turns": "model request", "calls": "tool call", "changes": "change"}


def plural(n: int, noun: str) -> str:
    """``1 tool call``, ``2 tool calls``: the one plural helper of the CLI."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class Words:
    """The table's column for one language."""

    def __init__(self, chinese: bool) -> None:
        self.chinese = chinese

    def __call__(self, key: str, **values: object) -> str:
        template = _TEXT[key][0 if self.chinese else 1]
        if not self.chinese:  # English counts take their nouns: "2 tool calls"
            values = {
                k: plural(v, _PLURAL_NOUNS[k]) if k in _PLURAL_NOUNS and isinstance(v, int) else v
                for k, v in values.items()
            }
        return template.format(**values)

    def summary(
        self,
        result: RunResult,
        changes: int = 0,
        all_failed: bool = False,
        read_only: bool = False,
    ) -> str:
        """The run's closing line: status, the requests the model answered, calls, tokens and
        the changes made (counted from tool results, not from the model's text); a warning
        when every call failed and the model answered anyway; the reason if it failed."""
        usage = result.usage
        if usage.input_tokens or usage.output_tokens:
            tokens = self("tokens", input=usage.input_tokens, output=usage.output_tokens)
        else:
            tokens = self("no_tokens")
        status = self._status(result)
        # the requests the model answered: a refused connection is not "1 model request";
        # a cancelled run counts the one it was waiting on, as its session records it
        answered = result.turns if result.status == "cancelled" else usage.requests
        calls = result.tool_calls
        line = self("summary", status=status, turns=answered, calls=calls, tokens=tokens)
        return line + self._measured(result) + self._notes(result, changes, all_failed, read_only)

    def _measured(self, result: RunResult) -> str:
        """The cached tokens and the claims traced to a source, when there are any."""
        said = ""
        if result.usage.cached_tokens:
            said += self("cached", n=result.usage.cached_tokens)
        if result.evidence is not None:
            done, wanted = result.evidence.supported, result.evidence.supported
            wanted += result.evidence.unsupported
            said += self("traced", done=done, wanted=wanted)
        return said

    def _notes(self, result: RunResult, changes: int, all_failed: bool, read_only: bool) -> str:
        """The changes made (or that none was), the warnings, and the reason a run failed."""
        said = ""
        if changes:
            said += self("changes", changes=changes)
        elif result.code == "change_not_made":
            said += self("nothing_changed")
        if read_only:  # the model asked for a change the run could not make
            said += self("read_only_refused")
        if result.succeeded and all_failed:
            said += self("all_failed")
        if result.status != "succeeded" and result.code != "cancelled":  # said by the status
            said += "\n" + self._end(result.code or "", str(result.error), result.said)
        return said

    def _end(self, code: str, detail: str, worded: Said | None) -> str:
        """The end code and what happened, on one line (the detail may quote a tool or a
        model), in the run's language: as ``minipi.said`` words it, else the code's meaning
        and the detail as made; a budget names the flag that raises it. The wording is used
        only while the detail is its English text: a detail changed after it was worded (a
        secret taken out) is shown as it is."""
        if self.chinese and worded is not None and worded.text() == detail:
            detail = worded.text(chinese=True)
        elif self.chinese and code in _END_ZH:
            detail = f"{_END_ZH[code]}（{detail}）"
        line = self("end", code=code, detail=detail.replace("\n", "\\n"))
        flag = _BUDGET_FLAGS.get(code)
        return line + self("raise_budget", flag=flag) if flag is not None else line

    def status_of(self, result: RunResult) -> str:
        """The run's status and, unless backed, its verdict with the reason (``-q``'s line)."""
        return self._status(result)

    def _status(self, result: RunResult) -> str:
        """The status as the summary names it: a succeeded run with its verdict when the
        answer is not backed (``minipi.evidence.verdict``)."""
        if result.status == "failed":
            return self("failed_run")
        verdict = result.verdict
        if result.status != "succeeded" or verdict is None or verdict.backed:
            return self(result.status)
        return self(f"succeeded_{verdict.kind}", why=self(f"why_{verdict.reason}"))


def words_for(question: str) -> Words:
    """Chinese when the question is written in Chinese (``minipi.language``)."""
    return Words(written_in_chinese(question))
