"""What a succeeded run's answer rests on, in one word a user reads at a glance.

A run that ends ``succeeded`` carries a ``Verdict`` (``RunResult.verdict``, ``run_end``'s
``"verdict"``, batch results), judged from the evidence of its last answer:

- ``backed``: every claim of the answer was examined, at least one that is not a ``path``
  claim is supported by content a tool of this conversation returned, and none is
  ``unsupported``, ``from_question`` or only in a file name (``path``). ``weak`` claims
  (small numbers, a year alone) may stand beside. Guided mode's cited facts are minipi's, not
  the answer's: they never make an answer backed, and when there are some, a supported claim
  counts only if its value is in one of them (the answer states what the facts cite; a file
  name beside facts about the file's content does not).
- ``weak``: nothing is unsupported, but nothing the answer itself states is backed: no
  checkable claim (``no_claims``), only weak claims (``weak_claims``), a figure only in the
  question (``from_question``) or only in a file name (``path_only``), the figures only in
  the facts guided mode cited (``facts_only``), no tool result in the conversation
  (``no_reads``), or no check at all (``--evidence off``: ``not_checked``). Also when the
  question names files or folders (``In reports/``, ``config/app.toml``, ``reports 目录``)
  and a figure the answer states was found only in other files (``outside_question``: a
  draft, an example config, another folder), unless a file the question names led there (its
  text names the file: a chain of clues). A source without a file (a search over a folder, a
  tool with no path) is never counted as outside. Also when the answer is only lines the
  tool results hold, copied whole (``copied``: a log line, a table row, a heading; lines of
  two words or more, listed paths, joined by punctuation): it says nothing of its own, so
  minipi cannot tell it answers the question (asked how many ERROR lines a log has,
  Qwen2.5-Coder-0.5B answered with one of them, and its date and step number are in the file).
  Also when the question asks for a figure computed from the files, a count, a difference, a
  sum (``computed``: minipi checks the figures quoted, not the arithmetic), or names a field
  the reads hold whose values the answer states none of (``left_out``; ``minipi.agent.asked``).
- ``unbacked``: a claim is unsupported (``unsupported``), or part of the answer was too long
  to examine (``unexamined``).

Only ``backed`` is shown as a plain success. ``not_supported`` and ``claimed_changes`` are
what the evidence policy (``minipi.agent.policy.EvidencePolicy``) refuses under ``require``
and ends the run for under any mode (a change the answer claims that no tool made).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from minipi.agent.asked import asks_computed, left_out
from minipi.agent.scope import is_file, run_scope, within
from minipi.ai.types import FunctionCallOutput, Item, last_question

if TYPE_CHECKING:
    from minipi.agent.evidence import CheckedClaim, Evidence

__all__ = [
    "NOT_SUPPORT",
    "Verdict",
    "VerdictKind",
    "claimed_changes",
    "judge",
    "not_supported",
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
    facts: Sequence[str] = (),
    items: Sequence[Item] = (),
    answer: str = "",
) -> Verdict:
    """The verdict on ``answer`` checked as ``evidence`` (None: not checked); ``facts``: the
    lines minipi cited under it (guided mode, ``Message.cited``: ``fact (file)``); ``items``:
    the conversation (its last question and tool results: ``outside_question``, ``copied``)."""
    if evidence is None:
        return Verdict("weak", "not_checked")
    statuses: set[str] = {c.status for c in evidence.claims}
    fault = _fault(evidence.unchecked_from is not None, statuses)
    if fault is not None:
        return fault
    stated = [claim for claim in evidence.claims if _states(claim, facts)]
    if not stated:
        return Verdict("weak", _why_weak(evidence, statuses, bool(facts)))
    named = run_scope(items)
    found = [c for c in evidence.claims if c.supported and str(c.claim.kind) != "path"]
    if named and any(_outside(claim, named) for claim in found):
        # every figure of the text, cited or not: Qwen2.5-Coder-0.5B cited the port of
        # config/app.toml and wrote the database name of app.example.toml beside it
        return Verdict("weak", "outside_question")
    if _copied(answer, items):
        return Verdict("weak", "copied")
    question = last_question(items)
    if asks_computed(question):
        return Verdict("weak", "computed")
    if left_out(question, answer, evidence, items):
        return Verdict("weak", "left_out")
    return Verdict("backed")


_WORDS = re.compile(r"\w+")
_MAX_COPIED = 4000
"""Longer answers are not looked at as copies (an answer is short; the check stays cheap)."""


def _copied(answer: str, items: Sequence[Item]) -> bool:
    """Whether ``answer`` is only whole lines of this conversation's tool results (lines of
    two words or more, or listed paths), joined by punctuation and white space."""
    text = answer.strip()
    if not text or len(text) > _MAX_COPIED:
        return False
    lines: set[str] = set()
    for item in items:
        if isinstance(item, FunctionCallOutput) and not item.is_error:
            lines.update(line.strip() for line in item.output.splitlines())
    copies = sorted(
        (line for line in lines if line in text and (len(_WORDS.findall(line)) > 1 or "/" in line)),
        key=len,
        reverse=True,
    )
    if not any(len(_WORDS.findall(line)) > 1 for line in copies):
        return False  # a path alone is path_only's to say
    for line in copies:
        text = text.replace(line, " ")
    return not _WORDS.search(text)


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
    if facts:
        return "facts_only"
    if not evidence.tool_results:
        return "no_reads"
    if evidence.supported:  # supported, but only as paths
        return "path_only"
    return "weak_claims" if statuses else "no_claims"


def _states(claim: CheckedClaim, facts: Sequence[str]) -> bool:
    """``claim`` backs the answer: supported, no path, and in a cited fact if there are any."""
    if not claim.supported or str(claim.claim.kind) == "path":
        return False
    return not facts or any(claim.claim.value in _fact(line) for line in facts)


def _fact(line: str) -> str:
    """A cited line without the file it names (``orders: 128 (reports/a.json)``)."""
    head, sep, _ = line.rpartition(" (")
    return head if sep and line.endswith(")") else line


def _outside(claim: CheckedClaim, named: frozenset[str]) -> bool:
    """Every source of ``claim`` is a file's content, and no such file is one ``named``."""
    files = [s.path for s in claim.sources if s.origin == "content"]
    if not files or any(path is None or not is_file(path) for path in files):
        return False
    return not any(within(path, named) for path in files if path is not None)
