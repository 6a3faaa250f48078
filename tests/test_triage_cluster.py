"""Clustering's choice of k and resolution: the silhouette it reads, and what the grid costs."""

from __future__ import annotations

import numpy as np
import pytest

from goldmine.triage import cluster


def _vectors(n: int, centres: int, seed: int = 0, spread: float = 0.2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centres, 32)).astype(np.float32)
    x = c[rng.integers(0, centres, n)] + rng.normal(0, spread, (n, 32)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("resolution", [1.0, 4.0, 16.0, 64.0])
def test_silhouette_from_cluster_sums_is_sklearns(monkeypatch, resolution):
    """The grid's silhouette, computed from each cluster's summed rows, equals sklearn's
    silhouette_score (cosine) on the same seeded samples, for partitions holding clusters of one
    in a sample and rows repeated exactly (the same text asked twice): the choice of k and
    resolution, and so the clusters, are those the distance matrices gave."""
    from sklearn.metrics import silhouette_score

    monkeypatch.setattr(cluster, "SILHOUETTE_SAMPLE", 400)
    x = _vectors(1200, 15)
    x[600:700] = x[500:600]  # exact repeats
    x[700:705] = x[0]
    samples = cluster.silhouette_rows(x)
    assert len(samples) == cluster.SILHOUETTE_SAMPLES
    assert all(len(rows) == 400 for rows, _ in samples)
    graph, weight = cluster._graphs(x, [10], "k-NN")[10]
    labels = cluster.leiden(graph, weight, resolution)
    in_sample = [np.bincount(labels[rows]) for rows, _ in samples]
    if resolution == 64.0:
        assert any((c == 1).any() for c in in_sample)  # singletons in a sample: silhouette 0
    expected = np.mean(
        [
            silhouette_score(
                x, labels, metric="cosine", sample_size=400, random_state=cluster.SEED + i
            )
            for i in range(cluster.SILHOUETTE_SAMPLES)
        ]
    )
    got = cluster.silhouette(labels, samples)
    assert np.isfinite(got) and abs(got - expected) < 1e-6, (got, expected)
