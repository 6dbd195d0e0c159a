"""Lexical search over the entries a caller may see: BM25, deterministic ties."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rank_bm25 import BM25Okapi

from memory_core.domain.models import MemoryEntry

_TOKEN = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True, slots=True)
class SearchHit:
    entry: MemoryEntry
    score: float


def search_entries(entries: Sequence[MemoryEntry], query: str, tags: Sequence[str], limit: int) -> list[SearchHit]:
    """Entries carrying every tag in ``tags`` and at least one query term, best first.

    Ties are broken by newest first, then id, so the same data always ranks the
    same way. With an empty query, tag matches are returned newest first.
    """
    wanted = set(tags)
    candidates = [e for e in entries if wanted.issubset(e.tags)]
    terms = tokenize(query)
    if not terms:
        newest = sorted(candidates, key=lambda e: (e.created_on, e.id), reverse=True)
        return [SearchHit(e, 0.0) for e in newest[:limit]]
    documents = [tokenize(e.content_markdown) for e in candidates]
    if not documents:
        return []
    scores = BM25Okapi(documents).get_scores(terms)
    term_set = set(terms)
    hits = [
        SearchHit(entry, float(score))
        for entry, words, score in zip(candidates, documents, scores, strict=True)
        if term_set.intersection(words)
    ]
    hits.sort(key=lambda h: (-round(h.score, 9), -h.entry.created_on.timestamp(), h.entry.id))
    return hits[:limit]
