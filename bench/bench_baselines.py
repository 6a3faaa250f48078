"""Benchmark: the built-in baselines on Cranfield, and MiniLM's speed with one vs two torch threads.

    .venv/bin/python bench/bench_baselines.py               # everything (~5-10 min on 2 cores)
    .venv/bin/python bench/bench_baselines.py --no-dense    # BM25 and the thread test only

Cranfield (1,400 abstracts, 225 queries) is loaded into a fresh store, as ``goldmine ingest corpus``
would leave it, then each baseline is built with ``build_retriever`` and asked for the top 100 of
every query. Quality: nDCG@10, MAP@100 and frac_recall@100 (trec_eval's ``recall_100``) beside
FACTS.md's reference, with the gains as ir_datasets reads cranqrel (the code, 4 highest; the
reference's mapping) and, for nDCG, Cleverdon's (5 - code) too. Time: medians over repeats, start-up
(imports) apart; the dense index is timed cold (encoding every chunk) and warm (from the cache).

Embedding speed alternates one and two torch threads on the same texts in the same process and
reports medians and their ratio: short texts (the 225 queries) and long ones (abstracts, ~226
tokens). Absolute times drift on a shared machine; the same-run ratios hold. The load average is
printed so a reader can tell a busy run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from realdata import (  # noqa: E402
    REFERENCE,
    Cranfield,
    cranfield_qrels,
    load_cranfield,
    shared_path,
)


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def median_time(fn: Callable[[], object], reps: int) -> tuple[float, object]:
    times, value = [], None
    for _ in range(reps):
        seconds, value = timed(fn)
        times.append(seconds)
    return statistics.median(times), value


def load_store(con, data: Cranfield) -> None:
    import polars as pl

    from goldmine.store import transaction
    from goldmine.text import sha256_text

    frame = pl.DataFrame(
        {
            "chunk_id": [c.id for c in data.chunks],
            "title": [c.title for c in data.chunks],
            "text": [c.text for c in data.chunks],
            "text_hash": [sha256_text(c.text) for c in data.chunks],
        }
    )
    with transaction(con):
        con.execute(
            "INSERT INTO corpus_snapshots VALUES (1, 0, ?, 'cranfield', ?, 'cranfield')",
            [dt.datetime.now(), frame.height],
        )
        con.register("cranfield_chunks", frame)
        con.execute(
            "INSERT INTO chunks (snapshot_id, chunk_id, title, text, text_hash) "
            "SELECT 1, chunk_id, title, text, text_hash FROM cranfield_chunks"
        )
        con.unregister("cranfield_chunks")


def quality(runs: list[list[tuple[str, float]]], data: Cranfield, cleverdon: dict) -> dict:
    from goldmine.metrics import average_precision, frac_recall, ndcg

    sums = {"ndcg@10": 0.0, "map@100": 0.0, "frac_recall@100": 0.0, "ndcg@10 cleverdon": 0.0}
    for qid, hits in zip(data.queries, runs, strict=True):
        ranked = [chunk_id for chunk_id, _ in hits]
        judged = data.qrels.get(qid, {})
        sums["ndcg@10"] += ndcg(ranked, judged, 10)
        sums["map@100"] += average_precision(ranked, judged, 100)
        sums["frac_recall@100"] += frac_recall(ranked, judged, 100)
        sums["ndcg@10 cleverdon"] += ndcg(ranked, cleverdon.get(qid, {}), 10)
    return {name: total / len(data.queries) for name, total in sums.items()}


def bench_retrieval(data: Cranfield, cleverdon: dict, kinds: list[str], reps: int) -> list[dict]:
    from goldmine.store import open_store

    startup, _ = timed(lambda: [importlib.import_module(m) for m in ("bm25s", "Stemmer")])
    print(f"start-up: import bm25s + PyStemmer {startup:.2f} s", flush=True)
    if "dense" in kinds:
        from goldmine.embed import load_model

        seconds, _ = timed(load_model)
        print(f"start-up: import sentence-transformers + torch, load MiniLM {seconds:.2f} s")

    from goldmine.retrieval import build_retriever

    queries = list(data.queries.values())
    rows = []
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "bench.duckdb") as con:
        load_store(con, data)
        for kind in kinds:
            row: dict = {"kind": kind}
            if kind == "dense":
                # Cold: every chunk encoded and cached; the warm builds below read the cache.
                row["cold build"], _ = timed(
                    lambda: build_retriever(con, "dense", show_progress=False)
                )
                print(f"dense cold build (encode 1,400 chunks) {row['cold build']:.1f} s")
            row["build"], retriever = median_time(
                lambda kind=kind: build_retriever(con, kind, show_progress=False), reps
            )
            row["search"], runs = median_time(lambda r=retriever: r.search(queries, 100), reps)
            row.update(quality(runs, data, cleverdon))
            rows.append(row)
            print(
                f"{kind}: build {row['build']:.2f} s, 225 queries {row['search']:.2f} s, "
                f"nDCG@10 {row['ndcg@10']:.3f}",
                flush=True,
            )
    return rows


def bench_threads(short: list[str], long: list[str], reps: int) -> list[dict]:
    """Sentences/s with 1 and 2 torch threads, alternated on the same texts; medians."""
    import torch

    from goldmine.embed import load_model

    model = load_model()
    model.encode(short[:16], batch_size=64)  # warm-up
    rows = []
    for label, texts in (("queries (short)", short), ("abstracts (~226 tokens)", long)):
        speeds: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(reps):
            for threads in (1, 2):
                torch.set_num_threads(threads)
                seconds, _ = timed(lambda texts=texts: model.encode(texts, batch_size=64))
                speeds[threads].append(len(texts) / seconds)
        one, two = statistics.median(speeds[1]), statistics.median(speeds[2])
        rows.append({"texts": label, "n": len(texts), "1 thread": one, "2 threads": two})
        print(f"{label}: 1 thread {one:.1f}/s, 2 threads {two:.1f}/s", flush=True)
    torch.set_num_threads(1)
    return rows


def print_tables(retrieval: list[dict], threads: list[dict]) -> None:
    print("\nCranfield, 225 queries, top 100 (medians; reference = FACTS.md)")
    header = (
        f"{'baseline':<8} {'nDCG@10':>15} {'MAP@100':>15} {'frac_recall@100':>17} "
        f"{'nDCG@10 5-code':>15} {'build s':>8} {'search s':>9}"
    )
    print(header)
    print("-" * len(header))
    for row in retrieval:
        ref = REFERENCE[row["kind"]]
        cells = [
            f"{row['ndcg@10']:.3f} ({ref[0]:.3f})",
            f"{row['map@100']:.3f} ({ref[1]:.3f})",
            f"{row['frac_recall@100']:.3f} ({ref[2]:.3f})",
        ]
        print(
            f"{row['kind']:<8} {cells[0]:>15} {cells[1]:>15} {cells[2]:>17} "
            f"{row['ndcg@10 cleverdon']:>15.3f} {row['build']:>8.2f} {row['search']:>9.2f}"
        )
    for row in retrieval:
        if "cold build" in row:
            print(
                f"dense cold build (encodes every chunk): {row['cold build']:.1f} s; "
                f"warm (cache): {row['build']:.2f} s, {row['cold build'] / row['build']:.0f}x"
            )
    bm25 = next((r for r in retrieval if r["kind"] == "bm25"), None)
    if bm25:
        print(f"bm25 index + 225 queries beyond start-up: {bm25['build'] + bm25['search']:.2f} s")
    if threads:
        print("\nMiniLM encoding, sentences/s (medians, alternated in one process)")
        print(f"{'texts':<24} {'n':>4} {'1 thread':>9} {'2 threads':>10} {'1 / 2':>6}")
        for row in threads:
            ratio = row["1 thread"] / row["2 threads"]
            print(
                f"{row['texts']:<24} {row['n']:>4} {row['1 thread']:>9.1f} "
                f"{row['2 threads']:>10.1f} {ratio:>6.2f}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-dense", action="store_true", help="BM25 and the thread test only")
    parser.add_argument("--reps", type=int, default=3, help="repeats per timing (median)")
    parser.add_argument("--long", type=int, default=48, help="abstracts in the thread test")
    args = parser.parse_args()

    folder = shared_path("datasets", "cranfield")
    if folder is None:
        print("skipped: ../shared/datasets/cranfield is absent")
        return 0
    os.environ.pop("GOLDMINE_TORCH_THREADS", None)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    data = load_cranfield(folder)
    cleverdon = cranfield_qrels(folder, "cleverdon")
    kinds = ["bm25"] if args.no_dense else ["bm25", "dense", "hybrid"]
    retrieval = bench_retrieval(data, cleverdon, kinds, args.reps)

    from goldmine.retrieval import documents

    abstracts = documents([c.title for c in data.chunks], [c.text for c in data.chunks])
    long = [a for a in abstracts if a][: args.long]
    threads = bench_threads(list(data.queries.values()), long, args.reps)
    print_tables(retrieval, threads)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
