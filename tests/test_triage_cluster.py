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


def _blobs_with_truth(n: int, centres: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, centres, n)
    c = rng.normal(size=(centres, 32)).astype(np.float32)
    x = c[truth] + rng.normal(0, 0.3, (n, 32)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True), truth


def test_whole_graph_leiden_keeps_leidenalgs_partition():
    """The one Leiden run on every row (igraph's C Leiden, modularity at the resolution)
    optimises the quality leidenalg's RBConfigurationVertexPartition does: a partition as good
    (quality within 0.1%), nearly the same one, the same every time, and Python's own random
    state left as it was."""
    import random

    from sklearn.metrics import adjusted_rand_score

    x, truth = _blobs_with_truth(3000, 30)
    graph, weight = cluster._graphs(x, [10], "k-NN")[10]
    for resolution in (4.0, 16.0):
        state = random.getstate()
        fast = cluster.leiden_whole(graph, weight, resolution)
        assert random.getstate() == state
        assert np.array_equal(fast, cluster.leiden_whole(graph, weight, resolution))
        today = cluster.leiden(graph, weight, resolution)

        def quality(labels: np.ndarray, resolution: float = resolution) -> float:
            return graph.modularity(labels.tolist(), weights=weight, resolution=resolution)

        assert quality(fast) >= quality(today) - 1e-3 * abs(quality(today))
        assert adjusted_rand_score(today, fast) >= 0.95
        assert adjusted_rand_score(truth, fast) >= 0.9
        assert (np.diff(np.bincount(fast)) <= 0).all()  # ids 0.. largest first


def test_a_large_set_runs_the_whole_graph_leiden_at_the_sampled_choice(monkeypatch):
    """Past CHOOSE_SAMPLE rows the grid chooses on a sample, and the labels are those of the
    whole-graph Leiden at that choice, on the k-NN graph of every row: the blobs found as the
    small path (the grid on every row) finds them."""
    from sklearn.metrics import adjusted_rand_score

    x, truth = _blobs_with_truth(2400, 20)
    small, small_info = cluster.cluster_fresh(x, (10, 20), (4.0, 8.0))
    monkeypatch.setattr(cluster, "CHOOSE_SAMPLE", 1200)
    big, info = cluster.cluster_fresh(x, (10, 20), (4.0, 8.0))
    k, resolution = info["k"], info["resolution"]
    graph, weight = cluster._graphs(x, [k], "k-NN")[k]
    assert np.array_equal(big, cluster.leiden_whole(graph, weight, resolution))
    assert adjusted_rand_score(truth, big) >= 0.9
    assert adjusted_rand_score(small, big) >= 0.9, (small_info, info)


