"""The project's text files a question bears on, for a guided run to read before it starts.

A small model loses most answers it could give in finding the file: asked about "the staging
settings" or "the CI workflow", it lists, guesses and reads the wrong file until its turns
run out, while with the files pasted in its prompt it answers. A person handed a small
folder reads all of it; handed a large one, the files whose names and text share the most
words with the question. ``survey`` does the same, within a byte budget the caller derives
from the model's context window:

- the candidates are the project's regular files, walked through the sandbox's own listing
  (hidden folders included, as ``list_files`` shows them; what ``read_file`` refuses, a
  sensitive, binary or too large file, is skipped as a read would be refused);
- each is scored by the question's words (``reading.words``: one tokenizer, stemmer and stop
  list; and its numbers) it shares in its path and its text, each word weighed by how few
  candidates hold it (a word every file holds tells none apart), a path's word twice;
- the files are taken best first while they fit the budget; a file sharing no word is taken
  only when every candidate fits (then nothing is left out, and no ranking is needed).

Nothing here reads more than the tools would: every read goes through ``ProjectFiles``, and
the files chosen are read again by the opening's own ``read_file`` calls, so what the model
sees, and what the evidence check traces, is the tool's record.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from minipi.errors import FileAccessError
from minipi.files.sandbox import ProjectFiles
from minipi.reading import words

__all__ = ["MAX_SURVEYED", "MAX_VISITED", "survey"]

MAX_SURVEYED = 8
"""At most this many files are read before the first reply, whatever the budget: past a
handful, the model's prompt is a dump, not a choice."""

MAX_VISITED = 200
"""Entries looked at (files and folders) in the walk: a larger project is surveyed by its
first 200 entries, in name order, breadth first (the top level first)."""


_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class _Candidate:
    path: str
    size: int
    text: str


def survey(
    files: ProjectFiles, question: str, budget: int, under: Sequence[str] = (".",)
) -> tuple[str, ...]:
    """The paths to read for ``question`` in the folders ``under``, best first, their sizes
    summing to at most ``budget`` bytes (module docstring); when ``under`` is narrower than
    the project, then the files it names by their bare name elsewhere (``_named_elsewhere``)."""
    if budget <= 0:
        return ()
    found = list(_candidates(files, under))
    chosen = _chosen(found, question, budget)
    if set(under) <= {".", ""}:
        return tuple(c.path for c in chosen)
    left = budget - sum(c.size for c in chosen)
    more = _named_elsewhere(files, question, chosen, left)
    return tuple(c.path for c in chosen) + more


def _chosen(found: list[_Candidate], question: str, budget: int) -> list[_Candidate]:
    if sum(c.size for c in found) <= budget:
        return sorted(found, key=_scorer(found, question), reverse=True)[:MAX_SURVEYED]
    score = _scorer(found, question)
    chosen: list[_Candidate] = []
    left = budget
    for candidate in sorted(found, key=score, reverse=True):
        if len(chosen) == MAX_SURVEYED or score(candidate) <= 0:
            break
        if candidate.size <= left:
            chosen.append(candidate)
            left -= candidate.size
    return chosen


def _named_elsewhere(
    files: ProjectFiles, question: str, taken: list[_Candidate], budget: int
) -> tuple[str, ...]:
    """The files anywhere in the project that the question names by their bare name: a word
    of the question (``_terms``) is in the file's path and in none of the files ``taken``
    (path or text), best first by how many such words, within ``budget`` bytes. A question
    that names a folder says where its answer is, or where something goes ("move 猫咪小花's
    file to archive/"): what it names beside that, by name, is wherever that name is."""
    told = frozenset().union(*(_terms(c.path.replace("/", " ")) | _terms(c.text) for c in taken))
    asked = _terms(question) - told
    paths = {c.path for c in taken}
    ranked = [
        (shared, path, size)
        for path, size in _paths(files)
        if path not in paths and (shared := len(asked & _terms(path.replace("/", " "))))
    ]
    chosen: list[str] = []
    for _, path, size in sorted(ranked, key=lambda r: (-r[0], r[1])):
        if len(chosen) + len(taken) >= MAX_SURVEYED:
            break
        if size <= budget and _text(files, path) is not None:
            chosen.append(path)
            budget -= size
    return tuple(chosen)


def _paths(files: ProjectFiles, under: Sequence[str] = (".",)) -> Iterator[tuple[str, int]]:
    """The regular files in ``under`` (path, size), breadth first, at most ``MAX_VISITED``
    entries, none read."""
    folders = list(dict.fromkeys(under))
    visited = 0
    while folders and visited < MAX_VISITED:
        try:
            listing = files.list_dir(folders.pop(0))
        except FileAccessError:
            continue
        for entry in listing.entries:
            visited += 1
            if visited > MAX_VISITED:
                return
            if entry.type == "dir":
                folders.append(entry.path)
            elif entry.type == "file" and 0 < entry.size <= files.max_bytes:
                yield entry.path, entry.size


def _terms(text: str) -> frozenset[str]:
    """``reading.words`` and the numbers of ``text`` (leading zeros off): a number the
    question states (a date, an id, a version's part) tells files apart as a word does."""
    return words(text) | {n.lstrip("0") or "0" for n in _NUMBER.findall(text)}


def _scorer(found: list[_Candidate], question: str) -> _Score:
    asked = _terms(question)
    held = {c.path: (_terms(c.path.replace("/", " ")), _terms(c.text)) for c in found}
    counts = {w: sum(w in p or w in t for p, t in held.values()) for w in asked}
    weight = {w: math.log(1 + len(found) / n) for w, n in counts.items() if n}
    return _Score(held, weight)


@dataclass(frozen=True, slots=True)
class _Score:
    held: dict[str, tuple[frozenset[str], frozenset[str]]]
    weight: dict[str, float]

    def __call__(self, candidate: _Candidate) -> float:
        in_path, in_text = self.held[candidate.path]
        return sum(
            w * (2 * (word in in_path) + (word in in_text)) for word, w in self.weight.items()
        )


def _candidates(files: ProjectFiles, under: Sequence[str]) -> Iterator[_Candidate]:
    """The readable text files in ``under``, breadth first, at most ``MAX_VISITED`` entries."""
    for path, size in _paths(files, under):
        text = _text(files, path)
        if text is not None:
            yield _Candidate(path, size, text)


def _text(files: ProjectFiles, path: str) -> str | None:
    try:
        return files.read_text(path).text
    except FileAccessError:
        return None
