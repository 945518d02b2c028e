"""What a question asks for, as guided mode reads it: its words, the paths it names, its cues.

Guided mode offers facts and values because they bear on the question, not by position:

- ``Question.words``: Latin words of 3+ letters (lower case) and pairs of adjacent Han
  characters (no translation: a Chinese question shares words with Chinese text only);
- ``Question.tokens``: what a search for it may look for (names, numbers, codes, upper-case
  and long words, short Han runs), the values guided mode offers ``search_files``' query;
- ``Question.paths``: what it names that looks like a path (``config/app.toml``,
  ``CHANGELOG.md``, ``inbox/``): such a file can be read even if no listing showed it, and
  facts read from it rank first;
- cues: a question about a date or time, a version, a number ranks the facts holding one
  first; ``highest``/``最多`` (``fewest``/``最少``) ranks first the row of a table whose value
  in the column the question names is the largest (smallest).

``rank_facts`` orders facts by these scores (stable: ties keep their order).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from minipi.reading import Question as Asked

__all__ = ["Question", "Ranked", "rank_facts", "words_of"]

_WORD = re.compile(r"[a-z]{3,}|[\u4e00-\u9fff]{2,}")
_PATH = re.compile(r"[\w\u4e00-\u9fff.\-]*(?:/[\w\u4e00-\u9fff.\-]*)+|[\w\-]+\.[A-Za-z]\w{0,5}\b")
_TOKEN = re.compile(
    r"[A-Za-z0-9_\-./]{3,}|[A-Z]{2,}|(?<![\u4e00-\u9fff])[\u4e00-\u9fff]{2,4}(?![\u4e00-\u9fff])"
)
_BARE = re.compile(r"[\w.\-/]+", re.ASCII)
_DATE_CUES = frozenset({"date", "when", "time", "day"})
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}")
_VERSION = re.compile(r"\d+\.\d+\.\d+")
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?")
_LATEST = frozenset({"latest", "newest", "last", "recent", "最新", "最近", "最后"})
_EARLIEST = frozenset({"first", "earliest", "oldest", "第一", "最早", "首次"})
_NUMBER_CUES = frozenset({"many", "much", "total", "count", "number", "多少", "几个"})
_MOST = frozenset({"highest", "largest", "most", "biggest", "maximum", "最高", "最大", "最多"})
_LEAST = frozenset({"lowest", "smallest", "least", "fewest", "minimum", "最少", "最低", "最小"})


def words_of(text: str) -> set[str]:
    """Latin words of 3+ letters (lower case) and each pair of adjacent Han characters."""
    found: set[str] = set()
    for match in _WORD.finditer(text.lower()):
        word = match.group()
        found.update((word,) if word.isascii() else (word[i : i + 2] for i in range(len(word) - 1)))
    return found


@dataclass(frozen=True, slots=True)
class Question:
    """The question as ranking reads it (module docstring)."""

    text: str
    words: frozenset[str]
    paths: tuple[str, ...]
    tokens: tuple[str, ...]

    @classmethod
    def of(cls, text: str) -> Question:
        words = words_of(text)
        paths = tuple(dict.fromkeys(m.group().strip(".") for m in _PATH.finditer(text)))
        found = (m.group().strip(".-/") for m in _TOKEN.finditer(text))
        tokens = tuple(dict.fromkeys(t for t in found if _searchable(t)))
        return cls(text, frozenset(words), tuple(p for p in paths if p), tokens)

    def names(self, path: str) -> bool:
        """Whether the question names ``path`` (whole, or its file name) or a folder it is in."""
        name = path.rsplit("/", 1)[-1]
        folders = (f"{d}/" for d in self.named_dirs)
        return any(p.rstrip("/") in (path, name) for p in self.paths) or any(
            path.startswith(f) for f in folders
        )

    @property
    def counts(self) -> bool:
        """Whether the question counts lines or occurrences
        (``minipi.reading.Question.figure``): a search reports how many lines match."""
        return Asked.of(self.text).figure == "count"

    def says(self, path: str) -> bool:
        """Whether the question names ``path`` (``names``) or says its last part as a word
        (``reports 目录``, ``the inbox folder``; a Han name anywhere in it)."""
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if self.names(path):
            return True
        if not name.isascii():
            return bool(name) and name in self.text
        return name.casefold() in {w.strip("/").casefold() for w in _BARE.findall(self.text)}

    @property
    def named_files(self) -> tuple[str, ...]:
        """The named paths that look like files (not ``dir/``)."""
        return tuple(p for p in self.paths if not p.endswith("/") and "." in p.rsplit("/")[-1])

    @property
    def named_dirs(self) -> tuple[str, ...]:
        return tuple(p.rstrip("/") for p in self.paths if p.endswith("/") and p != "/")


def _searchable(token: str) -> bool:
    """A token worth searching for: a name, a number, a code, a word of 6+ letters, Han."""
    if not token.isascii():
        return True
    marked = any(c.isdigit() or c in "._-/" for c in token) or token[1:].isupper()
    return len(token) >= 6 or marked


class Ranked(NamedTuple):
    """Facts best first: the ``bearing`` first ones bear on the question (they share a word
    with it, hold a value of the kind it asks for, or are the row it asks for; 0: none
    does), the ``leading`` first ones of those are where an answer's first pick comes from."""

    facts: tuple[str, ...]
    leading: int
    bearing: int


