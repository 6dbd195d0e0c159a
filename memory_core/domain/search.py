"""Lexical search over the entries a caller may see: BM25, prefix terms, deterministic ties.

Two ways in, one ranking contract:
- ``search_entries`` ranks entries already in memory (the Cosmos store, whose
  test server has no full-text search).
- ``rank_matches`` orders the matches a store's own full-text index scored
  (``FullTextIndex``; the SQLite store, FTS5).

Either way every score is positive, "train" finds "trains" (the SQLite index by
Porter stem, the in-memory ranking by prefix), and ties break newest first, then by id.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from memory_core.domain.models import MemoryEntry, ProfileKey, ScopeState

_TOKEN = re.compile(r"\w+", re.UNICODE)
# Okapi BM25's usual constants (Lucene's, too).
_K1 = 1.2
_B = 0.75
MAX_QUERY_TERMS = 32
"""Terms past this many are ignored: a query is a handful of words, not a document."""


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def query_terms(query: str) -> list[str]:
    """The distinct terms of ``query``, in order, at most ``MAX_QUERY_TERMS``."""
    return list(dict.fromkeys(tokenize(query)))[:MAX_QUERY_TERMS]


@dataclass(frozen=True, slots=True)
class SearchHit:
    entry: MemoryEntry
    score: float


@runtime_checkable
class FullTextIndex(Protocol):
    """A store that searches its own index instead of handing every entry to ``search_entries``."""

    def search_index(
        self, keys: Sequence[ProfileKey], terms: Sequence[str], *, skip: int = 0, take: int | None = None
    ) -> list[tuple[ScopeState, dict[str, float]]]:
        """For each key (one partition), in key order: a state and the scores of one page of matches.

        The matches of all ``keys`` together are ordered best first (ties newest first, then by
        id); the page is ``take`` of them after the first ``skip`` (None: all). A term matches
        the words it shares a stem with, at least ("train" finds "trains"). Scores are positive. The state
        carries the profile and holds as ``load`` does; its entries are the page's matches plus
        every replace entry of the profile, which is all ``ScopeState.visible_entries`` needs
        to decide which of the matches are visible.
        """
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """A block whose ``search_index`` calls all read one state of the store.

        Pages of one search must come from one snapshot: a write between two pages would
        otherwise shift the matches under ``skip`` (one skipped, or one seen twice), and
        would change every score (BM25 weighs terms by the whole corpus).
        """
        ...


def search_entries(entries: Sequence[MemoryEntry], query: str, tags: Sequence[str], limit: int) -> list[SearchHit]:
    """Entries carrying every tag in ``tags`` and at least one query term, best first.

    BM25 over ``entries`` as the corpus, with the always-positive IDF
    ``ln(1 + (N - n + 0.5) / (n + 0.5))``, so one entry or a term found in half of
    them still scores above zero. With an empty query, tag matches are returned newest first.
    """
    wanted = set(tags)
    candidates = [e for e in entries if wanted.issubset(e.tags)]
    terms = query_terms(query)
    if not terms:
        return [SearchHit(e, 0.0) for e in newest_first(candidates)[:limit]]
    documents = [Counter(tokenize(e.content_markdown)) for e in candidates]
    if not documents:
        return []
    lengths = [sum(d.values()) for d in documents]
    average = (sum(lengths) / len(lengths)) or 1.0
    # Term frequency by prefix: "train" counts "train", "trains" and "training".
    frequencies = [{t: sum(n for w, n in d.items() if w.startswith(t)) for t in terms} for d in documents]
    total = len(documents)
    idf = {}
    for term in terms:
        having = sum(1 for f in frequencies if f[term])
        idf[term] = math.log(1 + (total - having + 0.5) / (having + 0.5))
    hits = []
    for entry, length, freq in zip(candidates, lengths, frequencies, strict=True):
        score = 0.0
        for term in terms:
            tf = freq[term]
            if tf:
                score += idf[term] * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * length / average))
        if score > 0:
            hits.append(SearchHit(entry, score))
    return best_first(hits)[:limit]


def rank_matches(
    visible: Sequence[MemoryEntry], scores: Mapping[str, float], tags: Sequence[str], limit: int
) -> list[SearchHit]:
    """The ``visible`` entries an index scored, with every tag in ``tags``, best first."""
    wanted = set(tags)
    hits = [SearchHit(e, scores[e.id]) for e in visible if e.id in scores and wanted.issubset(e.tags)]
    return best_first(hits)[:limit]


def best_first(hits: list[SearchHit]) -> list[SearchHit]:
    """Score descending, then newest first, then id: the one order every page of a search follows.

    Scores compare exactly, as an index orders them: equal documents score bit-identically
    (one formula, one corpus per query), so no rounding is needed to see them as ties, and
    rounding would reorder matches an index pages through by exact score.
    """
    return sorted(hits, key=lambda h: (-h.score, -h.entry.created_on.timestamp(), h.entry.id))


def newest_first(entries: Sequence[MemoryEntry]) -> list[MemoryEntry]:
    return sorted(entries, key=lambda e: (e.created_on, e.id), reverse=True)
