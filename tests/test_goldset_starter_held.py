"""The starter set re-run over a gold set that already holds clusters (issue 27, item 2b).

A cluster's queries already in the gold set are its places: a re-run gives the clusters with
the fewest first, counting those, so a cluster the set holds three of does not take a fourth
before the others take a second. The triage tables are written directly (no model needed), as
in tests/test_goldset_starter.py."""

from __future__ import annotations

from pathlib import Path

from test_goldset_starter import write_topics

from goldmine.goldset.starter import add_queries, starter
from goldmine.store import open_store


def test_a_cluster_the_gold_set_holds_places_in_waits_for_the_others_second(db_path: Path):
    write_topics(db_path)
    with open_store(db_path) as con:
        add_queries(con, ["card fee", "card delay", "card limit"], [], "tester")
        picks = starter(con, 6, "tester")
    per_cluster: dict[int, int] = {}
    for p in picks:
        per_cluster[p.query["cluster_id"]] = per_cluster.get(p.query["cluster_id"], 0) + 1
    # cluster 1 holds three already: the six places go two each to clusters 2, 3 and 4
    assert per_cluster == {2: 2, 3: 2, 4: 2}, [p.query["norm_query"] for p in picks]


def test_each_distance_is_to_the_nearest_of_every_cluster_held_or_picked_before_it() -> None:
    """Spread compares a cluster with the picks only when the fill asks about it: asked between
    picks, held clusters and picks alike, it gives what comparing with all of them gives."""
    import numpy as np

    from goldmine.goldset.starter import Spread

    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((300, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    keys = [str(i) for i in range(300)]
    spread = Spread(keys, vectors)
    chosen = [int(i) for i in rng.choice(300, 40, replace=False)]
    spread.add(keys[i] for i in chosen[:30])  # the gold set's clusters
    asked = [int(i) for i in rng.choice(300, 50, replace=False)]
    for step, pick in enumerate([None, *chosen[30:]]):
        if pick is not None:
            spread.add([keys[pick], keys[pick]])  # a cluster picked twice counts once
        done = chosen[: 30 + step]
        for i in asked[step * 5 : step * 5 + 10]:
            nearest = float((vectors[done] @ vectors[i]).max())
            assert abs(spread.distance(keys[i]) - min(1.0, max(0.0, 1.0 - nearest))) < 1e-5
    assert spread.distance("no such cluster") == 1.0
