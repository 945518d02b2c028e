"""A run as a page a person opens: ``minipi sessions export NAME --html FILE`` (or ``--md``).

The page shows the question, each turn's calls with their arguments and results (a result
longer than ``FOLD_LINES`` lines is folded, one click opens it), the answer and its evidence:
each figure of the answer is a link to the very line of the tool result it was traced to, the
characters of the figure (its JSON field) marked there; a click opens the result, scrolls to
the line and highlights it (without script, ``:target`` still shows where). Unsupported
figures are marked, the changes the run made are listed, and the labels are in the
question's language.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from minipi.cli.html_page import MAX_LINE, attribute, text
from minipi.cli.transcript import Call, Transcript, status_said, tone, verdict_said
from minipi.cli.words import Words, words_for

__all__ = ["FOLD_LINES", "MAX_LINES", "Labels", "markdown", "run_html", "session_page"]

FOLD_LINES = 12
"""A result of more lines is folded: its summary says how many, a click opens it."""
MAX_LINES = 5_000
"""The most lines of one result a page shows (the rest is counted)."""

_LABELS: dict[str, tuple[str, str]] = {
    "question": ("问题", "Question"),
    "answer": ("答案", "Answer"),
    "turn": ("第 {n} 轮", "Turn {n}"),
    "result": ("结果", "result"),
    "error": ("错误", "error"),
    "no_result": ("（没有保存结果）", "(no result saved)"),
    "lines": ("{n} 行，点击展开", "{n} lines, click to open"),
    "evidence": ("依据", "Evidence"),
    "changes": ("改动", "Changes made"),
    "no_changes": ("没有改动", "nothing was changed"),
    "run": ("第 {n} 次运行", "Run {n}"),
    "status": ("结果", "status"),
    "notice": ("提示", "notice"),
    "source": ("来源", "source"),
    "figure": ("数字", "figure"),
    "unsupported": ("未找到来源", "no source found"),
    "verdict": ("判定", "Verdict"),
    "facts": ("minipi 从工具结果中引用的事实", "Facts minipi cited from the tool results"),
}


class Labels:
    """The page's words in the question's language (``minipi.cli.words`` for the rest)."""

    def __init__(self, question: str) -> None:
        self.words: Words = words_for(question)
        self.lang = "zh" if self.words.chinese else "en"

    def __call__(self, key: str, **values: object) -> str:
        return _LABELS[key][0 if self.words.chinese else 1].format(**values)


@dataclass
class _Output:
    """One result as lines, with the anchors the evidence links to."""

    anchor: str
    text: str
    starts: list[int] = field(default_factory=list)
    marks: dict[int, list[tuple[int, int, str]]] = field(default_factory=dict)
    """Line index -> (start, end, anchor) of each marked figure in it, sorted, disjoint."""
    first_line: int = 1

    def __post_init__(self) -> None:
        self.starts = [0, *(i + 1 for i, ch in enumerate(self.text) if ch == "\n")]
        if len(self.starts) > 1 and self.starts[-1] == len(self.text):
            self.starts.pop()  # a final line end starts no line

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def mark(self, start: int, end: int, name: str) -> str:
        """The anchor of the characters ``[start, end)``: marked if they fit in one line and
        overlap no earlier mark, else their line."""
        index = self.line_of(start)
        line_end = self.starts[index + 1] - 1 if index + 1 < len(self.starts) else len(self.text)
        here = self.marks.setdefault(index, [])
        fits = end <= line_end and end - self.starts[index] <= MAX_LINE
        if fits and all(end <= s or start >= e for s, e, _ in here):
            here.append((start, end, name))
            here.sort()
            return name
        return f"{self.anchor}-L{index + 1}"


class _Page:
    """The anchors of one run's page: its outputs, by call_id."""

    def __init__(self, prefix: str, run: Transcript) -> None:
        self.prefix = prefix
        self.outputs: dict[str, _Output] = {}
        for number, call in enumerate(run.calls, start=1):
            if call.output is not None and call.call_id not in self.outputs:
                self.outputs[call.call_id] = _Output(f"{prefix}-o{number}", call.output)
        self.links: dict[int, str] = {}
        """Claim index -> the anchor its link goes to."""
        claims = run.evidence["claims"] if run.evidence else []
        for index, claim in enumerate(claims):
            target = self._target(index, claim)
            if target is not None:
                self.links[index] = target

    def _target(self, index: int, claim: Any) -> str | None:
        sources = claim.get("sources") if isinstance(claim, dict) else None
        if not isinstance(sources, list) or not sources or not isinstance(sources[0], dict):
            return None
        source = sources[0]
        output = self.outputs.get(str(source.get("call_id")))
        if output is None:
            return None
        span = _span(source.get("range"), len(output.text))
        if span is not None:
            start, end = span
            line = source.get("line")
            read = source.get("column") is not None  # a read's line (a hit's is its file's)
            if read and isinstance(line, int) and not isinstance(line, bool):
                output.first_line = line - output.line_of(start)
            return output.mark(start, end, f"{self.prefix}-c{index + 1}")
        return output.anchor


