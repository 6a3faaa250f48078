"""The starter set: about fifty real queries that cover the traffic, proposed as candidates.

It reads triage's distinct queries and clusters and picks in two passes:

1. coverage — one query for each awkward tag present (acronym, typo, follow-up, no-answer-likely,
   then question and keyword), one for each volume band present (head, torso, tail), and the worst
   failure, unless the set already covers it;
2. fill — round robin over three queues: the head (clusters by volume), the failures (clusters by
   failed events, each by its most central failing query) and the tail (the smallest clusters,
   failing ones first). Each queue weighs its next ``LOOKAHEAD`` unused clusters by volume (head),
   failed events (failures) or alike (tail), times the cluster's distance from those already
   picked (1 - the highest cosine between centroids, `triage_clusters.centroid`), and takes the
   highest: triage often splits one need into neighbouring clusters, and the split half waits for
   a different need. A store whose clusters have no centroid keeps the queues' order.

Volume bands are over clusters ranked by volume: the clusters that make up the first half of all
traffic are the head, the ones after 90% of it the tail, the rest the torso. Clusters are spread:
no cluster gets a second place before every head and torso cluster has one (a coverage pick may
break this only when no other cluster has the tag), and once every cluster has its place, the
ones with the fewest places come first, so each takes a second before any takes a third.
Queries already in the gold set, any status, are never proposed again, and the clusters they
belong to count as used (and as picked, for the distance, and as places, for the fewest-first
rule), so picks spread over the traffic. That
is not coverage: `triage show` counts a cluster covered only once one of its items is verified or
published (goldmine.gold.coverage_cte). A query that differs from one already picked only by
digits or a letter or two (rapidfuzz ratio >= 90, digits masked) is left out: ticket subjects with
order numbers are one query to a gold set.

Ties never fall to the alphabet. A cluster is represented by its most central query (highest cosine
to the centroid, `triage_assignments.similarity`, a variant taking its canonical's: the one `triage
show` lists first), then the most frequent; what is still tied is ordered by a seeded hash of the
normalized text (md5), and clusters of equal volume by their central query's hash. Cluster ids play
no part, so two stores with the same traffic give the same set, and no letter is favoured.

Places are spread over the sources present (searchlog, tickets, chat, manual, traces, ...) in
proportion to their events, with at least one per source that has any (two when n >= 50), or as
``--by-source`` says. Each pick fills a place of its main source (most events), else of another
source it came from that still has room; a source whose places cannot be filled gives them back
once nothing else is left. The set's composition (sources, bands, tags, failing) is reported
beside the traffic's.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from rapidfuzz import fuzz, process

from goldmine.errors import InputError, NotFoundError
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
SEED = 0
# How many unused clusters of a queue the fill weighs against each other (weight x distance from
# the picked clusters): past that the queue's order holds. 5 and 10 covered fewer banking77
# intents at n = 25 than 20; 50 no more than 20 (bench/bench_starter.py).
LOOKAHEAD = 20
_BY_SOURCE = re.compile(r"^\s*([^=,\s]+)\s*=\s*(\d+)\s*$")


def _shape(norm: str) -> str:
    return _DIGITS.sub("0", norm)


@dataclass
class Pick:
    query: dict
    reasons: list[str] = field(default_factory=list)
    query_id: str | None = None
    source: str = ""  # the source whose place this pick fills


@dataclass
class StarterSet:
    picks: list[Pick]
    composition: dict


def tiebreak(norm: str, seed: int = SEED) -> str:
    """The seeded hash ties are broken by: the same as the SQL's md5(norm_query || ':' || seed)."""
    return hashlib.md5(f"{norm}:{seed}".encode()).hexdigest()


# Each query's events per source; a store written before n_by_source counts its first source.
_SOURCES = """
    gm_src AS (
        SELECT norm_query, e.key AS source, e.value AS n FROM (
            SELECT norm_query, unnest(map_entries(coalesce(
                       TRY_CAST(n_by_source AS MAP(VARCHAR, BIGINT)),
                       map([coalesce(sources[1], 'unknown')], [n_events])))) AS e
            FROM triage_queries))
"""


