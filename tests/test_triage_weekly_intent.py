"""A weekly re-run that brings a new intent, on banking77's real queries and the bundled model:
the queries that reach no cluster's radius were clustered among themselves at the first run's
resolution, which splits a set of one intent into singletons (61 queries of a new intent made 52
clusters, 50 of one query). Now they are clustered among the week's new queries at the first
run's grain: a new intent is a cluster of its own, and an old intent's stragglers join its
cluster rather than forming mixed ones."""

from __future__ import annotations

from collections import Counter, defaultdict

from goldmine.store import open_store
from goldmine.text import normalize_query

from helpers import load_queries

OLD = ("card_arrival", "pin_blocked", "exchange_rate", "top_up_limits", "terminate_account",
       "age_limit", "country_support", "lost_or_stolen_card")  # fmt: skip
NEW = "atm_support"


def test_a_new_intent_in_a_later_week_is_a_cluster_of_its_own(db_path, shared_dataset):
    import polars as pl

    from goldmine.triage.pipeline import run_triage

    rows = pl.read_csv(shared_dataset("datasets", "banking77", "train.csv"))
    by = {c: rows.filter(pl.col("category") == c)["text"].to_list() for c in (*OLD, NEW)}
    first = [t for c in OLD for t in by[c][:60]]
    later_old = [t for c in OLD for t in by[c][60:75]]
    later_new = by[NEW][:60]
    intent = {normalize_query(t): c for c, texts in by.items() for t in texts}
    with open_store(db_path) as con:
        load_queries(con, first)
    run_triage(db_path, backend="onnx-int8")
    with open_store(db_path) as con:
        before = dict(con.execute("SELECT norm_query, cluster_id FROM triage_queries").fetchall())
        load_queries(con, later_old + later_new, len(first))
    second = run_triage(db_path, backend="onnx-int8")
    with open_store(db_path) as con:
        after = dict(con.execute("SELECT norm_query, cluster_id FROM triage_queries").fetchall())
    assert {q: after[q] for q in before} == before  # old queries keep their clusters
    fresh = defaultdict(Counter)  # the clusters this run made: what each holds
    for q, c in after.items():
        if c is not None and c > max(before.values()):
            fresh[c][intent.get(q, "?")] += 1
    new_intent = sorted((held[NEW] for held in fresh.values()), reverse=True)
    # the new intent: nearly all of its queries in one or two clusters of their own
    assert sum(new_intent[:2]) >= 50, fresh
    assert second.cluster["n_new_clusters"] <= 6, fresh
    # each cluster this run made is one intent's, a straggler or two aside
    assert all(held.most_common(1)[0][1] >= 0.8 * sum(held.values()) for held in fresh.values())
    # an old intent's new queries join its clusters, not new ones
    joined = [after[normalize_query(t)] <= max(before.values()) for t in later_old]
    assert sum(joined) >= 0.9 * len(later_old)


def test_a_pilot_run_of_a_few_queries_does_not_fix_the_grain(db_path, shared_dataset):
    """A first run of five queries chose k 4 (its silhouettes all -1), and every later week
    kept it: the grain of a pilot is no grain. A run too small to choose leaves the choice to the
    next run that can."""
    import json

    import polars as pl

    from goldmine.triage.pipeline import run_triage

    rows = pl.read_csv(shared_dataset("datasets", "banking77", "train.csv"))
    texts = {c: rows.filter(pl.col("category") == c)["text"].to_list() for c in OLD}
    with open_store(db_path) as con:
        load_queries(con, texts[OLD[0]][:5])
    run_triage(db_path, backend="onnx-int8")
    week = [t for c in OLD for t in texts[c][5:45]]
    with open_store(db_path) as con:
        load_queries(con, week, 5)
    second = run_triage(db_path, backend="onnx-int8")
    assert second.cluster["tried"], second.cluster  # the grid ran on the week
    assert second.cluster["k"] >= 10
    with open_store(db_path) as con:
        params = [json.loads(p) for (p,) in con.execute(
            "SELECT params FROM triage_runs ORDER BY run_id").fetchall()]  # fmt: skip
    assert params[1]["k"] == second.cluster["k"]
