"""How minipi reads text, in one place: words, paths and the question.

- ``words``: one tokenizer (Latin words of 3+ letters, pairs of adjacent Han characters),
  one light stemmer and one stop list, for the verdict, guided mode and the file tools;
- ``paths``: the file and folder names a text states (``reports/daily.json``, ``README.md``,
  ``reports 目录``);
- ``question``: the caller's question as a value (``Question``), read once at the start of a
  run and carried (``RunView.question``, ``RunResult.question``).

Nothing here imports another part of minipi: it is the leaf every reader stands on.
"""

from minipi.reading.question import NO_QUESTION, Question
from minipi.reading.words import STOP, stem, words

__all__ = ["NO_QUESTION", "STOP", "Question", "stem", "words"]
