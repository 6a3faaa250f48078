"""What the eval reads: a gold set (queries with graded judged chunks) and a run (ranked ids).

Both are plain containers so that any source (a file, a published gold version, a callable, an HTTP
endpoint, a built-in baseline) can produce them and the scoring code stays one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class GoldQuery:
    """One gold query. ``judged`` maps chunk id -> grade; none >= rel_level means "no answer"."""

    query_id: str
    query: str | None
    judged: dict[str, int] = field(default_factory=dict)
    context: str | None = None

    def relevant(self, rel_level: int = 1) -> dict[str, int]:
        return {doc: g for doc, g in self.judged.items() if g >= rel_level}

    def answerable(self, rel_level: int = 1) -> bool:
        return any(g >= rel_level for g in self.judged.values())


@dataclass
class Gold:
    """A gold set: queries by id, plus where it came from (for the history row)."""

    queries: dict[str, GoldQuery]
    source: str
    hash: str
    format: str
    version: int | None = None
    # True when the file keyed queries by their text (the seed's dict): runs are then matched by
    # query text as well as by id.
    keyed_by_text: bool = False
    # The judged documents as a (qid, doc, grade) polars frame, when a large file was read
    # column-wise; the columnar engine uses it instead of rebuilding it from ``queries``.
    frame: Any = None

    def text_index(self) -> dict[str, str]:
        """Query text (normalized) -> query id, for runs that carry text but no ids."""
        from goldmine.text import normalize_query

        index: dict[str, str] = {}
        for q in self.queries.values():
            if q.query:
                index.setdefault(normalize_query(q.query), q.query_id)
        return index


@dataclass
class Run:
    """Ranked ids per query key, best first, each id once. ``scores`` is parallel when known.

    ``keyed_by`` says whether keys are query ids or query texts. ``errors`` holds queries whose
    retrieval failed (a callable raised, an HTTP call timed out): they are reported, not zeroed
    silently.
    """

    results: dict[str, list[str]]
    source: str
    hash: str | None
    format: str
    keyed_by: str = "id"
    scores: dict[str, list[float]] | None = None
    n_duplicates: int = 0
    errors: dict[str, str] = field(default_factory=dict)
    # Extra display text per query key (for runs keyed by id but carrying text).
    texts: dict[str, str] = field(default_factory=dict)
