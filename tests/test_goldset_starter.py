"""The starter set on traffic that puts the alphabet, one source and one cluster against an even
spread (issue 27, items 1 and 2): picks are not alphabet-skewed, a cluster is represented by its
most central query, every source with traffic gets its places, the report shows the set's
composition beside the traffic's, and the same traffic in two stores gives the same set.

The triage tables are written directly (as helpers.build does): the behaviour under test is the
starter's, not the model's, so no embedding is needed."""

from __future__ import annotations

import json
import random
from datetime import datetime
from pathlib import Path

import numpy as np

from goldmine.goldset.starter import Spread, choose, starter
from goldmine.store import open_store, transaction
from goldmine.text import normalize_query

from helpers import gold

_WORD_TEXT = (
    "billing invoice refund shipping parcel courier password login account profile avatar "
    "export import backup restore sync calendar reminder widget theme language keyboard "
    "printer scanner webcam microphone speaker battery charger cable router modem firewall "
    "licence upgrade discount voucher coupon subscription trial receipt warranty repair"
)
WORDS = _WORD_TEXT.split()

# The huge cluster: the alphabet's first query is the least central, the central one is late.
CARD = [
    ("about my card delivery", 0.41),
    ("card arrival time", 0.62),
    ("card has not come", 0.70),
    ("my new card is late", 0.83),
    ("where is my card", 0.97),
]


def traffic(seed: int = 7) -> list[dict]:
    """One huge searchlog cluster, 50 "a…" and 150 other one-event searchlog queries, and a few
    one-event queries from tickets (failing), chat and manual."""
    rng = random.Random(seed)
    rows: list[dict] = []
    for text, sim in CARD:
        rows.append(dict(text=text, cluster="card", n=400, failed=20, sim=sim, src="searchlog"))
    used: set[str] = set()

    def phrase(first: str) -> str:
        while True:
            text = " ".join([first, *rng.sample(WORDS, 3)])
            if text not in used:
                used.add(text)
                return text

    letters = "bcdefghijklmnoprstuvw"
    for i in range(200):
        first = (
            rng.choice(["ask", "about", "also", "any", "add"])
            if i < 50
            else rng.choice([f"{c}{rng.choice('aeiou')}{rng.choice('nrst')}" for c in letters])
        )
        # Half of them in clusters of their own (ids given in text order, as a first run
        # might), half in none.
        rows.append(dict(text=phrase(first), cluster="own" if i % 2 else None, n=1,
                         failed=i % 3 == 0, sim=None, src="searchlog"))  # fmt: skip
    for src, k, failing in (("tickets", 10, True), ("chat", 6, False), ("manual", 6, False)):
        for _ in range(k):
            rows.append(dict(text=phrase(f"{src[:3]}q"), cluster=None, n=1, failed=int(failing),
                             sim=None, src=src))  # fmt: skip
    return rows


def write_triage(db: Path, rows: list[dict], *, reverse_ids: bool = False) -> None:
    """Triage's tables for ``rows``; ``reverse_ids`` numbers the clusters the other way round, as
    a store that saw the same traffic in another order would."""
    owned = sorted(r["text"] for r in rows if r["cluster"] == "own")
    ids = {t: i + 2 for i, t in enumerate(reversed(owned) if reverse_ids else owned)}
    card_id = 1000 if reverse_ids else 1
    order = list(reversed(rows)) if reverse_ids else rows
    day = datetime(2026, 11, 2)
    with open_store(db) as con, transaction(con):
        clusters: dict[int, list[dict]] = {}
        for r in order:
            norm = normalize_query(r["text"])
            cid = card_id if r["cluster"] == "card" else ids.get(r["text"])
            failed = int(r["failed"])
            con.execute(
                """INSERT INTO triage_queries (norm_query, query, cluster_id, canonical_query,
                       n_events, n_sessions, sources, n_by_source, first_seen, last_seen,
                       n_failed, failure_rate, tags)
                   VALUES (?, ?, ?, ?, ?, ?, [?], ?, ?, ?, ?, ?, ?)""",
                [norm, r["text"], cid, norm, r["n"], r["n"], r["src"],
                 json.dumps({r["src"]: r["n"]}), day, day, failed, failed / r["n"],
                 ["keyword"]],
            )  # fmt: skip
            con.execute(
                """INSERT INTO triage_assignments (norm_query, canonical_query, cluster_id, how,
                       similarity, run_id) VALUES (?, ?, ?, 'clustered', ?, 1)""",
                [norm, norm, cid, r["sim"] if r["sim"] is not None else (1.0 if cid else None)],
            )
            if cid is not None:
                clusters.setdefault(cid, []).append(r)
        for cid, members in clusters.items():
            volume = sum(m["n"] for m in members)
            failed = sum(int(m["failed"]) for m in members)
            con.execute(
                """INSERT INTO triage_clusters (cluster_id, label, volume, n_variants, n_failed,
                       failure_rate, priority, tags)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ['keyword'])""",
                [cid, members[0]["text"], volume, len(members), failed, failed / volume, failed],
            )


