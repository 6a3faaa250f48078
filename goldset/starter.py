"""The starter set: about fifty real queries that cover the traffic, proposed as candidates.

It reads triage's distinct queries and clusters and picks in two passes:

1. coverage — one query for each awkward tag present (acronym, typo, follow-up, no-answer-likely,
   then question and keyword), one for each volume band present (head, torso, tail), and the worst
   failure, unless the set already covers it;
2. fill — round robin over three queues: the head (clusters by volume), the failures (by failed
   events) and the tail (the smallest clusters, failing ones first).

Volume bands are over clusters ranked by volume: the clusters that make up the first half of all
traffic are the head, the ones after 90% of it the tail, the rest the torso. Clusters are spread:
no cluster gets a second place before every head and torso cluster has one (a coverage pick may
break this only when no other cluster has the tag). Queries already in the gold set, any status,
are never proposed again, and the clusters they belong to count as used, so picks spread over the
traffic. That is not coverage: `triage show` counts a cluster covered only once one of its items is
verified or published (goldmine.gold.coverage_cte). A query that differs from one
already picked only by digits or a letter or two (rapidfuzz ratio >= 90, digits masked) is left out:
ticket subjects with order numbers are one query to a gold set.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rapidfuzz import fuzz

from goldmine.errors import NotFoundError
from goldmine.goldset.items import add_item, fetch_dicts, now
from goldmine.goldset.provenance import origins
from goldmine.store import transaction
from goldmine.text import normalize_query

if TYPE_CHECKING:
    import duckdb

AWKWARD_TAGS = ("acronym", "typo", "follow-up", "no-answer-likely", "question", "keyword")
BANDS = ("head", "torso", "tail")
HEAD_SHARE, TAIL_SHARE = 0.5, 0.9
FAILING_RATE = 0.5
NEAR_DUPLICATE = 90  # rapidfuzz ratio, digits masked: a closer query is not proposed as well
_DIGITS = re.compile(r"\d")


def _shape(norm: str) -> str:
    return _DIGITS.sub("0", norm)


@dataclass
class Pick:
    query: dict
    reasons: list[str] = field(default_factory=list)
    query_id: str | None = None


def _queries(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Triage's queries with their cluster's volume band; a query with no cluster is its own."""
    n = con.execute("SELECT count(*) FROM triage_queries").fetchall()[0][0]
    if not n:
        raise NotFoundError(
            "triage has no queries yet: import traffic and run `goldmine triage run` first"
        )
    return fetch_dicts(
        con,
        f"""
        WITH q AS (
            SELECT t.*, coalesce(CAST(t.cluster_id AS VARCHAR), 'q:' || t.norm_query) AS ckey,
                   coalesce(c.volume, t.n_events) AS cvolume, c.label AS clabel
            FROM triage_queries t LEFT JOIN triage_clusters c USING (cluster_id)
        ),
        clusters AS (
            SELECT ckey, any_value(cvolume) AS cvolume FROM q GROUP BY ckey
        ),
        banded AS (
            SELECT ckey, cvolume,
                   (sum(cvolume) OVER (ORDER BY cvolume DESC, ckey
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))
                   / sum(cvolume) OVER () AS share_before,
                   row_number() OVER (ORDER BY cvolume DESC, ckey) AS crank
            FROM clusters
        )
        SELECT q.*, b.crank,
               CASE WHEN coalesce(b.share_before, 0) < {HEAD_SHARE} THEN 'head'
                    WHEN b.share_before >= {TAIL_SHARE} THEN 'tail' ELSE 'torso' END AS band
        FROM q JOIN banded b USING (ckey)
        ORDER BY q.n_events DESC, q.norm_query
        """,
    )


def _in_set(con: duckdb.DuckDBPyConnection) -> tuple[set[str], set[str], set[str]]:
    """Normalized queries, cluster keys and tags the gold set already holds."""
    rows = con.execute(
        """SELECT g.norm_query, coalesce(CAST(g.cluster_id AS VARCHAR), 'q:' || g.norm_query),
                  g.tags FROM gold_items g"""
    ).fetchall()
    return {r[0] for r in rows}, {r[1] for r in rows}, {t for r in rows for t in (r[2] or [])}


