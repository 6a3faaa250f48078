"""Benchmark: where the cluster step's time goes at hundreds of thousands of queries (issue 30).

    .venv/bin/python bench/bench_cluster_scale.py                        # 200k, 500k, 1M
    .venv/bin/python bench/bench_cluster_scale.py --sizes 200000 --compare-leiden
    taskset -c 1 .venv/bin/python bench/bench_cluster_scale.py --cores 1 # on one core

Embedding a million texts takes half an hour, and the cluster step never reads a text: it reads
vectors. So the vectors here are generated, seeded, with the structure of the traffic
bench_triage.py generates (real seed queries and many variants of each): ``--topics`` directions
on the unit sphere, ``--intents`` intents around them (an intent's cosine to its topic ~0.6, so
intents of one topic sit close, as "card arrival" and "card delivery" do), ``--seeds`` ways of
writing each intent (cosine ~0.75 to it) and the rows as variants of a way (cosine ~0.9 to it),
the way picked Zipf-like as bench_triage picks its seeds, so a head has thousands of variants
and a long tail a few. The intent is the truth the ARI is scored against.

Per size, one run of :func:`goldmine.triage.cluster.cluster_fresh` as triage calls it, with the
time (wall and CPU, the grid's forked workers included) of each of its steps: the sample's k-NN
search and graphs, the sample's grid of Leiden runs and silhouettes, the k-NN search of every row
(the HNSW build and its search apart), the graph of every row, the one Leiden run on it, and the
rest (sampling, paging out); then the ARI against the intents and the number of clusters.
``--compare-leiden`` then runs the whole-graph Leiden both ways on the same graph, leidenalg's
RBConfigurationVertexPartition and python-igraph's own ``community_leiden`` (modularity at the
same resolution), and prints time, quality, clusters and ARI of each. ``--recall`` checks the HNSW
k-NN's recall@20 against exact k-NN on 2,000 sampled rows.

Asserts nothing on time: the machine is shared, read the CPU column and the ratios.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

SEED = 3
DIM = 384


def generate(
    n: int, intents: int = 1500, topics: int = 80, seeds: int = 7, seed: int = SEED
) -> tuple[np.ndarray, np.ndarray]:
    """n unit rows (float32) and each row's intent, as described in the module docstring."""
    rng = np.random.default_rng(seed)
    topic = _unit(rng.normal(size=(topics, DIM)))
    intent = _around(rng, topic[rng.integers(0, topics, intents)], 0.6)
    # each intent is written a few ways (the generator's seeds), each way with many variants
    way = _around(rng, np.repeat(intent, seeds, axis=0), 0.75)
    weight = 1.0 / (np.arange(len(way)) + 10.0) ** 0.6  # bench_triage's Zipf-like pick
    pick = rng.choice(len(way), n, p=weight / weight.sum())
    x = np.empty((n, DIM), dtype=np.float32)
    step = 65_536
    for a in range(0, n, step):
        x[a : a + step] = _around(rng, way[pick[a : a + step]], 0.9)
    return x, pick // seeds