def _load(con: duckdb.DuckDBPyConnection, seed: int) -> None:
    """``gm_starter``: triage's queries with their cluster key, centrality, seeded hash, rank in
    their cluster, the cluster's volume band and the sources they came from, main one first."""
    n = con.execute("SELECT count(*) FROM triage_queries").fetchall()[0][0]
    if not n:
        raise NotFoundError(
            "triage has no queries yet: import traffic and run `goldmine triage run` first"
        )
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE gm_starter AS
        WITH {_SOURCES},
        by_src AS (
            SELECT norm_query, list(source ORDER BY n DESC, source) AS src_order FROM gm_src
            GROUP BY norm_query
        ),
        sims AS (
            -- a fuzzy variant has no similarity of its own: it stands where its canonical does
            SELECT a.norm_query, coalesce(any_value(a.similarity), any_value(c.similarity)) AS sim
            FROM triage_assignments a LEFT JOIN triage_assignments c
                 ON c.norm_query = a.canonical_query
            GROUP BY a.norm_query
        ),
        q AS (
            SELECT t.*, coalesce(CAST(t.cluster_id AS VARCHAR), 'q:' || t.norm_query) AS ckey,
                   coalesce(c.volume, t.n_events) AS cvolume, c.label AS clabel,
                   coalesce(c.n_failed, t.n_failed) AS cfailed,
                   s.sim AS centrality, md5(t.norm_query || ':' || $seed) AS qhash,
                   b.src_order, b.src_order[1] AS source
            FROM triage_queries t LEFT JOIN triage_clusters c USING (cluster_id)
            LEFT JOIN sims s USING (norm_query) JOIN by_src b USING (norm_query)
        ),
        ranked AS (
            SELECT *, row_number() OVER (PARTITION BY ckey
                ORDER BY centrality DESC NULLS LAST, n_events DESC, qhash) AS qrank
            FROM q
        ),
        clusters AS (
            SELECT ckey, any_value(cvolume) AS cvolume, min(qhash) FILTER (qrank = 1) AS chash
            FROM ranked GROUP BY ckey
        ),
        banded AS (
            SELECT ckey, cvolume,
                   (sum(cvolume) OVER (ORDER BY cvolume DESC, chash
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))
                   / sum(cvolume) OVER () AS share_before,
                   row_number() OVER (ORDER BY cvolume DESC, chash) AS crank
            FROM clusters
        )
        SELECT r.*, b.crank,
               CASE WHEN coalesce(b.share_before, 0) < {HEAD_SHARE} THEN 'head'
                    WHEN b.share_before >= {TAIL_SHARE} THEN 'tail' ELSE 'torso' END AS band,
               r.n_failed > 0 AND r.failure_rate >= {FAILING_RATE} AS failing
        FROM ranked r JOIN banded b USING (ckey)
        """,
        {"seed": str(seed)},
    )


def _queries(con: duckdb.DuckDBPyConnection, seed: int = SEED) -> list[dict]:
    """Triage's queries with their cluster's volume band; a query with no cluster is its own."""
    _load(con, seed)
    return fetch_dicts(con, "SELECT * FROM gm_starter ORDER BY n_events DESC, qrank, qhash")


def _traffic(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, int]]:
    """Events per source, band, tag and failing or not over all of triage's queries."""
    out: dict[str, dict[str, int]] = {"sources": {}, "bands": {}, "tags": {}, "failing": {}}
    for kind, sql in (
        ("sources", f"WITH {_SOURCES} SELECT source, sum(n) FROM gm_src GROUP BY ALL"),
        ("bands", "SELECT band, sum(n_events) FROM gm_starter GROUP BY ALL"),
        (
            "tags",
            "SELECT tag, sum(n) FROM (SELECT unnest(tags) AS tag, n_events AS n"
            " FROM gm_starter) GROUP BY ALL",
        ),
        ("failing", "SELECT failing::VARCHAR, sum(n_events) FROM gm_starter GROUP BY ALL"),
    ):
        out[kind] = {str(k): int(v) for k, v in con.execute(sql).fetchall()}
    return out