def _describe(q: dict) -> str:
    return f"{q['n_events']} events, {q['failure_rate']:.0%} failed"


def choose(
    queries: list[dict], n: int, used_clusters: set[str], held: set[str], held_tags: set[str]
) -> list[Pick]:
    """The picks, in order, with why each was picked. Pure: no store access."""
    pool = [q for q in queries if q["norm_query"] not in held]
    picks: list[Pick] = []
    taken: set[str] = set()
    used = set(used_clusters)
    large = {q["ckey"] for q in queries if q["band"] in ("head", "torso")}

    picked: list[str] = []
    rounds: dict[str, int] = {}

    def near_duplicate(norm: str) -> bool:
        # "change the address on order NW-1085" and "... NW-1244" are one query for a gold set.
        return any(fuzz.ratio(_shape(norm), _shape(p)) >= NEAR_DUPLICATE for p in picked)

    def take(candidates: list[dict], reason: str, *, coverage: bool) -> bool:
        choice = fallback = None
        for q in candidates:
            if q["norm_query"] in taken or near_duplicate(q["norm_query"]):
                continue
            if q["ckey"] not in used:
                choice = q
                break
            fallback = fallback or q
        if choice is None and fallback is not None and (coverage or large <= used):
            choice = fallback
        if choice is None:
            return False
        if rounds.get(choice["ckey"]):
            reason += f", another variant in cluster {choice['cluster_id']}"
        picks.append(Pick(choice, [reason]))
        taken.add(choice["norm_query"])
        picked.append(choice["norm_query"])
        used.add(choice["ckey"])
        rounds[choice["ckey"]] = rounds.get(choice["ckey"], 0) + 1
        return True

    def covered_tag(tag: str) -> bool:
        return tag in held_tags or any(tag in (p.query["tags"] or []) for p in picks)

    for tag in AWKWARD_TAGS:
        if len(picks) >= n or covered_tag(tag):
            continue
        with_tag = [q for q in pool if tag in (q["tags"] or [])]
        if with_tag:
            take(with_tag, f"tag {tag}", coverage=True)
    for band in BANDS:
        if len(picks) >= n or any(p.query["band"] == band for p in picks):
            continue
        in_band = [q for q in pool if q["band"] == band]
        if band == "tail":
            in_band.sort(key=lambda q: (-q["failure_rate"], q["n_events"], q["norm_query"]))
        take(in_band, f"{band} of the traffic", coverage=True)
    failing = sorted(
        (q for q in pool if q["n_failed"] and q["failure_rate"] >= FAILING_RATE),
        key=lambda q: (-q["n_failed"], -q["failure_rate"], q["norm_query"]),
    )
    if len(picks) < n and failing and not any(p.query in failing for p in picks):
        take(failing, "failure", coverage=True)

    head = sorted(pool, key=lambda q: (q["crank"], -q["n_events"], q["norm_query"]))
    tail = sorted(
        pool, key=lambda q: (-q["crank"], -q["failure_rate"], -q["n_events"], q["norm_query"])
    )
    queues = [(head, "next largest cluster"), (failing, "failure"), (tail, "small cluster")]
    while len(picks) < n:
        progressed = False
        for queue, reason in queues:
            if len(picks) < n and take(queue, reason, coverage=False):
                progressed = True
        if not progressed:
            if not any(
                q["norm_query"] not in taken and not near_duplicate(q["norm_query"]) for q in pool
            ):
                break
            # Every cluster has its place: a new round, where each may take one more.
            used = set()
    for p in picks:
        q = p.query
        p.reasons.append(f"{q['band']}, cluster {q['cluster_id']}: {_describe(q)}")
        extra = [t for t in (q["tags"] or []) if f"tag {t}" not in p.reasons[0]]
        if extra:
            p.reasons.append("tags " + ", ".join(extra))
    return picks


