"""Benchmark: the k-NN of every row, HNSW settings side by side (issue 30).

    .venv/bin/python bench/bench_knn.py                  # 200k embedded queries, every setting
    .venv/bin/python bench/bench_knn.py --settings f16-c16-a128-s64-x1,bf16-x2 --rounds 3
    .venv/bin/python bench/bench_knn.py --synthetic 1000000 --settings bf16-x2,f16-x1

The cluster step's cost at a million queries is the k-NN of every row (an HNSW build on one
thread, then a parallel search), so a cheaper index is worth having only if its neighbours stay
as good. Generated vectors flatter an index (their neighbourhoods are cleaner than real text's),
so the recall is read on embedded real-shaped queries: the first ``--rows`` distinct query texts
of bench_triage's 1M-query traffic (``bench/out/triage/traffic_1000000.jsonl``), embedded with the
bundled model as triage embeds them (onnx-int8, one thread; 35 min for 200k at a load of 10),
cached in a .npy (``--vectors``) and reused. The reference is exact k-NN by numpy blocks
(``cluster.knn_exact``), computed once and cached beside the vectors.

Each setting is one k-NN of every row at k = 30 (the k triage chooses at scale) through
``cluster.knn_hnsw`` with the setting's constants, in a child process of its own (so its peak
RSS, VmHWM, is its own): recall@30 against exact, build and search CPU and wall seconds, the
peak. The settings run in turn, ``--rounds`` times, alternated, and the medians are printed, so
a load the other engineers put on the machine falls on every setting alike. ``--synthetic N``
measures the same on bench_cluster_scale's generated rows instead. The recall is read on
``--recall-rows`` seeded rows (10,000, 2,000 of generated rows: a standard error under 0.001;
exact k-NN of every row of 200k is 30 TFLOP). A setting is named by its parts,
``dtype-cCONNECTIVITY-aEXPANSION_ADD-sEXPANSION_SEARCH-xCANDIDATES`` (candidates: neighbours
asked of the index per neighbour kept, re-ranked by float32 cosines); a part left out keeps the
default's (``cluster.Hnsw()``), and the first setting named is the reference of the ratios.

Asserts nothing on time: the machine is shared, read the CPU columns and the ratios.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

HERE = Path(__file__).resolve().parent
TRAFFIC = HERE / "out" / "triage" / "traffic_1000000.jsonl"
VECTORS = HERE / "out" / "knn" / "vectors_200000.npy"
K = 30
# dtype-cCONNECTIVITY-aEXPANSION_ADD-sEXPANSION_SEARCH-xCANDIDATES (neighbours asked per one kept)
BEFORE = "f16-c16-a128-s64-x1"  # the setting before issue 30's change
SETTINGS = (
    BEFORE,
    "bf16-c16-a128-s64-x1",
    "i8-c16-a128-s64-x1",
    "i8-c16-a128-s64-x2",
    "i8-c16-a128-s64-x3",
    "i8-c16-a64-s64-x3",
    "i8-c12-a128-s64-x2",
    "i8-c8-a128-s64-x3",
    "bf16-c16-a128-s64-x2",
    "f16-c12-a128-s64-x2",
    "f16-c8-a128-s64-x3",
)
PARTS = {"c": "connectivity", "a": "expansion_add", "s": "expansion_search", "x": "candidates"}


def distinct_queries(path: Path, n: int) -> list[str]:
    """The first n distinct query texts of a JSON-lines search log, in file order."""
    import polars as pl

    queries = pl.scan_ndjson(path).select("query").drop_nulls()
    first = queries.unique(keep="first", maintain_order=True).head(n).collect()
    return first["query"].to_list()


def vectors(path: Path, n: int) -> np.ndarray:
    """The embedded rows, from the cache, else embedded now (onnx-int8, one thread) and cached."""
    if path.exists():
        return np.load(path, mmap_mode="r")
    os.environ.setdefault("GOLDMINE_TORCH_THREADS", "1")
    from goldmine.embed import embed_uncached

    texts = distinct_queries(TRAFFIC, n)
    w0 = time.perf_counter()
    x = embed_uncached(texts, backend="onnx-int8", show_progress=True)
    print(f"embedded {len(texts):,} texts in {time.perf_counter() - w0:.0f} s", file=sys.stderr)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, x)
    return x


def setting(name: str):
    """The cluster.Hnsw a setting's name spells (dtype-c16-a128-s64-x2; a part left out keeps
    today's value)."""
    from goldmine.triage.cluster import Hnsw

    dtype, *parts = name.split("-")
    given = {PARTS[p[0]]: int(p[1:]) for p in parts if p[0] in PARTS}
    return dataclasses.replace(Hnsw(), dtype=dtype, **given)


def sample(n: int, rows: int) -> np.ndarray:
    """The seeded rows whose recall is read (every row when there are no more)."""
    if rows >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(0).choice(n, rows, replace=False))


def exact_path(vectors_path: Path, rows: int) -> Path:
    return vectors_path.with_name(f"{vectors_path.stem}_exact{K}_{rows}.npy")


def exact(x: np.ndarray, path: Path, rows: int) -> np.ndarray:
    """Exact k-NN (cluster.knn_exact) of the sampled rows among all rows, computed once and
    cached."""
    if path.exists():
        return np.load(path)
    from goldmine.triage.cluster import knn_exact

    w0 = time.perf_counter()
    idx, _ = knn_exact(np.ascontiguousarray(x), K, rows=sample(len(x), rows))
    print(f"exact k-NN of {rows:,} rows in {time.perf_counter() - w0:.0f} s", file=sys.stderr)
    np.save(path, idx)
    return idx


