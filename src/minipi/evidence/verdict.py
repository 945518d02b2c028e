"""What a succeeded run's answer rests on, in one word a user reads at a glance.

A run that ends ``succeeded`` carries a ``Verdict`` (``RunResult.verdict``, ``run_end``'s
``"verdict"``, batch results), judged from the evidence of its last answer and the run's
question (``RunResult.question``: the caller's, read once; never a message minipi wrote).
Each rule states a principle that holds for any question and any files; where words cannot
tell, the verdict is not ``backed`` (it never guesses green):

- ``backed``: every claim of the answer was examined, none is ``unsupported``, ``from_question``
  or only in a file name (``path``), and at least one claim that is not a path and does not
  restate the question is supported by content a tool of this conversation returned. ``weak``
  claims (small numbers, a year alone) may stand beside; a file's name, whatever kind of
  claim reads it, backs nothing (it says where an answer is, not what it is), except where a
  tool's own record says what happened to it: the file a change of this question moved
  (``_reports_change``), a file a tool answered ``not_found`` that the answer says is missing
  (``minipi.evidence.absent``). A figure or quoted phrase found only in the question is the
  question repeated: no fault, no support (``_quoted_from_question``). Guided
  mode's cited facts are minipi's, not the answer's: they never make an answer backed; the
  answer's own claims are judged against the reads like any answer's.
- ``weak``: nothing is unsupported, but the answer is not shown to rest on the reads:
  - nothing it states is backed: no checkable claim (``no_claims``), only weak claims
    (``weak_claims``), only what the question says (``from_question``) or only a file
    name (``path_only``), the figures only in the facts guided mode cited (``facts_only``),
    no tool result (``no_reads``), no check at all (``--evidence off``: ``not_checked``);
  - ``restates_question``: what it states that is supported only repeats the question (a
    name, code or number the question already says carries no information);
  - ``not_in_reads``: a figure, date or code the question names is in no read of this
    question (a month the table does not reach): nothing read is about what was asked;
  - ``not_read``: a question word is the whole name of files this question listed (before
    the first dot: "production" names ``production.ini``) and none of them was read: the
    answer comes from other files;
  - ``mislabeled``: a figure's source says it is something else than the answer says
    (``minipi.evidence.context``: the words beside it name another record of its
    source, none of its own), or the question names the record it asks about and the
    figure is only in others (a yes-or-no field the question names is no there; a number
    of the question is in the headings of other records, not of its own: ``_deselected``);
  - ``outside_question``: the question names files or folders and a figure was found only in
    other files, unless a file the question names led there (its text names the file: a chain
    of clues); a search hit is in the file its line names, and a source whose file is not
    known (a tool with no path) is never counted as outside;
  - ``conflicting``: two files of the reads give a figure's field different values (two
    versions of one config, two months' reports) and the question names neither (by path
    or folder, or by a word that is a listed file's whole name), or names both by a word: which
    one counts, words cannot tell (``minipi.evidence.conflicts``);
  - ``copied``: the answer is only whole lines of the tool results (lines of two words or
    more, listed paths, joined by punctuation): it says nothing of its own;
  - ``says_absent``: the answer says something is not in the files ("not specified",
    "no mention of", "没有提到", "找不到"). A read shows what a file holds, never what no file
    holds: that part of the answer rests on what was not read as much as on what was, and
    words cannot tell whether another file holds it (a sentence about a file the tool
    answered ``not_found`` is the exception: the tool's record says it);
  - ``computed``: the question asks for a figure computed from the files (its arithmetic
    words: ``minipi.reading.Question.figure``; "the total", unless a read has a field of
    that name) and the answer states none that minipi recomputed from the reads
    (``derived``: a count, sum, mean or difference);
  - ``left_out``: the question lists more things than the answer states values, or names a
    field of the reads whose values the answer states none of (``minipi.evidence.asked``),
    or asks for a percentage and the answer states none.
- ``unbacked``: a claim is unsupported (``unsupported``), or part of the answer was too long
  to examine (``unexamined``).

Only ``backed`` is shown as a plain success. ``not_supported`` and ``claimed_changes`` are
what the evidence policy (``minipi.agent.policy.EvidencePolicy``) refuses under ``require``
and ends the run for under any mode (a change the answer claims that no tool made).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, last_question, since_question
from minipi.evidence.absent import ABSENT, NOT_FOUND, same_clause
from minipi.evidence.asked import holds_field, left_out
from minipi.evidence.scope import is_file, path_argument, run_scope, within
from minipi.reading import Question
from minipi.reading.paths import path_spans
from minipi.reading.words import words

if TYPE_CHECKING:
    from minipi.evidence import CheckedClaim, Evidence, Source

__all__ = [
    "NOT_SUPPORT",
    "Verdict",
    "VerdictKind",
    "claimed_changes",
    "judge",
    "not_supported",
    "only_restates",
]

VerdictKind: TypeAlias = Literal["backed", "weak", "unbacked"]

NOT_SUPPORT = frozenset({"unsupported", "from_question", "path"})
"""The statuses ``require`` refuses (``weak`` stays shown-only)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """``kind`` and, unless ``backed``, the ``reason`` (a code of the module docstring)."""

    kind: VerdictKind
    reason: str | None = None

    @property
    def backed(self) -> bool:
        return self.kind == "backed"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self.reason}