def _unit_rows(n: int, centres: int, dim: int = 384, seed: int = 2) -> np.ndarray:
    """Unit rows around seeded centres in the model's 384 dimensions, where a component is
    ~0.05: the scale an index's 8-bit copy must resolve."""
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centres, dim)).astype(np.float32)
    x = c[rng.integers(0, centres, n)] + rng.normal(0, 0.6, (n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _recall(approx: np.ndarray, exact: np.ndarray) -> float:
    return float((approx[:, :, None] == exact[:, None, :]).any(axis=2).mean())


def test_an_8_bit_index_scales_the_rows_to_its_range():
    """An i8 index gets the rows scaled so their largest component is 127: usearch's own cast
    (x * 127, truncated) leaves a 384-d unit row a handful of levels per component, and its
    neighbours lose the order a float copy keeps."""
    x = _unit_rows(4000, 60)
    exact, _ = cluster.knn_exact(x, 20)
    got, _ = cluster.knn_hnsw(x, 20, hnsw=cluster.Hnsw(dtype="i8", candidates=1))
    _, cast = cluster._hnsw_index(x, cluster.Hnsw(dtype="i8"))
    rows = cast(x[:100])
    assert rows.dtype == np.int8 and np.abs(cast(x)).max() == 127
    assert _recall(got, exact) >= 0.97


@pytest.mark.parametrize(
    "hnsw", [cluster.Hnsw(), cluster.Hnsw(dtype="i8", candidates=3)], ids=["default", "i8-x3"]
)
def test_more_candidates_are_reranked_by_exact_cosines(hnsw):
    """Asked for several candidates per neighbour (as the default is), the index's answer is
    re-ranked by float32 cosines: k neighbours each, never the row itself, best first with ties
    by index (exact repeats of a row included), the cosines the rows' own, the same every time,
    and recall at least that of one candidate per neighbour."""
    assert cluster.Hnsw().candidates > 1
    x = _unit_rows(4000, 60)
    x[3000:3010] = x[5]  # the same text asked ten more times
    k = 20
    exact, _ = cluster.knn_exact(x, k)
    one, _ = cluster.knn_hnsw(x, k, hnsw=cluster.Hnsw(dtype=hnsw.dtype, candidates=1))
    idx, sims = cluster.knn_hnsw(x, k, hnsw=hnsw)
    assert np.array_equal(idx, cluster.knn_hnsw(x, k, hnsw=hnsw)[0])
    assert idx.shape == sims.shape == (len(x), k)
    assert not (idx == np.arange(len(x))[:, None]).any()
    np.testing.assert_allclose(sims, np.einsum("ij,ikj->ik", x, x[idx]), atol=1e-6)
    assert (np.diff(sims, axis=1) <= 0).all()
    assert set(idx[5, :10]) == set(range(3000, 3010))  # the repeats first
    assert list(idx[3000, :10]) == [5, *range(3001, 3010)]  # ties by index
    assert _recall(idx, exact) >= max(_recall(one, exact), 0.99)


def test_an_index_built_beside_the_embedding_answers_as_knn_hnsws_own(tmp_path):
    """The index a forked process builds while the embedding hands over its rows (in blocks of
    any size) is the index knn_hnsw builds itself: the same neighbours and the same cosines,
    so the clusters do not depend on which of the two built it."""
    x = _unit_rows(3000, 40)
    builder = cluster.IndexBuilder(folder=tmp_path)
    for a, b in [(0, 1), (1, 700), (700, 2048), (2048, 3000)]:
        builder.feed(x[a:b])
    index = builder.finish()
    assert index is not None and len(index) == len(x)
    assert not list(tmp_path.iterdir())  # the saved index leaves no file behind
    idx, sims = cluster.knn_hnsw(x, 20, index=index)
    want, want_s = cluster.knn_hnsw(x, 20)
    assert np.array_equal(idx, want)
    assert np.array_equal(sims, want_s)


def test_a_builder_that_died_or_fell_short_leaves_knn_to_build_its_own(tmp_path):
    """A builder whose process was killed (out of memory, say) gives no index, and an index of
    fewer rows than asked about is not used: knn_hnsw builds its own and answers the same."""
    import os
    import signal

    x = _unit_rows(1500, 20)
    dead = cluster.IndexBuilder(folder=tmp_path)
    dead.feed(x[:100])
    os.kill(dead.pid, signal.SIGKILL)
    dead.feed(x[100:])
    assert dead.finish() is None
    short = cluster.IndexBuilder(folder=tmp_path)
    short.feed(x[:1000])
    index = short.finish()
    assert index is not None and len(index) == 1000
    got, _ = cluster.knn_hnsw(x, 10, index=index)
    assert np.array_equal(got, cluster.knn_hnsw(x, 10)[0])
    assert not list(tmp_path.iterdir())


def test_no_builder_where_it_cannot_pay_or_cannot_start(tmp_path, monkeypatch):
    """No builder for few rows, without a spare core, or where its folder cannot be made: the
    cluster step then builds the index itself, as before."""
    import os

    cores = len(os.sched_getaffinity(0))
    assert cluster.spare_core(cores - 1) and not cluster.spare_core(cores)
    assert cluster.index_builder(cluster.BRUTE_MAX, 1, tmp_path) is None
    monkeypatch.setattr(cluster, "spare_core", lambda threads: False)
    assert cluster.index_builder(cluster.BRUTE_MAX + 1, 1, tmp_path) is None
    monkeypatch.setattr(cluster, "spare_core", lambda threads: True)
    assert cluster.index_builder(cluster.BRUTE_MAX + 1, 1, tmp_path / "gone" / "deeper") is None
    builder = cluster.index_builder(cluster.BRUTE_MAX + 1, 1, tmp_path)
    assert builder is not None
    builder.close()
    assert not list(tmp_path.iterdir())