def _span(value: Any, size: int) -> tuple[int, int] | None:
    """``value`` as a ``[start, end)`` range inside a text of ``size`` characters, or None."""
    if not isinstance(value, list) or len(value) != 2:
        return None
    start, end = value
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return None
    return (start, end) if 0 <= start < end <= size else None


def run_html(run: Transcript, prefix: str, labels: Labels) -> str:
    """One run's part of a page (its anchors start with ``prefix``)."""
    anchors = _Page(prefix, run)
    parts = [f"<h2>{text(labels('question'))}</h2>", f'<div class="box">{text(run.question)}</div>']
    for turn in run.turns:
        if not (turn.calls or turn.text or turn.notices):
            continue
        parts.append(
            f'<div class="turn"><div class="meta">{text(labels("turn", n=turn.number))}</div>'
        )
        if turn.text.strip():
            parts.append(f'<div class="box">{text(turn.text.strip())}</div>')
        parts.extend(
            f'<div class="meta">{text(labels("notice"))}: {text(n)}</div>' for n in turn.notices
        )
        parts.extend(_call_html(call, anchors, labels) for call in turn.calls)
        parts.append("</div>")
    parts.append(_end_html(run, anchors, labels))
    return "\n".join(parts)


def _call_html(call: Call, anchors: _Page, labels: Labels) -> str:
    took = f" · {call.seconds:g} s" if call.seconds is not None else ""
    head = (
        f'<div class="call"><span class="name">{text(call.name)}</span> '
        f"<code>{text(call.arguments, 4_000)}</code>"
        f' <span class="meta">{text(call.call_id, 200)}{took}</span>'
    )
    output = anchors.outputs.get(call.call_id)
    if call.output is None or output is None:
        return f'{head}<div class="meta">{text(labels("no_result"))}</div></div>'
    kind = labels("error") if call.is_error else labels("result")
    css = "err" if call.is_error else "ok"
    lines = _lines_html(output)
    count = len(output.starts)
    summary = f'<span class="{css}">{text(kind)}</span>'
    if call.code:
        summary += f" <code>{text(call.code, 200)}</code>"
    opened = " open" if count <= FOLD_LINES else ""
    summary += f" · {text(labels('lines', n=count))}" if count > FOLD_LINES else ""
    return (
        f'{head}<details id="{output.anchor}"{opened}><summary>{summary}</summary>'
        f"<pre>{lines}</pre></details></div>"
    )


def _lines_html(output: _Output) -> str:
    shown: list[str] = []
    body = output.text
    for index, start in enumerate(output.starts[:MAX_LINES]):
        end = output.starts[index + 1] - 1 if index + 1 < len(output.starts) else len(body)
        number = output.first_line + index
        cells = _marked(body, start, end, output.marks.get(index, []))
        shown.append(
            f'<span class="ln" id="{output.anchor}-L{index + 1}">'
            f'<span class="no">{number}</span>{cells}</span>'
        )
    if len(output.starts) > MAX_LINES:
        left = len(output.starts) - MAX_LINES
        shown.append(f'<span class="cut">… [{left:,} more lines not shown]</span>')
    return "".join(shown)


def _marked(body: str, start: int, end: int, marks: Sequence[tuple[int, int, str]]) -> str:
    """The line ``body[start:end]`` with its marks, cut at ``MAX_LINE`` characters."""
    out, at = [], start
    stop = min(end, start + MAX_LINE)
    for mark_start, mark_end, name in marks:
        out.append(text(body[at:mark_start]))
        out.append(f'<mark id="{name}">{text(body[mark_start:mark_end])}</mark>')
        at = mark_end
    out.append(text(body[at:stop]))
    if end > stop:
        out.append(f'<span class="cut">… [{end - stop:,} more characters on this line]</span>')
    return "".join(out)


