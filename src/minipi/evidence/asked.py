"""Whether an answer leaves out something the question asks for, as far as words can tell.

- The question lists more things than the answer states values (``asked_parts``: the list
  words of each asking clause; a value is a supported or small figure that is not the
  question's own, or a value of a field the reads hold: a name, a host).
- A word of the question is a word of fields of this question's reads (a JSON key, the key
  of a ``key = value`` or ``key: value`` line, a table's column; ``revenue`` names
  ``revenue_yuan``) and the answer states no value of any of them (a value the question
  itself says counts as stated): ``cpu`` is answered by a value of ``cpu``, whatever
  ``targetCPUUtilizationPercentage`` holds, since either may be the field meant. A yes-or-no
  field (``primary = true``) names a record or asks yes or no: it is never left out. A
  question for a computed figure, or an answer with a figure recomputed from the reads, is
  about a computation over the fields, not their values; a question word that names a file
  or folder this question read or listed says where to look, not which field.

Words are ``minipi.reading.words``, in the question's own language: a question in Chinese
about English keys shares no word with them, and then no field is named as far as words can
tell (no glossary guesses a translation). Outputs over ``MAX_OUTPUT`` characters are not
read for fields.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, since_question
from minipi.evidence.scope import path_argument
from minipi.reading import Question, words

if TYPE_CHECKING:  # the evidence package is loaded by the check, not by `import minipi`
    from minipi.evidence.types import CheckedClaim, Evidence

__all__ = ["MAX_OUTPUT", "holds_field", "left_out"]

MAX_OUTPUT = 256 * 1024


def left_out(question: Question, answer: str, evidence: Evidence, items: Sequence[Item]) -> bool:
    """Whether the question names a field of this question's reads whose values the answer
    states none of (module docstring)."""
    said = _normal(f"{question.text}\n{answer}")
    fields = _fields(_this_question(items))
    if _fewer_than_asked(question, evidence, items, answer, fields):
        return True
    derived = any(c.status == "derived" for c in evidence.claims)
    if question.computed or derived:  # a figure computed over the fields it names
        return False
    stated = _stated_keys(evidence.claims, items)
    answered = {key for key, values in fields.items() if key in stated or _states(said, values)}
    return any(_unanswered(word, fields, answered) for word in question.words - _path_words(items))


def _unanswered(word: str, fields: dict[str, list[str]], answered: set[str]) -> bool:
    """``word`` names fields (not yes-or-no ones) and the answer states a value of none."""
    named = [key for key in fields if word in words(key) and not _flag(fields[key])]
    return bool(named) and not answered.intersection(named)


def _states(said: str, values: Sequence[str]) -> bool:
    return any(_holds(said, value) for value in values)


def _flag(values: Sequence[str]) -> bool:
    """A field whose values are all yes or no (``primary = true``): naming it says which
    record is asked about, or asks yes or no; its value is not a figure to state."""
    from minipi.evidence.records import YES_NO

    return all(v.strip().strip("\"'").casefold() in YES_NO for v in values)


def holds_field(word: str, items: Sequence[Item]) -> bool:
    """Whether this question's reads hold a field (a key, a column) named with ``word``."""
    wanted = words(word)
    return any(wanted <= words(key) for key in _fields(_this_question(items)))


def _path_words(items: Sequence[Item]) -> frozenset[str]:
    """The words of the paths this question's calls read or listed: a question word that
    names a file or folder (``ansible/`` for "the ansible inventory") says where to look,
    not which field."""
    later = since_question(items)
    paths = (path_argument(i) for i in later if isinstance(i, FunctionCall))
    return words(" ".join(p for p in paths if p))


_CLAUSE = re.compile(r"[?？。!！;；，:：\n]")
_ASKING = re.compile(
    r"\b(?:what|which|who|whom|whose|when|where|how)\b|多少|几|哪|什么|谁|何", re.I
)
_LISTED = re.compile(r"、|\band\b|\bor\b|以及|和|及|与")


def asked_parts(text: str) -> int:
    """How many things a question asks for, as far as its grammar lists them: in each
    clause that asks (holds an interrogative), one plus its list words (``、 和 及 与``,
    ``and``, ``or``), summed: ``哪一天的？订单数和营收各是多少？`` asks for three, ``…, and its
    X and Y`` for three, ``Start at a.txt and follow the clues: what is the password?`` for
    one. A request with no interrogative (``告诉我日期、订单数和营收``) asks for its longest
    list. A comma is no list word: in either language it as often ends a clause, and counting
    fewer never makes an answer green."""
    clauses = _CLAUSE.split(text)
    asking = [1 + len(_LISTED.findall(c)) for c in clauses if _ASKING.search(c)]
    if asking:
        return sum(asking)
    return max((1 + len(_LISTED.findall(c)) for c in clauses), default=1)


