"""Topics: the clusters grouped for the overview, so the fine grain costs no readability.

Clusters are cut at the grain of intents (one failing intent must not be diluted by a popular
neighbour's successes), which means hundreds of them at a week's traffic. A topic groups the
clusters whose centroids are near: the k-NN graph of the centroids (``TOPIC_K`` neighbours,
cosine), cut by Leiden at ``TOPIC_RESOLUTION`` (1: plain modularity, which gives coarse
communities, the grain the overview wants). Every cluster is in exactly one topic; a topic's
failure rate and priority are sums over its clusters, and a cluster's own stay its own.

A topic is named by the id of its oldest cluster (the smallest ``cluster_id``): cluster ids are
stable from run to run, so a topic keeps its id while its oldest cluster stays in it. Topics are
recomputed on every run (they cost milliseconds: one node per cluster), in the rank step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from goldmine.store import registered
from goldmine.triage.events import frame

if TYPE_CHECKING:
    import duckdb

TOPIC_K = 10
TOPIC_RESOLUTION = 1.0


def group(cents: np.ndarray) -> np.ndarray:
    """A topic label 0..t-1 for each row of ``cents`` (normalized centroids), deterministic."""
    from goldmine.triage.cluster import knn_exact, knn_graph, leiden

    n = len(cents)
    if n <= 2:
        return np.zeros(n, dtype=np.int64)
    k = min(TOPIC_K, n - 1)
    idx, sims = knn_exact(cents, k)  # exact: thousands of centroids at most, one block at a time
    graph, weight = knn_graph(idx, sims, k)
    return leiden(graph, weight, TOPIC_RESOLUTION)


def assign_topics(con: duckdb.DuckDBPyConnection) -> int:
    """Set ``triage_clusters.topic_id`` for every cluster; returns the number of topics. A cluster
    without a centroid (none is stored for it) is a topic of its own."""
    import polars as pl

    rows = frame(
        con,
        "SELECT cluster_id, centroid FROM triage_clusters WHERE centroid IS NOT NULL "
        "ORDER BY cluster_id",
    )
    if rows.height:
        ids = rows["cluster_id"].to_numpy()
        cents = np.asarray(rows["centroid"].to_list(), dtype=np.float32)
        labels = group(cents)
        oldest = np.full(int(labels.max()) + 1, np.iinfo(np.int64).max)
        np.minimum.at(oldest, labels, ids)
        topics = pl.DataFrame({"cluster_id": ids, "topic_id": oldest[labels]})
        with registered(con, _gm_topics=topics):
            con.execute(
                """UPDATE triage_clusters SET topic_id = t.topic_id FROM _gm_topics t
                   WHERE triage_clusters.cluster_id = t.cluster_id"""
            )
    con.execute("UPDATE triage_clusters SET topic_id = cluster_id WHERE topic_id IS NULL")
    return con.execute("SELECT count(DISTINCT topic_id) FROM triage_clusters").fetchall()[0][0]
