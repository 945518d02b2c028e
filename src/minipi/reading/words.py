"""One tokenizer, one stemmer, one stop list.

``words(text)``: the Latin words of 3+ letters (lower case, stemmed, stop words out) and each
pair of adjacent Han characters (Chinese has no spaces; a pair is the shortest unit that is
mostly a word). Words split at case changes, digits and ``_``/``-``/``.``, so a key
``revenue_yuan`` or ``maxRetries`` reads as ``revenue yuan``, ``max retries``.
"""

from __future__ import annotations

import re

__all__ = ["STOP", "stem", "words"]

_LATIN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_HAN = re.compile(r"[\u4e00-\u9fff]{2,}")
STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "how",
        "many",
        "much",
        "its",
        "does",
        "did",
        "has",
        "have",
        "had",
        "this",
        "that",
        "these",
        "those",
        "with",
        "from",
        "into",
        "than",
        "there",
        "their",
        "they",
        "them",
        "then",
        "when",
        "where",
        "why",
        "you",
        "your",
        "our",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "please",
        "tell",
        "give",
        "show",
        "find",
        "let",
        "get",
        "got",
        "about",
        "also",
        "just",
        "only",
        "all",
        "any",
        "each",
        "some",
        "been",
        "being",
        "not",
        "but",
    ]
)
"""English function words and question verbs: they say nothing of what a text is about."""


_SUFFIXES = ("ations", "ation", "ings", "ing", "ers", "er", "es", "ed", "s", "ly")
_KEPT = ("ss", "us", "is")
"""Endings that are no plural: ``address``, ``status``, ``analysis``."""


def stem(word: str) -> str:
    """A light stemmer, lower case: ``ies`` -> ``y`` (``entries`` -> ``entry``), else the
    first of a few English endings (``-s``, ``-es``, ``-ed``, ``-ing``, ``-er``, ``-ly``,
    ``-ation``) off a word that keeps 4+ letters (``orders`` -> ``order``, ``calculated``
    and ``calculates`` -> ``calculat``); ``address``, ``status`` stay."""
    word = word.lower()
    if word.endswith("ies") and len(word) >= 5:
        return word[:-3] + "y"
    if word.endswith(_KEPT):
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    if word.endswith("s") and len(word) >= 4:
        return word[:-1]
    return word


def words(text: str) -> frozenset[str]:
    """The words of ``text`` (module docstring)."""
    found: set[str] = set()
    for match in _LATIN.finditer(text):
        word = match.group().lower()
        if len(word) >= 3 and word not in STOP:
            found.add(stem(word))
    for match in _HAN.finditer(text):
        run = match.group()
        found.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(found)