def recall(approx: np.ndarray, truth: np.ndarray) -> float:
    """Mean share of each row's exact neighbours the approximate list holds."""
    hits = 0
    for a in range(0, len(truth), 8192):
        got, want = approx[a : a + 8192], truth[a : a + 8192]
        hits += int((got[:, :, None] == want[:, None, :]).any(axis=2).sum())
    return hits / truth.size


def child(name: str, source: str, rows: int) -> dict:
    """One k-NN of every row with one setting, in this process: build and search seconds (wall
    and CPU), peak RSS, recall@K on the sampled rows."""
    from goldmine.triage import cluster

    x, truth = _rows(source, rows)
    base_mb = peak_rss_mb()
    marks: list[tuple[float, float]] = []

    def advance(n: int = 1) -> None:
        marks.append((time.perf_counter(), time.process_time()))

    w0, c0 = time.perf_counter(), time.process_time()
    idx, _ = cluster.knn_hnsw(x, K, advance, setting(name))
    w1, c1 = time.perf_counter(), time.process_time()
    peak_mb = peak_rss_mb()
    wb, cb = marks[len(marks) // 2 - 1]
    pick = sample(len(x), rows)
    if truth is None:  # 64 rows at a time: a block of 1,024 rows x 1M is 4 GB, its sort 8 more
        truth = np.concatenate(
            [cluster.knn_exact(x, K, rows=pick[a : a + 64])[0] for a in range(0, len(pick), 64)]
        )
    return {
        "setting": name,
        "build_wall": wb - w0,
        "build_cpu": cb - c0,
        "search_wall": w1 - wb,
        "search_cpu": c1 - cb,
        "base_mb": base_mb,
        "peak_mb": peak_mb,
        "recall": recall(idx[pick], truth),
        "load": os.getloadavg()[0],
    }


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM): ru_maxrss would carry the parent's peak over the exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rows(source: str, rows: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The rows (in memory, as triage holds them) and, for an embedded set, the cached exact
    neighbours of the sampled rows (generated rows: None, computed after the run)."""
    if source.startswith("synthetic:"):
        from bench_cluster_scale import generate

        return generate(int(source.split(":")[1]))[0], None
    path = Path(source)
    return np.load(path), np.load(exact_path(path, rows))


def median(values: list[float]) -> float:
    return float(np.median(values))


def report(runs: list[dict], names: list[str]) -> None:
    """Medians per setting, and CPU ratios against the first setting named."""
    print(
        f"{'setting':<22} {'recall@30':>9} {'build CPU':>9} {'wall':>7} {'search CPU':>10} "
        f"{'wall':>7} {'k-NN CPU':>8} {'x ref':>6} {'peak MB':>8} {'+MB':>6} runs"
    )
    ref = None
    for name in names:
        got = [r for r in runs if r["setting"] == name]
        if not got:
            continue
        m = {key: median([r[key] for r in got]) for key in got[0] if key != "setting"}
        total = m["build_cpu"] + m["search_cpu"]
        ref = ref or total
        print(
            f"{name:<22} {m['recall']:9.4f} {m['build_cpu']:9.1f} {m['build_wall']:7.1f} "
            f"{m['search_cpu']:10.1f} {m['search_wall']:7.1f} {total:8.1f} {total / ref:6.2f} "
            f"{m['peak_mb']:8.0f} {m['peak_mb'] - m['base_mb']:6.0f} {len(got)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="distinct queries embedded")
    parser.add_argument("--vectors", type=Path, default=VECTORS, help="the embedded rows' cache")
    parser.add_argument("--synthetic", type=int, default=0, help="generated rows instead")
    parser.add_argument("--settings", default=",".join(SETTINGS), help="names, the first the ref")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--recall-rows", type=int, help="rows whose recall is read: 10,000 (generated: 2,000)"
    )
    parser.add_argument("--embed-only", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("SETTING", "SOURCE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.recall_rows is None:
        generated = args.synthetic or (args.child and args.child[1].startswith("synthetic:"))
        args.recall_rows = 2000 if generated else 10_000
    if args.child:
        print(json.dumps(child(*args.child, args.recall_rows)))
        return
    names = args.settings.split(",")
    if args.synthetic:
        source = f"synthetic:{args.synthetic}"
    else:
        x = vectors(args.vectors, args.rows)
        if args.embed_only:
            return
        exact(x, exact_path(args.vectors, args.recall_rows), args.recall_rows)
        del x
        source = str(args.vectors)
    print(f"{source}: k {K}, settings {names}, {args.rounds} round(s); load {os.getloadavg()}")
    runs = []
    for i in range(args.rounds):
        for name in names if i % 2 == 0 else names[::-1]:  # alternated
            out = subprocess.run(
                [sys.executable, __file__, "--child", name, source]
                + ["--recall-rows", str(args.recall_rows)],
                check=True,
                capture_output=True,
                text=True,
            )
            runs.append(json.loads(out.stdout.splitlines()[-1]))
            r = runs[-1]
            print(
                f"  round {i + 1} {name}: recall {r['recall']:.4f}, build {r['build_cpu']:.1f} "
                f"CPU-s, search {r['search_cpu']:.1f} CPU-s, peak {r['peak_mb']:.0f} MB, "
                f"load {r['load']:.1f}",
                flush=True,
            )
    report(runs, names)


if __name__ == "__main__":
    main()