def starter(con: duckdb.DuckDBPyConnection, n: int, by: str) -> list[Pick]:
    """Propose up to ``n`` new candidates covering the traffic; writes them in one transaction."""
    queries = _queries(con)
    held, used_clusters, held_tags = _in_set(con)
    picks = choose(queries, n, used_clusters, held, held_tags)
    found = origins(
        con,
        [p.query["norm_query"] for p in picks],
        follow_ups={p.query["norm_query"] for p in picks if "follow-up" in (p.query["tags"] or [])},
    )
    at = now()
    with transaction(con):
        for p in picks:
            q, origin = p.query, found[p.query["norm_query"]]
            p.query_id = add_item(
                con,
                q["query"],
                origin="starter",
                by=by,
                reason="; ".join(p.reasons),
                cluster_id=q["cluster_id"],
                tags=q["tags"],
                sources=q["sources"],
                source_ids=origin.source_ids,
                frequency=q["n_events"],
                first_seen=q["first_seen"],
                last_seen=q["last_seen"],
                context=origin.context,
                at=at,
            )
    return [p for p in picks if p.query_id]


def add_queries(
    con: duckdb.DuckDBPyConnection,
    texts: list[str],
    clusters: list[int],
    by: str,
    redact: Callable[[str], str] | None = None,
) -> list[tuple[str, str, bool]]:
    """Add named queries (text, or a triage norm) and clusters' representatives.

    Returns (query_id, query, added) per request; ``added`` is False when it was already in the set.
    ``redact``: what a text that is not a gold query id goes through first (PII), so that it is
    stored, matched to triage (whose queries were redacted on import) and hashed redacted.
    """

    wanted: list[tuple[str, dict | None, str]] = []
    for cluster_id in clusters:
        rows = fetch_dicts(
            con,
            "SELECT * FROM triage_queries WHERE cluster_id = ?"
            " ORDER BY n_events DESC, norm_query LIMIT 1",
            [cluster_id],
        )
        if not rows:
            raise NotFoundError(f"no triage cluster {cluster_id} (see `goldmine triage show`)")
        wanted.append((rows[0]["query"], rows[0], f"representative of cluster {cluster_id}"))
    for text in texts:
        existing = con.execute("SELECT query FROM gold_items WHERE query_id = ?", [text]).fetchall()
        if existing:
            wanted.append((existing[0][0], None, "already in the set"))
            continue
        text = redact(text) if redact else text
        rows = fetch_dicts(
            con, "SELECT * FROM triage_queries WHERE norm_query = ?", [normalize_query(text)]
        )
        wanted.append((text, rows[0] if rows else None, "added by name"))
    found = origins(
        con,
        [normalize_query(t) for t, _, _ in wanted],
        follow_ups={
            normalize_query(t) for t, q, _ in wanted if q and "follow-up" in (q["tags"] or [])
        },
    )
    out = []
    at = now()
    with transaction(con):
        for text, q, reason in wanted:
            norm = normalize_query(text)
            origin = found.get(norm)
            q = q or {}
            qid = add_item(
                con,
                text,
                origin="cluster" if reason.startswith("repr") else "add-query",
                by=by,
                reason=reason,
                cluster_id=q.get("cluster_id"),
                tags=q.get("tags"),
                sources=q.get("sources") or (["manual"] if not q else None),
                source_ids=origin.source_ids if origin else None,
                frequency=q.get("n_events"),
                first_seen=q.get("first_seen"),
                last_seen=q.get("last_seen"),
                context=origin.context if origin else None,
                at=at,
            )
            if qid is None:
                from goldmine.goldset.items import query_id_for

                row = con.execute(
                    "SELECT query_id FROM gold_items WHERE query_id = ? OR norm_query = ?",
                    [text, norm],
                ).fetchall()
                qid_existing = row[0][0] if row else query_id_for(norm)
                out.append((qid_existing, text, False))
            else:
                out.append((qid, text, True))
    return out
