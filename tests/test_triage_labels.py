"""What a cluster is called and how ``triage cluster`` lists it (issue 30, labels).

A cluster's label is one of its own members, the most central one, so it says what the cluster
holds; ``triage cluster`` lists each query once, its other spellings and its fuzzy variants under
it. The listing test builds the store with triage's own model-free steps (events, query rows,
fuzzy dedupe); the clusters are given by SQL, since what is tested is the listing. The label test
runs the whole triage with the real bundled model on banking77 and is marked slow.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from goldmine.store import open_store, transaction
from goldmine.text import normalize_query
from goldmine.triage import dedupe
from goldmine.triage.events import aggregate_queries, build_events
from goldmine.triage.labels import label_clusters
from goldmine.triage.queries import summarize_clusters

from helpers import T0, add_searches, load_queries


def _triaged_without_model(con, searches: list[tuple], clusters: dict[str, int]) -> None:
    """Events, query rows and fuzzy dedupe as triage runs them; each canonical's cluster as
    given (its variants follow it), then the ranking and labels."""
    add_searches(con, searches)
    con.execute(
        "INSERT INTO triage_runs (run_id, started_at, finished_at, status, watermark) "
        "VALUES (1, ?, ?, 'done', ?)",
        [T0, T0, T0],
    )
    with transaction(con):
        build_events(con)
        aggregate_queries(con)
        dedupe.write_canonicals(con, dedupe.plan_canonicals(dedupe.dedupe_inputs(con)), 1)
        for norm, cid in clusters.items():
            con.execute(
                "UPDATE triage_assignments SET cluster_id = ?, similarity = 0.9 "
                "WHERE canonical_query = ?",
                [cid, norm],
            )
        con.execute(
            """UPDATE triage_queries SET cluster_id = a.cluster_id FROM triage_assignments a
               WHERE triage_queries.norm_query = a.norm_query"""
        )
        summarize_clusters(con, 1)
        label_clusters(con)


SEARCHES = [
    # one query in two spellings, and a misspelling the fuzzy dedupe makes its variant
    ("e1", "a", 0, "I have not received my card yet", 5, [], None),
    ("e2", "b", 10, "I have not received my card yet", 5, ["d1"], None),
    ("e3", "c", 20, "I have not received my card yet", 0, [], None),
    ("e4", "d", 30, "i have not received my card yet", 5, ["d1"], None),
    ("e5", "e", 40, "i have not received my card yet", 5, [], None),
    ("e6", "f", 50, "i have not recieved my card yet", 0, [], None),
    ("e7", "g", 60, "card not arrived", 5, [], None),
    ("e8", "h", 70, "card not arrived", 5, ["d2"], None),
]


def test_cluster_lists_each_query_once_with_its_variants_under_it(db_path, cli):
    with open_store(db_path) as con:
        _triaged_without_model(
            con, SEARCHES, {"i have not received my card yet": 1, "card not arrived": 1}
        )
        canon = dict(
            con.execute("SELECT norm_query, canonical_query FROM triage_queries").fetchall()
        )
    # the fuzzy dedupe made the misspelling a variant
    assert canon["i have not recieved my card yet"] == "i have not received my card yet"

    out = cli("--db", str(db_path), "triage", "cluster", "1", env={"COLUMNS": "250"})
    assert out.returncode == 0, out.stderr
    table = out.stdout[out.stdout.index("┏") :]  # past the head, terms and central lines
    for text in (
        "I have not received my card yet",
        "i have not received my card yet",
        "i have not recieved my card yet",
        "card not arrived",
    ):
        assert table.count(text) == 1, (text, out.stdout)

    detail = json.loads(cli("--db", str(db_path), "triage", "cluster", "1", "--json").stdout)
    rows = {q["query"]: q for q in detail["queries"]}
    assert set(rows) == {"I have not received my card yet", "card not arrived"}  # canonicals only
    card = rows["I have not received my card yet"]
    assert card["examples"] == ["i have not received my card yet"]  # never its own text again
    assert [v["query"] for v in card["variants"]] == ["i have not recieved my card yet"]
    assert card["variants"][0]["n_events"] == 1 and rows["card not arrived"]["variants"] == []
    assert rows["card not arrived"]["examples"] == []


def test_cluster_at_80_columns_keeps_its_headers_whole(db_path, cli):
    """At 80 columns `triage cluster` broke its headers mid-word ("previou / s turn", "other
    spelling / s") and its signals ("zero_res / ults 1"); like `show`, it now leaves out the
    least useful columns first and names them."""
    with open_store(db_path) as con:
        _triaged_without_model(
            con, SEARCHES, {"i have not received my card yet": 1, "card not arrived": 1}
        )
    out = cli("--db", str(db_path), "triage", "cluster", "1", env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), out.stdout
    table = out.stdout[out.stdout.index("┏") :]
    assert "previou" not in table.replace("previous turn", "")
    assert "not shown at this width" in out.stdout
    assert "I have not received my card yet" in out.stdout


def test_a_label_is_the_clusters_most_central_member(db_path):
    """The most frequent query of a cluster can be an outlier (a stray query with traffic of its
    own); the label is the member nearest the centroid, as the central examples' first."""
    searches = [(f"p{i}", f"p{i}", i, "what size pipes are used for sinks", 5, [], None)
                for i in range(6)]  # fmt: skip
    searches += [("w1", "w1", 100, "wing lift at low speed", 5, [], None),
                 ("w2", "w2", 110, "drag of a swept wing", 5, [], None)]  # fmt: skip
    with open_store(db_path) as con:
        _triaged_without_model(
            con,
            searches,
            {normalize_query(q): 7 for q in
             ("what size pipes are used for sinks", "wing lift at low speed",
              "drag of a swept wing")},
        )  # fmt: skip
        con.execute(
            "UPDATE triage_assignments SET similarity = CASE norm_query "
            "WHEN 'drag of a swept wing' THEN 0.95 WHEN 'wing lift at low speed' THEN 0.9 "
            "ELSE 0.4 END"
        )
        with transaction(con):
            summarize_clusters(con, 1)
            label_clusters(con)
        label = con.execute("SELECT label FROM triage_clusters").fetchall()[0][0]
        central = con.execute("SELECT central FROM triage_cluster_labels").fetchall()[0][0]
    assert label == "drag of a swept wing" == central[0]


@pytest.mark.slow
def test_banking77_labels_are_members_and_name_the_majority_intent(db_path, shared_dataset):
    """Triage on banking77's 10,003 queries (labels never shown): every cluster's label is one of
    its members, and in at least 90% of the clusters of three or more queries the label's intent
    is the cluster's majority intent (the most frequent query, shortest first among equals, which
    was the label before: 62% on the same vectors)."""
    import polars as pl

    from goldmine.triage.pipeline import run_triage

    rows = pl.read_csv(shared_dataset("datasets", "banking77", "train.csv"))
    rows = rows.unique("text", keep="first", maintain_order=True)
    with open_store(db_path) as con:
        load_queries(con, rows["text"].to_list())
    run_triage(db_path)
    intent = dict(zip((normalize_query(t) for t in rows["text"]), rows["category"], strict=True))
    with open_store(db_path) as con:
        members = con.execute(
            "SELECT cluster_id, list(query), list(norm_query) FROM triage_queries GROUP BY 1"
        ).fetchall()
        labels = dict(con.execute("SELECT cluster_id, label FROM triage_clusters").fetchall())
    right = []
    for cid, texts, norms in members:
        assert labels[cid] in texts, (cid, labels[cid])
        if len(norms) >= 3:
            majority = Counter(intent[n] for n in norms).most_common(1)[0][0]
            right.append(intent[normalize_query(labels[cid])] == majority)
    assert len(right) >= 60 and np.mean(right) >= 0.9, (len(right), np.mean(right))