def starter_json(cli, db: Path, *args: str) -> dict:
    return json.loads(
        gold(cli, db, "starter", "--json", "--composition", "--by", "tester", *args).stdout
    )


def test_picks_are_not_alphabet_skewed_and_a_cluster_shows_its_central_query(db_path: Path):
    write_triage(db_path, traffic())
    with open_store(db_path) as con:
        picks = starter(con, 50, "tester")
    texts = [p.query["norm_query"] for p in picks]
    card = [t for t in texts if t in {c for c, _ in CARD}]
    assert card and card[0] == "where is my card", card
    # A quarter of the one-event searchlog queries start with an "a" word; so should about a
    # quarter of their picks (alphabetical ties gave over two thirds).
    spread = [t for t in texts if t not in {c for c, _ in CARD} and not t.startswith(
        ("tic", "cha", "man"))]  # fmt: skip
    a_share = sum(t.startswith("a") for t in spread) / len(spread)
    assert 0.1 <= a_share <= 0.4, (a_share, spread)


def test_every_source_with_traffic_gets_its_places_and_the_report_shows_the_mix(cli, db_path):
    write_triage(db_path, traffic())
    out = starter_json(cli, db_path, "--n", "50")
    picks, mix = out["picks"], out["composition"]
    assert len(picks) == 50
    by_source: dict[str, int] = {}
    for p in picks:
        by_source[p["source"]] = by_source.get(p["source"], 0) + 1
    # searchlog is ~99% of the events; the others still get two places each at n >= 50.
    assert set(by_source) == {"searchlog", "tickets", "chat", "manual"}
    assert all(by_source[s] >= 2 for s in ("tickets", "chat", "manual")), by_source
    sources = mix["sources"]
    assert {s: sources[s]["picks"] for s in sources} == by_source
    assert sources["searchlog"]["traffic_share"] > 0.9
    assert sources["manual"]["traffic_share"] < 0.01
    assert set(mix) >= {"sources", "bands", "tags", "failing"}
    assert sum(b["picks"] for b in mix["bands"].values()) == 50
    assert mix["failing"]["picks"] == sum(p["failing"] for p in picks)
    # The text report says the same.
    db2 = db_path.with_name("text.duckdb")
    write_triage(db2, traffic())
    text = gold(cli, db2, "starter", "--n", "50", "--by", "tester").stdout
    assert "composition" in text and "manual" in text and "traffic" in text


def test_the_same_traffic_in_two_stores_gives_the_same_set(db_path: Path, tmp_path: Path):
    other = tmp_path / "other.duckdb"
    write_triage(db_path, traffic())
    write_triage(other, traffic(), reverse_ids=True)
    sets = []
    for db in (db_path, other):
        with open_store(db) as con:
            sets.append([p.query["norm_query"] for p in starter(con, 50, "tester")])
    assert sets[0] == sets[1]


def test_by_source_overrides_the_spread_and_a_bad_spec_is_one_line(cli, db_path: Path):
    write_triage(db_path, traffic())
    bad = gold(cli, db_path, "starter", "--by-source", "searchlog", ok=False)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1
    unknown = gold(cli, db_path, "starter", "--by-source", "forum=3", ok=False)
    assert unknown.returncode == 2 and "forum" in unknown.stderr and "searchlog" in unknown.stderr
    too_many = gold(cli, db_path, "starter", "--n", "10", "--by-source", "searchlog=20", ok=False)
    assert too_many.returncode == 2 and "--n" in too_many.stderr
    out = starter_json(cli, db_path, "--n", "30", "--by-source",
                       "searchlog=15,tickets=8,chat=4,manual=3")  # fmt: skip
    counts: dict[str, int] = {}
    for p in out["picks"]:
        counts[p["source"]] = counts.get(p["source"], 0) + 1
    assert counts == {"searchlog": 15, "tickets": 8, "chat": 4, "manual": 3}


