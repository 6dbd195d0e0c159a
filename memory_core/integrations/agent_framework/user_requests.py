"""What the user asks of memory in plain words: "remember ...", "forget ...".

Callers may rely on: questions ("remember when ...?", "forget what?"), vague
targets ("forget it") and dismissals ("forget that, let's talk about hotels") are never
requests; a forget request is matched to a stored entry only when the entry holds more
than half of the request's significant words, each as a word or the start of one
("seat" in "seats", never "art" in "start"). Everything here is pure and never raises.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_framework import SessionContext

_REMEMBER = re.compile(r"^\s*(?:please\s+)?remember(?:\s+that)?\s*[:,-]?\s+(?P<what>\S.*?)\s*$", re.I | re.S)
_FORGET = re.compile(
    r"^\s*(?:please\s+)?forget(?:\s+(?:that|about))?\s*[:,-]?\s+(?P<what>\S.*?)[\s.!]*$", re.I | re.S
)
_FORGET_EVERYTHING = re.compile(
    r"^(?:everything|all|all (?:of )?(?:my |your )?(?:memory|memories)|everything (?:about me|you know(?: about me)?))$",
    re.I,
)
# "Forget that, ..." / "forget it." / "forget this - ...": the idiom for "never mind", not a request.
_DISMISSAL = re.compile(r"^\s*(?:please\s+)?forget\s+(?:that|it|this)\s*[,;.!\u2013\u2014]", re.I)
_QUESTION_START = re.compile(r"^(?:when|what|how|why|who|whom|where|which|if|whether)\b", re.I)
_VAGUE_TARGETS = frozenset({"it", "this", "that", "them", "me", "him", "her", "it all", "about it"})
_WORD = re.compile(r"[\w']+")
_STOPWORDS = frozenset(
    ["the", "and", "for", "that", "this", "with", "about", "from", "into", "your", "you", "our", "are", "was", "were", "what", "which", "have", "has", "had", "not", "but", "any", "all", "its", "it's", "i'm", "i've", "know"]
)


def latest_user_text(context: SessionContext) -> str:
    """The newest non-blank user message of the run, stripped; ``""`` when there is none."""
    for message in reversed(context.input_messages):
        if str(message.role) == "user" and message.text.strip():
            return message.text.strip()
    return ""


def remember_request(text: str) -> str | None:
    """The fact in an explicit "remember ..." request, or ``None``; questions are not requests."""
    match = _REMEMBER.match(text)
    if match is None:
        return None
    what = match.group("what").strip()
    if what.endswith("?") or _QUESTION_START.match(what):
        return None
    return what


def forget_request(text: str) -> str | None:
    """What a "forget ..." request names, or ``None`` (also for vague "forget it" and questions)."""
    match = _FORGET.match(text)
    if match is None or _DISMISSAL.match(text):
        return None
    what = match.group("what").strip()
    if what.endswith("?") or what.lower() in _VAGUE_TARGETS or _QUESTION_START.match(what):
        return None
    return what


def asks_to_forget_everything(what: str) -> bool:
    """True when a forget request's target means all of the user's memory ("everything", "all my memories")."""
    return _FORGET_EVERYTHING.match(what) is not None


def _significant_words(text: str) -> list[str]:
    words = [w.strip("'") for w in _WORD.findall(text.lower())]
    return list(dict.fromkeys(w for w in words if len(w) >= 3 and w not in _STOPWORDS))


def matches(what: str, hits: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ids of the hits, best-ranked first, that hold more than half of the request's significant words, each
    as a word or the start of one.

    The service's ranking needs only one shared term; this stricter check keeps a loose
    phrase, or one common word ("like"), from naming an unrelated entry.
    """
    words = _significant_words(what)
    if not words:
        return []
    found = []
    for hit in hits:
        entry = hit.get("entry") or {}
        held = {w.strip("'") for w in _WORD.findall(str(entry.get("content_markdown", "")).lower())}
        shared = sum(any(word_there.startswith(word) for word_there in held) for word in words)
        if 2 * shared > len(words) and entry.get("id"):
            found.append(str(entry["id"]))
    return found

