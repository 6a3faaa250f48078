"""Two levels (issue 30): clusters at the grain of intents, grouped into topics for the overview.

The fast tests fill the triage tables with SQL (the clusters and their centroids are given: six
clusters whose centroids lie around two directions) and run the real ranking and topic steps;
the slow one runs triage with the real bundled model on banking77, twice, as a weekly re-run.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import numpy as np
import pytest

from goldmine.store import open_store, transaction
from goldmine.text import normalize_query
from goldmine.triage.pipeline import _rank

T0 = datetime(2026, 11, 2, 9, 0, 0)

# cluster id -> (direction its centroid lies near, [(text, events, failed events)])
CLUSTERS = {
    1: (0, [("card not arrived", 40, 4), ("where is my card", 10, 1)]),
    2: (0, [("card delivery time abroad", 30, 27)]),  # a failing intent beside a popular one
    3: (0, [("track my card", 5, 0)]),
    4: (1, [("exchange rate for euros", 25, 5)]),
    5: (1, [("fee for currency exchange", 20, 10)]),
    6: (1, [("exchange rate is wrong", 8, 8)]),
}


def _centroid(direction: int, cid: int) -> list[float]:
    rng = np.random.default_rng(cid)
    v = np.zeros(16)
    v[direction] = 1.0
    v += rng.normal(0, 0.05, 16)
    return (v / np.linalg.norm(v)).astype(np.float32).tolist()


def _triaged(con) -> None:
    con.execute(
        "INSERT INTO triage_runs (run_id, started_at, finished_at, status, watermark) "
        "VALUES (1, ?, ?, 'done', ?)",
        [T0, T0, T0 + timedelta(days=1)],
    )
    for cid, (direction, queries) in CLUSTERS.items():
        con.execute(
            "INSERT INTO triage_cluster_ids VALUES (?, 1, ?, 0.5, ?)",
            [cid, _centroid(direction, cid), len(queries)],
        )
        for text, n, failed in queries:
            norm = normalize_query(text)
            con.execute(
                """INSERT INTO triage_queries (norm_query, query, canonical_query, cluster_id,
                       n_events, n_sessions, sources, first_seen, last_seen, n_no_click,
                       n_failed, failure_rate, tags)
                   VALUES (?, ?, ?, ?, ?, ?, ['searchlog'], ?, ?, ?, ?, ?, [])""",
                [norm, text, norm, cid, n, n, T0, T0, failed, failed, failed / n],
            )
    with transaction(con):
        _rank(con, 1)


def test_every_cluster_is_in_one_topic_of_its_neighbours(db_path):
    with open_store(db_path) as con:
        _triaged(con)
        topics = dict(con.execute("SELECT cluster_id, topic_id FROM triage_clusters").fetchall())
    # named by their oldest cluster; the clusters around each direction together
    assert topics == {1: 1, 2: 1, 3: 1, 4: 4, 5: 4, 6: 4}


def test_show_by_topic_lists_clusters_beneath_with_their_own_rates(db_path, cli):
    with open_store(db_path) as con:
        _triaged(con)
    out = cli("--db", str(db_path), "triage", "show", "--level", "topic", "--json")
    assert out.returncode == 0, out.stderr
    topics = json.loads(out.stdout)
    assert [t["topic_id"] for t in topics] == [1, 4]  # the card topic fails more events
    shown = [c["cluster_id"] for t in topics for c in t["clusters"]]
    assert sorted(shown) == [1, 2, 3, 4, 5, 6]  # each cluster once, under its topic
    for t in topics:
        assert {c["topic_id"] for c in t["clusters"]} == {t["topic_id"]}
        assert t["volume"] == sum(c["volume"] for c in t["clusters"])
        assert t["n_failed"] == sum(c["n_failed"] for c in t["clusters"])
        assert t["failure_rate"] == pytest.approx(t["n_failed"] / t["volume"])
    card = {c["cluster_id"]: c for c in topics[0]["clusters"]}
    # the failing intent keeps its own rate (90%), not its topic's (37%)
    assert card[2]["failure_rate"] == pytest.approx(0.9)
    assert topics[0]["failure_rate"] == pytest.approx(32 / 85)
    assert topics[0]["label"] == "card not arrived"  # the largest cluster's label

    by_cluster = json.loads(cli("--db", str(db_path), "triage", "show", "--json").stdout)
    assert {r["cluster_id"]: r["topic_id"] for r in by_cluster} == {
        1: 1, 2: 1, 3: 1, 4: 4, 5: 4, 6: 4
    }  # fmt: skip
    top = json.loads(
        cli(
            "--db", str(db_path), "triage", "show", "--level", "topic", "--json", "--top", "1"
        ).stdout
    )
    assert [t["topic_id"] for t in top] == [1] and len(top[0]["clusters"]) == 3

    table = cli(
        "--db", str(db_path), "triage", "show", "--level", "topic", env={"COLUMNS": "200"}
    ).stdout
    lines = table.splitlines()
    first = next(i for i, line in enumerate(lines) if "topic 1" in line)
    second = next(i for i, line in enumerate(lines) if "topic 4" in line)
    beneath = "\n".join(lines[first:second])
    assert all(q in beneath for q in ("card not arrived", "card delivery time abroad"))
    assert "90%" in beneath and "exchange" not in beneath


def test_a_bad_level_is_one_line(db_path, cli):
    with open_store(db_path) as con:
        _triaged(con)
    out = cli("--db", str(db_path), "triage", "show", "--level", "intent")
    assert out.returncode == 2 and "intent" in out.stderr


@pytest.mark.slow
def test_a_weekly_rerun_keeps_cluster_ids_and_puts_every_cluster_in_one_topic(db_path):
    """Triage with the real model, then again after a week's new queries: the clusters of the
    first run keep their ids, and after each run every cluster is in exactly one topic, named by
    one of its own clusters."""
    from goldmine.triage.pipeline import run_triage

    from helpers import TRIAGE_QUERIES, load_queries

    first = [q for qs in TRIAGE_QUERIES.values() for q in qs]
    with open_store(db_path) as con:
        load_queries(con, first)
    run_triage(db_path)
    sql = "SELECT norm_query, cluster_id FROM triage_queries"
    with open_store(db_path) as con:
        before = dict(con.execute(sql).fetchall())
        load_queries(con, ["my card never arrived", "How to bake sourdough bread at home"], 100)
    run_triage(db_path)
    with open_store(db_path) as con:
        after = dict(con.execute(sql).fetchall())
        topics = con.execute(
            "SELECT topic_id, list(cluster_id) FROM triage_clusters GROUP BY 1"
        ).fetchall()
        n_clusters = con.execute("SELECT count(DISTINCT cluster_id) FROM triage_clusters")
        n_clusters = n_clusters.fetchall()[0][0]
    assert {q: after[q] for q in before} == before
    members = [c for _, clusters in topics for c in clusters]
    assert sorted(members) == sorted(set(members)) and len(members) == n_clusters
    assert all(topic in clusters for topic, clusters in topics)
    assert len(topics) < n_clusters  # a coarser level


def test_export_carries_each_querys_topic(db_path, cli, tmp_path):
    import polars as pl

    with open_store(db_path) as con:
        _triaged(con)
    out = cli("--db", str(db_path), "triage", "export", str(tmp_path / "q.parquet"))
    assert out.returncode == 0, out.stderr
    rows = pl.read_parquet(tmp_path / "q.parquet")
    got = dict(zip(rows["cluster_id"].to_list(), rows["topic_id"].to_list(), strict=True))
    assert got == {1: 1, 2: 1, 3: 1, 4: 4, 5: 4, 6: 4}