def test_add_query_cluster_takes_the_central_query(cli, db_path: Path) -> None:
    write_triage(db_path, traffic())
    gold(cli, db_path, "add-query", "--cluster", "1", "--by", "tester")
    items = json.loads(gold(cli, db_path, "list", "--json").stdout)
    assert [i["query"] for i in items] == ["where is my card"]


# --- spread over clusters (issue 27, item 2b) ------


def write_clusters(db: Path, clusters: dict[int, dict]) -> None:
    """Triage's tables for whole clusters: ``{id: {"volume", "centroid", "queries"}}`` and
    optionally ``"failed"`` (failed events per query), each query a searchlog query with its
    share of the volume, the first the most central."""
    day = datetime(2026, 11, 2)
    with open_store(db) as con, transaction(con):
        for cid, c in clusters.items():
            texts = c["queries"]
            each = c["volume"] // len(texts)
            failed = c.get("failed", [0] * len(texts))
            for rank, (text, n_failed) in enumerate(zip(texts, failed, strict=True)):
                con.execute(
                    """INSERT INTO triage_queries (norm_query, query, cluster_id, canonical_query,
                           n_events, n_sessions, sources, n_by_source, first_seen, last_seen,
                           n_failed, failure_rate, tags)
                       VALUES (?, ?, ?, ?, ?, ?, ['searchlog'], ?, ?, ?, ?, ?, ['keyword'])""",
                    [text, text, cid, text, each, each, json.dumps({"searchlog": each}), day, day,
                     n_failed, n_failed / each],
                )  # fmt: skip
                con.execute(
                    """INSERT INTO triage_assignments (norm_query, canonical_query, cluster_id,
                           how, similarity, run_id) VALUES (?, ?, ?, 'clustered', ?, 1)""",
                    [text, text, cid, 0.99 - rank / 100],
                )
            con.execute(
                """INSERT INTO triage_clusters (cluster_id, label, volume, n_variants, n_failed,
                       tags, centroid) VALUES (?, ?, ?, ?, ?, ['keyword'], ?)""",
                [cid, texts[0], each * len(texts), len(texts), sum(failed), c["centroid"]],
            )


def write_topics(db: Path) -> None:
    """Four clusters far apart (card 400, transfer 300, refund 200, pin 100 events), each of six
    queries "<topic> <aspect>" (fee, delay, limit, abroad, cancel, app)."""
    topics = {1: ("card", 400), 2: ("transfer", 300), 3: ("refund", 200), 4: ("pin", 100)}
    aspects = ["fee", "delay", "limit", "abroad", "cancel", "app"]
    write_clusters(
        db,
        {
            cid: {
                "volume": volume,
                "centroid": [1.0 if i == cid else 0.0 for i in range(5)],
                "queries": [f"{word} {aspect}" for aspect in aspects],
            }
            for cid, (word, volume) in topics.items()
        },
    )


def test_a_cluster_near_one_already_picked_waits_for_one_farther_away(db_path: Path) -> None:
    """Triage splits one need into two clusters ("card not arrived", "card delivery time"):
    their centroids are near. The next place goes to the cluster whose volume times distance
    from the clusters picked is highest, so a different need comes before the split half."""
    axis = [[1.0 if i == j else 0.0 for i in range(4)] for j in range(4)]
    write_clusters(
        db_path,
        {
            1: {"volume": 100, "centroid": axis[0], "queries": ["where is my new card"]},
            # the same need split off: nearly the first cluster's centroid
            2: {
                "volume": 95,
                "centroid": [0.95, 0.31, 0.0, 0.0],
                "queries": ["how long does card delivery take"],
            },
            3: {"volume": 90, "centroid": axis[2], "queries": ["reset my online banking pin"]},
            4: {"volume": 60, "centroid": axis[3], "queries": ["exchange rate for euros"]},
            5: {"volume": 5, "centroid": axis[1], "queries": ["close my account please"]},
        },
    )
    with open_store(db_path) as con:
        picks = [p.query["norm_query"] for p in starter(con, 4, "tester")]
    # the tag and the three bands take clusters 1, 3 and 5; the fourth place is the fill's
    assert "exchange rate for euros" in picks, picks
    assert "how long does card delivery take" not in picks, picks


def test_a_second_place_each_before_any_cluster_takes_a_third(db_path: Path) -> None:
    """With more places than clusters, every cluster takes a second place before any takes a
    third: the largest cluster taking every extra place fills the set with its rewordings."""
    write_topics(db_path)
    with open_store(db_path) as con:
        picks = starter(con, 8, "tester")
    per_cluster: dict[int, int] = {}
    for p in picks:
        per_cluster[p.query["cluster_id"]] = per_cluster.get(p.query["cluster_id"], 0) + 1
    assert per_cluster == {1: 2, 2: 2, 3: 2, 4: 2}, [p.query["norm_query"] for p in picks]


