"""Steps 3 and 4 of triage: embed the canonical queries and cluster them, keeping ids stable.

The method: a k-nearest-neighbour graph over the query embeddings (cosine), cut into communities by
Leiden (``leidenalg`` over an ``igraph`` graph, in C; fixed seed, so the same vectors always give
the same clusters) maximising the configuration-model quality with a resolution parameter.

**The graph.** Up to ``BRUTE_MAX`` rows the neighbours are exact (numpy, block by block, so memory
is one block x n, never n x n); past that an HNSW index (``usearch``, built on one thread, which
keeps it deterministic) over bfloat16 copies of the rows is asked for twice the neighbours kept,
and each row keeps the k of best float32 cosine: the cheap index finds the candidates, the exact
cosines order them. On 200k embedded real-shaped queries at k = 30 (``bench/bench_knn.py
--settings f16-c16-a128-s64-x1,bf16-c16-a128-s64-x2``) that is recall@30 0.9927 against exact
k-NN (the half-precision index asked for k alone: 0.9919) for 0.78x its CPU (median 116.3
against 149.4 CPU-s over three runs; the settings' table is beside ``HNSW_DTYPE``). Edges are
kept as numpy arrays; an edge seen from both ends keeps the larger cosine.

**The two choices, made without labels.** The neighbour count k and the resolution are chosen over
the grid ``K_GRID`` x ``RESOLUTIONS`` by the silhouette (cosine, the mean over three seeded samples
of ``SILHOUETTE_SAMPLE`` rows, drawn once for the whole grid and scored from each cluster's summed
rows, with no distance matrix) with a parsimony rule: the partition with the *fewest* clusters
whose silhouette is within ``SILHOUETTE_TOLERANCE`` of the grid's best. The plain arg-max
over-splits: on banking77 (10,003 real queries, 77 intents) the silhouette keeps creeping up as the
resolution grows (0.178 at 55 clusters, 0.209 at 107, 0.222 at 134, 0.224 at 161, k = 20) while the
agreement with the intents falls past ~110 clusters (ARI 0.564, 0.554, 0.510); the tolerance
(0.005) is the spread between two silhouette samples of the same partition, so partitions inside it
are indistinguishable by this measure and the coarsest is taken. Measured through
:func:`cluster_fresh` on banking77 (never told k): k = 30, resolution 16, 121 clusters, ARI 0.559
on torch vectors; k = 30, resolution 12, 108 clusters, ARI 0.566 on onnx-int8 ones (the partitions
of neighbouring grid points differ by ~0.01 ARI). Modularity (resolution 1), which the networkx
Louvain used, gives 0.39-0.50 with 34-58 clusters: too coarse. k-means told k = 77: 0.49.

Past ``CHOOSE_SAMPLE`` rows the grid runs on a seeded sample of that size (its own k-NN graph) and
one Leiden run on the whole graph uses the chosen pair: the configuration model's resolution
compares a cluster's inner weight with its expected weight, both of which grow with the cluster,
so a resolution keeps its granularity as the traffic per intent grows (not checked at 200k yet).
That one run (and an incremental run's, at the first run's pair) is python-igraph's own C Leiden
(:func:`leiden_whole`: modularity at the resolution, the same quality), not leidenalg: on the
k = 10 graph of 200k generated rows (``bench/bench_cluster_scale.py --sizes 200000
--compare-leiden``) 22.2 -> 1.5 CPU-s, quality 0.983845 -> 0.983972, ARI against the generated
intents 0.3006 -> 0.3026 (the two partitions at ARI 0.955 of each other); at 1M rows (8.3M
edges) 212.5 -> 13.7 CPU-s, quality 0.971386 -> 0.971566, ARI 0.2457 -> 0.2475. What is left
of the step at 1M is the k-NN of every row: HNSW build 710 and search 437 of 1,218 CPU-s. The grid
keeps leidenalg: igraph's partitions are as good but other ones, and they moved the choice on the
labelled sets (onnx-int8 vectors: banking77 2k ARI 0.553 -> 0.518, banking77 + Session Track
0.584 -> 0.575, though 5k and 10k rose), so a grid on igraph would trade ARI for ~20 s.

**Where a 10k grid's time goes** (CPU on banking77's 9,611 triage canonicals): the twelve Leiden
runs ~12-14 s (0.7 / 1.1 / 1.5 s each at k 10 / 20 / 30), the k-NN search ~2.5 s, the
silhouettes 0.9 s. The Linux wheels of leidenalg 0.10.2, 0.11.0 and 0.12.0 build
``libleidenalg`` without optimisation (its trivial ``std::vector`` accessors are out-of-line
``-O0`` functions). The optimised wheel of leidenalg 0.9.1 (igraph < 0.11) runs the same grid
~5x faster, but its partitions differ and the choice moves with them: ARI 0.553 -> 0.511 at
banking77 2k, where a 52-cluster partition misses the silhouette's tolerance by 4e-5 today. Any
change of partitions meets that noise, so a speed-up here must keep them: warm starts from a
neighbouring resolution, a random neighbour community per move and fewer grid points were each
measured and each lost ARI on some set.

Incremental: once clusters exist, a new query joins the cluster whose centroid is most similar when
that cosine reaches the cluster's radius — the 10th percentile of its own members' cosines to the
centroid (the pooled median radius for clusters under five members). The queries that join nothing
are clustered among all of the run's new queries (:func:`cluster_with_context`), those that joined
held in their clusters, with the k the first run chose and its resolution scaled to this graph's
share of every query: a query may join a cluster through its new members there, when no more than
CONTEXT_SLACK under its radius; the others get new ids; an id is never reused. A fuzzy variant
always goes where its canonical went. Every clustered query's ``similarity`` is its cosine to its
cluster's centroid (triage/labels.py picks the central examples by it).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from goldmine.embed import page_out
from goldmine.output import progress
from goldmine.store import registered
from goldmine.triage.dedupe import can_fork, usable_cores
from goldmine.triage.events import frame

if TYPE_CHECKING:
    import duckdb

K_GRID = (10, 20, 30)
RESOLUTIONS = (4.0, 8.0, 12.0, 16.0)
SILHOUETTE_SAMPLE = 4000
SILHOUETTE_SAMPLES = 3
SILHOUETTE_TOLERANCE = 0.005
CHOOSE_SAMPLE = 20_000
CHOICE_MIN = 100  # queries a run needs for its k and resolution to be the store's (_chosen)
BRUTE_MAX = 10_000
LEIDEN_ITERATIONS = 2
RADIUS_QUANTILE = 0.10
# How far under its cluster's radius a query may join the cluster through this run's queries
# (cluster_with_context): on a week of banking77 (813 queries, then 635), the old intents' new
# queries that missed the radius sat a median 0.068 under it (p10 0.198), a new intent's 0.255.
CONTEXT_SLACK = 0.2
SMALL_CLUSTER = 5
SEED = 0
ROW_BLOCK = 1024
# HNSW settings: a bfloat16 index (AVX-512 BF16 dot products), asked for twice the neighbours
# kept, which are re-ranked by their float32 cosines. On 200k embedded real-shaped queries, k 30
# (bench/bench_knn.py, three runs on a shared machine, CPU-s of build + search): recall@30 0.9927
# against exact k-NN in 116.3 CPU-s (median of 116.3, 124.1, 112.5), where the f16 index asked
# for k gave 0.9919 in 149.4 (183.1, 140.8, 149.4): 0.78x. An i8 index (rows scaled to its range)
# asked for 2k is cheaper still (0.9924 in 103.1 and 92.4 CPU-s, ~0.65x; peak 610 MB against
# 665) but its coarse distances fail tight clusters in few dimensions: recall@20 0.85 on the 32-d
# blobs of tests/test_triage.py, where bf16 x2 gives 0.99 and f16 x1 0.97.
HNSW_CONNECTIVITY = 16
HNSW_EXPANSION_ADD = 128
HNSW_EXPANSION_SEARCH = 64
HNSW_DTYPE = "bf16"
HNSW_CANDIDATES = 2  # neighbours asked of the index per neighbour kept, re-ranked by exact cosine


@dataclass(frozen=True)
class Hnsw:
    """The settings of one HNSW k-NN (:func:`knn_hnsw`); the module's constants by default.

    ``dtype`` "i8" scales the rows so their largest component is 127 before they are rounded
    (usearch's own cast truncates x * 127, a handful of levels for a 384-d unit row);
    ``candidates`` times k neighbours are asked of the index and the k of best float32 cosine
    kept, which repairs most of what a coarse index misorders."""

    dtype: str = HNSW_DTYPE
    connectivity: int = HNSW_CONNECTIVITY
    expansion_add: int = HNSW_EXPANSION_ADD
    expansion_search: int = HNSW_EXPANSION_SEARCH
    candidates: int = HNSW_CANDIDATES


HNSW_STEP = 8192  # rows per add/search call (one progress step each)


def knn_steps(n: int) -> int:
    """How many times :func:`knn` calls ``advance`` for n rows."""
    return 2 * -(-n // HNSW_STEP) if n > BRUTE_MAX else -(-n // ROW_BLOCK)


def knn(
    x: np.ndarray, k: int, advance: Callable[[int], None] | None = None, index: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's k most similar other rows (by dot product), best first: exact up to BRUTE_MAX
    rows, an HNSW index past that (``index``, when it holds every row of x, is used as built).
    ``advance`` is told of each of :func:`knn_steps` steps."""
    if len(x) > BRUTE_MAX:
        return knn_hnsw(x, k, advance, index=index)
    return knn_exact(x, k, advance)


def knn_exact(
    x: np.ndarray,
    k: int,
    advance: Callable[[int], None] | None = None,
    rows: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact k-NN of ``rows`` (default: every row) among all rows of x, one block at a time."""
    n = len(x)
    k = min(k, n - 1)
    queries = np.arange(n) if rows is None else np.asarray(rows)
    idx = np.empty((len(queries), max(k, 0)), dtype=np.int64)
    sims = np.empty((len(queries), max(k, 0)), dtype=np.float32)
    if k <= 0:
        return idx, sims
    for start in range(0, len(queries), ROW_BLOCK):
        block = queries[start : start + ROW_BLOCK]
        s = x[block] @ x.T
        s[np.arange(len(block)), block] = -np.inf
        part = np.argpartition(-s, k - 1, axis=1)[:, :k]
        part_s = np.take_along_axis(s, part, 1)
        order = np.lexsort((part, -part_s), axis=1)  # by similarity, ties by index
        idx[start : start + len(block)] = np.take_along_axis(part, order, 1)
        sims[start : start + len(block)] = np.take_along_axis(part_s, order, 1)
        if advance is not None:
            advance(1)
    return idx, sims


def knn_hnsw(
    x: np.ndarray,
    k: int,
    advance: Callable[[int], None] | None = None,
    hnsw: Hnsw | None = None,
    index: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Approximate k-NN from a usearch HNSW index (inner product on normalized rows).

    The index is built on one thread, in row order: a parallel build depends on thread timing,
    and the clusters must not. An ``index`` of every row built so elsewhere (:class:`IndexBuilder`)
    is the same index and is searched as it is; one of another size is not used. The search is
    parallel (each query's answer does not depend on the others). Each row's neighbours are
    ranked by their float32 cosines, not the index's."""
    hnsw = hnsw or Hnsw()
    n = len(x)
    k = min(k, n - 1)
    step = HNSW_STEP
    cast: Callable[[np.ndarray], np.ndarray] = _as_given
    if index is not None and len(index) == n and hnsw.dtype != "i8":
        if advance is not None:
            advance(-(-n // step))  # the build's steps, done while the rows were embedded
    else:
        index, cast = _hnsw_index(x, hnsw)
        keys = np.arange(n, dtype=np.uint64)
        for start in range(0, n, step):
            index.add(keys[start : start + step], cast(x[start : start + step]), threads=1)
            if advance is not None:
                advance(1)
    idx = np.empty((n, k), dtype=np.int64)
    sims = np.empty((n, k), dtype=np.float32)
    ask = min(k * hnsw.candidates + 1, n)
    for start in range(0, n, step):
        found = index.search(cast(x[start : start + step]), ask, threads=0)
        rows = np.arange(start, start + len(found.counts))
        best, cos = _best(x, rows, found.keys.astype(np.int64), found.counts, k)
        idx[start : start + len(rows)], sims[start : start + len(rows)] = best, cos
        short = found.counts < k + 1  # fewer found than asked: the rest of the row is padding
        if short.any():  # rare (the search explores 64 or more candidates): exact for those rows
            idx[rows[short]], sims[rows[short]] = knn_exact(x, k, rows=rows[short])
        if advance is not None:
            advance(1)
    return idx, sims


def _as_given(rows: np.ndarray) -> np.ndarray:
    return rows


def _empty_index(dim: int, hnsw: Hnsw) -> Any:
    from usearch.index import Index

    return Index(
        ndim=dim,
        metric="ip",
        dtype=hnsw.dtype,
        connectivity=hnsw.connectivity,
        expansion_add=hnsw.expansion_add,
        expansion_search=hnsw.expansion_search,
    )


def _hnsw_index(x: np.ndarray, hnsw: Hnsw) -> tuple[Any, Callable[[np.ndarray], np.ndarray]]:
    """The empty index, and what turns rows of x into the vectors it is given (i8: scaled so the
    largest component of x is 127, then rounded: one scale for all rows keeps the order of dot
    products)."""
    index = _empty_index(x.shape[1], hnsw)
    if hnsw.dtype != "i8":
        return index, _as_given
    top = max(float(np.abs(x[a : a + HNSW_STEP]).max()) for a in range(0, len(x), HNSW_STEP))
    scale = np.float32(127.0 / max(top, 1e-12))
    return index, lambda rows: np.rint(rows * scale).astype(np.int8)


def spare_core(threads: int) -> bool:
    """Whether this process may use more cores than the embedding's ``threads``."""
    return usable_cores() > threads


def index_builder(n: int, embed_threads: int, folder: Path | None = None) -> IndexBuilder | None:
    """An :class:`IndexBuilder` for a first run's n rows where it pays and gives the same index:
    past BRUTE_MAX rows, a float index (i8 scales by every row's range, known only at the end),
    a process that may fork, and a core the embedding leaves idle (with none, the build would only
    slow the embedding down by its own length)."""
    if n <= BRUTE_MAX or Hnsw().dtype == "i8" or not can_fork():
        return None
    if not spare_core(embed_threads):
        return None
    try:
        return IndexBuilder(folder=folder)
    except OSError:  # no room for its folder, no process to be had: built after, as before
        return None


class IndexBuilder:
    """The HNSW index of a first run's rows, built in a forked process while the embedding hands
    them over block by block, on the core the embedding leaves idle: at a million queries the
    build is most of the cluster step, and here it costs no time after the embedding.

    The rows are added on one thread in row order, as :func:`knn_hnsw` adds them, so the index
    (and the clusters) are the same. It comes back through a file in ``folder`` (the store's),
    in usearch's own format, removed once read. A process that died gives no index (the cluster
    step then builds its own). usearch holds the GIL while it adds, so a thread would stall the
    embedding; blocks are sent by a thread of this process, so a slow build never blocks it."""

    def __init__(self, hnsw: Hnsw | None = None, folder: Path | None = None) -> None:
        import queue
        import tempfile
        import threading

        self.hnsw = hnsw or Hnsw()
        self.n = 0
        self._dim: int | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="goldmine-index-", dir=folder))
        self._pending: queue.Queue[int | np.ndarray | None] = queue.Queue()
        # forked now, before the embedding loads its model and starts its threads
        ctx = mp.get_context("fork")
        self._conn, child = ctx.Pipe()
        args = (child, self._conn, self.hnsw, str(self._dir / "index.usearch"))
        self._process = ctx.Process(target=_build_index, args=args, daemon=True)
        self._process.start()
        child.close()  # the child's death then reads as end of file here
        self._sender = threading.Thread(target=self._send, daemon=True)
        self._sender.start()

    @property
    def pid(self) -> int:
        return self._process.pid

    def feed(self, rows: np.ndarray) -> None:
        """The next rows of the index, in order. Sent from the array itself, not a copy (a copy
        of every row, 1.5 GB at a million queries, is heap the embedding then keeps): the rows
        must not change after (``embed_closed`` hands over only rows that are final)."""
        if not len(rows):
            return
        if self._dim is None:
            self._dim = int(rows.shape[1])
            self._pending.put(self._dim)
        self._pending.put(np.ascontiguousarray(rows, dtype=np.float32))
        self.n += len(rows)

    def _send(self) -> None:
        """Hands the blocks over in order, then an empty one for the end. Once the builder has
        died the rest is dropped unsent (finish() then gives no index)."""
        alive = True
        while (item := self._pending.get()) is not None:
            alive = alive and self._put(item)
        if alive:
            self._put(b"")

    def _put(self, item: int | bytes | np.ndarray) -> bool:
        try:
            self._conn.send(item) if isinstance(item, int) else self._conn.send_bytes(item)
        except OSError:
            return False
        return True

    def finish(self) -> Any | None:
        """The index of every row fed (waits for the build), or None if its process died or
        was fed nothing."""
        if not self.n:
            self.close()
            return None
        self._pending.put(None)
        self._sender.join()
        try:
            added = self._conn.recv()
        except (EOFError, OSError):
            added = None
        self._process.join()
        try:
            if added != self.n or self._process.exitcode != 0:
                return None
            from usearch.index import Index

            index = Index.restore(str(self._dir / "index.usearch"))
            index.expansion_search = self.hnsw.expansion_search
            return index
        finally:
            self.close()

    def close(self) -> None:
        """Stop the builder if it still runs and remove its file (an interrupted run's too)."""
        import shutil

        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        if self._sender.is_alive():
            self._pending.put(None)
        self._conn.close()
        shutil.rmtree(self._dir, ignore_errors=True)


def _build_index(conn: Any, parent_end: Any, hnsw: Hnsw, path: str) -> None:
    """The builder process: the rows' dimension, then each block of rows added as it comes;
    then the index saved and the number of rows added sent back. It ends quietly when the
    parent goes (end of file) and leaves Ctrl-C to the parent, which stops it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent_end.close()  # only the parent's copy stays open, so a parent that died reads as EOF
    start = 0
    try:
        dim = conn.recv()
        index = _empty_index(dim, hnsw)
        while block := conn.recv_bytes():
            rows = np.frombuffer(block, dtype=np.float32).reshape(-1, dim)
            index.add(np.arange(start, start + len(rows), dtype=np.uint64), rows, threads=1)
            start += len(rows)
    except EOFError:
        return
    index.save(path)
    conn.send(start)


def _best(
    x: np.ndarray, rows: np.ndarray, got: np.ndarray, counts: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The k candidates of best float32 cosine of each row (ties by index), the row itself left
    out (usually first; anywhere when duplicates tie) and the index's padding last."""
    width = got.shape[1]
    got[np.arange(width)[None, :] >= counts[:, None]] = -1
    is_self = got == rows[:, None]
    is_self[~is_self.any(axis=1), -1] = True  # no self found: drop the last
    got = got[~is_self].reshape(len(rows), width - 1)
    cos = _cosines(x, rows, got)  # the index's distances are ~1e-3 off (f16) or coarser (i8)
    cos[got < 0] = -np.inf
    order = np.lexsort((got, -cos), axis=1)[:, :k]  # best first, ties by index
    return np.take_along_axis(got, order, 1), np.take_along_axis(cos, order, 1)


def _cosines(x: np.ndarray, rows: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """float32 cosine of each row with each of its neighbours (normalized rows), a block of rows
    at a time (a block's neighbour vectors are ROW_BLOCK x 30 x dim, 47 MB at 384-d, whatever
    the number of neighbours)."""
    out = np.empty(neighbours.shape, dtype=np.float32)
    block = max(1, ROW_BLOCK * 30 // max(neighbours.shape[1], 1))
    for a in range(0, len(rows), block):
        b = a + block
        out[a:b] = np.einsum("ij,ikj->ik", x[rows[a:b]], x[neighbours[a:b]])
    return out


def knn_graph(idx: np.ndarray, sims: np.ndarray, k: int) -> tuple[Any, np.ndarray]:
    """The undirected igraph graph of the first k neighbours, and its edge weights (the larger
    cosine of the two directions), as numpy arrays: no Python object per edge, and one n x k
    array of keys at a time (at 800k queries and k = 30 each such array is 190 MB)."""
    import igraph as ig

    n = len(idx)
    kk = min(k, idx.shape[1])
    src = np.arange(n, dtype=np.int64)[:, None]
    dst = idx[:, :kk]
    key = np.minimum(src, dst)  # edge a-b as one int64: min * n + max
    key *= n
    key += np.maximum(src, dst)
    key = key.ravel()
    order = np.argsort(key, kind="stable")
    key = key[order]
    weight = np.maximum(sims[:, :kk].ravel()[order], 1e-6)
    del order
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    weight = np.maximum.reduceat(weight, first).astype(np.float64)
    key = key[first]
    del first
    edges = np.empty((len(key), 2), dtype=np.int64)
    np.floor_divide(key, n, out=edges[:, 0])
    np.remainder(key, n, out=edges[:, 1])
    del key
    return ig.Graph(n=n, edges=edges), weight


def leiden(graph: Any, weight: np.ndarray, resolution: float) -> np.ndarray:
    """Community labels (0..m-1, largest first, ties by first member) of the graph, seeded."""
    import leidenalg

    part = leidenalg.find_partition(
        graph,
        leidenalg.RBConfigurationVertexPartition,
        weights=weight.tolist(),
        resolution_parameter=resolution,
        n_iterations=LEIDEN_ITERATIONS,
        seed=SEED,
    )
    return _relabel(np.asarray(part.membership, dtype=np.int64))


def leiden_whole(graph: Any, weight: np.ndarray, resolution: float) -> np.ndarray:
    """:func:`leiden`'s partition for the one run on every row past CHOOSE_SAMPLE, from
    python-igraph's own C Leiden: modularity at ``resolution`` is the configuration-model quality
    RBConfigurationVertexPartition optimises, and igraph's core is built optimised where
    leidenalg's is not (~12x less CPU at 200k rows, as good a partition). Seeded through its own
    ``random.Random``, so Python's global random state is left alone."""
    import random

    import igraph

    igraph.set_random_number_generator(random.Random(SEED))
    try:
        part = graph.community_leiden(
            objective_function="modularity",
            weights=weight,
            resolution=resolution,
            n_iterations=LEIDEN_ITERATIONS,
        )
    finally:
        igraph.set_random_number_generator(random)
    return _relabel(np.asarray(part.membership, dtype=np.int64))


def _relabel(raw: np.ndarray) -> np.ndarray:
    """Labels renumbered 0..m-1 by size (largest first), ties by the smallest member index."""
    n = len(raw)
    if not n:
        return raw
    counts = np.bincount(raw)
    first = np.full(len(counts), n, dtype=np.int64)
    np.minimum.at(first, raw, np.arange(n))
    present = np.flatnonzero(counts)
    order = present[np.lexsort((first[present], -counts[present]))]
    new = np.empty(len(counts), dtype=np.int64)
    new[order] = np.arange(len(order))
    return new[raw]


def silhouette_rows(x: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The SILHOUETTE_SAMPLES seeded samples the silhouette reads (one when x is no larger than
    SILHOUETTE_SAMPLE): each as its row indices, the very rows sklearn's ``silhouette_score``
    draws with that ``random_state``, and those rows normalized in float64 (3 x 4000 x 384, 37 MB;
    the rows do not depend on the partition, so the grid draws them once)."""
    size = min(SILHOUETTE_SAMPLE, len(x))
    out = []
    for i in range(SILHOUETTE_SAMPLES if size < len(x) else 1):
        rows = np.random.RandomState(SEED + i).permutation(len(x))[:size]
        xs = x[rows].astype(np.float64)
        xs /= np.maximum(np.linalg.norm(xs, axis=1, keepdims=True), 1e-12)
        out.append((rows, xs))
    return out


def silhouette(labels: np.ndarray, samples: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """Mean cosine silhouette of the partition over the samples of :func:`silhouette_rows`
    (equal to sklearn's ``silhouette_score`` on them to ~1e-7: sklearn sums float32 distances)."""
    scores = [_sample_silhouette(labels[rows], xs) for rows, xs in samples]
    return float(np.mean(scores)) if scores else -1.0


def _sample_silhouette(labels: np.ndarray, xs: np.ndarray) -> float:
    """sklearn's cosine silhouette of one sample, from each cluster's summed rows: a row's summed
    cosine distance to cluster c is ``n_c - x . sum_c`` (a cosine distance is 1 - x . y on
    normalized rows), so no sample x sample distance matrix is built (it was 0.4 s a partition at
    4,000 rows; this is a matrix of rows x clusters)."""
    _, lab = np.unique(labels, return_inverse=True)
    n, m = len(lab), int(lab.max()) + 1
    if m < 2 or m >= n:
        return -1.0  # sklearn refuses such a sample
    counts = np.bincount(lab, minlength=m).astype(np.float64)
    dist = counts[None, :] - xs @ _cluster_sums(lab, m, xs).T  # summed cosine distance to each
    own = dist[np.arange(n), lab] - (1.0 - np.einsum("ij,ij->i", xs, xs))  # not to itself
    alone = counts[lab] < 2  # sklearn gives a cluster of one in the sample a silhouette of 0
    intra = np.maximum(own, 0.0) / np.maximum(counts[lab] - 1, 1)
    dist /= counts[None, :]
    dist[np.arange(n), lab] = np.inf
    inter = dist.min(axis=1)
    top = np.maximum(intra, inter)
    s = np.divide(inter - intra, top, out=np.zeros(n), where=(top > 0) & ~alone)
    return float(s.mean())


def _cluster_sums(lab: np.ndarray, m: int, xs: np.ndarray) -> np.ndarray:
    """Each cluster's summed rows, as a sparse one-hot product: it adds a cluster's rows in row
    order, as ``np.add.at`` does, so the sums are the same to the bit (and the grid's choice with
    them), in a tenth of add.at's time (~30 ms a sample at 4,000 rows, ~40% of a silhouette)."""
    from scipy.sparse import csr_matrix

    n = len(lab)
    return csr_matrix((np.ones(n), (lab, np.arange(n))), shape=(m, n)) @ xs


# inherited by forked workers: {k: (graph, weight)}, the silhouette's samples (None: not scored)
_GRAPH: tuple | None = None


def _partition(job: tuple[int, float]) -> tuple[int, float, np.ndarray, float]:
    graphs, samples = _GRAPH
    k, resolution = job
    labels = leiden(*graphs[k], resolution)
    return k, resolution, labels, silhouette(labels, samples) if samples else float("nan")


def _advancing(items, advance):
    for item in items:
        advance(1)
        yield item


def _graphs(
    x: np.ndarray, ks: list[int], label: str, index: Any = None
) -> dict[int, tuple[Any, np.ndarray]]:
    """The k-NN graph of x for each k in ks, from one k-NN search at the largest k (``index``: an
    HNSW index of every row of x, built already). The neighbour arrays (n x k, 360 MB at 1M
    queries and k = 30) are gone when this returns: Leiden's peak comes after."""
    with progress(label, total=knn_steps(len(x))) as advance:
        idx, sims = knn(x, max(ks), advance, index)
    # The graph and Leiden need the room, not the rows (1.5 GB at 1M queries); rows the embedding
    # left in a file mapping leave memory until the centroids read them again.
    page_out(x)
    return {k: knn_graph(idx, sims, k) for k in sorted(set(ks))}


def _run_grid(
    x: np.ndarray, graphs: dict, jobs: list, label: str, samples: list | None = None
) -> list:
    """Leiden for each (k, resolution) job, in parallel processes (one per core) where fork is
    available: embedding used one torch thread, clustering may use them all. Each partition is
    scored by the silhouette over ``samples`` (:func:`silhouette_rows`) when given."""
    global _GRAPH

    _GRAPH = (graphs, samples)
    if samples:  # the silhouette's sparse sums: imported here once, not by every forked worker
        import scipy.sparse  # noqa: F401
    try:
        workers = min(len(jobs), os.cpu_count() or 1)
        with progress(label, total=len(jobs)) as advance:
            if workers > 1 and can_fork():
                with ProcessPoolExecutor(workers, mp_context=mp.get_context("fork")) as pool:
                    return list(_advancing(pool.map(_partition, jobs), advance))
            return list(_advancing(map(_partition, jobs), advance))
    finally:
        _GRAPH = None


def choose(runs: list[tuple[int, float, np.ndarray, float]]) -> tuple[int, float]:
    """The parsimony rule: fewest clusters within SILHOUETTE_TOLERANCE of the best silhouette
    (ties: the smaller k, then the smaller resolution)."""
    best = max(run[3] for run in runs)
    near = [run for run in runs if run[3] >= best - SILHOUETTE_TOLERANCE]
    k, resolution, _, _ = min(near, key=lambda r: (int(r[2].max()) + 1, r[0], r[1]))
    return k, resolution


def cluster_fresh(
    x: np.ndarray,
    k_grid: tuple[int, ...] = K_GRID,
    resolutions: tuple[float, ...] = RESOLUTIONS,
    index: Any = None,
) -> tuple[np.ndarray, dict]:
    """Labels for the rows of x with k and the resolution chosen by silhouette; and what was
    tried. A single (k, resolution) — as an incremental run passes — skips the choice.
    ``index``: an HNSW index of every row of x, built already (:class:`IndexBuilder`)."""
    n = len(x)
    if n <= 2:
        return np.arange(n, dtype=np.int64), {"k": None, "resolution": None, "tried": {}}

    grid = sorted({min(k, n - 1) for k in k_grid})
    jobs = [(k, float(r)) for k in grid for r in resolutions]
    tried: dict[str, float] = {}
    sample = None
    if len(jobs) > 1 and n > CHOOSE_SAMPLE:
        rng = np.random.default_rng(SEED)
        sample = np.sort(rng.choice(n, CHOOSE_SAMPLE, replace=False))
        xs = x[sample]
        graphs = _graphs(xs, grid, "k-NN graph of a sample")
        runs = _run_grid(
            xs, graphs, jobs, f"Leiden on {len(xs):,} sampled rows", silhouette_rows(xs)
        )
        del graphs, xs
    if len(jobs) > 1:
        if sample is None:
            graphs = _graphs(x, grid, "k-NN graph (row blocks)", index)
            label = f"Leiden for k in {grid} x {list(resolutions)}"
            runs = _run_grid(x, graphs, jobs, label, silhouette_rows(x))
            del graphs
        tried = {f"{k}/{r:g}": round(s, 4) for k, r, _, s in runs}
        k, resolution = choose(runs)
        if sample is None:
            labels = next(lab for kk, r, lab, _ in runs if (kk, r) == (k, resolution))
            return labels, {"k": k, "resolution": resolution, "tried": tried}
    else:
        k, resolution = jobs[0]
    graph, weight = _graphs(x, [k], "k-NN graph (row blocks)", index)[k]
    with progress(f"Leiden, k {k}, resolution {resolution:g}", total=1) as advance:
        labels = leiden_whole(graph, weight, resolution)
        advance(1)
    return labels, {"k": k, "resolution": resolution, "tried": tried}


def centroids(x: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per label 0..m-1: the normalized mean vector, the join radius, the member count."""
    m = int(labels.max()) + 1
    sums = np.zeros((m, x.shape[1]), dtype=np.float64)
    np.add.at(sums, labels, x)
    cents = (sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)).astype(
        np.float32
    )
    cos = np.einsum("ij,ij->i", x, cents[labels])
    counts = np.bincount(labels, minlength=m)
    radius = np.full(m, np.nan)
    order = np.argsort(labels, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(counts)])
    for c in range(m):
        if counts[c] >= SMALL_CLUSTER:
            radius[c] = np.quantile(cos[order[bounds[c] : bounds[c + 1]]], RADIUS_QUANTILE)
    pooled = np.nanmedian(radius) if np.isfinite(radius).any() else 0.7
    radius[~np.isfinite(radius)] = pooled
    return cents, radius, counts


def nearest_centroids(x: np.ndarray, cents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's most similar centroid and that cosine, ROW_BLOCK * 8 rows at a time: a week
    of new queries against thousands of clusters never builds the whole rows x clusters matrix."""
    best = np.empty(len(x), dtype=np.int64)
    best_s = np.empty(len(x), dtype=np.float32)
    step = ROW_BLOCK * 8
    for start in range(0, len(x), step):
        s = x[start : start + step] @ cents.T
        best[start : start + step] = s.argmax(axis=1)
        best_s[start : start + step] = s[np.arange(len(s)), best[start : start + step]]
    return best, best_s


def _vectors(frame, name: str) -> np.ndarray:
    return np.asarray(frame[name].to_list(), dtype=np.float32)


def pending_canonicals(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str]]:
    """Canonical queries of the current window that have no cluster yet, sorted, and the text to
    embed for each: its most frequent original spelling (the model reads case and punctuation;
    on banking77 that is worth ~0.015 ARI over the normalized form)."""
    rows = con.execute(
        """SELECT DISTINCT a.canonical_query, coalesce(c.query, a.canonical_query)
           FROM triage_assignments a
           JOIN triage_queries q USING (norm_query)
           LEFT JOIN triage_queries c ON c.norm_query = a.canonical_query
           WHERE a.canonical_query NOT IN (SELECT norm_query FROM triage_assignments
                                           WHERE cluster_id IS NOT NULL)
           ORDER BY 1"""
    ).fetchall()
    return [r[0] for r in rows], [r[1] for r in rows]


@dataclass
class ClusterInputs:
    """What clustering reads from the store, so the work itself runs with the store closed."""

    todo: list[str]  # canonical queries without a cluster
    texts: list[str]  # the text embedded for each
    known: Any  # polars: cluster_id, centroid, radius, n_members of every cluster so far
    chosen_k: int | None  # the k the first run chose, kept for new clusters
    next_id: int
    chosen_resolution: float = 1.0  # and its resolution (1: a store clustered by Louvain)


@dataclass
class ClusterPlan:
    """Clustering's result, to be written in one transaction by :func:`write_clusters`."""

    done: Any  # polars: norm_query, cluster_id, how, similarity
    new: Any = None  # polars rows for triage_cluster_ids, or None
    moved: Any = None  # polars: cluster_id, centroid, n_members of the clusters joined
    stats: dict = field(default_factory=dict)


def cluster_inputs(con: duckdb.DuckDBPyConnection) -> ClusterInputs:
    todo, texts = pending_canonicals(con)
    known = frame(
        con,
        "SELECT cluster_id, centroid, radius, n_members FROM triage_cluster_ids "
        "ORDER BY cluster_id",
    )
    next_id = con.execute(
        "SELECT coalesce(max(cluster_id), 0) + 1 FROM triage_cluster_ids"
    ).fetchall()[0][0]
    k, resolution = _chosen(con) if known.height else (None, 1.0)
    return ClusterInputs(todo, texts, known, k, next_id, resolution)


def plan_clusters(inputs: ClusterInputs, x: np.ndarray, index: Any = None) -> ClusterPlan:
    """Give every pending canonical (rows of x) a cluster: join the nearest one whose radius it
    reaches, else cluster the rest among themselves under new ids. Needs no store. ``index``:
    the HNSW index of every row of x, built while they were embedded (:func:`index_builder`),
    used when every row is clustered afresh, as on a first run."""
    import polars as pl

    todo, known, next_id = inputs.todo, inputs.known, inputs.next_id
    stats = {
        "n_todo": len(todo),
        "n_joined": 0,
        "n_new_clusters": 0,
        "k": None,
        "resolution": None,
        "tried": {},
        "knn_index": None,  # exact, built, or built while embedding (the rows' k-NN)
    }
    ids = np.full(len(todo), -1, dtype=np.int64)
    sim = np.full(len(todo), np.nan)
    how = np.array(["clustered"] * len(todo), dtype=object)
    if known.height and len(todo):
        best, best_s = nearest_centroids(x, _vectors(known, "centroid"))
        join = best_s >= known["radius"].to_numpy()[best]
        ids[join] = known["cluster_id"].to_numpy()[best[join]]
        sim[join] = best_s[join]
        how[join] = "joined"
        how[~join] = "new"
        stats["n_joined"] = int(join.sum())
    plan = ClusterPlan(done=None, stats=stats)
    rest = np.flatnonzero(ids < 0)
    labels = None
    if len(rest) and known.height and inputs.chosen_k:  # a later run: the first run's grain
        n_all = int(known["n_members"].sum()) + len(todo)
        resolution = inputs.chosen_resolution * len(x) / max(n_all, 1)
        found = cluster_with_context(x, ids, inputs.chosen_k, resolution)
        stats.update(k=inputs.chosen_k, resolution=round(resolution, 6))
        stats["knn_index"] = _knn_source(len(x), None)
        near = found >= 0  # joined a cluster through this run's queries that reached it
        if near.any():
            pos = {c: i for i, c in enumerate(known["cluster_id"].to_list())}
            at = np.array([pos[c] for c in found[near].tolist()], dtype=np.int64)
            cos = np.einsum("ij,ij->i", x[rest[near]], _vectors(known, "centroid")[at])
            # ... and is near its centroid still: a week of two queries links an off-topic one
            # to the other (a k-NN graph gives every row neighbours); alone it is a new cluster
            far = cos < known["radius"].to_numpy()[at] - CONTEXT_SLACK
            lone = np.flatnonzero(near)[far]
            found[lone] = -2 - np.abs(found).max() - np.arange(len(lone))
            near[lone] = False
            rows = rest[near]
            ids[rows] = found[near]
            how[rows] = "joined"
            sim[rows] = cos[~far]
            stats["n_joined"] += int(near.sum())
        rest, labels = rest[~near], _relabel(-found[~near] - 1)
    if len(rest):
        if labels is None:
            # one copy of the rows at most (none on a first run): at 1M queries a copy is 1.2 GB
            xr = x if len(rest) == len(x) else x[rest]
            index = index if xr is x and index is not None and len(index) == len(x) else None
            stats["knn_index"] = _knn_source(len(xr), index)
            labels, info = cluster_fresh(xr, K_GRID, RESOLUTIONS, index)
            stats.update(k=info["k"], resolution=info["resolution"], tried=info["tried"])
        else:
            xr = x[rest]
        ids[rest] = labels + next_id
        cents, radius, counts = centroids(xr, labels)
        sim[rest] = np.einsum("ij,ij->i", xr, cents[labels])  # how central (labels.py)
        del xr
        stats["n_new_clusters"] = len(counts)
        plan.new = pl.DataFrame(
            {
                "cluster_id": np.arange(len(counts)) + next_id,
                "centroid": cents.tolist(),
                "radius": radius,
                "n_members": counts,
            }
        )
    if stats["n_joined"]:
        plan.moved = _moved_centroids(known, x[ids < next_id], ids[ids < next_id])
    plan.done = pl.DataFrame(
        {"norm_query": todo, "cluster_id": ids, "how": how.tolist(), "similarity": sim},
        schema={
            "norm_query": pl.Utf8,
            "cluster_id": pl.Int64,
            "how": pl.Utf8,
            "similarity": pl.Float64,
        },
    )
    return plan


def cluster_with_context(x: np.ndarray, ids: np.ndarray, k: int, resolution: float) -> np.ndarray:
    """A later run's queries that joined no cluster (``ids`` < 0), clustered among this run's
    queries: those that joined one keep it (their membership fixed), the others may join the
    community of a cluster's new members or form new ones. Returns, for each query with no
    cluster in row order, the cluster id it joins (>= 0), else -1 - its new community's number.

    Clustered among themselves alone, as before, the queries of one new intent were the whole
    graph, which RBConfiguration at the first run's resolution (above 2) splits: 61 queries of a
    new intent made 52 clusters, 50 of them of one query. Here the resolution is the first
    run's scaled by this graph's share of the queries clustered so far (``resolution`` is that
    already), which gives each community the expected weight it has among all the queries: the
    null model of the whole graph. And an old intent's new queries that missed its cluster's
    radius (about a tenth of them, by the radius' making) reach it through its other new
    members, instead of forming mixed clusters of their own."""
    import leidenalg

    n = len(x)
    free = np.flatnonzero(ids < 0)
    kk = min(k, n - 1)
    if kk < 1:
        return -1 - np.arange(len(free))
    idx, sims = knn(x, kk)
    graph, weight = knn_graph(idx, sims, kk)
    del idx, sims
    fixed = ids >= 0
    known_ids, start = np.unique(ids[fixed], return_inverse=True)
    membership = np.empty(n, dtype=np.int64)
    membership[fixed] = start
    membership[free] = len(known_ids) + np.arange(len(free))
    part = leidenalg.RBConfigurationVertexPartition(
        graph,
        initial_membership=membership.tolist(),
        weights=weight.tolist(),
        resolution_parameter=resolution,
    )
    optimiser = leidenalg.Optimiser()
    optimiser.set_rng_seed(SEED)
    optimiser.optimise_partition(
        part, n_iterations=LEIDEN_ITERATIONS, is_membership_fixed=fixed.tolist()
    )
    final = np.asarray(part.membership, dtype=np.int64)
    # A community holding fixed queries is their cluster's (fixed queries never move, so one),
    # unless the queries that reached no radius outnumber them in it: an old intent's new
    # queries mostly reach its radius (nine in ten, by the radius' making), so a community
    # mostly of others is a new intent that a few look-alikes joined to the cluster.
    owner: dict[int, int] = {}
    for community, cluster in zip(final[fixed].tolist(), ids[fixed].tolist(), strict=True):
        owner.setdefault(community, cluster)
    n_fixed = np.bincount(final[fixed], minlength=int(final.max()) + 1)
    n_free = np.bincount(final[free], minlength=int(final.max()) + 1)
    return np.array(
        [owner[c] if c in owner and n_free[c] <= n_fixed[c] else -1 - c
         for c in final[free].tolist()],
        dtype=np.int64,
    )  # fmt: skip


def _knn_source(n: int, index: Any) -> str:
    if n <= BRUTE_MAX:
        return "exact"
    return "built" if index is None else "built while embedding"


def write_clusters(con: duckdb.DuckDBPyConnection, plan: ClusterPlan, run_id: int) -> dict:
    """Store a plan (new cluster ids, moved centroids, assignments); variants follow their
    canonical. Returns the plan's stats."""
    if plan.new is not None:
        with registered(con, _gm_clusters=plan.new):
            con.execute(
                "INSERT INTO triage_cluster_ids SELECT cluster_id, ?, centroid::FLOAT[], "
                "radius, n_members FROM _gm_clusters",
                [run_id],
            )
    if plan.moved is not None:
        with registered(con, _gm_moved=plan.moved):
            con.execute(
                """UPDATE triage_cluster_ids SET centroid = m.centroid::FLOAT[],
                          n_members = m.n_members
                   FROM _gm_moved m WHERE triage_cluster_ids.cluster_id = m.cluster_id"""
            )
    if plan.done.height:
        with registered(con, _gm_done=plan.done):
            con.execute(
                """UPDATE triage_assignments SET cluster_id = d.cluster_id, how = d.how,
                          similarity = d.similarity
                   FROM _gm_done d WHERE triage_assignments.norm_query = d.norm_query"""
            )
    # Variants go where their canonical went.
    con.execute(
        """UPDATE triage_assignments SET cluster_id = c.cluster_id, how = 'variant'
           FROM triage_assignments c
           WHERE triage_assignments.canonical_query = c.norm_query
             AND triage_assignments.norm_query <> triage_assignments.canonical_query
             AND triage_assignments.cluster_id IS NULL"""
    )
    con.execute(
        """UPDATE triage_queries SET cluster_id = a.cluster_id FROM triage_assignments a
           WHERE triage_queries.norm_query = a.norm_query"""
    )
    return plan.stats


def _chosen(con: duckdb.DuckDBPyConnection) -> tuple[int | None, float]:
    """The k and resolution the first clustering run that could choose them chose (resolution 1
    for a store that the earlier Louvain clustered: modularity's own). A run of fewer than
    CHOICE_MIN queries cannot: a pilot of five chose k 4 from silhouettes all -1, and every
    later week kept it; the next run then chooses on its own queries."""
    rows = con.execute(
        "SELECT params FROM triage_runs WHERE params->>'k' IS NOT NULL "
        "AND coalesce(TRY_CAST(params->>'n_todo' AS BIGINT), $least) >= $least "
        "ORDER BY run_id LIMIT 1",
        {"least": CHOICE_MIN},
    ).fetchall()
    if not rows:
        return None, 1.0
    params = json.loads(rows[0][0])
    return int(params["k"]), float(params.get("resolution") or 1.0)


def _moved_centroids(known, x: np.ndarray, ids: np.ndarray):
    """Each joined cluster's centroid as the running mean with its new members."""
    import polars as pl

    known = known.filter(pl.col("cluster_id").is_in(sorted(set(ids.tolist()))))
    pos = {c: i for i, c in enumerate(known["cluster_id"].to_list())}
    sums = _vectors(known, "centroid").astype(np.float64) * known["n_members"].to_numpy()[:, None]
    rows = np.array([pos[c] for c in ids.tolist()])
    np.add.at(sums, rows, x)
    counts = known["n_members"].to_numpy() + np.bincount(rows, minlength=len(pos))
    cents = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    return pl.DataFrame(
        {
            "cluster_id": known["cluster_id"],
            "centroid": cents.astype(np.float32).tolist(),
            "n_members": counts,
        }
    )