def only_restates(evidence: Evidence, question: Question) -> bool:
    """Whether what ``evidence``'s answer states that a read backs is only what the
    question already says, and it states nothing unsupported or weak beside (the
    ``restates_question`` verdict): an answer that adds nothing to the question."""
    claims = evidence.claims
    stated = [c for c in claims if _states(c)]
    if not stated or any(not c.supported and c.status != "path" for c in claims):
        return False
    return all(_restates(c, question) and not _confirmed_missing(c) for c in stated)


def not_supported(evidence: Evidence) -> tuple[CheckedClaim, ...]:
    """The claims that are no support (``NOT_SUPPORT``: an unsupported path or change
    claim among them), in answer order."""
    return tuple(c for c in evidence.claims if c.status in NOT_SUPPORT)


def claimed_changes(evidence: Evidence) -> tuple[CheckedClaim, ...]:
    """The unsupported claims of kind ``change``: a change the answer says was made that no
    tool of this run made."""
    return tuple(
        c for c in evidence.claims if str(c.claim.kind) == "change" and c.status == "unsupported"
    )


def judge(
    evidence: Evidence | None,
    *,
    question: Question | None = None,
    facts: Sequence[str] = (),
    items: Sequence[Item] = (),
    answer: str = "",
) -> Verdict:
    """The verdict on ``answer`` checked as ``evidence`` (None: not checked) for ``question``
    (None: the caller's last question of ``items``, read here); ``facts``: the lines minipi
    cited under it (guided mode, ``Message.cited``: ``fact (file)``); ``items``: the
    conversation (its tool results: ``outside_question``, ``copied``, ``mislabeled``)."""
    if evidence is None:
        return Verdict("weak", "not_checked")
    asked = question if question is not None else Question.of(last_question(items))
    scope = run_scope(items, asked.names)
    case = _Case(evidence, asked, tuple(facts), items, answer, scope, _ByName.of(items, asked))
    for rule in _RULES:
        verdict = rule(case)
        if verdict is not None:
            return verdict
    return Verdict("backed")


@dataclass(frozen=True, slots=True)
class _Case:
    """What one verdict reads."""

    evidence: Evidence
    question: Question
    facts: tuple[str, ...]
    items: Sequence[Item]
    answer: str
    scope: frozenset[str]
    """The files and folders the question names, and those their text leads to."""
    by_name: _ByName
    """The listed files a word of the question names by their name (``_ByName``)."""


def _faulty(case: _Case) -> Verdict | None:
    claims = [
        c
        for c in case.evidence.claims
        if not (_quoted_from_question(c) and _restates(c, case.question))
    ]
    statuses: set[str] = {c.status for c in claims}
    return _fault(case.evidence.unchecked_from is not None, statuses)


_ASKED_KINDS = ("number", "date", "time", "identifier", "quote")
"""The claims ``_unread_subject`` looks up in the reads when the question states them."""


def _quoted_from_question(claim: CheckedClaim) -> bool:
    """A figure, code or quoted phrase found only in the question is the question repeated
    ("You asked about "the night plan" on 2026-09-06: …"): it says nothing of its own, so it
    is no fault of the answer. It is not support either; and what the question states that no
    read holds makes the answer weak on its own ground (``not_in_reads``)."""
    return claim.status == "from_question" and str(claim.claim.kind) in _ASKED_KINDS


def _uninformative(case: _Case) -> Verdict | None:
    """Nothing the answer itself states is backed, or only what the question says."""
    evidence, facts = case.evidence, case.facts
    changed = _changes_made(case.items)
    stated = [c for c in evidence.claims if _states(c) or _reports_change(c, changed)]
    if any(_confirmed_missing(c) or not _restates(c, case.question) for c in stated):
        return None  # a file the question names, confirmed missing: that is news
    statuses: set[str] = {c.status for c in evidence.claims}
    reason = "restates_question" if stated else _why_weak(evidence, statuses, bool(facts))
    return Verdict("weak", reason)