def _fewer_than_asked(
    question: Question,
    evidence: Evidence,
    items: Sequence[Item],
    answer: str,
    fields: dict[str, list[str]],
) -> bool:
    """The answer states values of fewer distinct things than the question lists: a
    supported figure, or one too common to check (``weak``: a small count), that is not the
    question's own, counted once a field it was read from (two image versions are one thing,
    the version); a value of a field the reads hold (a name, a region, a host), once a
    field."""
    wanted = asked_parts(question.text)
    if wanted < 2:
        return False
    outputs = {i.call_id: i.output for i in items if isinstance(i, FunctionCallOutput)}
    things = {_thing(c, outputs) for c in evidence.claims if _answers(c, question)}
    things |= _named_fields(_normal(question.text), _normal(answer), fields)
    return len(things) < wanted


def _answers(checked: CheckedClaim, question: Question) -> bool:
    """A claim that states something asked: supported or too common to check, no path,
    not the question's own."""
    stated = checked.supported or checked.status == "weak"
    kind, value = str(checked.claim.kind), checked.claim.value
    return stated and kind != "path" and not question.states(value)


def _thing(checked: CheckedClaim, outputs: dict[str, str]) -> object:
    """What a claim states a value of: the field it was read from, else the value itself
    (a figure recomputed from the reads is a thing of its own, not its terms' field)."""
    from minipi.evidence.records import field_of

    if checked.status == "derived":
        return _normal(checked.claim.value)
    content = [s for s in checked.sources if s.origin == "content" and s.call_id in outputs]
    field = field_of(content[0], outputs[content[0].call_id or ""]) if content else None
    return field[-1] if field else _normal(checked.claim.value)


def _named_fields(asked: str, answer: str, fields: dict[str, list[str]]) -> set[object]:
    """The fields whose values, names not figures, the answer states and the question does
    not."""
    named: set[object] = set()
    for key, values in fields.items():
        shown = (_normal(v.strip().strip("\"'")) for v in values)
        names = (v for v in shown if len(v) >= 2 and not v[0].isdigit() and v not in asked)
        if any(_holds(answer, name) for name in names):
            named.add(key)
    return named


def _normal(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"(?<=\d)[,\s](?=\d{3}\b)", "", text)


def _holds(text: str, value: str) -> bool:
    value = _normal(value.strip().strip("\"'"))
    if not value:
        return False
    if value[0].isdigit() or value[-1].isdigit():  # a number: never inside another one
        return re.search(rf"(?<![\d.]){re.escape(value)}(?![\d])", text) is not None
    return value in text


def _this_question(items: Sequence[Item]) -> list[FunctionCallOutput]:
    """The results that follow the last question."""
    later = since_question(items)
    return [i for i in later if isinstance(i, FunctionCallOutput) and not i.is_error]


def _fields(outputs: Sequence[FunctionCallOutput]) -> dict[str, list[str]]:
    """Field name (a field's last key, a column's header) -> the values this question's
    reads give it (``minipi.evidence.records.fields``)."""
    from minipi.evidence.records import fields as read_fields

    found: dict[str, list[str]] = {}
    for output in outputs:
        if len(output.output) > MAX_OUTPUT:
            continue
        for keys, values in read_fields(output.output).items():
            found.setdefault(keys[-1], []).extend(values)
    return found


def _stated_keys(claims: Sequence[CheckedClaim], items: Sequence[Item]) -> set[str]:
    """The fields a supported claim of the answer was found in: the last key of a JSON
    pointer or of a ``key = value`` line (a date written otherwise than in the file counts)."""
    from minipi.evidence.records import field_of

    outputs = {i.call_id: i.output for i in items if isinstance(i, FunctionCallOutput)}
    keys: set[str] = set()
    for claim in claims:
        for source in claim.sources if claim.supported else ():
            text = outputs.get(source.call_id or "")
            field = (
                field_of(source, text) if text is not None and source.origin == "content" else None
            )
            keys.update(field[-1:] if field else ())
    return keys