def rank_facts(
    facts: Sequence[str], origins: Mapping[str, str | None], question: Question
) -> Ranked:
    """``facts`` ranked (stable: ties keep their order): those that bear on the question
    first, each part by score; leading, those within one point of the best score of the
    facts that bear on the question or come from a file it names (0 when none does).

    A score: the question's words the fact shares, 2 for a file (or a folder) the question
    names, the cues (``_cued``, ``_stamps``), 3 for the largest or smallest row asked for.
    A file the question names holds its answer among lines that answer nothing asked:
    counting every fact of it as leading, or offering every one, lets a small model cite one
    of those."""
    bearing = _Bearing.of(facts, origins, question)
    bears = bearing.bears()
    scores = {f: bearing.score(f) for f in facts}
    kept = sorted(facts, key=lambda fact: (fact not in bears, -scores[fact]))
    relevant = {f for f in facts if bearing.shared[f] or f in bearing.named}
    return Ranked(tuple(kept), _leading(kept, relevant, scores), len(bears))


@dataclass(frozen=True, slots=True)
class _Bearing:
    """What ties each fact to the question: the words it shares with it (``shared``), the
    kinds of value it asks for (``cues``), a file it names (``named``: the facts read from
    one), the row it asks for (``rows``), the latest or earliest stamp (``stamped``)."""

    shared: dict[str, int]
    cues: dict[str, float]
    named: set[str]
    rows: set[str]
    stamped: set[str]

    @classmethod
    def of(
        cls, facts: Sequence[str], origins: Mapping[str, str | None], question: Question
    ) -> _Bearing:
        rows = _extreme_rows(facts, origins, question)
        named = {o for o in origins.values() if o is not None and question.names(o)}
        shared = {f: len(question.words & words_of(f)) for f in facts}  # once a fact: per turn
        stamped = _stamps(_dated(facts, shared) or facts, question)  # the first ERROR, not line 1
        cues = {f: _cued(f, question.words) for f in facts}
        from_named = {f for f in facts if origins.get(f) in named}
        return cls(shared, cues, from_named, rows, stamped)

    def bears(self) -> set[str]:
        """The facts that bear on the question. A cue alone makes a fact bear on it only when
        no fact sharing a word holds that kind of value (a changelog's ``## 1.2.0 -
        2026-03-01`` lines, under ``# Changelog``)."""
        shares = {f for f, count in self.shared.items() if count}
        cued = any(self.cues[f] for f in shares)
        widened = set() if cued else {f for f, bonus in self.cues.items() if bonus}
        return shares | self.rows | self.stamped | widened

    def score(self, fact: str) -> float:
        return (
            self.shared[fact]
            + (2.0 if fact in self.named else 0.0)
            + self.cues[fact]
            + (3.0 if fact in self.rows else 0.0)
            + (1.0 if fact in self.stamped else 0.0)
        )


def _dated(facts: Sequence[str], shared: Mapping[str, int]) -> list[str]:
    """The facts sharing a word with the question that hold a date-time or a version."""
    return [f for f in facts if shared[f] and (_STAMP.search(f) or _VERSION.search(f))]