def _in_set(con: duckdb.DuckDBPyConnection) -> tuple[set[str], set[str], set[str]]:
    """Normalized queries, cluster keys and tags the gold set already holds."""
    rows = con.execute(
        """SELECT g.norm_query, coalesce(CAST(g.cluster_id AS VARCHAR), 'q:' || g.norm_query),
                  g.tags FROM gold_items g"""
    ).fetchall()
    return {r[0] for r in rows}, {r[1] for r in rows}, {t for r in rows for t in (r[2] or [])}


def _describe(q: dict) -> str:
    """The cluster's searches and failures, then the query's own: the query's alone, after the
    cluster's name, read as the cluster's ("cluster 22: 21 events" of a 52-event cluster)."""
    mine = f"this query {q['n_events']}, {q['failure_rate']:.0%} failed"
    volume, failed = q.get("cvolume"), q.get("cfailed")
    if not volume or q.get("cluster_id") is None:
        return mine
    return f"{volume} searches, {(failed or 0) / volume:.0%} failed; {mine}"


def parse_by_source(spec: str) -> dict[str, int]:
    """``searchlog=20,tickets=15`` as {source: places}; anything else is one line of error."""
    out: dict[str, int] = {}
    for part in spec.split(","):
        m = _BY_SOURCE.match(part)
        if not m:
            raise InputError(
                f"--by-source wants source=places pairs separated by commas "
                f"(e.g. searchlog=20,tickets=15); {part.strip()!r} is not one"
            )
        if m[1] in out:
            raise InputError(f"--by-source names {m[1]} twice")
        out[m[1]] = int(m[2])
    return out


def _apportion(weights: dict[str, int], places: int) -> dict[str, int]:
    """``places`` split in proportion to ``weights`` by largest remainder (ties by name)."""
    total = sum(weights.values())
    if not weights or places <= 0 or not total:
        return {s: 0 for s in weights}
    exact = {s: places * w / total for s, w in weights.items()}
    out = {s: int(x) for s, x in exact.items()}
    rest = sorted(weights, key=lambda s: (-(exact[s] - out[s]), -weights[s], s))
    for s in rest[: places - sum(out.values())]:
        out[s] += 1
    return out


def quotas(traffic: dict[str, int], n: int, by_source: dict[str, int] | None = None) -> dict:
    """Places per source: ``by_source`` as given (the rest spread over the sources it does not
    name), else in proportion to events with at least one per source (two when n >= 50)."""
    if by_source:
        unknown = sorted(set(by_source) - set(traffic))
        if unknown:
            raise InputError(
                f"--by-source names {', '.join(unknown)}, which has no triaged traffic; "
                f"the traffic's sources: {', '.join(sorted(traffic)) or 'none'}"
            )
        asked = sum(by_source.values())
        if asked > n:
            raise InputError(f"--by-source asks for {asked} places but --n is {n}: raise --n")
        rest = {s: w for s, w in traffic.items() if s not in by_source}
        return {**by_source, **_apportion(rest, n - asked)}
    floor = 2 if n >= 50 else 1
    out = _apportion(traffic, n)
    # Raise the small sources to the floor, largest traffic first while places last, taking
    # each place from the source with the most places above the floor.
    for s in sorted(traffic, key=lambda s: (-traffic[s], s)):
        while out[s] < floor:
            donors = [d for d in out if out[d] > floor and d != s]
            if not donors:
                break
            donor = max(donors, key=lambda d: (out[d] - floor, traffic[d], d))
            out[donor] -= 1
            out[s] += 1
    return out


