"""R, the relevance an agent reads: the protocol's lexical scorer against recent queries.

The Co-Forgetting paper never defined R (its reviewers' second objection).  Here it is the
protocol's own default scorer, ``ostrom.protocol.forgetting.LexicalScorer`` (the TF-IDF
cosine of docs/forgetting.md), of an item's text against the context: the distinct texts
of the queries the community issued in the last ``context_window`` epochs.  ``Prepared``
computes *exactly* that number — the same terms summed with ``math.fsum``, so the same
float — with the context tokenised once instead of once per item: a sweep scores every
live item against one context, and re-tokenising the context for each would dominate a
run's time.  ``property_tests/simulation/test_simulation_forgetting.py`` checks it against
``LEXICAL`` on arbitrary texts.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from ostrom.protocol.forgetting import tokens


class Prepared:
    """``LEXICAL(text, context)`` for one fixed ``context`` and many texts."""

    def __init__(self, context: Sequence[str]) -> None:
        items = [Counter(tokens(c)) for c in context]
        self.query: Counter[str] = Counter()
        for item in items:
            self.query.update(item)
        self.df: Counter[str] = Counter()
        for item in items:
            self.df.update(item.keys())
        self.n = len(items) + 1  # the documents at hand: the text and each context item
        # the query's squared weights with each term absent from the text; a text's own
        # terms replace theirs (their df counts the text too), then one fsum of them all
        self._terms = list(self.query)
        self._position = {t: i for i, t in enumerate(self._terms)}
        self._base = [(self.query[t] * self._idf(t, False)) ** 2 for t in self._terms]

    def _idf(self, term: str, in_doc: bool) -> float:
        return math.log((1 + self.n) / (1 + self.df[term] + in_doc)) + 1.0

    def __call__(self, text: str) -> float:
        doc = Counter(tokens(text))
        if not doc or not self.query:
            return 0.0
        idf = {t: self._idf(t, True) for t in doc}
        shared = doc.keys() & self.query.keys()
        dot = math.fsum(doc[t] * idf[t] * self.query[t] * idf[t] for t in shared)
        if dot == 0.0:
            return 0.0
        norm2_doc = math.fsum((k * idf[t]) ** 2 for t, k in doc.items())
        squares = self._base.copy()
        for t in shared:
            squares[self._position[t]] = (self.query[t] * idf[t]) ** 2
        norm2_query = math.fsum(squares)
        return min(1.0, max(0.0, dot / math.sqrt(norm2_doc * norm2_query)))


__all__ = ["Prepared"]
