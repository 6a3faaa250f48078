"""What every stage means by a gold set: the containers, and which clusters a gold item covers.

A gold set (queries with graded judged chunks) and a run (ranked ids) are plain containers, so that
any source (a file, a published gold version, a callable, an HTTP endpoint, a built-in baseline) can
produce them and the scoring code stays one; the gold set writes them, the eval reads them.

Coverage has one definition (``coverage_cte``), which triage show, the starter set and ``gold
next`` share: a cluster is covered by a verified or published gold item, not by candidates.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from goldmine.errors import InputError
from goldmine.text import normalize_query

if TYPE_CHECKING:
    import duckdb


# The largest grade either way a gold set holds: trec_eval sizes a table by the largest grade,
# and the columnar engine's and the store's grade columns are integer ones. No scale comes near.
GRADE_LIMIT = 2**31 - 1


def id_text(value: object, where: str) -> str:
    """An id as text. A whole float is its integer's text: pandas holds an id column with a gap
    as floats and numpy arrays of ids turn float, and 184.0 read "184.0" matched no "184".
    Bytes are their UTF-8 text (str(b"184") is "b'184'")."""
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        if math.isfinite(value) and float(value).is_integer():
            return str(int(value))
        if math.isnan(value):  # pandas' missing value in an id column
            raise InputError(f"{where}: an id is missing (NaN)")
        raise InputError(
            f"{where}: id {value!r} is no whole number; an id is text or a whole number"
        )
    if isinstance(value, bytes | bytearray):  # Redis' client, among others, answers bytes
        try:
            return bytes(value).decode()
        except UnicodeDecodeError:
            raise InputError(f"{where}: id {value!r} is no UTF-8 text") from None
    return str(value)


@dataclass
class GoldQuery:
    """One gold query. ``judged`` maps chunk id -> grade; none >= 1 means "no answer"."""

    query_id: str
    query: str | None
    judged: dict[str, int] = field(default_factory=dict)
    context: str | None = None

    def relevant(self, rel_level: int = 1) -> dict[str, int]:
        return {doc: g for doc, g in self.judged.items() if g >= rel_level}

    def answerable(self, rel_level: int = 1) -> bool:
        """Whether the corpus answers it: a chunk graded 1 or more, or at ``rel_level`` when that
        is lower (trec_eval's ``-l 0`` takes a judged 0 as relevant). A higher level makes no
        query unanswerable: one whose best grade is under it is scored, 0 on the binary
        metrics and its grades' nDCG, as trec_eval scores it."""
        floor = min(rel_level, 1)
        return any(g >= floor for g in self.judged.values())


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

    def text_index(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """Query text -> the ids of the queries that have it, exactly (trimmed) and normalized,
        for runs that carry text but no ids."""
        exact: dict[str, list[str]] = {}
        normalized: dict[str, list[str]] = {}
        for q in self.queries.values():
            if q.query:
                exact.setdefault(q.query.strip(), []).append(q.query_id)
                normalized.setdefault(normalize_query(q.query), []).append(q.query_id)
        return exact, normalized


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


# --- coverage: which clusters a gold item covers ----------------------------------------------


def _has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    found = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [name])
    return bool(found.fetchall()[0][0])


_NO_GOLD = (
    "SELECT NULL::BIGINT AS cluster_id, NULL::VARCHAR AS coverage, NULL::INTEGER AS "
    "coverage_version, NULL::BOOLEAN AS covered WHERE false"
)


def coverage_cte(con: duckdb.DuckDBPyConnection) -> str:
    """``gm_coverage AS (...)``: per cluster with a gold item, ``coverage`` (v3 | verified |
    in review | no), ``coverage_version`` and ``covered`` (verified or published)."""
    if not (_has_table(con, "gold_items") and _has_table(con, "gold_version_items")):
        return f"gm_coverage AS ({_NO_GOLD})"
    return """
        gm_gold AS (
            SELECT i.query_id, i.norm_query, i.cluster_id, i.status,
                   (SELECT max(v.version) FROM gold_version_items v
                    WHERE v.query_id = i.query_id) AS version
            FROM gold_items i
            UNION ALL  -- where a version froze it, should the item have moved since
            SELECT query_id, item->>'$.norm_query', TRY_CAST(item->>'$.provenance.cluster_id'
                   AS BIGINT), 'published', version
            FROM gold_version_items
        ),
        gm_member AS (
            SELECT cluster_id, status, version FROM gm_gold WHERE cluster_id IS NOT NULL
            UNION ALL
            SELECT q.cluster_id, g.status, g.version
            FROM gm_gold g JOIN triage_queries q USING (norm_query) WHERE q.cluster_id IS NOT NULL
        ),
        gm_coverage AS (
            SELECT cluster_id, max(version) AS coverage_version,
                   CASE WHEN max(version) IS NOT NULL THEN 'v' || max(version)
                        WHEN bool_or(status = 'verified') THEN 'verified'
                        WHEN bool_or(status IN ('candidate', 'drafted')) THEN 'in review'
                        ELSE 'no' END AS coverage,
                   max(version) IS NOT NULL OR bool_or(status = 'verified') AS covered
            FROM gm_member GROUP BY cluster_id
        )"""


# The coverage columns of a cluster ``c`` joined to gm_coverage ``k``.
COVERAGE_COLUMNS = """coalesce(k.coverage, 'no') AS coverage, k.coverage_version,
               coalesce(k.covered, false) AS covered"""
