"""Step 7 of triage and what the commands read: ranked clusters, coverage, exports, one cluster.

Priority weighs volume by failure rate, with the rate shrunk toward the global one so a cluster of
one failed search does not outrank a cluster of a hundred searches that fail half the time::

    shrunk_rate = (n_failed + PRIOR_EVENTS * global_rate) / (volume + PRIOR_EVENTS)
    priority    = volume * shrunk_rate

``global_rate`` is the failure rate over every event in the run; ``PRIOR_EVENTS`` = 10 events of
prior weight. ``triage show --json`` carries every part, and each cluster's ``terms`` (top
c-TF-IDF terms) and ``central`` queries (triage/labels.py).

Coverage (one definition, ``goldmine.gold.coverage_cte``, shared with the gold set): a gold item
belongs to a cluster when it has the cluster's ``cluster_id`` or a ``norm_query`` triage put in the
cluster (as the item is now, or as a published version froze it). A cluster is covered when an item
of it is verified or published; ``coverage`` says which: ``v3`` (published; the latest version that
has one of its items), ``verified`` (verified since, not published yet), ``in review`` (candidates
or drafts, nothing verified) or ``no`` (nothing, or only rejected items). Candidates alone cover
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goldmine.errors import InputError, NotFoundError
from goldmine.gold import COVERAGE_COLUMNS, coverage_cte
from goldmine.store import fetch_dicts
from goldmine.triage.events import frame

if TYPE_CHECKING:
    import duckdb

PRIOR_EVENTS = 10
# A cluster's members, its most central first: a canonical's cosine to the centroid (a variant
# has none: it follows its canonical), then volume. The label is the first (``triage_queries``
# columns, ``a`` its ``triage_assignments`` row): the most frequent query can be a stray one
# with traffic of its own, far from what the cluster holds.
CENTRAL_ORDER = "a.similarity DESC NULLS LAST, n_events DESC, length(query), query"
SIGNALS = ("zero_results", "no_click", "reformulated", "negative_feedback", "tickets", "chat_fail")
KNOWN_TAGS = ("acronym", "typo", "follow-up", "no-answer-likely", "question", "keyword")


def summarize_clusters(con: duckdb.DuckDBPyConnection, run_id: int) -> int:
    """Rebuild ``triage_clusters`` from triage_queries; returns the number of clusters."""
    counts = ", ".join(f"'{s}': sum(n_{s})" for s in SIGNALS)
    con.execute("DELETE FROM triage_clusters")
    con.execute(
        f"""
        INSERT INTO triage_clusters BY NAME
        WITH g AS (
            SELECT coalesce(sum(n_failed) / nullif(sum(n_events), 0), 0) AS rate
            FROM triage_queries
        ),
        prev AS (
            -- the last run that saw less traffic than this one: a run with nothing new since
            -- the last keeps what that one found new. Less traffic: an older newest search, or
            -- fewer queries (a late week's searches leave the newest where it was)
            SELECT max(watermark) AS watermark, max(run_id) AS run_id FROM triage_runs
            WHERE status = 'done' AND run_id < $run_id
              AND (watermark < coalesce((SELECT max(last_seen) FROM triage_query_days),
                                        'infinity'::TIMESTAMP)
                   OR n_queries < (SELECT count(*) FROM triage_queries))
        ),
        tag_n AS (
            SELECT cluster_id, tag, count(*) AS n FROM
                (SELECT cluster_id, unnest(tags) AS tag FROM triage_queries)
            GROUP BY ALL
        ),
        src AS (
            SELECT cluster_id, list(DISTINCT s ORDER BY s) AS sources FROM
                (SELECT cluster_id, unnest(sources) AS s FROM triage_queries) GROUP BY ALL
        ),
        c AS (
            SELECT cluster_id,
                   first(query ORDER BY {CENTRAL_ORDER}) AS label,
                   sum(n_events) AS volume, count(*) AS n_variants,
                   sum(n_failed) AS n_failed,
                   sum(n_failed) / sum(n_events) AS failure_rate,
                   min(first_seen) AS first_seen, max(last_seen) AS last_seen,
                   to_json({{{counts}}}) AS signals
            FROM triage_queries
            LEFT JOIN (SELECT norm_query, similarity FROM triage_assignments) a USING (norm_query)
            WHERE cluster_id IS NOT NULL GROUP BY cluster_id
        )
        SELECT c.*,
               (c.n_failed + {PRIOR_EVENTS} * g.rate) / (c.volume + {PRIOR_EVENTS})
                   AS shrunk_rate,
               c.volume * (c.n_failed + {PRIOR_EVENTS} * g.rate) / (c.volume + {PRIOR_EVENTS})
                   AS priority,
               (SELECT list(tag ORDER BY tag) FROM tag_n t WHERE t.cluster_id = c.cluster_id)
                   AS tags,
               (SELECT json_group_object(tag, n) FROM tag_n t WHERE t.cluster_id = c.cluster_id)
                   AS tag_counts,
               s.sources,
               -- New: first seen after the previous run, or a cluster made since it (a week
               -- that arrives late is dated before the previous run's newest search).
               prev.watermark IS NULL OR c.first_seen > prev.watermark
                   OR coalesce(k.run_id > prev.run_id, false) AS is_new,
               k.centroid, k.run_id AS created_run_id
        FROM c CROSS JOIN g CROSS JOIN prev
        LEFT JOIN src s USING (cluster_id)
        LEFT JOIN (SELECT cluster_id, any_value(centroid) AS centroid, min(run_id) AS run_id
                   FROM triage_cluster_ids GROUP BY cluster_id) k USING (cluster_id)
        """,
        {"run_id": run_id},
    )
    return con.execute("SELECT count(*) FROM triage_clusters").fetchall()[0][0]


@dataclass(frozen=True)
class ShowFilter:
    top: int = 20
    uncovered: bool = False
    new: bool = False
    tag: str | None = None
    source: str | None = None

    def given(self) -> list[str]:
        """The filters given, as typed: ``["--uncovered", "--tag typo"]``."""
        flags = [("--uncovered", self.uncovered), ("--new", self.new)]
        values = [("--tag", self.tag), ("--source", self.source)]
        return [f for f, on in flags if on] + [f"{f} {v}" for f, v in values if v is not None]


def ranked_clusters(con: duckdb.DuckDBPyConnection, f: ShowFilter) -> list[dict[str, Any]]:
    """The clusters, highest priority first, with every part of the priority."""
    import json

    if f.top < 1:
        raise InputError(f"--top must be at least 1, not {f.top}")
    if f.tag is not None and f.tag not in KNOWN_TAGS:
        raise InputError(f"unknown tag {f.tag!r}; choose one of: {', '.join(KNOWN_TAGS)}")
    if not con.execute("SELECT count(*) FROM triage_runs WHERE status = 'done'").fetchall()[0][0]:
        from goldmine.triage.events import has_traffic

        if not has_traffic(con):
            raise NotFoundError(
                "nothing to show: the store holds no searches, tickets, chat turns or manual "
                "queries yet (import some with goldmine ingest searchlog|tickets|chat FILE, then "
                "run goldmine triage run)"
            )
        raise NotFoundError("triage has not run yet: `goldmine triage run` first")
    if f.source is not None:
        known = [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT unnest(sources) FROM triage_queries ORDER BY 1"
            ).fetchall()
        ]
        if f.source not in known:
            raise InputError(
                f"unknown source {f.source!r}; the triaged traffic has: "
                + (", ".join(known) or "no source")
            )
    rows = fetch_dicts(
        con,
        f"""
        WITH {coverage_cte(con)}
        SELECT c.cluster_id, c.topic_id, c.label, c.volume, c.n_variants, c.n_failed,
               c.failure_rate, c.signals, c.priority, c.shrunk_rate,
               (SELECT coalesce(sum(n_failed) / nullif(sum(n_events), 0), 0)
                FROM triage_queries) AS global_rate,
               c.tags, c.tag_counts, c.sources, c.first_seen, c.last_seen, c.is_new,
               {COVERAGE_COLUMNS}, coalesce(l.terms, []) AS terms,
               coalesce(l.central, []) AS central
        FROM triage_clusters c LEFT JOIN gm_coverage k USING (cluster_id)
        LEFT JOIN triage_cluster_labels l USING (cluster_id)
        WHERE (NOT ? OR NOT coalesce(k.covered, false)) AND (NOT ? OR c.is_new)
          AND (?::VARCHAR IS NULL OR list_contains(c.tags, ?::VARCHAR))
          AND (?::VARCHAR IS NULL OR list_contains(c.sources, ?::VARCHAR))
        ORDER BY c.priority DESC, c.volume DESC, c.cluster_id
        LIMIT ?
        """,
        [f.uncovered, f.new, f.tag, f.tag, f.source, f.source, f.top],
    )
    for row in rows:
        row["signals"] = json.loads(row["signals"]) if row["signals"] else {}
        row["tag_counts"] = json.loads(row["tag_counts"]) if row["tag_counts"] else {}
        row["priority_parts"] = {
            "volume": row["volume"],
            "n_failed": row["n_failed"],
            "failure_rate": row["failure_rate"],
            "global_rate": row.pop("global_rate"),
            "prior_events": PRIOR_EVENTS,
            "shrunk_rate": row.pop("shrunk_rate"),
            "formula": "volume * (n_failed + prior_events * global_rate) / (volume + prior_events)",
        }
    return rows


def ranked_topics(con: duckdb.DuckDBPyConnection, f: ShowFilter) -> list[dict[str, Any]]:
    """The topics, highest priority first, each with its clusters (as :func:`ranked_clusters`
    gives them, in their order) beneath. A topic's volume, failures and priority are the sums
    over its clusters that pass the filters; each cluster keeps its own rate and priority."""
    from dataclasses import replace

    if f.top < 1:
        raise InputError(f"--top must be at least 1, not {f.top}")
    topics: dict[int, list[dict[str, Any]]] = {}
    for row in ranked_clusters(con, replace(f, top=1 << 62)):
        topics.setdefault(row["topic_id"], []).append(row)
    out = [_topic(topic_id, rows) for topic_id, rows in topics.items()]
    out.sort(key=lambda t: (-t["priority"], -t["volume"], t["topic_id"]))
    return out[: f.top]


def _topic(topic_id: int, clusters: list[dict[str, Any]]) -> dict[str, Any]:
    volume = sum(c["volume"] for c in clusters)
    n_failed = sum(c["n_failed"] for c in clusters)
    return {
        "topic_id": topic_id,
        # the topic's largest cluster's label (ties: the oldest)
        "label": min(clusters, key=lambda c: (-c["volume"], c["cluster_id"]))["label"],
        "n_clusters": len(clusters),
        "volume": volume,
        "n_failed": n_failed,
        "failure_rate": n_failed / volume if volume else 0.0,
        "priority": sum(c["priority"] for c in clusters),
        "clusters": clusters,
    }


def no_match(con: duckdb.DuckDBPyConnection, f: ShowFilter) -> str:
    """Why ``triage show`` has no row to print, naming only the filters that were given."""
    n = con.execute("SELECT count(*) FROM triage_clusters").fetchall()[0][0]
    given = f.given()
    if not given or not n:
        return "no clusters: the last triage run put no query in a cluster"
    return (
        f"no cluster matches {' '.join(given)} "
        f"({n:,} cluster{'s' if n != 1 else ''} without {'it' if len(given) == 1 else 'them'})"
    )


EXPORT_COLUMNS = """
    q.query, q.norm_query, q.cluster_id, q.canonical_query, c.label AS cluster_label, c.topic_id,
    q.n_events, q.n_sessions, q.n_failed, q.failure_rate, q.n_zero_results, q.n_no_click,
    q.n_reformulated, q.n_negative_feedback, q.n_tickets, q.n_chat_fail, q.n_follow_up,
    q.fuzzy_score, q.best_score, q.tags, q.sources, q.first_seen, q.last_seen
"""


# A cell a spreadsheet runs as a formula (CSV injection, OWASP): what a search box takes in.
FORMULA_START = r"^[=+\-@\t\r]"


def _no_formula(column: str) -> Any:
    """A text column for a CSV a person opens in a spreadsheet: a cell starting like a formula
    gets Excel's text prefix ``'``, shown as the text itself (Parquet keeps the text exact)."""
    import polars as pl

    col = pl.col(column)
    return pl.when(col.str.contains(FORMULA_START)).then("'" + col).otherwise(col).alias(column)


def export_queries(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    """One row per distinct query to CSV or Parquet (by extension); returns the row count."""
    import polars as pl

    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise InputError("export needs a .csv or .parquet file name", path=path)
    rows_df = frame(
        con,
        f"""SELECT {EXPORT_COLUMNS} FROM triage_queries q
            LEFT JOIN triage_clusters c USING (cluster_id)
            ORDER BY q.cluster_id NULLS LAST, q.n_events DESC, q.norm_query""",
    )
    if suffix == ".csv":
        rows_df = rows_df.with_columns(
            pl.col("tags").list.join("|"),
            pl.col("sources").list.join("|"),
            *(_no_formula(c) for c in ("query", "canonical_query", "cluster_label")),
        )
        rows_df.write_csv(path)
    else:
        rows_df.write_parquet(path)
    return rows_df.height


# One row per query of a cluster that is no fuzzy variant of another of its queries, each with
# its other spellings (``examples``, never its own text again) and its variants beneath it, so
# each query is listed once (issue 30).
_DETAIL_SQL = """
    WITH m AS (
        SELECT q.*, CASE WHEN q.canonical_query <> q.norm_query AND q.canonical_query IN
                    (SELECT norm_query FROM triage_queries WHERE cluster_id = ?)
                    THEN q.canonical_query ELSE q.norm_query END AS head
        FROM triage_queries q WHERE q.cluster_id = ?
    ),
    r AS (
        SELECT m.query, m.norm_query, m.canonical_query, m.n_events, m.n_sessions, m.n_failed,
               m.failure_rate, m.n_zero_results, m.n_no_click, m.n_reformulated,
               m.n_negative_feedback, m.n_tickets, m.n_chat_fail, m.tags, m.sources,
               coalesce((SELECT list(DISTINCT d.query ORDER BY d.query)[:5] FROM (
                    SELECT unnest(spellings).query AS query FROM triage_query_days
                    WHERE norm_query = m.norm_query) d WHERE d.query <> m.query), [])
                   AS examples,
               (SELECT list(DISTINCT e.session_id)[:5] FROM triage_events e
                WHERE e.norm_query = m.norm_query AND e.session_id IS NOT NULL) AS sessions,
               (SELECT list(DISTINCT e.prev_query)[:3] FROM triage_events e
                WHERE e.norm_query = m.norm_query AND e.is_follow_up) AS previous_turns,
               m.head
        FROM m
    )
    SELECT h.*, coalesce((SELECT list(v ORDER BY v.n_events DESC, v.norm_query) FROM r v
                          WHERE v.head = h.norm_query AND v.norm_query <> h.norm_query), [])
                AS variants
    FROM r h WHERE h.head = h.norm_query
    ORDER BY h.n_events DESC, h.norm_query
"""


def cluster_detail(con: duckdb.DuckDBPyConnection, cluster_id: int) -> dict[str, Any]:
    """Every query in a cluster with counts, signals, sessions, other spellings, previous turns;
    a fuzzy variant under the query it is a variant of (``variants``), not beside it."""
    head = fetch_dicts(
        con,
        f"""WITH {coverage_cte(con)}
            SELECT c.*, {COVERAGE_COLUMNS}, coalesce(l.terms, []) AS terms,
                   coalesce(l.central, []) AS central
            FROM triage_clusters c LEFT JOIN gm_coverage k USING (cluster_id)
            LEFT JOIN triage_cluster_labels l USING (cluster_id)
            WHERE cluster_id = ?""",
        [cluster_id],
    )
    if not head:
        raise NotFoundError(f"no triage cluster {cluster_id} (see `goldmine triage show`)")
    import json

    cluster = head[0]
    cluster.pop("centroid", None)
    for key in ("signals", "tag_counts"):  # objects, as triage show --json gives them
        cluster[key] = json.loads(cluster[key]) if cluster[key] else {}
    cluster["queries"] = fetch_dicts(con, _DETAIL_SQL, [cluster_id, cluster_id])
    for q in cluster["queries"]:
        q.pop("head")
        for v in q["variants"]:
            v.pop("head")
    return cluster
