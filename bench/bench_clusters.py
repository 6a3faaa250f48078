"""Clustering methods side by side on the same real, intent-labelled embeddings (issue 30).

    .venv/bin/python bench/bench_clusters.py [--backend onnx-int8] [--sizes 2000,5000,10003]
        [--labels other.csv ...] [--only Leiden,k-means]

Which partition of the query vectors is closest to the grain of intents, never told k? Each method
gets the same L2-normalized vectors (embedded once per backend and cached in the system's temp
folder, keyed by backend and the texts) and is scored against the labels it never sees: ARI, NMI,
the number of clusters, seconds. The reference point is k-means told the true k. The sets:

- ``b77``: banking77 (10,003 real online-banking queries, 77 intents), and seeded subsamples of it
  (2k, 5k) to see whether a method's number of clusters collapses or grows with the traffic;
- ``b77+st``: banking77 with the TREC 2012 Session Track's distinct queries (a query's intent is
  its sessions' most common topic): two domains, 77 + ~48 intents of very different sizes;
- any CSV given with ``--labels`` (a ``text`` and a ``label`` or ``category`` column).

The time budget is a bare float32 embedding of the same texts (printed first): triage must cost no
more than that end to end, and its own embedding (int8) takes about half.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
BANKING = SHARED / "banking77" / "train.csv"
SESSIONS = SHARED / "trec_session_track" / "sessiontrack2012.xml"
SEED = 0


def datasets() -> dict[str, tuple[list[str], list[str]]]:
    """name -> (texts, labels) for the labelled sets on disk."""
    import polars as pl

    rows = pl.read_csv(BANKING)
    b77 = (rows["text"].to_list(), rows["category"].to_list())
    out = {"b77": b77}
    if SESSIONS.exists():
        seen: dict[str, Counter] = {}
        for session in ET.parse(SESSIONS).getroot().iter("session"):
            topic = "st" + session.find("topic").get("num")
            for inter in session.iter("interaction"):
                q = (inter.findtext("query") or "").strip()
                if q:
                    seen.setdefault(q, Counter())[topic] += 1
        st = sorted(seen)
        out["b77+st"] = (b77[0] + st, b77[1] + [seen[q].most_common(1)[0][0] for q in st])
    return out


def labelled_csv(path: Path) -> tuple[list[str], list[str]]:
    """(texts, labels) of a CSV given with --labels: its ``text`` column and its ``label`` (or
    ``category``) column, as strings."""
    import polars as pl

    rows = pl.read_csv(path, infer_schema=False)
    label = "label" if "label" in rows.columns else "category"
    if "text" not in rows.columns or label not in rows.columns:
        raise SystemExit(f"{path}: needs a text column and a label or category column")
    rows = rows.drop_nulls(["text", label])
    return rows["text"].to_list(), rows[label].to_list()


def embedded(texts: list[str], backend: str) -> tuple[np.ndarray, float]:
    """The texts' vectors, cached in the temp folder by backend and content; and the seconds the
    embedding took (from the cache's side file when cached)."""
    from goldmine.embed import embed_uncached

    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"goldmine-bench-clusters-{backend}-{digest}.npy"
    if path.exists():
        return np.load(path), float(path.with_suffix(".s").read_text())
    start = time.perf_counter()
    x = embed_uncached(texts, backend=backend)
    seconds = time.perf_counter() - start
    np.save(path, x)
    path.with_suffix(".s").write_text(str(seconds))
    return x, seconds


# --- the methods: each takes the vectors (and the true k, which only k-means reads) ------------


def today(x: np.ndarray, k: int) -> np.ndarray:
    from goldmine.triage.cluster import cluster_fresh

    return cluster_fresh(x)[0]


def kmeans_told_k(x: np.ndarray, k: int) -> np.ndarray:
    from sklearn.cluster import KMeans

    return KMeans(k, n_init=10, random_state=SEED).fit_predict(x)


def _noise_to_nearest(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """HDBSCAN's noise (-1) joined to the nearest cluster centroid, as triage would place it."""
    from goldmine.triage.cluster import centroids, nearest_centroids

    noise = labels < 0
    if noise.all():
        return np.zeros(len(labels), dtype=np.int64)
    if noise.any():
        cents = centroids(x[~noise], labels[~noise])[0]
        labels = labels.copy()
        labels[noise] = nearest_centroids(x[noise], cents)[0]
    return labels


def hdbscan(x: np.ndarray, k: int, min_size: int = 5, method: str = "eom") -> np.ndarray:
    from sklearn.cluster import HDBSCAN

    raw = HDBSCAN(min_cluster_size=min_size, cluster_selection_method=method).fit_predict(x)
    return _noise_to_nearest(x, raw)


def leiden_at(x: np.ndarray, resolutions: tuple[float, ...], k_nn: int = 30):
    """Leiden partitions of one k-NN graph at several resolutions."""
    from goldmine.triage.cluster import _graphs, leiden

    graph, weight = _graphs(x, [k_nn], "k-NN")[k_nn]
    return {r: leiden(graph, weight, r) for r in resolutions}


def leiden_stable(x: np.ndarray, k: int) -> np.ndarray:
    """The resolution whose partition agrees best with its two neighbours' (ARI), the finest
    among near ties: a partition that holds while the resolution moves is a real grain."""
    from sklearn.metrics import adjusted_rand_score

    grid = (4.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0)
    parts = leiden_at(x, grid)
    agree = {
        r: np.mean([adjusted_rand_score(parts[r], parts[o]) for o in (a, b) if o is not None])
        for a, r, b in zip((None, *grid[:-1]), grid, (*grid[1:], None), strict=True)
    }
    return parts[max(agree, key=lambda r: (round(agree[r], 2), r))]


def leiden_consensus(x: np.ndarray, k: int) -> np.ndarray:
    """Consensus of Leiden at several resolutions: two rows stay together when they share a
    community in at least half the partitions; the graph of such k-NN edges, its components."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from goldmine.triage.cluster import knn

    idx, _ = knn(x, 30)
    parts = leiden_at(x, (8.0, 12.0, 16.0, 24.0, 32.0))
    rows = np.repeat(np.arange(len(x)), idx.shape[1])
    cols = idx.ravel()
    together = np.mean([p[rows] == p[cols] for p in parts.values()], axis=0) >= 0.5
    graph = coo_matrix((np.ones(together.sum()), (rows[together], cols[together])), (len(x),) * 2)
    return connected_components(graph, directed=False)[1]


def near_duplicate_distance(x: np.ndarray, texts: list[str], quantile: float = 0.9) -> float:
    """A cosine distance learned from near-duplicates: the pairs of texts the fuzzy dedupe would
    merge (fuzz.ratio >= 90) among each text's 10 nearest neighbours are the same intent by
    construction; the quantile of their distances is how far apart one intent's texts may be."""
    from rapidfuzz import fuzz

    from goldmine.triage.cluster import knn

    idx, sims = knn(x, 10)
    dist = [
        1.0 - float(s)
        for i in range(len(x))
        for j, s in zip(idx[i], sims[i], strict=True)
        if i < j and fuzz.ratio(texts[i].lower(), texts[j].lower()) >= 90
    ]
    return float(np.quantile(dist, quantile)) if dist else 0.2


def agglomerative(x: np.ndarray, k: int, threshold: float) -> np.ndarray:
    """Average linkage over the k-NN graph (no n x n matrix), cut at the learned distance scaled
    to a cluster's spread (twice the near-duplicate distance: a pair inside an intent)."""
    from scipy.sparse import coo_matrix
    from sklearn.cluster import AgglomerativeClustering

    from goldmine.triage.cluster import knn

    idx, _ = knn(x, 30)
    conn = coo_matrix(
        (np.ones(idx.size), (np.repeat(np.arange(len(x)), idx.shape[1]), idx.ravel())),
        (len(x),) * 2,
    )
    model = AgglomerativeClustering(
        n_clusters=None,
        distance_threshold=2 * threshold,
        metric="cosine",
        linkage="average",
        connectivity=conn,
    )
    return model.fit_predict(x)


# --- the run ----------------------------------------------------------------------------------


def methods(texts: list[str]) -> dict[str, Callable[[np.ndarray, int], np.ndarray]]:
    found: dict[str, float] = {}

    def agg(x: np.ndarray, k: int) -> np.ndarray:
        found["t"] = near_duplicate_distance(x, texts)
        return agglomerative(x, k, found["t"])

    return {
        "today (Leiden, silhouette)": today,
        "k-means told k": kmeans_told_k,
        "HDBSCAN eom, min 5": hdbscan,
        "HDBSCAN leaf, min 5": lambda x, k: hdbscan(x, k, 5, "leaf"),
        "Leiden, most stable resolution": leiden_stable,
        "Leiden consensus": leiden_consensus,
        "agglomerative, near-dup threshold": agg,
    }


def score(labels: list[str], pred: np.ndarray) -> tuple[float, float]:
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    return adjusted_rand_score(labels, pred), normalized_mutual_info_score(labels, pred)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="onnx-int8", help="embedding backend of the vectors")
    ap.add_argument(
        "--sizes", default="2000,5000,10003", help="banking77 subsample sizes ('' for none)"
    )
    ap.add_argument("--only", default="", help="comma-separated substrings of method names")
    ap.add_argument(
        "--labels",
        action="append",
        default=[],
        metavar="CSV",
        help="another labelled set: a CSV with a text column and a label (or category) column; "
        "repeatable",
    )
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sets = datasets()
    texts, labels = sets["b77"]
    _, bare = embedded(texts, "onnx")
    print(f"bare float32 (onnx) embedding of banking77: {bare:.1f} s (the time budget)")
    runs: list[tuple[str, list[str], list[str]]] = []
    rng = np.random.default_rng(SEED)
    for n in (int(s) for s in args.sizes.split(",") if s):
        pick = np.sort(rng.choice(len(texts), n, replace=False)) if n < len(texts) else None
        sub = (
            (texts, labels)
            if pick is None
            else ([texts[i] for i in pick], [labels[i] for i in pick])
        )
        runs.append((f"b77 {n}", *sub))
    if "b77+st" in sets:
        runs.append(("b77+st", *sets["b77+st"]))
    runs += [(Path(f).stem[:10], *labelled_csv(Path(f))) for f in args.labels]
    print(f"{'set':<10} {'method':<36} {'ARI':>6} {'NMI':>6} {'clusters':>8} {'intents':>7} "
          f"{'s':>6} {'x bare':>6}")  # fmt: skip
    for name, t, lab in runs:
        x, _ = embedded(t, args.backend)
        k = len(set(lab))
        for method, fn in methods(t).items():
            if args.only and not any(o in method for o in args.only.split(",")):
                continue
            start = time.perf_counter()
            pred = fn(x, k)
            seconds = time.perf_counter() - start
            ari, nmi = score(lab, pred)
            print(f"{name:<10} {method:<36} {ari:6.3f} {nmi:6.3f} {len(set(pred.tolist())):8d} "
                  f"{k:7d} {seconds:6.1f} {seconds / bare * len(texts) / len(t):6.2f}",
                  flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