def test_the_fills_failures_go_by_cluster_each_by_its_most_central_failing_query(db_path):
    """A content gap fails wherever it is asked, so the single query failing most is often
    another cluster's intent. The fill's failure place goes to the cluster with the most failed
    events, represented by its most central failing query, not to the query failing most."""
    axis = [[1.0 if i == j else 0.0 for i in range(6)] for j in range(6)]
    write_clusters(
        db_path,
        {
            1: {"volume": 400, "centroid": axis[0], "queries": ["open a savings account"]},
            2: {"volume": 250, "centroid": axis[1], "queries": ["exchange rate for euros"]},
            3: {"volume": 100, "centroid": axis[2], "queries": ["update my phone number"]},
            4: {
                "volume": 60,
                "centroid": axis[3],
                # most central first; the off-centre third fails most
                "queries": [
                    "my card has not arrived yet",
                    "delivery time for new cards",
                    "cancel the card i ordered",
                ],
                "failed": [15, 12, 18],
            },
            # the worst single failure: the coverage pick takes it
            5: {
                "volume": 30,
                "centroid": axis[4],
                "queries": ["why was my transfer declined"],
                "failed": [30],
            },
            6: {"volume": 10, "centroid": axis[5], "queries": ["close my account please"]},
        },
    )
    with open_store(db_path) as con:
        picks = [p.query["norm_query"] for p in starter(con, 5, "tester")]
    # tag: 1; torso: 3; tail and worst failure: 5; the fill: 2 (largest), then a failure
    assert picks[-1] == "my card has not arrived yet", picks
    assert "cancel the card i ordered" not in picks, picks


def test_a_cluster_the_gold_set_holds_counts_as_picked_for_the_distance() -> None:
    """A cluster near one the gold set already holds waits like one near a pick: a re-run after
    labelling asks about a new need, not the split half of one already in the set."""
    centroids = {"0": [0, 0, 1.0], "1": [1.0, 0, 0], "2": [0.95, 0.31, 0], "3": [0, 1.0, 0]}
    texts = {"0": "open a savings account", "1": "where is my new card",
             "2": "how long does card delivery take", "3": "exchange rate for euros"}  # fmt: skip
    volumes = {"0": 200, "1": 100, "2": 95, "3": 90}
    queries = [
        {"norm_query": texts[k], "query": texts[k], "ckey": k, "cluster_id": int(k),
         "band": "head", "crank": rank + 1, "cvolume": volumes[k], "n_events": volumes[k],
         "n_failed": 0, "failure_rate": 0.0, "tags": ["keyword"]}
        for rank, k in enumerate(centroids)
    ]  # fmt: skip
    spread = Spread(list(centroids), np.array(list(centroids.values()), dtype=np.float32))
    # cluster 1 is in the gold set; the head band's coverage place takes cluster 0
    picks = choose(queries, 2, {"1"}, {texts["1"]}, {"keyword"}, spread=spread)
    assert [p.query["norm_query"] for p in picks] == [texts["0"], texts["3"]]


def test_a_centroid_with_a_null_or_nan_element_is_left_out_of_the_spread(db_path: Path) -> None:
    """A centroid holding a NULL or a NaN (a store written by hand, an older triage) would make
    every distance NaN, and the spread would silently fall back to plain queue order: such a
    cluster is read as one without a centroid, the others keep their distances."""
    from goldmine.goldset.starter import read_spread

    write_topics(db_path)
    with open_store(db_path) as con:
        update = "UPDATE triage_clusters SET centroid = {} WHERE cluster_id = ?"
        con.execute(update.format("[NULL, 0, 0, 0, 1]"), [4])
        con.execute(update.format("['nan'::FLOAT, 0, 0, 1, 0]"), [3])
        spread = read_spread(con)
    assert spread is not None
    assert sorted(spread.row) == ["1", "2"]
    assert np.isfinite(spread.centroids).all()


def test_a_size_below_one_is_refused_in_one_line(cli, db_path: Path) -> None:
    write_topics(db_path)
    result = gold(cli, db_path, "starter", "--n", "-3", "--by", "tester", ok=False)
    assert result.returncode == 2, result.stdout
    assert "--n" in result.stderr