def _leading(kept: Sequence[str], relevant: set[str], scores: Mapping[str, float]) -> int:
    """How many of ``kept`` lead: up to the last relevant fact within one point of the best
    relevant score (the leading facts come first among the facts an answer may cite)."""
    if not relevant:
        return 0
    best = max(scores[f] for f in relevant)
    return 1 + max(i for i, f in enumerate(kept) if f in relevant and scores[f] > best - 1.0)


def _stamps(facts: Sequence[str], question: Question) -> set[str]:
    """The facts holding the latest (``latest``, ``最新``) or earliest (``first``, ``最早``)
    date-time or version, of ``facts``, when the question asks for one."""
    latest, earliest = question.words & _LATEST, question.words & _EARLIEST
    if not latest and not earliest:
        return set()
    found = _stamp_values(facts)
    picked: set[str] = set()
    for kind in (str, tuple):  # dates and versions each compared among their own kind
        picked |= _at_top({f: v for f, v in found.items() if isinstance(v, kind)}, bool(latest))
    return picked


def _stamp_values(facts: Sequence[str]) -> dict[str, tuple[int, ...] | str]:
    """Each fact's date-time (as written), else its version (as numbers), if it holds one."""
    found: dict[str, tuple[int, ...] | str] = {}
    for fact in facts:
        stamp = _STAMP.search(fact)
        version = _VERSION.search(fact)
        if stamp is not None:
            found[fact] = stamp.group()
        elif version is not None:
            found[fact] = tuple(int(part) for part in version.group().split("."))
    return found


def _at_top(values: Mapping[str, tuple[int, ...] | str], latest: bool) -> set[str]:
    """The facts whose value is the largest (``latest``) or the smallest of ``values``."""
    if not values:
        return set()
    pick = max if latest else min
    top = pick(values.values())
    return {f for f, v in values.items() if v == top}


def _cued(fact: str, words: frozenset[str]) -> float:
    """A bonus for a fact holding the kind of value the question asks for."""
    bonus = 0.0
    if words & _DATE_CUES and _DATE.search(fact):
        bonus += 1.0
    if "version" in words and _VERSION.search(fact):
        bonus += 1.0
    if words & _NUMBER_CUES and any(c.isdigit() for c in fact):
        bonus += 0.5
    return bonus


def _extreme_rows(
    facts: Sequence[str], origins: Mapping[str, str | None], question: Question
) -> set[str]:
    """The rows of each comma-separated table whose value in the asked column is the
    largest (``highest``) or smallest (``fewest``) one."""
    most, least = question.words & _MOST, question.words & _LEAST
    if not most and not least:
        return set()
    tables: dict[str, list[list[str]]] = {}
    for fact in facts:
        origin = origins.get(fact)
        if origin is not None and "," in fact:
            tables.setdefault(origin, []).append(fact.split(","))
    found: set[str] = set()
    for rows in tables.values():
        row = _extreme(rows, question.words, bool(most))
        if row is not None:
            found.add(",".join(row))
    return found


def _extreme(rows: list[list[str]], words: frozenset[str], most: bool) -> list[str] | None:
    """The row whose value in the asked column is the largest (``most``) or the smallest."""
    header = _header(rows)
    body = [r for r in rows if r is not header and len(r) == len(rows[0])]
    column = _column(header, body, words)
    if column is None:
        return None
    values = [(float(r[column]), r) for r in body if _is_number(r[column])]
    if not values:
        return None
    pick = max if most else min
    return pick(values, key=lambda pair: pair[0])[1]


def _header(rows: list[list[str]]) -> list[str] | None:
    """The first row holding no number."""
    return next((r for r in rows if not any(_is_number(c) for c in r)), None)


def _column(header: list[str] | None, body: list[list[str]], words: frozenset[str]) -> int | None:
    """The numeric column the question names in ``header``, else the last numeric one."""
    if not body:
        return None
    numeric = [i for i in range(len(body[0])) if all(_is_number(r[i]) for r in body)]
    heads = header or []  # a header may be shorter than the rows: its missing names say nothing
    named = [i for i in numeric if i < len(heads) and words & words_of(heads[i].replace("_", " "))]
    if named:
        return named[0]
    return numeric[-1] if numeric else None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