def _unread_subject(case: _Case) -> Verdict | None:
    """A figure, date or code the question names that no read of this question holds: then
    nothing read is about what was asked (the month a table does not reach, a SKU no file
    has), and whatever the answer states from the reads is about something else."""
    from minipi.evidence import check_evidence  # loaded with the check

    named = check_evidence(case.question.text, case.items, case.question).claims
    unread = [c for c in named if _quoted_from_question(c)]
    return Verdict("weak", "not_in_reads") if unread else None


def _unread_named(case: _Case) -> Verdict | None:
    """A question word that is the whole name of files this question's listings showed (its
    name up to the first dot: "production" for ``proxy/production.ini``) names them; when
    none of them was read, what they hold is unknown, and an answer from other files is not
    shown to be about what was asked (the defaults beside the environment file the question
    names). Any one of them read is enough (``production.ini`` read, its ``.sample`` not)."""
    return Verdict("weak", "not_read") if case.by_name.unread else None


@dataclass(frozen=True, slots=True)
class _ByName:
    """The files this question's listings showed whose whole name (up to the first dot) is
    words of the question, and whether some name's files were none of them read."""

    files: frozenset[str] = frozenset()
    unread: bool = False

    @classmethod
    def of(cls, items: Sequence[Item], question: Question) -> _ByName:
        listed, read = _listed_and_read(since_question(items))
        names: dict[frozenset[str], bool] = {}
        files: set[str] = set()
        for path in listed:
            stem = words(posixpath.basename(path).split(".", 1)[0])
            if stem and stem <= question.words:
                names[stem] = names.get(stem, False) or path in read
                files.add(path)
        return cls(frozenset(files), not all(names.values()))


def _listed_and_read(later: Sequence[Item]) -> tuple[set[str], set[str]]:
    """The files listings showed (not a change's record), and those read or searched."""
    calls = {i.call_id: i for i in later if isinstance(i, FunctionCall)}
    listed: set[str] = set()
    read: set[str] = set()
    for item in (i for i in later if isinstance(i, FunctionCallOutput) and not i.is_error):
        if item.details.get("output") == "paths":
            lines = item.output.splitlines() if not item.details.get("changed") else ()
            listed.update(line.strip() for line in lines if is_file(line))
            continue
        call = calls.get(item.call_id)
        path = path_argument(call) if call is not None else None
        read.update({path} if path is not None and is_file(path) else _hit_files(item.output))
    return listed, read


def _hit_files(output: str) -> set[str]:
    """The files a search's hit lines name (``path:line: text``)."""
    from minipi.evidence.records import HIT

    return {m.group(1) for line in output.splitlines() if (m := HIT.match(line))}


def _mislabeled(case: _Case) -> Verdict | None:
    from minipi.evidence.context import mislabeled  # loaded with the check it reads

    wrong = mislabeled(case.answer, case.evidence.claims, case.items)
    return Verdict("weak", "mislabeled") if wrong or _deselected(case) else None


def _deselected(case: _Case) -> bool:
    """The question names which record it is about, and a figure was found only in other
    records: the figure is another record's than the one asked about. A record is named by
    a yes-or-no field of the question's words (``primary``: records where it is no are not
    asked about); by a number or code of the question in the headings and sections of a
    read (``Week 12``: the records under none of them are not); or by a code of the question
    (a date, an id: a token of digits with letters or separators) that some read holds,
    where the figure's record (its line, the lines it is under, its object's or block's
    values, its file's name) does not (the ERROR line of 2026-07-01 for "on 2026-07-02")."""
    outputs = {i.call_id: i.output for i in case.items if isinstance(i, FunctionCallOutput)}
    this = [i.output for i in since_question(case.items) if isinstance(i, FunctionCallOutput)]
    codes = _CODE.findall(case.question.text)
    held = [c for c in codes if not c.isdigit() and any(c in output for output in this)]
    found = [c for c in case.evidence.claims if c.supported and c.sources]
    for claim in found:
        content = [(s, outputs.get(s.call_id or "")) for s in claim.sources]
        if all(
            o is not None and _other_record(s, o, case.question, codes, held) for s, o in content
        ):
            return True
    return False


_CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]*\d[A-Za-z0-9.\-]*|\d")


