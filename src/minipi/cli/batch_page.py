"""The pages of ``minipi batch report``: the table of every task, and each task's transcript."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from minipi.batch.records import Record
from minipi.cli.export import Labels, run_html
from minipi.cli.html_page import attribute, page, text
from minipi.cli.transcript import saved_verdict, transcript_of
from minipi.cli.transcript import tone as transcript_tone
from minipi.cli.words import Words

if TYPE_CHECKING:
    from minipi.cli.batch_report import BatchView

__all__ = ["batch_page", "task_page", "tone"]

_TONES = {"ok": "green", "warn": "amber", "err": "red"}
"""``transcript.tone``'s colours as the report's ``tone-*`` classes (grey: none)."""

_SHARES = (
    ("succeeded", "succeeded", "finished", "tasks that ended succeeded, of those finished"),
    ("backed", "backed", "finished", "answers the tool results back, of the tasks finished"),
    ("correct", "correct", "judged", "answers holding every expected string, of tasks that expect"),
    (
        "traced",
        "traced",
        "with_figures",
        "answers whose every figure a tool result holds, of succeeded answers with figures",
    ),
)


def _totals(summary: Mapping[str, Any]) -> list[str]:
    shown = [f"<span>tasks: <b>{text(str(summary.get('tasks', '?')))}</b></span>"]
    for label, part, whole, meaning in _SHARES:
        p, w = summary.get(part), summary.get(whole)
        if isinstance(p, int) and isinstance(w, int) and w:
            value = f"{p}/{w} ({100 * p / w:.1f}%)"
            shown.append(f'<span title="{attribute(meaning)}">{label}: <b>{value}</b></span>')
    seconds = summary.get("seconds_per_task")
    if isinstance(seconds, dict) and seconds.get("p50") is not None:
        value = f"p50 {seconds.get('p50')} · p95 {seconds.get('p95')}"
        shown.append(f"<span>seconds per task: <b>{text(value)}</b></span>")
    return shown


def tone(record: Record) -> str:
    """The colour of a task's status, by the rule every page shares (``transcript.tone``):
    green for a backed answer, amber for a weak one, red for an unbacked one or a task that
    did not succeed; none for a succeeded task recorded before verdicts were."""
    return _TONES.get(transcript_tone(record.status, saved_verdict(record.verdict)), "")


def _verdict_tone(kind: str) -> str:
    return _TONES.get(transcript_tone("succeeded", saved_verdict({"kind": kind})), "")


def _kind(record: Record) -> str:
    return str((record.verdict or {}).get("kind") or "")


def _css(tone: str, *more: str) -> str:
    names = [*more, *(("tone", f"tone-{tone}") if tone else ())]
    return f' class="{" ".join(names)}"' if names else ""


def _why(record: Record, words: Words) -> str:
    """Why the answer is not backed, in ``words``' language (a reason this minipi has no
    words for, as recorded)."""
    reason = (record.verdict or {}).get("reason")
    if not reason:
        return ""
    try:
        return words(f"why_{reason}")
    except (KeyError, IndexError):
        return reason


def _standing(record: Record, words: Words) -> str:
    """The task's status and verdict, coloured, above its transcript."""
    status = record.shown_status if record.code is None else f"{record.status}/{record.code}"
    shown = [
        f"<span>{text(words('batch_status'))}: "
        f"<b{_css(tone(record))}>{text(status, 200)}</b></span>"
    ]
    kind = _kind(record)
    if kind:
        known = saved_verdict({"kind": kind}) is not None
        said = words(f"verdict_{kind}") if known else kind
        why = _why(record, words)
        shown.append(
            f"<span>{text(words('saved_verdict'))}: "
            f"<b{_css(_verdict_tone(kind))}>{text(said, 200)}</b>"
            + (f" — {text(why, 2_000)}" if why else "")
            + "</span>"
        )
    return '<p class="totals">' + "".join(shown) + "</p>"


def _asked(events: list[Any]) -> str:
    """The question the run was asked, as its trace's ``run_start`` says."""
    for event in events:
        if isinstance(event, dict) and event.get("type") == "run_start":
            question = event.get("question")
            return question if isinstance(question, str) else ""
    return ""


def task_page(
    record: Record, trace: Mapping[str, Any] | None, back: str, question: str = ""
) -> str:
    """One task's status, verdict and transcript, from its trace (or what its record says,
    when it has none); the question as the trace has it, else ``question`` (the task
    file's), and the page in its language."""
    found = trace.get("events") if trace is not None else None
    events = found if isinstance(found, list) else []
    run = transcript_of(_asked(events) or question, events)
    if trace is None or run.status is None:  # no trace, or one cut short: the record's end
        run.status, run.code, run.error = record.status, record.code, record.error
        run.answer = run.answer or record.answer
    labels = Labels(run.question)
    standing = _standing(record, labels.words)
    run.verdict = None  # said once, above the transcript (``_standing``)
    body = (
        f'<p><a href="{attribute(back)}">← batch</a></p><h1>{text(record.id, 500)}</h1>'
        + standing
        + run_html(run, "t", labels)
    )
    return page(f"minipi · {record.id}", body, lang=labels.lang)


def batch_page(
    view: BatchView, links: Mapping[str, str], statuses: Sequence[tuple[str, int]]
) -> str:
    """The report: totals, statuses, and the sortable table (each row opens its task)."""
    summary = view.summary
    body = [f"<h1>minipi batch · {text(str(view.path), 2_000)}</h1>", '<p class="totals">']
    body += _totals(summary)
    body.append('</p><p class="totals">')
    body += [f"<span>{text(name, 200)}: <b>{count}</b></span>" for name, count in statuses]
    body.append("</p><table><thead><tr>")
    body += [f'<th data-k="{k}">{name}</th>' for k, name in enumerate(_HEAD)]
    body.append("</tr></thead><tbody>")
    words = Words(False)
    for record in view.records:
        href = attribute(links.get(record.id, ""))
        body.append(f'<tr class="row" data-href="{href}">{_row(record, href, words)}</tr>')
    body.append("</tbody></table>")
    return page("minipi batch report", "\n".join(body), lang="en")


_HEAD = (
    "id",
    "status",
    "verdict",
    "code",
    "correct",
    "traced",
    "unsupported",
    "turns",
    "seconds",
    "answer",
)
"""The table's headings: ``batch_report.cells`` with the verdict after the status."""


def _row(record: Record, href: str, words: Words) -> str:
    """A task's cells: its id a link, its status and verdict coloured (the reason the
    verdict's tooltip)."""
    from minipi.cli.batch_report import cells

    row = cells(record)
    row.insert(2, _kind(record))
    why = _why(record, words)
    hint = f' title="{attribute(why)}"' if why else ""
    css = {
        1: _css(tone(record)) + hint,
        2: _css(_verdict_tone(row[2])) + hint,
        9: _css("", "answer"),
    }
    css.update(dict.fromkeys(range(5, 9), _css("", "n")))
    shown = [f'<td data-v="{attribute(row[0])}"><a href="{href}">{text(row[0], 300)}</a></td>']
    for k, cell in enumerate(row[1:], start=1):
        shown.append(f'<td{css.get(k, "")} data-v="{attribute(cell, 200)}">{text(cell, 300)}</td>')
    return "".join(shown)