class Spread:
    """How near each cluster is to the clusters picked so far: the highest cosine between its
    centroid (triage_clusters.centroid) and a picked one's. Worked out only for the clusters the
    fill weighs (a few per place), each against the picks it has not been compared with yet:
    counting a grown gold set's 5,000 clusters against all 20,000 up front was 5,000 x 20,000
    products (4 s) for the few hundred the fill looks at. No clusters x clusters matrix."""

    def __init__(self, keys: list[str], centroids: np.ndarray) -> None:
        self.row = {k: i for i, k in enumerate(keys)}
        self.centroids = centroids
        self.near = np.full(len(keys), -1.0, dtype=np.float32)
        # The picked clusters' centroids in pick order (each cluster once), filled in place,
        # and how many of them each cluster's ``near`` has been compared with.
        self.picked = np.empty_like(centroids)
        self.n_picked = 0
        self.is_picked = np.zeros(len(keys), dtype=bool)
        self.compared = np.zeros(len(keys), dtype=np.int64)

    def distance(self, ckey: str) -> float:
        """1 - the cosine to the nearest picked cluster, in [0, 1]; 1 with none picked or for
        a query with no cluster (its own)."""
        self.refresh([ckey])
        i = self.row.get(ckey)
        return 1.0 if i is None else float(min(1.0, max(0.0, 1.0 - self.near[i])))

    def refresh(self, ckeys: Iterable[str]) -> None:
        """Compare these clusters with the picks they have not met, in one matrix product (a
        matrix-vector product per cluster was 15 times slower for the fill's 20)."""
        rows = [i for i in (self.row.get(k) for k in ckeys) if i is not None]
        rows = [i for i in rows if self.compared[i] < self.n_picked]
        if not rows:
            return
        start = int(self.compared[rows].min())
        newer = (self.centroids[rows] @ self.picked[start : self.n_picked].T).max(axis=1)
        self.near[rows] = np.maximum(self.near[rows], newer)
        self.compared[rows] = self.n_picked

    def add(self, ckeys: Iterable[str]) -> None:
        """Count these clusters as picked: a pick, or at the start every cluster the gold set
        holds."""
        for i in (self.row.get(k) for k in ckeys):
            if i is not None and not self.is_picked[i]:
                self.is_picked[i] = True
                self.picked[self.n_picked] = self.centroids[i]
                self.n_picked += 1


def read_spread(con: duckdb.DuckDBPyConnection) -> Spread | None:
    """The clusters' centroids, read in one query and normalized as one matrix; None when
    triage stored none (a store clustered before centroids were kept)."""
    table = con.sql(
        """SELECT CAST(cluster_id AS VARCHAR) AS ckey, centroid FROM triage_clusters
           WHERE len(centroid) > 0
             AND len(centroid) = (SELECT max(len(centroid)) FROM triage_clusters)
             -- a NULL or NaN element would make every distance NaN: read as no centroid
             AND list_bool_and(list_transform(centroid, lambda x: coalesce(isfinite(x), false)))
           ORDER BY cluster_id"""
    ).to_arrow_table()
    if not table.num_rows:
        return None
    flat = table.column("centroid").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    vectors = flat.astype(np.float32).reshape(table.num_rows, -1)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors /= np.where(norms > 0, norms, 1.0)
    return Spread(table.column("ckey").to_pylist(), vectors)


def is_failing(q: dict) -> bool:
    return bool(q["n_failed"]) and q["failure_rate"] >= FAILING_RATE


def choose(
    queries: list[dict],
    n: int,
    used_clusters: set[str],
    held: set[str],
    held_tags: set[str],
    places: dict[str, int] | None = None,
    seed: int = SEED,
    spread: Spread | None = None,
) -> list[Pick]:
    """The picks, in order, with why each was picked. Pure: no store access.

    ``places``: how many picks each source may fill; None for no limit. ``spread``: the
    clusters' centroids (``read_spread``), which the fill weighs distance by; it counts the
    clusters in the set and those picked here as picked. None: the queues' order alone."""
    rows = [_with_defaults(q, seed) for q in queries]
    choice = _Choice(rows, n, used_clusters, held, held_tags, places, spread)
    choice.cover_tags()
    choice.cover_bands()
    choice.cover_failure()
    choice.fill()
    return choice.explained()