def _around(rng: np.random.Generator, centres: np.ndarray, cosine: float) -> np.ndarray:
    """Unit rows at about ``cosine`` to their centres: noise of norm sqrt(1/cos^2 - 1)."""
    scale = np.sqrt(1 / cosine**2 - 1) / np.sqrt(DIM)
    return _unit(centres + rng.normal(0, scale, centres.shape))


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def cpu() -> float:
    """CPU seconds of this process and its waited-for children (the grid's forked workers)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


@dataclass
class Clock:
    """Wall and CPU seconds per named step, in the order first seen."""

    steps: dict[str, list[float]] = field(default_factory=dict)
    whole: tuple | None = None  # the graph of every row and its weights

    def add(self, name: str, wall: float, cpu_s: float) -> None:
        got = self.steps.setdefault(name, [0.0, 0.0])
        got[0] += wall
        got[1] += cpu_s


def instrument(clock: Clock):
    """Wrap cluster.progress and cluster.knn_graph so that each step of cluster_fresh is timed
    where it runs; returns a function that puts the originals back."""
    from goldmine.triage import cluster

    real_progress, real_graph = cluster.progress, cluster.knn_graph

    @contextmanager
    def timed(description: str, total: int | None = None, percent: bool = False):
        marks: list[tuple[float, float]] = []
        w0, c0 = time.perf_counter(), cpu()

        def advance(n: int = 1) -> None:
            marks.append((time.perf_counter(), cpu()))

        advance.visible = False  # type: ignore[attr-defined]
        yield advance
        w1, c1 = time.perf_counter(), cpu()
        name = _step_name(description)
        if name.startswith("k-NN") and total and total % 2 == 0 and len(marks) == total:
            # an HNSW search: the first half of the steps add rows, the second half search
            wb, cb = marks[total // 2 - 1]
            clock.add(f"{name}: HNSW build", wb - w0, cb - c0)
            clock.add(f"{name}: HNSW search", w1 - wb, c1 - cb)
        else:
            clock.add(name, w1 - w0, c1 - c0)

    def graph(idx, sims, k):
        w0, c0 = time.perf_counter(), cpu()
        out = real_graph(idx, sims, k)
        whole = len(idx) > cluster.CHOOSE_SAMPLE
        clock.add(
            f"graph build ({'all' if whole else 'sample'})", time.perf_counter() - w0, cpu() - c0
        )
        if whole:
            clock.whole = out  # for --compare-leiden: the same graph, not a second k-NN search
        return out

    cluster.progress, cluster.knn_graph = timed, graph

    def restore() -> None:
        cluster.progress, cluster.knn_graph = real_progress, real_graph

    return restore


def _step_name(description: str) -> str:
    if description.startswith("k-NN graph of a sample"):
        return "sample k-NN"
    if description.startswith("Leiden on"):
        return "sample grid (12 Leiden + silhouettes)"
    if description.startswith("k-NN graph"):
        return "k-NN of all rows"
    if description.startswith("Leiden, k"):
        return "Leiden on all rows"
    return description


def measure(n: int, args) -> dict:
    from sklearn.metrics import adjusted_rand_score

    from goldmine.triage import cluster

    w0 = time.perf_counter()
    x, truth = generate(n, args.intents, args.topics, args.seeds)
    print(
        f"\n{n:,} rows x {DIM}, {len(np.unique(truth)):,} intents (largest "
        f"{np.bincount(truth).max():,}), generated in {time.perf_counter() - w0:.1f} s; "
        f"load {os.getloadavg()[0]:.1f}"
    )
    clock = Clock()
    restore = instrument(clock)
    try:
        w0, c0 = time.perf_counter(), cpu()
        labels, info = cluster.cluster_fresh(x)
        wall, cpu_s = time.perf_counter() - w0, cpu() - c0
    finally:
        restore()
    named_w = sum(v[0] for v in clock.steps.values())
    named_c = sum(v[1] for v in clock.steps.values())
    clock.add("other (sampling, page-out, relabel)", wall - named_w, cpu_s - named_c)
    print(f"{'step':<44} {'wall s':>8} {'CPU s':>8} {'CPU share':>9}")
    for name, (w, c) in clock.steps.items():
        print(f"{name:<44} {w:8.1f} {c:8.1f} {c / cpu_s:9.1%}")
    ari = adjusted_rand_score(truth, labels)
    print(
        f"{'cluster_fresh':<44} {wall:8.1f} {cpu_s:8.1f}   k {info['k']}, resolution "
        f"{info['resolution']:g}, {labels.max() + 1:,} clusters, ARI {ari:.4f}"
    )
    out = {
        "n": n,
        "wall": wall,
        "cpu": cpu_s,
        "ari": ari,
        "clusters": int(labels.max()) + 1,
        "k": info["k"],
        "resolution": info["resolution"],
        "steps": clock.steps,
    }
    if args.recall:
        print(f"HNSW recall@20 against exact on 2,000 rows: {recall(x):.4f}")
    if args.compare_leiden and clock.whole is not None:
        compare_leiden(clock.whole, truth, labels, info["resolution"])
    return out


def recall(x: np.ndarray, k: int = 20, rows: int = 2000) -> float:
    from goldmine.triage.cluster import knn_exact, knn_hnsw

    pick = np.random.default_rng(SEED).choice(len(x), rows, replace=False)
    exact, _ = knn_exact(x, k, rows=pick)
    approx, _ = knn_hnsw(x, k)
    return float(
        np.mean([len(set(a) & set(b)) / k for a, b in zip(exact, approx[pick], strict=True)])
    )


def compare_leiden(whole: tuple, truth: np.ndarray, today: np.ndarray, resolution: float) -> None:
    """leidenalg and igraph's own Leiden on the same whole graph: time, quality, clusters, ARI
    against the intents and against cluster_fresh's labels."""
    from sklearn.metrics import adjusted_rand_score

    from goldmine.triage import cluster

    graph, weight = whole
    print(
        f"whole graph: {graph.vcount():,} nodes, {graph.ecount():,} edges; resolution "
        f"{resolution:g}"
    )
    for name, run in (("leidenalg", cluster.leiden), ("igraph", cluster.leiden_whole)):
        w0, c0 = time.perf_counter(), cpu()
        labels = run(graph, weight, resolution)
        wall, cpu_s = time.perf_counter() - w0, cpu() - c0
        quality = graph.modularity(labels.tolist(), weights=weight, resolution=resolution)
        print(
            f"  {name:<10} {wall:7.1f} s wall {cpu_s:7.1f} s CPU  quality {quality:.6f}  "
            f"{labels.max() + 1:6,} clusters  ARI truth {adjusted_rand_score(truth, labels):.4f}"
            f"  ARI vs cluster_fresh {adjusted_rand_score(today, labels):.4f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="200000,500000,1000000")
    parser.add_argument("--intents", type=int, default=1500)
    parser.add_argument("--topics", type=int, default=80)
    parser.add_argument("--seeds", type=int, default=7, help="ways each intent is written")
    parser.add_argument(
        "--cores",
        type=int,
        default=None,
        help="run on this many cores (the first ones this process may use)",
    )
    parser.add_argument("--compare-leiden", action="store_true")
    parser.add_argument("--recall", action="store_true")
    args = parser.parse_args()
    if args.cores:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: args.cores])
    print(f"cores {sorted(os.sched_getaffinity(0))}; load {os.getloadavg()}")
    for n in (int(s) for s in args.sizes.split(",")):
        measure(n, args)


if __name__ == "__main__":
    main()