def _end_html(run: Transcript, anchors: _Page, labels: Labels) -> str:
    parts = []
    if run.status == "succeeded":
        parts.append(f"<h2>{text(labels('answer'))}</h2>")
        parts.append(f'<div class="box answer">{_answer_html(run, anchors, labels)}</div>')
        parts.extend(_verdict_html(run, labels))
    elif run.status is not None:
        parts.append(f"<h2>{text(labels('status'))}: {text(run.status)}</h2>")
        detail = f"{run.code or ''}: {run.error or ''}"
        parts.append(f'<div class="box err">{text(detail)}</div>')
    if run.evidence is not None:
        parts.append(f"<h2>{text(labels('evidence'))}</h2>")
        parts.append(_evidence_html(run.evidence, anchors, labels))
    parts.append(f"<h2>{text(labels('changes'))}</h2>")
    changes = run.changes
    if changes:
        parts.append("<ul>" + "".join(f"<li>{text(c, 2_000)}</li>" for c in changes) + "</ul>")
    else:
        parts.append(f'<p class="meta">{text(labels("no_changes"))}</p>')
    return "\n".join(parts)


def _verdict_html(run: Transcript, labels: Labels) -> list[str]:
    """The verdict on the answer, coloured, with why; then the facts minipi cited."""
    parts = []
    if run.verdict is not None:
        said = verdict_said(run.verdict, labels.words)
        css = f"verdict {tone(run.status, run.verdict)}"
        parts.append(f"<h2>{text(labels('verdict'))}</h2>")
        parts.append(f'<div class="box {css}" data-verdict="{run.verdict.kind}">{text(said)}</div>')
    if run.facts:
        parts.append(f"<h2>{text(labels('facts'))}</h2>")
        parts.append("<ul>" + "".join(f"<li>{text(f, 2_000)}</li>" for f in run.facts) + "</ul>")
    return parts


def _claims(run: Transcript) -> list[Any]:
    claims = run.evidence["claims"] if run.evidence is not None else []
    return claims if isinstance(claims, list) else []


def _answer_html(run: Transcript, anchors: _Page, labels: Labels) -> str:
    """The answer with each claim's text a link to its source (unsupported ones marked)."""
    answer, at, out = run.answer, 0, []
    spans = []
    for index, claim in enumerate(_claims(run)):
        span = _span(claim.get("span"), len(answer)) if isinstance(claim, dict) else None
        if span is not None:
            spans.append((span[0], span[1], index, claim))
    for start, end, index, claim in sorted(spans, key=lambda s: (s[0], s[1])):
        if start < at:
            continue
        out.append(text(answer[at:start]))
        out.append(_claim_link(answer[start:end], index, claim, anchors, labels))
        at = end
    out.append(text(answer[at:]))
    return "".join(out)


def _claim_link(
    shown: str, index: int, claim: Mapping[str, Any], anchors: _Page, labels: Labels
) -> str:
    target = anchors.links.get(index)
    if claim.get("status") == "unsupported" or target is None:
        bad = " bad" if claim.get("status") == "unsupported" else ""
        title = labels("unsupported") if bad else str(claim.get("status"))
        return f'<span class="claim{bad}" title="{attribute(title)}">{text(shown)}</span>'
    return f'<a class="claim" href="#{target}" data-claim="{index + 1}">{text(shown)}</a>'


def _evidence_html(evidence: Mapping[str, Any], anchors: _Page, labels: Labels) -> str:
    from minipi.cli.evidence import evidence_lines

    head = evidence_lines(evidence, labels.words, fancy=False)[0]
    rows = [f'<p class="meta">{text(head)}</p><table><tbody>']
    for index, claim in enumerate(evidence.get("claims") or []):
        if not isinstance(claim, dict):
            continue
        rows.append(_evidence_row(index, claim, anchors, labels))
    rows.append("</tbody></table>")
    return "".join(rows)


def _where(sources: Any, labels: Labels) -> str:
    """Where the first source is: its path and pointer (or its tool), and its line."""
    first = sources[0] if isinstance(sources, list) and sources else {}
    if not isinstance(first, dict):
        return ""
    named = [str(first.get(k)) for k in ("path", "pointer") if first.get(k) not in (None, "")]
    where = " ".join(named) or str(first.get("tool") or "")
    if first.get("line") is not None:
        where += " · " + labels.words("line", n=first["line"])
    return where