def _other_record(
    source: Source, output: str, question: Question, codes: list[str], held: list[str]
) -> bool:
    from minipi.evidence.records import NO, file_of, parents_of, record_fields, section_lines

    if source.origin != "content":
        return False
    pairs = record_fields(source, output)
    if any(
        v.casefold() in NO and words(k) and words(k) <= question.words for k, v in pairs.items()
    ):
        return True
    at = output.count("\n", 0, source.range[0])
    lines = output.splitlines()
    own = (*parents_of(output, at), lines[at] if at < len(lines) else "")
    record = (*own, *pairs.values(), file_of(source, output) or "")
    for code in codes:
        after = "[A-Za-z0-9]" if code[-1].isalpha() else "[0-9]"  # 2026-07-02T10:30 holds the day
        carried = re.compile(rf"(?<![A-Za-z0-9.]){re.escape(code)}(?!{after})")
        if code in held and not any(carried.search(text) for text in record):
            return True
        naming = any(carried.search(line) for line in section_lines(output))
        if naming and not any(carried.search(line) for line in own):
            return True
    return False


def _outside_question(case: _Case) -> Verdict | None:
    """A figure found only outside the files the question names (and those they lead to):
    every figure of the text, cited or not (a cited port of the named config beside a
    database name from the example config next to it is not an answer from the config). A
    change is no read: the files it moved say nothing of where an answer came from; and what
    the question itself says ("猫咪小花" of "move 猫咪小花's file to archive/"), wherever it
    was read, is the question repeated, no answer from elsewhere."""
    named = case.scope
    claims = case.evidence.claims
    found = [
        c
        for c in claims
        if c.supported
        and str(c.claim.kind) not in ("path", "change")
        and not _restates(c, case.question)
    ]
    outputs = {i.call_id: i.output for i in case.items if isinstance(i, FunctionCallOutput)}
    outside = named and any(_outside(claim, named, outputs) for claim in found)
    return Verdict("weak", "outside_question") if outside else None


def _conflicting(case: _Case) -> Verdict | None:
    """The reads disagree on a figure's field and the question does not say which file
    counts (``minipi.evidence.conflicts``)."""
    from minipi.evidence.conflicts import conflicting  # loaded with the check

    named, by_name = case.scope, case.by_name.files
    found = conflicting(
        case.evidence.claims,
        case.items,
        path_argument,
        lambda path: within(path, named),
        lambda path: path in by_name,
    )
    return Verdict("weak", "conflicting") if found else None


def _copy(case: _Case) -> Verdict | None:
    return Verdict("weak", "copied") if _copied(case.answer, case.items) else None


def _not_computed(case: _Case) -> Verdict | None:
    question = case.question
    asks = question.computed or (question.total and not holds_field("total", case.items))
    derived = any(c.status == "derived" for c in case.evidence.claims)
    return Verdict("weak", "computed") if asks and not derived else None


def _left_out(case: _Case) -> Verdict | None:
    missing = left_out(case.question, case.answer, case.evidence, case.items)
    return Verdict("weak", "left_out") if missing or _no_percent(case) else None


def _says_absent(case: _Case) -> Verdict | None:
    """Unless each sentence that says something is missing names a file a tool of this
    question answered ``not_found`` (the one absence a tool shows)."""
    confirmed = [c.claim.span for c in case.evidence.claims if _confirmed_missing(c)]
    for found in ABSENT.finditer(case.answer):
        if not any(same_clause(case.answer, found.span(), span) for span in confirmed):
            return Verdict("weak", "says_absent")
    return None


def _changes_made(items: Sequence[Item]) -> frozenset[str]:
    """The calls of this question whose tool changed a file (``details["changed"]``)."""
    return frozenset(
        i.call_id
        for i in since_question(items)
        if isinstance(i, FunctionCallOutput) and i.details.get("changed") is True
    )


def _reports_change(claim: CheckedClaim, changed: frozenset[str]) -> bool:
    """A path the record of a change this question made shows (the file moved, where it
    went): said after the change, it reports what the tool did, and the tool's own record
    backs it ("the file is now adopted/cat.txt")."""
    return (
        str(claim.claim.kind) == "path"
        and claim.supported
        and any(s.call_id in changed for s in claim.sources)
    )


def _confirmed_missing(claim: CheckedClaim) -> bool:
    """A path claim backed by a tool's ``not_found`` for it (``minipi.evidence.absent``)."""
    return (
        str(claim.claim.kind) == "path"
        and claim.supported
        and bool(claim.sources)
        and all(s.text.startswith(NOT_FOUND) for s in claim.sources)
    )


_PERCENT_ASKED = re.compile(r"\bpercent(?:age)?s?\b|百分比|百分之|百分数|占比", re.IGNORECASE)


