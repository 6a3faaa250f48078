"""Benchmark: the gold set's file round trips on Cranfield and on a generated large set.

    .venv/bin/python bench/bench_cranfield_gold.py               # both parts, 3 repeats
    .venv/bin/python bench/bench_cranfield_gold.py --only scale --n 20000 --repeats 1

Parts (``--only``):

- ``cranfield``: the raw ``cranqrel`` (225 queries, 1,837 judgments) imported as verified items
  with goldmine's grade map, published, exported as the version file and as TREC qrels, restored
  into an empty store, and loaded for the eval (``load_gold``). In-process calls on real DuckDB
  files; the corpus is stored first so labels get their text hashes.
  Then every chunk is cut in two (a re-chunking) and ``drift`` and ``remap`` are timed.
- ``scale``: a generated gold set of ``--n`` queries with 10 judgments each (seeded), through the
  same steps, to see how they grow.

Prints the median of the repeats for each step and each step's share of the whole. Timings drift
on a shared machine; the ratios measured side by side are what hold.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from goldmine.goldset.drift import drift, remap  # noqa: E402
from goldmine.goldset.exchange import export_version, import_path, parse_grade_map  # noqa: E402
from goldmine.goldset.versions import publish  # noqa: E402
from goldmine.store import open_store, transaction  # noqa: E402
from goldmine.text import sha256_text  # noqa: E402
from goldmine.versions import load_gold  # noqa: E402

GRADE_MAP = "1=2,2=2,3=1,4=1,-1=0"


def store_chunks(db: Path, chunks: list[tuple[str, str, str]]) -> None:
    import duckdb  # noqa: F401  (registering a polars frame needs the full duckdb package)
    import polars as pl

    frame = pl.DataFrame(
        {
            "chunk_id": [c[0] for c in chunks],
            "title": [c[1] for c in chunks],
            "text": [c[2] for c in chunks],
            "text_hash": [sha256_text(c[2]) for c in chunks],
        }
    )
    with open_store(db) as con, transaction(con):
        con.register("bench_chunks", frame)
        con.execute(
            "INSERT INTO corpus_snapshots VALUES (1, 1, now(), 'bench', ?, 'bench')",
            [frame.height],
        )
        con.execute(
            "INSERT INTO chunks SELECT 1, chunk_id, chunk_id, title, NULL, text, text_hash,"
            " NULL FROM bench_chunks"
        )


def split_every_chunk(con) -> None:
    """A re-chunking: snapshot 2 holds every chunk of snapshot 1 cut in two halves."""
    con.execute("INSERT INTO corpus_snapshots VALUES (2, 1, now(), 'split', 0, 'split')")
    con.execute(
        """INSERT INTO chunks
           SELECT 2, chunk_id || '-' || part, chunk_id, title, NULL, t, sha256(t), NULL FROM (
               SELECT chunk_id, title, 1 AS part, left(text, length(text) // 2) AS t
               FROM chunks WHERE snapshot_id = 1
               UNION ALL
               SELECT chunk_id, title, 2, substr(text, length(text) // 2 + 1)
               FROM chunks WHERE snapshot_id = 1)
           WHERE length(t) > 0"""
    )


def steps(
    folder: Path, chunks, qrels: Path, topics: Path | None, grade_map, rechunk: bool = False
) -> dict[str, float]:
    """One pass through import → publish → export ×2 → restore → load_gold (→ re-chunk, drift,
    remap); seconds per step."""
    times: dict[str, float] = {}
    db, empty = folder / "gold.duckdb", folder / "empty.duckdb"
    store_chunks(db, chunks)

    def timed(name: str, fn):
        start = time.perf_counter()
        result = fn()
        times[name] = time.perf_counter() - start
        return result

    with open_store(db) as con:
        timed("import", lambda: import_path(con, qrels, by="bench", topics=topics,
                                            grade_map=grade_map))  # fmt: skip
        timed("publish", lambda: publish(con, "bench", "bench"))
        paths = timed("export jsonl", lambda: export_version(con, "latest", folder / "out"))
        timed("export trec", lambda: export_version(con, "latest", folder / "out", "trec"))
        timed("load_gold", lambda: load_gold(con, "latest"))
    with open_store(empty) as con:
        timed("restore", lambda: import_path(con, paths[0], by="bench"))
        again = timed("export again", lambda: export_version(con, "latest", folder / "again"))
    if again[0].read_bytes() != paths[0].read_bytes():
        raise SystemExit("the restored version does not export byte-identical")
    if rechunk:
        with open_store(db) as con, transaction(con):
            split_every_chunk(con)
        with open_store(db) as con:
            drifted = timed("drift", lambda: drift(con))
            remapped = timed("remap", lambda: remap(con, "bench"))
        times["labels drifted"] = len(drifted)
        times["proposals"] = remapped.proposals
    times["file MB"] = paths[0].stat().st_size / 1e6
    return times


def cranfield_inputs(folder: Path):
    from realdata import cranfield_chunks, cranfield_queries, shared_path

    data = shared_path("datasets", "cranfield")
    if data is None:
        return None
    topics = folder / "topics.tsv"
    topics.write_text("".join(f"{p}\t{t}\n" for p, t in cranfield_queries(data).items()))
    chunks = [(c.id, c.title, c.text) for c in cranfield_chunks(data)]
    return chunks, data / "cranqrel", topics


def generated_inputs(folder: Path, n: int):
    rng = random.Random(7)
    n_chunks = max(1000, n * 5)
    chunks = [(f"c{i}", f"title {i}", f"passage {i} " + "word " * 40) for i in range(n_chunks)]
    path = folder / "gold.jsonl"
    with path.open("w") as out:
        for q in range(n):
            judged = {f"c{rng.randrange(n_chunks)}": rng.choice((0, 1, 2)) for _ in range(10)}
            out.write(json.dumps({"query_id": f"g{q}", "query": f"query {q}",
                                  "relevant": judged}) + "\n")  # fmt: skip
    return chunks, path, None


def report(name: str, runs: list[dict[str, float]]) -> None:
    counts = ("file MB", "labels drifted", "proposals")
    keys = [k for k in runs[0] if k not in counts]
    medians = {k: statistics.median(r[k] for r in runs) for k in keys}
    total = sum(medians.values())
    print(f"\n{name}: median of {len(runs)}, version file {runs[0]['file MB']:.2f} MB")
    for k in keys:
        print(f"  {k:<14} {medians[k]:8.3f} s  {medians[k] / total:6.1%}")
    print(f"  {'total':<14} {total:8.3f} s")
    if "proposals" in runs[0]:
        print(
            f"  re-chunked (every chunk cut in two): {runs[0]['labels drifted']:.0f} labels "
            f"drifted, {runs[0]['proposals']:.0f} remap proposals"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="cranfield,scale")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n", type=int, default=5000)
    args = parser.parse_args()
    parts = args.only.split(",")
    if "cranfield" in parts:
        runs = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                inputs = cranfield_inputs(Path(tmp))
                if inputs is None:
                    print("cranfield: ../shared/datasets/cranfield is absent, skipped")
                    break
                runs.append(steps(Path(tmp), *inputs, parse_grade_map(GRADE_MAP), rechunk=True))
        if runs:
            report("cranfield (225 queries, 1,837 judgments)", runs)
    if "scale" in parts:
        runs = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                runs.append(steps(Path(tmp), *generated_inputs(Path(tmp), args.n), None))
        report(f"generated ({args.n:,} queries, 10 judgments each)", runs)


if __name__ == "__main__":
    main()
