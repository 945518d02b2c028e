"""The pages of ``minipi batch report``: the table of every task, and each task's transcript."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from minipi.batch.records import Record
from minipi.cli.export import Labels, run_html
from minipi.cli.html_page import attribute, page, text
from minipi.cli.transcript import transcript_of

if TYPE_CHECKING:
    from minipi.cli.batch_report import BatchView

__all__ = ["batch_page", "task_page"]

_SHARES = (
    ("succeeded", "succeeded", "finished", "tasks that ended succeeded, of those finished"),
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


def task_page(record: Record, trace: Mapping[str, Any] | None, back: str) -> str:
    """One task's transcript, from its trace (or what its record says, when it has none)."""
    events = trace.get("events") if trace is not None else None
    run = transcript_of("", events if isinstance(events, list) else [])
    if trace is None or run.status is None:  # no trace, or one cut short: the record's end
        run.status, run.code, run.error = record.status, record.code, record.error
        run.answer = run.answer or record.answer
    labels = Labels(run.question)
    body = (
        f'<p><a href="{attribute(back)}">← batch</a></p><h1>{text(record.id, 500)}</h1>'
        + run_html(run, "t", labels)
    )
    return page(f"minipi · {record.id}", body, lang=labels.lang)


def batch_page(
    view: BatchView, links: Mapping[str, str], statuses: Sequence[tuple[str, int]]
) -> str:
    """The report: totals, statuses, and the sortable table (each row opens its task)."""
    from minipi.cli.batch_report import cells

    summary = view.summary
    body = [f"<h1>minipi batch · {text(str(view.path), 2_000)}</h1>", '<p class="totals">']
    body += _totals(summary)
    body.append('</p><p class="totals">')
    body += [f"<span>{text(name, 200)}: <b>{count}</b></span>" for name, count in statuses]
    body.append("</p><table><thead><tr>")
    head = (
        "id",
        "status",
        "code",
        "correct",
        "traced",
        "unsupported",
        "turns",
        "seconds",
        "answer",
    )
    body += [f'<th data-k="{k}">{name}</th>' for k, name in enumerate(head)]
    body.append("</tr></thead><tbody>")
    for record in view.records:
        href = attribute(links.get(record.id, ""))
        row = cells(record)
        shown = [f'<td data-v="{attribute(row[0])}"><a href="{href}">{text(row[0], 300)}</a></td>']
        for k, cell in enumerate(row[1:], start=1):
            css = ' class="n"' if 4 <= k <= 7 else ' class="answer"' if k == 8 else ""
            shown.append(f'<td{css} data-v="{attribute(cell, 200)}">{text(cell, 300)}</td>')
        body.append(f'<tr class="row" data-href="{href}">' + "".join(shown) + "</tr>")
    body.append("</tbody></table>")
    return page("minipi batch report", "\n".join(body), lang="en")