def _no_percent(case: _Case) -> bool:
    """The question asks for a percentage and the answer states none that is supported (a
    bare ``0.445`` is a fraction, not the percentage asked for)."""
    if not _PERCENT_ASKED.search(case.question.text):
        return False
    return not any(
        c.supported and getattr(c.claim.figure, "percent", False) for c in case.evidence.claims
    )


_RULES = (
    _faulty,
    _uninformative,
    _unread_subject,
    _unread_named,
    _mislabeled,
    _outside_question,
    _conflicting,
    _copy,
    _says_absent,
    _not_computed,
    _left_out,
)
"""The verdict's rules in order: the first that finds a fault says the verdict."""


def _restates(claim: CheckedClaim, question: Question) -> bool:
    """A claim that only says what the question already says (a name, code, number or
    identifier of the question's text) carries no information: it never backs an answer."""
    return question.states(claim.claim.text) or question.states(claim.claim.value)


_WORDS = re.compile(r"\w+")
_MAX_COPIED = 4000
"""Longer answers are not looked at as copies (an answer is short; the check stays cheap)."""


def _copied(answer: str, items: Sequence[Item]) -> bool:
    """Whether ``answer`` is only whole lines of this conversation's tool results (lines of
    two words or more, or listed paths), joined by punctuation and white space. A line is
    itself without its comment or list marker and its quotes (``// The build sets …``,
    ``- Owner: …``), and a search hit's line is its ``path:line:`` and its text; white space
    runs count as one space."""
    text = " ".join(answer.split())
    if not text or len(text) > _MAX_COPIED:
        return False
    copies = sorted(_lines_in(text, items), key=len, reverse=True)
    if not any(len(_WORDS.findall(line)) > 1 for line in copies):
        return False  # a path alone is path_only's to say
    for line in copies:
        text = text.replace(line, " ")
    return not _WORDS.search(text)


def _lines_in(text: str, items: Sequence[Item]) -> set[str]:
    """The lines of the tool results (of two words or more, or paths) that ``text`` holds."""
    lines: set[str] = set()
    for item in items:
        if isinstance(item, FunctionCallOutput) and not item.is_error:
            lines.update(form for line in item.output.splitlines() for form in _forms(line))
    return {
        line for line in lines if line in text and (len(_WORDS.findall(line)) > 1 or "/" in line)
    }


def _forms(line: str) -> Iterator[str]:
    """A line as an answer may copy it (``_copied``)."""
    line = " ".join(line.split())
    yield line
    from minipi.evidence.records import HIT

    hit = HIT.match(line)
    if hit is not None:
        yield hit.group(0).strip()
        line = line[hit.end() :].strip()
        yield line
    bare = _MARKER.sub("", line).strip().strip("\"'`").strip()
    if bare and bare != line:
        yield bare


_MARKER = re.compile(r"^(?:[-*>#;]+|//+)\s*")


def _fault(unexamined: bool, statuses: set[str]) -> Verdict | None:
    """What keeps an answer from being backed whatever else it holds, or None."""
    if unexamined:
        return Verdict("unbacked", "unexamined")
    if "unsupported" in statuses:
        return Verdict("unbacked", "unsupported")
    for status, reason in (("from_question", "from_question"), ("path", "path_only")):
        if status in statuses:
            return Verdict("weak", reason)
    return None


def _why_weak(evidence: Evidence, statuses: set[str], facts: bool) -> str:
    """Why an answer with no fault states nothing backed."""
    if "from_question" in statuses:
        return "from_question"
    if facts:
        return "facts_only"
    if not evidence.tool_results:
        return "no_reads"
    if evidence.supported:  # supported, but only as paths
        return "path_only"
    return "weak_claims" if statuses else "no_claims"


def _states(claim: CheckedClaim) -> bool:
    """``claim`` backs the answer: supported, and not a path (a file's name, whatever kind
    of claim read it, says where an answer is, not what it is)."""
    if _confirmed_missing(claim):
        return True  # the tool's own record says so
    if not claim.supported or str(claim.claim.kind) == "path":
        return False
    value = claim.claim.value
    return not any(start == 0 and end == len(value) for start, end, _ in path_spans(value))


def _outside(claim: CheckedClaim, named: frozenset[str], outputs: dict[str, str]) -> bool:
    """Every source of ``claim`` is a file's content (a read of it, or a search hit in it),
    and no such file is one ``named``."""
    from minipi.evidence.records import file_of  # loaded with the check

    sources = [s for s in claim.sources if s.origin == "content"]
    files = [file_of(s, outputs.get(s.call_id or "", "")) for s in sources]
    if not files or any(path is None for path in files):
        return False
    return not any(within(path, named) for path in files if path is not None)