def _members(pool: list[dict]) -> dict[str, list[dict]]:
    """Each cluster's open queries, most central first."""
    out: dict[str, list[dict]] = {}
    for q in sorted(pool, key=lambda q: (q["qrank"], q["qhash"])):
        out.setdefault(q["ckey"], []).append(q)
    return out


def _held_places(
    queries: list[dict], held: set[str]
) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Places per cluster and each cluster's queries, counting those the gold set holds."""
    rounds: dict[str, int] = {}
    in_cluster: dict[str, list[str]] = {}
    for q in queries:
        # A query the gold set holds is its cluster's place: the fewest-first rule and the
        # next variant's difference count it, so a re-run does not refill the held clusters.
        if q["norm_query"] in held:
            rounds[q["ckey"]] = rounds.get(q["ckey"], 0) + 1
            in_cluster.setdefault(q["ckey"], []).append(q["norm_query"])
    return rounds, in_cluster


def _volume(q: dict) -> float:
    return float(q.get("cvolume", q["n_events"]))


def _cluster_failed(q: dict) -> float:
    return float(q.get("cfailed", q["n_failed"]))


def _alike(q: dict) -> float:
    return 1.0  # the tail's clusters weigh alike: farthest


class _Choice:
    """One ``choose`` call's state, shared by its phases: the coverage picks (awkward tags,
    volume bands, the worst failure), then the fill over three queues in rounds, then each
    pick's reasons. A pick updates it all at once (``_place``), so the phases read one truth."""

    def __init__(
        self,
        queries: list[dict],
        n: int,
        used_clusters: set[str],
        held: set[str],
        held_tags: set[str],
        places: dict[str, int] | None,
        spread: Spread | None,
    ) -> None:
        self.n, self.held_tags, self.spread = n, held_tags, spread
        self.pool = [q for q in queries if q["norm_query"] not in held]
        self.picks: list[Pick] = []
        self.taken: set[str] = set()
        self.used = set(used_clusters)  # clusters with a place this round
        if spread is not None:
            spread.add(self.used)  # a cluster the gold set already holds is as near as a picked one
        self.large = {q["ckey"] for q in queries if q["band"] in ("head", "torso")}
        self.limits = dict(places) if places is not None else None
        self.filled: dict[str, int] = {}  # places filled per source
        # The picks' normalized queries, digits masked, for near_duplicate: masked once per
        # pick, not once per comparison (the fill's fallback compares thousands a pick).
        self.shapes: list[str] = []
        self.members = _members(self.pool)  # each cluster's queries, most central first
        # Places per cluster and each cluster's picks so far, the gold set's counted.
        self.rounds, self.in_cluster = _held_places(queries, held)
        self.failing = sorted(
            (q for q in self.pool if is_failing(q)),
            key=lambda q: (-q["n_failed"], -q["failure_rate"], q["qrank"], q["qhash"]),
        )

    def near_duplicate(self, norm: str) -> bool:
        # "change the address on order NW-1085" and "... NW-1244" are one query for a gold set.
        shape = _shape(norm)
        return any(fuzz.ratio(shape, p) >= NEAR_DUPLICATE for p in self.shapes)

    def slot(self, q: dict) -> str | None:
        """The source whose place ``q`` would fill: its main one, else another with room."""
        if self.limits is None:
            return q["source"]
        limits = self.limits
        return next((s for s in q["src_order"] if self.filled.get(s, 0) < limits.get(s, 0)), None)

    def open_q(self, q: dict) -> bool:
        return q["norm_query"] not in self.taken and self.slot(q) is not None

    def still_open(self, q: dict) -> bool:
        return q["norm_query"] not in self.taken and not self.near_duplicate(q["norm_query"])

    def farthest(
        self, spread: Spread, candidates: list[dict], weight: Callable[[dict], float]
    ) -> dict | None:
        """The unused cluster whose weight x distance from the picked clusters is highest,
        over the queue's first LOOKAHEAD unused clusters (its first query each)."""
        window: dict[str, dict] = {}
        for q in candidates:
            if len(window) >= LOOKAHEAD:
                break
            if q["ckey"] not in self.used and q["ckey"] not in window and self.open_q(q):
                window[q["ckey"]] = q
        spread.refresh(window)  # one matrix product for the window, not one per cluster
        best, best_score = None, -1.0
        for q in window.values():
            w = weight(q)
            if best is not None and w <= best_score:
                break  # weights fall along the queue and a distance is at most 1
            score = w * spread.distance(q["ckey"])
            if score > best_score and not self.near_duplicate(q["norm_query"]):
                best, best_score = q, score
        return best

    def take(
        self,
        candidates: list[dict],
        reason: str,
        *,
        coverage: bool,
        weight: Callable[[dict], float] | None = None,
    ) -> bool:
        """Pick from ``candidates`` (a coverage list or a fill queue); False when none fits."""
        choice = self._candidate(candidates, coverage, weight)
        if choice is None:
            return False
        if self.rounds.get(choice["ckey"]):
            if not coverage:  # a coverage pick was chosen for its tag or band: keep it
                choice = self.most_different(choice, failing_only=reason == "failure")
            reason += f", another variant in cluster {choice['cluster_id']}"
        self._place(choice, reason)
        return True

    def _candidate(
        self, candidates: list[dict], coverage: bool, weight: Callable[[dict], float] | None
    ) -> dict | None:
        """The farthest of the queue's window when the spread weighs it, else the first open
        query of an unused cluster, else one of a used cluster when the pick may go there."""
        if self.spread is not None and weight is not None:
            best = self.farthest(self.spread, candidates, weight)
            if best is not None:
                return best
        fallback = None
        for q in candidates:
            if q["norm_query"] in self.taken or self.slot(q) is None:
                continue
            if self.near_duplicate(q["norm_query"]):
                continue
            if q["ckey"] not in self.used:
                return q
            # The cluster with the fewest places first, queue order among equals: a second
            # place each before any takes a third (the largest took every extra place).
            if fallback is None or self.rounds.get(q["ckey"], 0) < self.rounds.get(
                fallback["ckey"], 0
            ):
                fallback = q
        if fallback is not None and (coverage or self.large <= self.used):
            return fallback
        return None

    def _place(self, choice: dict, reason: str) -> None:
        """Count ``choice`` as picked everywhere the phases look."""
        source = self.slot(choice) or choice["source"]
        self.picks.append(Pick(choice, [reason], source=source))
        self.filled[source] = self.filled.get(source, 0) + 1
        self.taken.add(choice["norm_query"])
        self.shapes.append(_shape(choice["norm_query"]))
        self.used.add(choice["ckey"])
        if self.spread is not None:
            self.spread.add([choice["ckey"]])
        self.rounds[choice["ckey"]] = self.rounds.get(choice["ckey"], 0) + 1
        self.in_cluster.setdefault(choice["ckey"], []).append(choice["norm_query"])

    def most_different(self, choice: dict, failing_only: bool) -> dict:
        """A cluster's next place goes to its open query least like those already picked from
        it (word overlap): the next most central is most often the first one reworded, while a
        different question may be another intent the cluster holds. Ties keep centrality."""
        open_ = [
            q
            for q in self.members[choice["ckey"]]
            if q["norm_query"] not in self.taken
            and self.slot(q) is not None
            and (is_failing(q) or not failing_only)
        ]
        # One matrix of scores over the cluster's open queries, not a call per pair.
        scores = process.cdist(
            [choice["norm_query"], *(q["norm_query"] for q in open_)],
            self.in_cluster[choice["ckey"]],
            scorer=fuzz.token_set_ratio,
        ).max(axis=1)
        for i in scores[1:].argsort(kind="stable"):
            if scores[1 + i] >= scores[0]:
                break
            if not self.near_duplicate(open_[i]["norm_query"]):
                return open_[i]
        return choice

    def covered_tag(self, tag: str) -> bool:
        return tag in self.held_tags or any(tag in (p.query["tags"] or []) for p in self.picks)

    def cover_tags(self) -> None:
        """One query per awkward tag present that the set does not cover yet."""
        for tag in AWKWARD_TAGS:
            if len(self.picks) >= self.n or self.covered_tag(tag):
                continue
            with_tag = [q for q in self.pool if tag in (q["tags"] or [])]
            if with_tag:
                self.take(with_tag, f"tag {tag}", coverage=True)

    def cover_bands(self) -> None:
        """One query per volume band the picks have none of; the tail's most failing first."""
        for band in BANDS:
            if len(self.picks) >= self.n or any(p.query["band"] == band for p in self.picks):
                continue
            in_band = [q for q in self.pool if q["band"] == band]
            if band == "tail":
                in_band.sort(
                    key=lambda q: (-q["failure_rate"], q["n_events"], q["qrank"], q["qhash"])
                )
            self.take(in_band, f"{band} of the traffic", coverage=True)

    def cover_failure(self) -> None:
        """The worst failure, unless a pick is already failing."""
        if len(self.picks) >= self.n or not self.failing:
            return
        if not any(p.query in self.failing for p in self.picks):
            self.take(self.failing, "failure", coverage=True)

    def queues(self) -> list[tuple[list[dict], str, Callable[[dict], float]]]:
        """The fill's three queues: head, failures, tail, each with its reason and weight."""
        head = sorted(self.pool, key=lambda q: (q["crank"], q["qrank"]))
        tail = sorted(
            self.pool,
            key=lambda q: (-q["crank"], -q["failure_rate"], -q["n_events"], q["qrank"]),
        )
        # The fill's failures go by cluster, most failed events first, each by its most central
        # failing query: the query failing most was often another cluster's intent (a content
        # gap fails in every cluster it touches), and picked once per cluster it named one
        # intent often.
        failing_clusters = sorted(
            self.failing, key=lambda q: (-_cluster_failed(q), q["qrank"], q["qhash"])
        )
        return [
            (head, "next largest cluster", _volume),
            (failing_clusters, "failure", _cluster_failed),
            (tail, "small cluster", _alike),
        ]

    def fill(self) -> None:
        """Round robin over the queues until ``n`` picks, opening a new round when stuck."""
        queues = self.queues()
        while len(self.picks) < self.n:
            progressed = False
            for queue, reason, weight in queues:
                if len(self.picks) < self.n and self.take(
                    queue, reason, coverage=False, weight=weight
                ):
                    progressed = True
            if not progressed and not self.reopen():
                break

    def reopen(self) -> bool:
        """Make room when no queue could pick: a new round, else the limits go; False when
        no query is left open."""
        # any() stops at the first: the fuzzy match runs on the whole pool only when nothing is
        # open (slot, a cheap test, first).
        if not any(self.still_open(q) for q in self.pool):
            return False
        if self.used and any(self.slot(q) and self.still_open(q) for q in self.pool):
            # Every cluster has its place: a new round, where each may take one more.
            self.used = set()
        elif self.limits is not None:
            # The sources with room have nothing left: their places go to the others.
            self.limits = None
        else:
            self.used = set()
        return True

    def explained(self) -> list[Pick]:
        """The picks with what each stands for: band, cluster, events, tags not named yet."""
        for p in self.picks:
            q = p.query
            p.reasons.append(f"{q['band']}, cluster {q['cluster_id']}: {_describe(q)}")
            extra = [t for t in (q["tags"] or []) if f"tag {t}" not in p.reasons[0]]
            if extra:
                p.reasons.append("tags " + ", ".join(extra))
        return self.picks