def _evidence_row(index: int, claim: Mapping[str, Any], anchors: _Page, labels: Labels) -> str:
    status = str(claim.get("status"))
    link = _claim_link(str(claim.get("text")), index, claim, anchors, labels)
    where = _where(claim.get("sources"), labels)
    mark = "✗ " + labels("unsupported") if status == "unsupported" else status
    css = ' class="err"' if status == "unsupported" else ""
    return (
        f"<tr><td>{link}</td><td{css}>{text(mark)}</td><td><code>{text(where, 1_000)}</code>"
        "</td></tr>"
    )


def markdown(runs: Sequence[Transcript], title: str) -> str:
    """The runs as Markdown: every saved text in a fence longer than any it holds."""
    out = [f"# {_inline(title)}", ""]
    for number, run in enumerate(runs, start=1):
        labels = Labels(run.question)
        if len(runs) > 1:
            out += [f"## {labels('run', n=number)}", ""]
        out += [f"**{labels('question')}**", "", _fenced(run.question), ""]
        for turn in run.turns:
            if turn.text.strip():
                out += [f"*{labels('turn', n=turn.number)}*", "", _fenced(turn.text.strip()), ""]
            for call in turn.calls:
                out += [f"- {_code(call.name)} {_code(call.arguments[:2000])}", ""]
                if call.output is not None:
                    kind = labels("error") if call.is_error else labels("result")
                    out += [f"  {kind}:", "", _fenced(call.output[:200_000]), ""]
        out += _markdown_end(run, labels)
    return "\n".join(out) + "\n"


def _markdown_end(run: Transcript, labels: Labels) -> list[str]:
    out: list[str] = []
    if run.status == "succeeded":
        out += [f"**{labels('answer')}**", "", _fenced(run.answer), ""]
        if run.verdict is not None:
            out += [f"**{labels('verdict')}**: {_inline(verdict_said(run.verdict, labels.words))}"]
            out += [""]
        if run.facts:
            out += [f"**{labels('facts')}**", "", *(f"- {_inline(f)}" for f in run.facts), ""]
    elif run.status is not None:
        out += [f"**{labels('status')}**: `{_inline(run.status)}` {_inline(run.error or '')}", ""]
    if run.evidence is not None:
        from minipi.cli.evidence import evidence_lines

        out += [
            f"**{labels('evidence')}**",
            "",
            _fenced("\n".join(evidence_lines(run.evidence, labels.words, fancy=False))),
            "",
        ]
    changes = run.changes or [labels("no_changes")]
    out += [f"**{labels('changes')}**", "", *(f"- {_inline(c)}" for c in changes), ""]
    return out


def _fenced(body: str) -> str:
    longest = max((len(run) for run in _backtick_runs(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}"


def _backtick_runs(body: str) -> list[str]:
    import re

    return re.findall(r"`+", body)


def _code(value: str) -> str:
    """A Markdown code span of ``value`` on one line (nothing in it is markup)."""
    flat = value.replace("\r", " ").replace("\n", " ")
    fence = "`" * (max((len(run) for run in _backtick_runs(flat)), default=0) + 1)
    return f"{fence} {flat} {fence}"


def _inline(value: str) -> str:
    """One line of Markdown that no saved text can turn into markup, a link or HTML."""
    import html
    import re

    flat = value.replace("\r", " ").replace("\n", " ")
    return re.sub(r"([\\`*_\[\]()<>#!|{}~])", r"\\\1", html.escape(flat, quote=False))


def session_page(name: str, facts: Sequence[str], runs: Sequence[tuple[int, Transcript]]) -> str:
    """The page of session ``name``: ``facts`` (project, model, dates) under its title, then
    each ``(number, run)``."""
    from minipi.cli.html_page import page

    first = runs[0][1].question if runs else ""
    labels = Labels(first)
    body = [f"<h1>minipi · {text(name, 500)}</h1>"]
    body += [f'<div class="meta">{text(fact, 2_000)}</div>' for fact in facts]
    for number, run in runs:
        own = Labels(run.question)
        status = status_said(run.status, run.verdict, own.words)
        body.append(
            f'<section id="r{number}"><h1>{text(own("run", n=number))} · '
            f'<span class="{tone(run.status, run.verdict)}">{text(status)}</span></h1>'
        )
        body.append(run_html(run, f"r{number}", own))
        body.append("</section>")
    return page(f"minipi · {name}", "\n".join(body), lang=labels.lang)