def _with_defaults(q: dict, seed: int) -> dict:
    """A query as ``choose`` reads it: rank, hash and sources filled in where a caller (a test's
    hand-made rows) gave none. A row from ``gm_starter`` has them all and is kept as it is: at a
    week's traffic a copy and an md5 per row cost seconds and a second heap."""
    if q.get("source") and "qhash" in q and "src_order" in q and "qrank" in q:
        return q
    source = q.get("source") or ((q.get("sources") or ["unknown"])[0])
    return {
        "qrank": 1,
        "qhash": tiebreak(q["norm_query"], seed),
        "src_order": [source],
        **q,
        "source": source,
    }


def composition(picks: list[Pick], traffic: dict[str, dict[str, int]]) -> dict:
    """What the picks stand for beside what the traffic holds: per source (the place each
    fills), volume band, tag and failing or not, a count and share of picks beside a share of
    events."""
    total = sum(traffic["bands"].values()) or 1
    n = len(picks) or 1

    def rows(kind: str, counted: dict[str, int], names: list[str]) -> dict:
        return {
            k: {
                "picks": counted.get(k, 0),
                "share": round(counted.get(k, 0) / n, 4),
                "traffic_share": round(traffic[kind].get(k, 0) / total, 4),
            }
            for k in names
        }

    def count(keys: list[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for k in keys:
            out[k] = out.get(k, 0) + 1
        return out

    by_events = sorted(traffic["sources"], key=lambda s: (-traffic["sources"][s], s))
    tags = [t for t in AWKWARD_TAGS if t in traffic["tags"]]
    failing = rows(
        "failing", count([str(bool(p.query["failing"])).lower() for p in picks]), ["true"]
    )["true"]
    return {
        "sources": rows("sources", count([p.source for p in picks]), by_events),
        "bands": rows("bands", count([p.query["band"] for p in picks]), list(BANDS)),
        "tags": rows("tags", count([t for p in picks for t in (p.query["tags"] or [])]), tags),
        "failing": failing,
    }


def composition_rows(mix: dict) -> list[list[str]]:
    """The composition as table rows: what, picks, share of the set, share of the traffic."""
    out = []
    for kind in ("sources", "bands", "tags"):
        for name, r in mix[kind].items():
            out.append([kind[:-1], name, str(r["picks"]), f"{r['share']:.0%}",
                        f"{r['traffic_share']:.0%}"])  # fmt: skip
    f = mix["failing"]
    out.append(["failing", "yes", str(f["picks"]), f"{f['share']:.0%}",
                f"{f['traffic_share']:.0%}"])  # fmt: skip
    return out


def plan(
    con: duckdb.DuckDBPyConnection,
    n: int,
    *,
    seed: int = SEED,
    by_source: dict[str, int] | None = None,
) -> tuple[list[Pick], dict[str, dict[str, int]]]:
    """The picks ``propose`` would add, and the traffic's events per source, band, tag and
    failing; writes nothing (bench/bench_starter.py reads it)."""
    queries = _queries(con, seed)
    traffic = _traffic(con)
    con.execute("DROP TABLE IF EXISTS gm_starter")
    held, used_clusters, held_tags = _in_set(con)
    places = quotas(traffic["sources"], n, by_source)
    near = read_spread(con)
    return choose(queries, n, used_clusters, held, held_tags, places, seed, near), traffic


def propose(
    con: duckdb.DuckDBPyConnection,
    n: int,
    by: str,
    *,
    seed: int = SEED,
    by_source: dict[str, int] | None = None,
) -> StarterSet:
    """Propose up to ``n`` new candidates covering the traffic, spread over its sources; writes
    them in one transaction and returns them with the set's composition beside the traffic's."""
    picks, traffic = plan(con, n, seed=seed, by_source=by_source)
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
    added = [p for p in picks if p.query_id]
    return StarterSet(added, composition(added, traffic))


def starter(con: duckdb.DuckDBPyConnection, n: int, by: str, **kw) -> list[Pick]:
    """``propose``'s picks alone."""
    return propose(con, n, by, **kw).picks


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
        # The representative `triage show` lists first: the most central, then most frequent.
        rows = fetch_dicts(
            con,
            """SELECT q.* FROM triage_queries q LEFT JOIN triage_assignments a USING (norm_query)
               WHERE q.cluster_id = ?
               ORDER BY a.similarity DESC NULLS LAST, q.n_events DESC,
                        md5(q.norm_query || ':' || ?) LIMIT 1""",
            [cluster_id, str(SEED)],
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
